/* SPDX-License-Identifier: MIT */
/*
 * Every reply head a client gets: from a stored entry (rendered into the
 * entry once for a plain hit, field by field otherwise), from a live
 * response that streams, or made up by Corral. Calls proxy_hdr.c and
 * the connection's replies (proxy_conn.h) only; the caller says what the
 * reply is (struct reply).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/uio.h>

#include <event2/buffer.h>

#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy_bodyfile.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_reply.h"
#include "proxy/proxy_unzip.h"

#define REPLY_RETRY_AFTER	"1"	/* s: a 503 of Corral's own (the queue
				 * moves as fetches end; a retry waits its turn) */
#define VIA_TOKEN		"1.1 corral"
/* A 405's Allow: the methods the door serves (proxy_frame.c). */
#define REPLY_ALLOW	"GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH"
#define VIA_MAX			1024	/* the origin's Via lines, joined */
#define TAIL_MAX		(CACHE_STATUS_MAX + 80)
#define ETAG_MAX		512	/* an ETag made weak */
#define VARY_CODING		"Accept-Encoding"

size_t
reply_backlog(struct hreq *ev)
{
	return hreq_backlog(ev);
}

/* A 1xx ahead of ev's reply, to an HTTP/1.1 client (proxy_conn.c). */
int
reply_interim(int status, const struct hlist *headers, void *arg)
{
	hreq_interim(arg, status, headers);
	return 0;
}

static void
on_body_sent(const void *data, size_t len, void *arg)
{
	struct cache_entry *e = arg;

	entry_unref(&e);
}

/* The body of e (or its decoded copy, plain) by reference: the entry is
 * kept until it is sent. */
static struct evbuffer *
body_of(struct cache_entry *e, int plain)
{
	struct evbuffer *body;

	if ((body = evbuffer_new()) == NULL)
		return NULL;
	if (evbuffer_add_reference(body, plain ? e->plain : e->body,
	    plain ? e->plain_len : e->body_len, on_body_sent,
	    entry_ref(e)) == 0)
		return body;
	entry_unref(&e);	/* the reference just taken */
	evbuffer_free(body);
	return NULL;
}

/* The targeted fields Corral read are its own, not the client's: are they
 * dropped from this reply? */
static int
strip_targeted(const struct conf_route *rt)
{
	return rt->origin_cache_control && !rt->forward_targeted_cc;
}

/* Writes v in decimal to out (24 bytes); returns out. */
static const char *
fmt_uint(uint64_t v, char out[24])
{
	char *p = out + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return p;
}

/* A hit's Age, in out: the origin's own (if it is a cache too, and sent
 * one valid Age; else origin_age is -1) plus the time e has been stored. */
static const char *
hit_age(const struct cache_entry *e, int64_t origin_age, char out[24])
{
	int64_t age = (util_now_ms() - e->stored_ms) / 1000;

	if (origin_age >= 0)
		age += origin_age;
	return fmt_uint(age > 0 ? (uint64_t)age : 0, out);
}

/*
 * What a reply takes from its entry's stored fields, in one pass: they are
 * end-to-end already (filtered when the entry was made). emit() gets each
 * field to send as it is; Content-Length is Corral's to set, Via and,
 * from the cache, Age are ours to rewrite, and with strip the targeted
 * fields Corral read are its own, not the client's.
 */
/* Via: every hop the origin's Via lines list, then ours, bounded. */
struct via {
	char		 line[VIA_MAX];
	size_t		 len;
};

static void
via_add(struct via *v, const char *hops)
{
	v->len += (size_t)snprintf(v->line + v->len, sizeof(v->line) - v->len,
	    "%s, ", hops);
	if (v->len >= sizeof(v->line))
		v->len = sizeof(v->line) - 1;
}

static const char *
via_end(struct via *v)
{
	snprintf(v->line + v->len, sizeof(v->line) - v->len, VIA_TOKEN);
	return v->line;
}

struct stored_fields {
	struct via	 via;		/* the origin's hops, then ours */
	int64_t		 origin_age;	/* its one valid Age, or -1 */
	int		 has_date;
};

/* A stored field as reply cr has it (NULL: not sent): Corral's marker
 * never, Content-Encoding only when the stored body goes, the ETag weak
 * when the body sent is Corral's making. */
