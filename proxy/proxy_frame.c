/* SPDX-License-Identifier: MIT */
/*
 * The strict reader of the client's byte stream (see proxy_frame.h). Its
 * rules follow RFC 9112: the request line (section 3), field lines
 * (section 5), message body length (section 6.3) and chunked coding
 * (section 7.1). Where the RFC lets a server be lenient, this one is not:
 * a bare LF ends no line, whitespace before a colon and obs-fold are
 * errors, and a transfer coding other than a single chunked is refused.
 * A head that passes is indexed where it lies: its names and values are
 * ended with NULs in the door's buffer and listed, so that nothing of it
 * is copied again.
 */

#include "proxy/proxy_frame.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "common/host.h"
#include "proxy/proxy_frame_int.h"

#define FRAME_MAGIC	0x46524d45u	/* "FRME" */
#define BUF_INITIAL	512
#define CHUNK_LINE_MAX	1024	/* a chunk-size line with its extensions */
#define LENGTH_DIGITS	18	/* Content-Length digits: below 10^18 */
#define FIELDS_INITIAL	32

enum state {
	ST_HEAD,	/* a head, line by line, into buf */
	ST_LENGTH,	/* left bytes of a Content-Length body */
	ST_CHUNK_LINE,	/* chunk-size [ chunk-ext ] CRLF, into buf */
	ST_CHUNK_DATA,	/* left bytes of a chunk's data */
	ST_CHUNK_CR,	/* the CRLF after a chunk's data */
	ST_CHUNK_LF,
	ST_TRAILER,	/* trailer lines into buf, until an empty one */
	ST_REJECTED	/* answered: nothing more is read */
};

enum framing {
	BODY_NONE,
	BODY_LENGTH,
	BODY_CHUNKED
};

struct buf {
	char		*p;
	size_t		 len, cap;
};

struct frame {
	uint32_t	 magic;
	enum state	 st;
	size_t		 head_max;
	uint64_t	 body_max;
	struct buf	 head;		/* the head being read, or held */
	size_t		 line;		/* where head's current line starts */
	struct buf	 chunk_line;	/* a chunk-size or trailer line */
	struct frame_field *fields;	/* the head's, indexed */
	size_t		 fields_cap;
	size_t		 skipped;	/* empty lines before a request line */
	size_t		 trailers;	/* bytes of trailer lines */
	uint64_t	 left;		/* of the body or the chunk */
	uint64_t	 body;		/* body bytes of this request */
	int		 discard;	/* a HEAD's body: read and dropped */
	int		 paused;	/* the last end asked to stop */
	int		 host_rules;	/* Host: once, and the target's */
	const struct frame_ops *ops;	/* of the frame_feed() under way */
	void		*arg;
	int		 status;
	const char	*reason;
	uint64_t	 requests;
};

/* What a head says about its message. */
struct head {
	const char	*method;
	size_t		 method_len;
	const char	*authority;	/* absolute-form's, or NULL */
	size_t		 authority_len;
	int		 minor;		/* HTTP/1.minor */
	int		 hosts;
	const char	*host;
	size_t		 host_len;
	int		 lengths;	/* Content-Length lines */
	uint64_t	 length;
	int		 encodings;	/* Transfer-Encoding lines */
	int		 codings;	/* transfer codings named */
	int		 chunked;	/* of them, chunked */
	int		 last_chunked;	/* the final one is chunked */
	int		 expect_continue;	/* Expect: 100-continue */
};

static int
reject(struct frame *f, int status, const char *reason)
{
	f->st = ST_REJECTED;
	f->status = status;
	f->reason = reason;
	return -1;
}

struct frame *
frame_new(size_t head_max, uint64_t body_max)
{
	struct frame *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->magic = FRAME_MAGIC;
	f->st = ST_HEAD;
	f->reason = "";
	f->host_rules = 1;
	frame_set_limits(f, head_max, body_max);
	return f;
}

