/* SPDX-License-Identifier: MIT */
/*
 * The replies a connection writes (proxy_conn.h): each head rendered once
 * into the request's scratch, the status line in the client's version,
 * the handler's fields, then what the connection owes the exchange
 * (Date, Content-Length, chunked coding, Connection), and the body after
 * it; proxy_conn.c sends them.
 */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include <event2/buffer.h>

#include "common/arena.h"
#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_conn_int.h"
#include "proxy/proxy_hdr.h"

#define DATE_MAX	40	/* "Sun, 06 Nov 1994 08:49:37 GMT" */
#define LINE_MAX_	96	/* a status line, a Connection line */
#define FIELD_SLACK	4	/* ": " and CRLF */
#define OWN_FIELDS_MAX	(DATE_MAX + 128)	/* the connection's own */

const char *
hreq_phrase(int status)
{
	static const struct {
		int		 code;
		const char	*text;
	} phrases[] = {
		{ 100, "Continue" }, { 101, "Switching Protocols" },
		{ 103, "Early Hints" }, { 200, "OK" }, { 201, "Created" },
		{ 202, "Accepted" }, { 203, "Non-Authoritative Information" },
		{ 204, "No Content" }, { 205, "Reset Content" },
		{ 206, "Partial Content" }, { 300, "Multiple Choices" },
		{ 301, "Moved Permanently" }, { 302, "Found" },
		{ 303, "See Other" }, { 304, "Not Modified" },
		{ 307, "Temporary Redirect" }, { 308, "Permanent Redirect" },
		{ 400, "Bad Request" }, { 401, "Unauthorized" },
		{ 402, "Payment Required" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 405, "Method Not Allowed" },
		{ 406, "Not Acceptable" }, { 408, "Request Timeout" },
		{ 409, "Conflict" }, { 410, "Gone" }, { 411, "Length Required" },
		{ 412, "Precondition Failed" }, { 413, "Content Too Large" },
		{ 414, "URI Too Long" }, { 415, "Unsupported Media Type" },
		{ 416, "Range Not Satisfiable" }, { 417, "Expectation Failed" },
		{ 421, "Misdirected Request" }, { 422, "Unprocessable Content" },
		{ 425, "Too Early" }, { 426, "Upgrade Required" },
		{ 428, "Precondition Required" }, { 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
		{ 502, "Bad Gateway" }, { 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" }, { 505, "HTTP Version Not Supported" },
	};
	static const char *const classes[] = { "Unknown", "Informational",
	    "Success", "Redirection", "Client Error", "Server Error" };

	for (size_t i = 0; i < sizeof(phrases) / sizeof(phrases[0]); i++)
		if (phrases[i].code == status)
			return phrases[i].text;
	return classes[status >= 100 && status < 600 ? status / 100 : 0];
}

/* The Date field's value for now: formatted once a second. */
static const char *
date_now(void)
{
	static char text[DATE_MAX];
	static int64_t at = -1;
	int64_t now = util_now_ms(), sec = now / 1000;

	if (sec != at) {
		hdr_format_date(now, text, sizeof(text));
		at = sec;
	}
	return text;
}

/* May the response carry a body (RFC 9110 6.4.1)? */
static int
has_body(const struct hreq *r, int status)
{
	return r->method != HM_HEAD && status >= 200 && status != 204 &&
	    status != 304;
}

/* Does the handler's out say "Connection: close"? */
static int
out_closes(const struct hreq *r)
{
	const char *v = hl_find(&r->out, "Connection");

	return v != NULL && util_list_has_token(v, "close");
}

/* Is the connection kept after this reply (length: its body is delimited
 * by a length or chunks, not by the close)? */
static int
keeps(const struct hreq *r, int delimited)
{
	const struct conn *c = r->conn;

	return c->keep && !c->refused && !c->px->draining && !out_closes(r) &&
	    delimited && c->st != CS_DEAD;
}

static void
put(char **p, const char *s, size_t n)
{
	memcpy(*p, s, n);
	*p += n;
}

static void
put_field(char **p, const char *name, const char *value)
{
	put(p, name, strlen(name));
	put(p, ": ", 2);
	put(p, value, strlen(value));
	put(p, "\r\n", 2);
}

/* What a head ends with: the Connection line its keeping asks for. */
static const char *
connection_line(const struct hreq *r, int keep)
{
	if (!keep)
		return "Connection: close\r\n";
	return r->minor == 0 ? "Connection: keep-alive\r\n" : "";
}

/*
 * The head: the status line, out's fields (its Connection aside), a Date
 * unless out has one, length (>= 0) as Content-Length unless out has one,
 * chunked coding, the Connection line, the empty line. In the request's
 * scratch; NULL when out of memory.
 */
static char *
render(struct hreq *r, int status, const char *phrase, int64_t length,
    int chunked, int keep, size_t *lenp)
{
	const struct hfield *f;
	size_t cap = LINE_MAX_ + OWN_FIELDS_MAX + strlen(phrase);
	int dated = 0, sized = 0;
	char *head, *p, line[LINE_MAX_];

	HL_FOREACH(f, &r->out)
		cap += strlen(f->key) + strlen(f->value) + FIELD_SLACK;
	if ((head = p = arena_alloc(&r->conn->scratch, cap)) == NULL)
		return NULL;
	p += snprintf(p, cap, "HTTP/1.%d %d %s\r\n", r->minor > 0 ? 1 : 0,
	    status, phrase);
	HL_FOREACH(f, &r->out) {
		if (strcasecmp(f->key, "Connection") == 0)
			continue;
		dated |= strcasecmp(f->key, "Date") == 0;
		sized |= strcasecmp(f->key, "Content-Length") == 0;
		put_field(&p, f->key, f->value);
	}
	if (!dated)
		put_field(&p, "Date", date_now());
	if (length >= 0 && !sized) {
		snprintf(line, sizeof(line), "%" PRId64, length);
		put_field(&p, "Content-Length", line);
	}
	if (chunked)
		put(&p, "Transfer-Encoding: chunked\r\n", 28);
	put(&p, connection_line(r, keep), strlen(connection_line(r, keep)));
	put(&p, "\r\n", 2);
	*lenp = (size_t)(p - head);
	return head;
}

void
hreq_reply(struct hreq *r, int status, const char *phrase,
    struct evbuffer *body)
{
	struct conn *c = r->conn;
	int with = has_body(r, status);
	size_t blen = body != NULL ? evbuffer_get_length(body) : 0;
	int keep = keeps(r, 1);
	struct iovec v;
	struct send s = { .pre = &v, .npre = 1 };

	r->status = status;
	v.iov_base = render(r, status, phrase != NULL ? phrase :
	    hreq_phrase(status), with ? (int64_t)blen : -1, 0, keep, &v.iov_len);
	if (v.iov_base == NULL) {
		conn_abort(c);		/* out of memory: no half answer */
		return;
	}
	if (with)
		s.buf = body;
	else if (body != NULL)
		evbuffer_drain(body, blen);
	conn_send(c, &s);
	conn_replied(c, keep);
}

void
hreq_reply_rendered(struct hreq *r, int status, const struct iovec *parts,
    int n, const void *body, size_t len, int file, hreq_release_fn release,
    void *arg)
{
	struct conn *c = r->conn;
	struct iovec v[HREQ_PARTS_MAX + 3];
	char line[LINE_MAX_];
	int keep = keeps(r, 1), k = 0;
	const char *conn_line = connection_line(r, keep);
	struct send s = {
		.pre = v, .ref = body, .ref_len = len, .release = release,
		.arg = arg, .has_file = file != -1, .file = file,
	};

	r->status = status;
	v[k].iov_base = line;
	v[k++].iov_len = (size_t)snprintf(line, sizeof(line),
	    "HTTP/1.%d %d %s\r\n", r->minor > 0 ? 1 : 0, status,
	    hreq_phrase(status));
	for (int i = 0; i < n && i < HREQ_PARTS_MAX; i++)
		v[k++] = parts[i];
	v[k].iov_base = (void *)(uintptr_t)conn_line;
	v[k++].iov_len = strlen(conn_line);
	v[k].iov_base = (void *)(uintptr_t)"\r\n";
	v[k++].iov_len = 2;
	s.npre = k;
	conn_send(c, &s);
	conn_replied(c, keep);
}

int
hreq_sends_files(const struct hreq *r)
{
	return r->conn->bev == NULL;
}

void
hreq_start(struct hreq *r, int status, const char *phrase)
{
	struct conn *c = r->conn;
	int with = has_body(r, status), sized = hl_find(&r->out,
	    "Content-Length") != NULL;
	int chunked = with && !sized && r->minor >= 1;
	struct iovec v;
	struct send s = { .pre = &v, .npre = 1 };

	r->status = status;
	c->streaming = 1;
	c->chunked = chunked;
	c->stream_keep = keeps(r, sized || chunked || !with);
	v.iov_base = render(r, status, phrase != NULL ? phrase :
	    hreq_phrase(status), -1, chunked, c->stream_keep, &v.iov_len);
	if (v.iov_base == NULL) {
		conn_abort(c);
		return;
	}
	conn_send(c, &s);
}

void
hreq_chunk(struct hreq *r, struct evbuffer *piece, void (*written)(void *),
    void *arg)
{
	struct conn *c = r->conn;
	size_t n = evbuffer_get_length(piece);
	char size[24];
	struct iovec pre = { size, 0 }, post = { (void *)(uintptr_t)"\r\n", 2 };
	struct send s = { .buf = piece };

	c->written = written;
	c->written_arg = arg;
	if (c->chunked && n > 0) {
		pre.iov_len = (size_t)snprintf(size, sizeof(size), "%zx\r\n", n);
		s.pre = &pre;
		s.npre = 1;
		s.post = &post;
		s.npost = 1;
	}
	conn_send(c, &s);
}

void
hreq_end(struct hreq *r)
{
	struct conn *c = r->conn;
	struct iovec last = { (void *)(uintptr_t)"0\r\n\r\n", 5 };
	struct send s = { .pre = &last, .npre = 1 };

	if (c->chunked)
		conn_send(c, &s);
	c->streaming = 0;
	c->written = NULL;
	conn_replied(c, c->stream_keep);
}

void
hreq_abort(struct hreq *r)
{
	r->conn->written = NULL;	/* its writer is done with it */
	conn_abort(r->conn);
}

void
hreq_interim(struct hreq *r, int status, const struct hlist *fields)
{
	struct conn *c = r->conn;
	const char *conn_v = hl_find(fields, "Connection");
	const struct hfield *f;
	size_t cap = LINE_MAX_;
	char *head, *p;
	struct iovec v;
	struct send s = { .pre = &v, .npre = 1 };

	if (r->minor < 1 || c->replied || c->streaming || c->st == CS_DEAD)
		return;
	HL_FOREACH(f, fields)
		cap += strlen(f->key) + strlen(f->value) + FIELD_SLACK;
	if ((head = p = arena_alloc(&c->scratch, cap)) == NULL)
		return;
	p += snprintf(p, cap, "HTTP/1.1 %d %s\r\n", status,
	    hreq_phrase(status));
	HL_FOREACH(f, fields)
		if (!hdr_is_hop_by_hop(f->key, conn_v) &&
		    strcasecmp(f->key, "Content-Length") != 0)
			put_field(&p, f->key, f->value);
	put(&p, "\r\n", 2);
	v.iov_base = head;
	v.iov_len = (size_t)(p - head);
	conn_send(c, &s);
}

size_t
hreq_backlog(const struct hreq *r)
{
	return conn_backlog(r->conn);
}

int
hreq_gone(const struct hreq *r)
{
	return r->conn->st == CS_DEAD;
}

int
hreq_fd(const struct hreq *r)
{
	return r->conn->st == CS_DEAD ? -1 : r->conn->fd;
}

const char *
hreq_client(const struct hreq *r)
{
	return r->conn->client;
}

int
hreq_tls(const struct hreq *r)
{
	return r->conn->tls;
}

void *
hreq_alloc(struct hreq *r, size_t n)
{
	return arena_alloc(&r->conn->scratch, n);
}

char *
hreq_strndup(struct hreq *r, const char *s, size_t n)
{
	return arena_strndup(&r->conn->scratch, s, n);
}