static const char *
coded_value(const struct hfield *h, const struct coding_reply *cr,
    char etag[ETAG_MAX])
{
	if (strcasecmp(h->key, CODING_MARKER) == 0)
		return NULL;
	if (strcasecmp(h->key, "Content-Encoding") == 0)
		return cr->send == cr->stored ? h->value : NULL;
	if (cr->transformed && strcasecmp(h->key, "ETag") == 0)
		return coding_weak_etag(h->value, etag, ETAG_MAX);
	return h->value;
}

static void
stored_fields(const struct cache_entry *e, const struct conf_route *rt,
    int strip, int cached, void (*emit)(void *, const char *, const char *),
    void *arg, struct stored_fields *sf, const struct coding_reply *cr)
{
	const char *origin_age = NULL, *v;
	const struct hfield *h;
	char etag[ETAG_MAX];
	int ages = 0;

	sf->has_date = 0;
	sf->via.len = 0;
	HL_FOREACH(h, &e->headers) {
		if (strcasecmp(h->key, "Via") == 0) {
			via_add(&sf->via, h->value);
		} else if (cached && strcasecmp(h->key, "Age") == 0) {
			origin_age = h->value, ages++;
		} else if (strcasecmp(h->key, "Content-Length") != 0 &&
		    !(strip && hdr_is_targeted(h->key, rt)) &&
		    (v = coded_value(h, cr, etag)) != NULL) {
			sf->has_date |= strcasecmp(h->key, "Date") == 0;
			emit(arg, h->key, v);
		}
	}
	if (cr->vary)
		emit(arg, "Vary", VARY_CODING);
	via_end(&sf->via);
	sf->origin_age = ages == 1 ? hdr_delta_seconds(origin_age) : -1;
}

static void
emit_header(void *arg, const char *name, const char *value)
{
	hl_add(arg, name, value);
}

static void
emit_line(void *arg, const char *name, const char *value)
{
	evbuffer_add_printf(arg, "%s: %s\r\n", name, value);
}

/*
 * What a rendered head depends on besides its entry: whether the targeted
 * fields are dropped, and which they are (a reload may change them).
 */
static uint64_t
head_tag(const struct conf_route *rt, int strip)
{
	return strip ? util_hash(rt->targeted_cc) | 2 : 1;
}

/*
 * The part of a hit's head that is the same for every hit of e, rendered
 * into e once: the stored fields (end-to-end already) but Via, Age,
 * Content-Length and, with strip, the targeted fields Corral consumed;
 * Via with ours last; a Date if the origin sent none; Content-Length.
 * e->origin_age is the origin's Age to add, -1 if none counts.
 */
static int
render_head(struct cache_entry *e, const struct conf_route *rt, int strip,
    uint64_t tag, const struct coding_reply *cr, int plain)
{
	struct evbuffer *b = evbuffer_new();
	struct stored_fields sf;
	char date[64], *head;
	size_t len;

	if (b == NULL)
		return -1;
	stored_fields(e, rt, strip, 1, emit_line, b, &sf, cr);
	evbuffer_add_printf(b, "Via: %s\r\n", sf.via.line);
	if (!sf.has_date) {
		hdr_format_date(e->stored_ms, date, sizeof(date));
		evbuffer_add_printf(b, "Date: %s\r\n", date);
	}
	evbuffer_add_printf(b, "Content-Length: %zu\r\n", plain ?
	    e->plain_len : e->body_len);
	len = evbuffer_get_length(b);
	if ((head = malloc(len)) == NULL ||
	    evbuffer_remove(b, head, len) != (int)len) {
		free(head);
		evbuffer_free(b);
		return -1;
	}
	evbuffer_free(b);
	free(plain ? e->plain_head : e->head);
	*(plain ? &e->plain_head : &e->head) = head;
	*(plain ? &e->plain_head_len : &e->head_len) = len;
	*(plain ? &e->plain_head_tag : &e->head_tag) = tag;
	e->origin_age = sf.origin_age;
	return 0;
}

/*
 * A hit with a body, as HTTP/1.1: its head is the entry's rendering plus
 * two lines, the body the entry's own (or, plain, its decoded copy), by
 * reference; nothing is built field by field, and nothing is allocated
 * when the socket takes it all. 0 if this reply does not qualify, and
 * nothing was sent.
 */