void
frame_free(struct frame **fp)
{
	struct frame *f = *fp;

	if (f == NULL)
		return;
	assert(f->magic == FRAME_MAGIC);
	f->magic = 0;
	free(f->head.p);
	free(f->chunk_line.p);
	free(f->fields);
	free(f);
	*fp = NULL;
}

void
frame_set_limits(struct frame *f, size_t head_max, uint64_t body_max)
{
	assert(f->magic == FRAME_MAGIC);
	f->head_max = head_max;
	f->body_max = body_max;
}

void
frame_set_host_rules(struct frame *f, int on)
{
	f->host_rules = on;
}

int
frame_status(const struct frame *f)
{
	return f->status;
}

const char *
frame_reason(const struct frame *f)
{
	return f->reason;
}

int
frame_idle(const struct frame *f)
{
	return f->st == ST_HEAD && f->head.len == 0;
}

int
frame_in_body(const struct frame *f)
{
	return f->st != ST_HEAD && f->st != ST_REJECTED;
}

uint64_t
frame_requests(const struct frame *f)
{
	return f->requests;
}

uint64_t
frame_body_bytes(const struct frame *f)
{
	return f->body;
}

static int
name_is(const char *name, size_t n, const char *want)
{
	return n == strlen(want) && strncasecmp(name, want, n) == 0;
}

/* The next element of the comma-separated list [*p, end), without OWS;
 * empty elements are skipped (RFC 9110 section 5.6.1). 0 at the end. */
static int
list_next(const char **p, const char *end, const char **el, size_t *n)
{
	for (;;) {
		const char *s = *p, *e;

		if (s >= end)
			return 0;
		if ((e = memchr(s, ',', (size_t)(end - s))) == NULL)
			e = end;
		*p = e < end ? e + 1 : end;
		while (s < e && is_ows((unsigned char)*s))
			s++;
		while (e > s && is_ows((unsigned char)e[-1]))
			e--;
		if (e > s) {
			*el = s;
			*n = (size_t)(e - s);
			return 1;
		}
	}
}

/* ---- the request line ---------------------------------------------------- */

/* Is the request's method m? Methods are case-sensitive. */
static int
method_is(const struct head *h, const char *m)
{
	return h->method_len == strlen(m) &&
	    memcmp(h->method, m, h->method_len) == 0;
}

/* request-target (RFC 9112 section 3.2): origin-form, absolute-form with
 * an http or https authority, or asterisk-form for OPTIONS. Percent-
 * encoding is the client's job: no CTL, space, '#' or byte over 0x7e, and
 * every '%' starts a pct-encoded byte (RFC 3986 2.1): "%zz" is refused,
 * not kept as "%25zz", so the two never share a cache key. */
static int
check_target(struct frame *f, struct head *h, const char *t, size_t n)
{
	static const char *const schemes[] = { "http://", "https://" };
	struct host parsed;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];

		if (c <= 0x20 || c >= 0x7f)
			return reject(f, 400,
			    "control byte or space in the target");
		if (c == '#')
			return reject(f, 400, "fragment in the target");
		if (c == '%' && (i + 2 >= n ||
		    !is_hex((unsigned char)t[i + 1]) ||
		    !is_hex((unsigned char)t[i + 2])))
			return reject(f, 400,
			    "invalid percent-encoding in the target");
	}
	if (t[0] == '/')
		return 0;
	if (n == 1 && t[0] == '*')
		return method_is(h, "OPTIONS") ? 0 :
		    reject(f, 400, "asterisk-form other than OPTIONS");
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t sl = strlen(schemes[i]);
		const char *a = t + sl;

		if (n <= sl || strncasecmp(t, schemes[i], sl) != 0)
			continue;
		h->authority = a;
		for (h->authority_len = 0; h->authority_len < n - sl &&
		    a[h->authority_len] != '/' && a[h->authority_len] != '?';
		    h->authority_len++)
			;
		if (host_parse(a, h->authority_len, &parsed) == -1)
			return reject(f, 400, "bad authority in the target");
		return 0;
	}
	return reject(f, 400, "target is not origin-form or absolute-form");
}

/*
 * The methods the public port serves (proxy_http.c's PUBLIC_METHODS).
 * Any other is refused here, counted and logged like every refusal, with
 * what to do instead: PURGE and BAN are told where purges go, TRACE is 405
 * (with Allow), the rest 501 (RFC 9110 15.5.6, 15.6.2).
 */
static int
check_method(struct frame *f, const struct head *h)
{
	static const char *const served[] = {
		"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"
	};

	for (size_t i = 0; i < sizeof(served) / sizeof(served[0]); i++)
		if (method_is(h, served[i]))
			return 0;
	if (method_is(h, "PURGE") || method_is(h, "BAN"))
		return reject(f, 405, "purges go to the admin listener: "
		    "POST /purge?url=URL (or prefix=, tag=)");
	if (method_is(h, "TRACE"))
		return reject(f, 405, "TRACE is not served");
	return reject(f, 501, method_is(h, "CONNECT") ?
	    "CONNECT not supported" : "method not implemented");
}

/*
 * method SP request-target SP HTTP-version. A line of method SP target
 * alone is HTTP/0.9's, whose client sends nothing after it: it is
 * answered 505 (RFC 9110 15.6.6, a major version not served) at once.
 */
static int
check_request_line(struct frame *f, struct head *h, const char *p, size_t n)
{
	const char *sp1, *sp2, *v;
	size_t vn;

	if ((sp1 = memchr(p, ' ', n)) != NULL && sp1 > p && sp1 + 1 < p + n &&
	    sp1[1] == '/' && is_token(p, (size_t)(sp1 - p)) &&
	    memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - p)) == NULL)
		return reject(f, 505, "HTTP/0.9 request line");
	if (sp1 == NULL ||
	    (sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - p))) == NULL)
		return reject(f, 400, "malformed request line");
	h->method = p;
	h->method_len = (size_t)(sp1 - p);
	if (!is_token(h->method, h->method_len))
		return reject(f, 400, "method is not a token");
	v = sp2 + 1;
	vn = n - (size_t)(v - p);
	if (vn == 8 && memcmp(v, "HTTP/1.", 7) == 0 &&
	    (v[7] == '0' || v[7] == '1'))
		h->minor = v[7] - '0';
	else if (vn == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' &&
	    v[5] <= '9' && v[6] == '.' && v[7] >= '0' && v[7] <= '9')
		return reject(f, 505, "HTTP version not supported");
	else
		return reject(f, 400, "malformed request line");
	if (sp2 == sp1 + 1)
		return reject(f, 400, "malformed request line");
	if (check_method(f, h) == -1)
		return -1;
	return check_target(f, h, sp1 + 1, (size_t)(sp2 - sp1 - 1));
}

/* ---- field lines --------------------------------------------------------- */

/* field-name ":" OWS field-value OWS, with no whitespace before the colon
 * and no obs-fold. The name is p[0..*name_len); *value (trimmed) points
 * into p. */
static int
check_field(struct frame *f, const char *p, size_t n, size_t *name_len,
    const char **value, size_t *vn)
{
	const char *colon, *v, *e;

	if (n > 0 && is_ows((unsigned char)p[0]))
		return reject(f, 400, "obs-fold (line starts with whitespace)");
	if ((colon = memchr(p, ':', n)) == NULL)
		return reject(f, 400, "field line without a colon");
	if (colon > p && is_ows((unsigned char)colon[-1]))
		return reject(f, 400, "whitespace before a colon");
	if (!is_token(p, (size_t)(colon - p)))
		return reject(f, 400, "field name is not a token");
	for (v = colon + 1; v < p + n; v++)
		if (!is_field_byte((unsigned char)*v))
			return reject(f, 400, "control byte in a field value");
	v = colon + 1;
	e = p + n;
	while (v < e && is_ows((unsigned char)*v))
		v++;
	while (e > v && is_ows((unsigned char)e[-1]))
		e--;
	*name_len = (size_t)(colon - p);
	*value = v;
	*vn = (size_t)(e - v);
	return 0;
}