static int
reply_rendered(struct reply *r, struct cache_entry *e,
    const struct coding_reply *cr, uint64_t *sentp)
{
	struct hreq *ev = r->ev;
	int strip = strip_targeted(r->rt), plain = cr->send != cr->stored;
	uint64_t tag = head_tag(r->rt, strip);
	char tail[TAIL_MAX], num[24];
	struct iovec parts[2];
	int file;

	if (e->body_len == 0 || r->head || r->conditional || ev->minor != 1 ||
	    (plain && coding_plain(e, r->max_decoded) == -1))
		return 0;
	if (((plain ? e->plain_head : e->head) == NULL ||
	    (plain ? e->plain_head_tag : e->head_tag) != tag) &&
	    render_head(e, r->rt, strip, tag, cr, plain) == -1)
		return 0;
	parts[0].iov_base = plain ? e->plain_head : e->head;
	parts[0].iov_len = plain ? e->plain_head_len : e->head_len;
	parts[1].iov_base = tail;
	parts[1].iov_len = (size_t)snprintf(tail, sizeof(tail),
	    "Cache-Status: %s\r\nAge: %s\r\n", r->cache_status,
	    hit_age(e, e->origin_age, num));
	if (r->record)	/* the access record names it */
		(void)hl_add(&ev->out, "Cache-Status", r->cache_status);
	if (r->closing)
		(void)hl_add(&ev->out, "Connection", "close");
	*sentp = plain ? e->plain_len : e->body_len;
	file = hreq_sends_files(ev) ? bodyfile_of(e, plain, r->max_file_bytes) :
	    -1;
	hreq_reply_rendered(ev, e->status, parts, 2, plain ? e->plain :
	    e->body, *sentp, file, on_body_sent, entry_ref(e));
	r->decoded = plain;
	return 1;
}

uint64_t
reply_error(struct reply *r, int code, const char *phrase, const char *text)
{
	struct hlist *out = (&(r->ev)->out);
	struct evbuffer *body;
	uint64_t sent;

	hl_add(out, "Via", VIA_TOKEN);
	hl_add(out, "Cache-Status", r->cache_status);
	hl_add(out, "Content-Type", "text/plain");
	hl_add(out, "Connection", "close");
	if (code == HTTP_SERVUNAVAIL)	/* no origin slot, or stopping */
		hl_add(out, "Retry-After", REPLY_RETRY_AFTER);
	if (code == HTTP_BADMETHOD)	/* what the public port serves */
		hl_add(out, "Allow", REPLY_ALLOW);
	if (r->challenge != NULL)	/* RFC 9110 15.5.2 */
		hl_add(out, "WWW-Authenticate", r->challenge);
	if ((body = evbuffer_new()) != NULL)
		evbuffer_add_printf(body, "%d %s\n", code, text);
	sent = body != NULL && !r->head ? evbuffer_get_length(body) : 0;
	hreq_reply(r->ev, code, phrase, r->head ? NULL : body);
	if (body != NULL)
		evbuffer_free(body);
	return sent;
}

/* The body of e a reply sends, with its length in *len: the stored one
 * by reference, or (decode) decoded to identity: plain, the copy kept
 * with e. NULL: none could be made. With only the length asked for
 * (HEAD), body is not made. */
static struct evbuffer *
sent_body(struct reply *r, struct cache_entry *e, int decode, int plain,
    size_t *len)
{
	struct evbuffer *body;

	*len = e->body_len;
	if (!decode)
		return r->head ? NULL : body_of(e, 0);
	/* A copy kept with the entry serves every such client alike. */
	if (plain) {
		*len = e->plain_len;
		r->decoded = 1;
		return r->head ? NULL : body_of(e, 1);
	}
	if (r->head) {
		(void)coding_decode(e, r->max_decoded, NULL, len);
		return NULL;
	}
	if ((body = evbuffer_new()) != NULL &&
	    coding_decode(e, r->max_decoded, body, len) == CODEC_OK) {
		r->decoded = 1;
		return body;
	}
	if (body != NULL)
		evbuffer_free(body);
	return NULL;
}

/* The rest of an entry's reply, its fields given: its body (decode: to
 * identity), or with HEAD its length. The body bytes sent. */