/* Content-Length = 1*DIGIT, once: RFC 9112 section 6.3 lets a server
 * take repeated identical values as one, but a next hop might not. */
static int
note_length(struct frame *f, struct head *h, const char *v, size_t vn)
{
	if (++h->lengths > 1)
		return reject(f, 400, "more than one Content-Length");
	if (vn == 0)
		return reject(f, 400, "bad Content-Length");
	for (size_t i = 0; i < vn; i++)
		if (v[i] < '0' || v[i] > '9')
			return reject(f, 400, "bad Content-Length");
	if (vn > LENGTH_DIGITS)
		return reject(f, 413, "body too large");
	h->length = 0;
	for (size_t i = 0; i < vn; i++)
		h->length = h->length * 10 + (uint64_t)(v[i] - '0');
	return 0;
}

/* transfer-coding names, in order; parameters are not taken. */
static int
note_encoding(struct frame *f, struct head *h, const char *v, size_t vn)
{
	const char *p = v, *el;
	size_t n;

	h->encodings++;
	while (list_next(&p, v + vn, &el, &n)) {
		if (!is_token(el, n))
			return reject(f, 400, "bad Transfer-Encoding");
		h->codings++;
		h->last_chunked = name_is(el, n, "chunked");
		h->chunked += h->last_chunked;
	}
	return 0;
}

/* uri-host [ ":" port ] as common/host.h takes it, or empty (RFC 9112
 * 3.2: a target without an authority): no byte another server could read
 * otherwise, no empty port, no port that is not digits. */
static int
note_host(struct frame *f, struct head *h, const char *v, size_t vn)
{
	struct host parsed;

	if (f->host_rules && vn > 0 && host_parse(v, vn, &parsed) == -1)
		return reject(f, 400, "bad Host");
	h->hosts++;
	h->host = v;
	h->host_len = vn;
	return 0;
}

/* Expect (RFC 9110 10.1.1), from an HTTP/1.1 client: 100-continue, or
 * refused with 417. An HTTP/1.0 client's is ignored: it waits for no
 * interim response. */
static int
note_expect(struct frame *f, struct head *h, const char *v, size_t vn)
{
	if (h->minor == 0)
		return 0;
	if (!name_is(v, vn, "100-continue"))
		return reject(f, 417, "expectation not supported");
	h->expect_continue = 1;
	return 0;
}

/* RFC 9112 3.2: one Host, in HTTP/1.1, and an absolute-form target's
 * authority the same. */
static int
check_hosts(struct frame *f, const struct head *h)
{
	if (h->hosts > 1)
		return reject(f, 400, "more than one Host");
	if (h->hosts == 0 && h->minor == 1)
		return reject(f, 400, "HTTP/1.1 request without Host");
	if (h->authority != NULL && h->hosts == 1 &&
	    (h->host_len != h->authority_len ||
	    strncasecmp(h->host, h->authority, h->host_len) != 0))
		return reject(f, 400,
		    "Host differs from the target's authority");
	return 0;
}

/* Walks the lines of buf: the next one, without its CRLF. */
static int
next_line(const char *buf, size_t len, size_t *off, const char **line,
    size_t *n)
{
	const char *lf;

	if (*off >= len)
		return 0;
	lf = memchr(buf + *off, '\n', len - *off);
	assert(lf != NULL && lf > buf + *off && lf[-1] == '\r');
	*line = buf + *off;
	*n = (size_t)(lf - *line) - 1;
	*off = (size_t)(lf - buf) + 1;
	return 1;
}

static int
is_framing(const char *name, size_t n)
{
	return name_is(name, n, "Content-Length") ||
	    name_is(name, n, "Transfer-Encoding");
}

/* The rules of RFC 9112 sections 3.2, 5 and 6, in that order. */
static int
check_head(struct frame *f, struct head *h, enum framing *framing)
{
	const char *line, *v;
	size_t off = 0, n, name, vn;

	memset(h, 0, sizeof(*h));
	next_line(f->head.p, f->head.len, &off, &line, &n);
	if (check_request_line(f, h, line, n) == -1)
		return -1;
	while (next_line(f->head.p, f->head.len, &off, &line, &n) && n > 0) {
		if (check_field(f, line, n, &name, &v, &vn) == -1)
			return -1;
		if (name_is(line, name, "Content-Length") &&
		    note_length(f, h, v, vn) == -1)
			return -1;
		if (name_is(line, name, "Transfer-Encoding") &&
		    note_encoding(f, h, v, vn) == -1)
			return -1;
		if (name_is(line, name, "Host") && note_host(f, h, v, vn) == -1)
			return -1;
		if (name_is(line, name, "Expect") &&
		    note_expect(f, h, v, vn) == -1)
			return -1;
	}
	if (f->host_rules && check_hosts(f, h) == -1)
		return -1;
	*framing = BODY_NONE;
	if (h->encodings > 0) {
		if (h->minor == 0)
			return reject(f, 400, "Transfer-Encoding in HTTP/1.0");
		if (h->lengths > 0)
			return reject(f, 400,
			    "Content-Length with Transfer-Encoding");
		if (h->codings == 0 || !h->last_chunked)
			return reject(f, 400,
			    "chunked is not the final coding");
		if (h->chunked > 1)
			return reject(f, 400, "chunked applied twice");
		if (h->codings > 1)
			return reject(f, 501, "transfer coding not supported");
		*framing = BODY_CHUNKED;
	} else if (h->lengths > 0) {
		if (h->length > f->body_max)
			return reject(f, 413, "body too large");
		*framing = BODY_LENGTH;
	}
	return 0;
}

/* Room for one more field in the index; -1 when out of memory. */
static int
fields_room(struct frame *f, size_t k)
{
	struct frame_field *v;
	size_t cap;

	if (k < f->fields_cap)
		return 0;
	cap = f->fields_cap > 0 ? f->fields_cap * 2 : FIELDS_INITIAL;
	if ((v = realloc(f->fields, cap * sizeof(*v))) == NULL)
		return -1;
	f->fields = v;
	f->fields_cap = cap;
	return 0;
}

/*
 * The head that passed check_head(), indexed where it lies: NULs end the
 * method, the target, each field's name and its value (without OWS), and
 * the fields are listed but for the framing lines. -1 when out of memory.
 */
static int
index_head(struct frame *f, struct frame_head *out)
{
	char *buf = f->head.p, *sp1, *sp2;
	const char *line, *v;
	size_t off = 0, n, name, vn, k = 0;

	next_line(buf, f->head.len, &off, &line, &n);
	sp1 = memchr(buf, ' ', n);
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - buf));
	*sp1 = *sp2 = '\0';
	out->method = buf;
	out->target = sp1 + 1;
	while (next_line(buf, f->head.len, &off, &line, &n) && n > 0) {
		(void)check_field(f, line, n, &name, &v, &vn);
		if (is_framing(line, name))
			continue;
		if (fields_room(f, k) == -1)
			return -1;
		buf[line - f->head.p + (ptrdiff_t)name] = '\0';
		buf[v - f->head.p + (ptrdiff_t)vn] = '\0';
		f->fields[k].name = line;
		f->fields[k++].value = v;
	}
	out->fields = f->fields;
	out->nfields = k;
	return 0;
}

/* A request has been read whole: the head is kept until the next one
 * begins (the next frame_feed()), and the caller may ask to stop. */
static int
end_message(struct frame *f)
{
	f->st = ST_HEAD;
	f->head.len = f->line = 0;
	f->paused = f->ops->end(f->arg) != 0;
	return 0;
}

/*
 * A whole head is in f->head: check it, index it and hand it on; then its
 * body, if it has one. A HEAD's body is read and dropped.
 */