static uint64_t
reply_body(struct reply *r, struct cache_entry *e, int decode)
{
	struct evbuffer *body;
	char num[24];
	size_t len;
	int plain = decode && e->body_len > 0 &&
	    coding_plain(e, r->max_decoded) == 0;

	/* No decoded copy could be kept: decoded as the client takes it. */
	if (decode && !plain && e->body_len > 0 && !r->head &&
	    unzip_reply(r->ev, e->status, e, r->max_decoded, &len) == 0) {
		r->decoded = 1;
		return len;
	}
	body = e->body_len > 0 ? sent_body(r, e, decode, plain, &len) : NULL;
	if (r->head || e->body_len == 0) {
		if (r->head && e->status != 204 && e->status != 304) {
			snprintf(num, sizeof(num), "%zu", e->body_len > 0 ?
			    len : 0);
			hl_add(&r->ev->out, "Content-Length",
			    r->head_length[0] != '\0' ? r->head_length : num);
		}
		hreq_reply(r->ev, e->status, NULL, NULL);
		return 0;
	}
	if (body == NULL) {
		hreq_reply(r->ev, HTTP_SERVUNAVAIL, NULL, NULL);
		return 0;
	}
	hreq_reply(r->ev, e->status, NULL, body);
	evbuffer_free(body);
	return len;
}

uint64_t
reply_entry(struct reply *r, struct cache_entry *e)
{
	struct hlist *out = (&(r->ev)->out);
	char num[24], date[64];
	struct stored_fields sf;
	struct coding_reply cr = { ACCEPT_SEND, CODING_IDENTITY,
	    CODING_IDENTITY, 0, 0 };
	uint64_t sent;

	if (r->cached)	/* a pass's body is as its client asked */
		coding_choose(&r->ev->in, e, &cr);
	if (cr.verdict == ACCEPT_NOT_ACCEPTABLE) {
		r->not_acceptable = 1;
		return reply_error(r, HTTP_NOTACCEPTABLE, NULL,
		    "Not Acceptable: no coding of this response is");
	}
	if (r->cached && reply_rendered(r, e, &cr, &sent))
		return sent;
	stored_fields(e, r->rt, strip_targeted(r->rt), r->cached, emit_header,
	    out, &sf, &cr);
	hl_add(out, "Via", sf.via.line);
	if (r->closing)
		hl_add(out, "Connection", "close");
	hl_add(out, "Cache-Status", r->cache_status);
	if (r->cached) {
		hl_add(out, "Age", hit_age(e, sf.origin_age, num));
		if (!sf.has_date) {
			hdr_format_date(e->stored_ms, date, sizeof(date));
			hl_add(out, "Date", date);
		}
		if (e->status == 200 && r->conditional && hdr_not_modified(
		    (&(r->ev)->in), &e->headers)) {
			r->not_modified = 1;
			hl_remove(out, "Content-Type");
			hreq_reply(r->ev, HTTP_NOTMODIFIED, NULL, NULL);
			return 0;
		}
	}
	return reply_body(r, e, cr.send != cr.stored);
}

void
reply_stream_head(struct reply *r, const struct upstream_response *resp)
{
	struct hlist *out = (&(r->ev)->out);
	const char *cl = hl_find(&resp->headers, "Content-Length");
	const char *conn = hl_find(&resp->headers, "Connection");
	int strip = strip_targeted(r->rt);
	const struct hfield *h;
	struct via via = { .len = 0 };
	char date[64];

	HL_FOREACH(h, &resp->headers) {
		/* End-to-end ones, as an entry keeps them. */
		if (strcasecmp(h->key, "Via") == 0)
			via_add(&via, h->value);
		else if (!hdr_is_hop_by_hop(h->key, conn) &&
		    strcasecmp(h->key, "Content-Length") != 0 &&
		    !(strip && hdr_is_targeted(h->key, r->rt)))
			hl_add(out, h->key, h->value);
	}
	hl_add(out, "Via", via_end(&via));
	if (coding_reply_varies(&resp->headers, r->rt))
		hl_add(out, "Vary", VARY_CODING);
	if (cl != NULL)		/* checked by the upstream side */
		hl_add(out, "Content-Length", cl);
	if (hl_find(out, "Date") == NULL) {
		hdr_format_date(util_now_ms(), date, sizeof(date));
		hl_add(out, "Date", date);
	}
	hl_add(out, "Cache-Status", r->cache_status);
	if (r->closing)
		hl_add(out, "Connection", "close");
	hreq_start(r->ev, resp->status, NULL);
}

void
reply_peer_head(struct hreq *ev, const struct upstream_response *resp)
{
	struct hlist *out = &ev->out;
	const char *cl = hl_find(&resp->headers, "Content-Length");

	hdr_copy(&resp->headers, out, HDR_DROP_LENGTH);
	if (cl != NULL)
		hl_add(out, "Content-Length", cl);
	hreq_start(ev, resp->status, NULL);
}

const char *
reply_phrase(int status)
{
	return hreq_phrase(status);
}