static int
end_head(struct frame *f)
{
	struct head h;
	enum framing framing;
	struct frame_head out;

	if (check_head(f, &h, &framing) == -1)
		return -1;
	f->discard = method_is(&h, "HEAD");
	f->body = 0;
	f->skipped = 0;
	memset(&out, 0, sizeof(out));
	if (index_head(f, &out) == -1)
		return reject(f, 503, "out of memory");
	out.minor = h.minor;
	out.body = f->discard ? FRAME_BODY_NONE : framing == BODY_CHUNKED ?
	    FRAME_BODY_CHUNKED : framing == BODY_LENGTH ? FRAME_BODY_LENGTH :
	    FRAME_BODY_NONE;
	out.length = out.body == FRAME_BODY_LENGTH ? h.length : 0;
	out.dropped = framing != BODY_NONE && f->discard;
	out.expect_continue = h.expect_continue;
	f->requests++;
	f->ops->head(f->arg, &out);
	if (framing == BODY_CHUNKED) {
		f->st = ST_CHUNK_LINE;
		f->trailers = 0;
	} else if (framing == BODY_LENGTH && h.length > 0) {
		f->st = ST_LENGTH;
		f->left = h.length;
	} else {
		return end_message(f);
	}
	return 0;
}

/* ---- chunked coding (RFC 9112 section 7.1) ------------------------------- */

static int
end_chunk_line(struct frame *f, const char *line, size_t n)
{
	const char *why;
	uint64_t size;
	int status;

	if ((status = chunk_line_parse(line, n, &size, &why)) != 0)
		return reject(f, status, why);
	if (size > f->body_max - f->body)
		return reject(f, 413, "body too large");
	if (size == 0) {
		f->st = ST_TRAILER;
		return 0;
	}
	f->body += size;
	f->left = size;
	f->st = ST_CHUNK_DATA;
	return 0;
}

/* A trailer field is checked like any field, and dropped; the empty line
 * ends the body. */
static int
end_trailer_line(struct frame *f, const char *line, size_t n)
{
	const char *v;
	size_t name, vn;

	if (n > 0)
		return check_field(f, line, n, &name, &v, &vn);
	return end_message(f);
}

/* ---- the driver ---------------------------------------------------------- */

/* Appends n bytes to b; -1 if out of memory. */
static int
buf_add(struct buf *b, const char *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap > 0 ? b->cap : BUF_INITIAL;
		char *nb;

		while (cap < b->len + n)
			cap *= 2;
		if ((nb = realloc(b->p, cap)) == NULL)
			return -1;
		b->p = nb;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* Appends p up to its first LF to b, up to max bytes in b. The bytes
 * used, or 0 when over max (or out of memory: *nomem). */
static size_t
take_line(struct buf *b, const char *p, size_t n, size_t max, int *done,
    int *nomem)
{
	const char *lf = memchr(p, '\n', n);
	size_t take = lf != NULL ? (size_t)(lf - p) + 1 : n;

	*done = lf != NULL;
	*nomem = 0;
	if (take > max || b->len > max - take)
		return 0;
	if (buf_add(b, p, take) == -1) {
		*nomem = 1;
		return 0;
	}
	return take;
}

/* A line of the head has come: the empty line ends it. */
static int
head_line(struct frame *f)
{
	size_t n = f->head.len - f->line;
	struct head h;

	if (n == 2 && f->line == 0) {
		/* RFC 9112 section 2.2: empty lines before a request line
		 * are ignored, within the head's limit. */
		f->skipped += 2;
		f->head.len = 0;
		return f->skipped > f->head_max ?
		    reject(f, 400, "too many empty lines") : 0;
	}
	if (n == 2)
		return end_head(f);
	/* The request line is judged as soon as it ends: a client that
	 * waits for the answer (HTTP/0.9) sends no more lines. */
	if (f->line == 0) {
		memset(&h, 0, sizeof(h));
		if (check_request_line(f, &h, f->head.p, n - 2) == -1)
			return -1;
	}
	f->line = f->head.len;
	return 0;
}

/* The bytes a line-reading state takes from p; -1 once rejected. */
static ssize_t
feed_line(struct frame *f, const char *p, size_t n)
{
	enum state was = f->st;
	struct buf *b = was == ST_HEAD ? &f->head : &f->chunk_line;
	size_t max, used, start;
	int done, nomem, rc;

	if (f->st == ST_HEAD)
		max = f->head_max;
	else if (f->st == ST_CHUNK_LINE)
		max = CHUNK_LINE_MAX;
	else
		max = f->trailers < f->head_max ?
		    f->head_max - f->trailers : 0;
	start = f->st == ST_HEAD ? f->line : 0;
	if ((used = take_line(b, p, n, max, &done, &nomem)) == 0) {
		if (nomem)
			return reject(f, 503, "out of memory");
		if (f->st == ST_HEAD)
			return f->line == 0 ?
			    reject(f, 414, "request line too long") :
			    reject(f, 431, "request head too large");
		if (f->st == ST_CHUNK_LINE)
			return reject(f, 400, "chunk extensions too long");
		return reject(f, 431, "trailer section too large");
	}
	if (!done)
		return (ssize_t)used;
	if (b->len - start < 2 || b->p[b->len - 2] != '\r')
		return reject(f, 400, "line not ended by CRLF");
	if (was == ST_HEAD)
		rc = head_line(f);
	else if (was == ST_CHUNK_LINE)
		rc = end_chunk_line(f, b->p, b->len - 2);
	else {
		f->trailers += b->len;
		rc = end_trailer_line(f, b->p, b->len - 2);
	}
	if (was != ST_HEAD)
		b->len = 0;
	return rc == -1 ? -1 : (ssize_t)used;
}

/* Body bytes: handed on, or dropped. -1 once rejected. */
static ssize_t
feed_data(struct frame *f, const char *p, size_t n)
{
	size_t take = n < f->left ? n : (size_t)f->left;

	if (!f->discard)
		f->ops->body(f->arg, p, take);
	if (f->st == ST_LENGTH)
		f->body += take;
	if ((f->left -= take) > 0)
		return (ssize_t)take;
	if (f->st == ST_LENGTH)
		end_message(f);
	else
		f->st = ST_CHUNK_CR;
	return (ssize_t)take;
}

/* The CRLF after a chunk's data, a byte at a time. */
static ssize_t
feed_crlf(struct frame *f, const char *p)
{
	if (*p != (f->st == ST_CHUNK_CR ? '\r' : '\n'))
		return reject(f, 400, "chunk data not followed by CRLF");
	f->st = f->st == ST_CHUNK_CR ? ST_CHUNK_LF : ST_CHUNK_LINE;
	return 1;
}

enum frame_result
frame_feed(struct frame *f, const char *p, size_t n, size_t *usedp,
    const struct frame_ops *ops, void *arg)
{
	ssize_t used;

	assert(f->magic == FRAME_MAGIC);
	f->ops = ops;
	f->arg = arg;
	f->paused = 0;
	*usedp = 0;
	while (n > 0 && f->st != ST_REJECTED && !f->paused) {
		switch (f->st) {
		case ST_HEAD:
		case ST_CHUNK_LINE:
		case ST_TRAILER:
			used = feed_line(f, p, n);
			break;
		case ST_LENGTH:
		case ST_CHUNK_DATA:
			used = feed_data(f, p, n);
			break;
		case ST_CHUNK_CR:
		case ST_CHUNK_LF:
			used = feed_crlf(f, p);
			break;
		default:
			used = -1;
			break;
		}
		if (used < 0)
			break;
		p += used;
		n -= (size_t)used;
		*usedp += (size_t)used;
	}
	if (f->st == ST_REJECTED)
		return FRAME_REJECT;
	return f->paused ? FRAME_PAUSE : FRAME_OK;
}
