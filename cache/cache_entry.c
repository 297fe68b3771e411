/* SPDX-License-Identifier: MIT */
/*
 * Cached responses: their references, headers and body, their encoding
 * for Redis and the shared near cache and its decoding, and their
 * freshness. See cache_entry.h.
 *
 * Calls nothing in cache/. Called by every file that holds an entry.
 */

#include "cache/cache_entry.h"
#include "common/hlist.h"

#include <sys/queue.h>

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/*
 * Encoded form. Offset 0 holds the generation as ENTRY_GEN_LEN lowercase
 * hex digits, so the lock scripts can read it with string.sub(blob, 1, 32).
 * The binary record follows; every integer is little-endian:
 *
 *	u32 magic (ENTRY_MAGIC)		u8  version (ENTRY_VERSION)
 *	i64 stored_ms			i64 fresh_until_ms
 *	i64 stale_until_ms		u32 fetch_ms
 *	u16 status			u16 nheaders
 *	nheaders times:	u16 name_len, name, u32 value_len, value
 *	u64 body_len, body
 *
 * Nothing follows the body in version 1. Version 2, written only for an
 * entry that holds the request body it answers (a cached POST), ends in
 *	u64 request_len, request
 * instead. Both decode.
 */

#define ENTRY_VERSION		1
#define ENTRY_VERSION_REQUEST	2	/* with the request body */
#define ENTRY_STATUS_MIN	100
#define ENTRY_STATUS_MAX	599
#define ENTRY_NAME_MAX		UINT16_MAX
#define ENTRY_VALUE_MAX		UINT32_MAX
/* Where each field of the fixed part starts (from 0): gen, magic, version,
 * three times, fetch_ms, status, nheaders. */
#define AT_MAGIC		ENTRY_GEN_LEN
#define AT_VERSION		(AT_MAGIC + 4)
#define AT_STORED		(AT_VERSION + 1)
#define AT_FRESH_UNTIL		(AT_STORED + 8)
#define AT_STALE_UNTIL		(AT_FRESH_UNTIL + 8)
#define AT_FETCH		(AT_STALE_UNTIL + 8)
#define AT_STATUS		(AT_FETCH + 4)
#define AT_NHEADERS		(AT_STATUS + 2)
#define ENTRY_FIXED_LEN		(AT_NHEADERS + 2)

/* What the scripts read and rewrite is where entry_encode writes it. */
_Static_assert(ENTRY_LUA_GEN_END == ENTRY_GEN_LEN,
    "the acquire script's generation");
_Static_assert(ENTRY_LUA_BEFORE_FRESH == AT_FRESH_UNTIL &&
    ENTRY_LUA_FRESH == AT_FRESH_UNTIL + 1,
    "the soften script's fresh_until");
_Static_assert(ENTRY_LUA_AFTER_FRESH == AT_STALE_UNTIL + 1,
    "the soften script's bytes after fresh_until");
_Static_assert(ENTRY_LUA_TIMES_END == AT_FETCH,
    "the soften script's shortest entry");

struct reader {
	const unsigned char	*p;
	size_t			 left;
};

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* RFC 9110 tchar. */
static int
is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int
valid_name(const char *name, size_t len)
{
	if (len == 0 || len > ENTRY_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!is_tchar((unsigned char)name[i]))
			return 0;
	return 1;
}

static int
valid_value(const char *value, size_t len)
{
	if (len > ENTRY_VALUE_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (value[i] == '\r' || value[i] == '\n' || value[i] == '\0')
			return 0;
	return 1;
}

static int
valid_gen(const char *gen, size_t len)
{
	if (len != ENTRY_GEN_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((gen[i] >= '0' && gen[i] <= '9') ||
		    (gen[i] >= 'a' && gen[i] <= 'f')))
			return 0;
	return 1;
}

static int
valid_status(int status)
{
	return status >= ENTRY_STATUS_MIN && status <= ENTRY_STATUS_MAX;
}

static int
valid_times(int64_t stored, int64_t fresh, int64_t stale)
{
	return fresh >= stored && stale >= fresh;
}

static size_t
count_headers(const struct cache_entry *e)
{
	const struct hfield *kv;
	size_t n = 0;

	HL_FOREACH(kv, &e->headers)
		n++;
	return n;
}

static void
file_release(struct entry_file *f, size_t len)
{
	if (f->drop != NULL)
		f->drop(f->fd, len);
	f->drop = NULL;
	f->fd = -1;
}

static void
body_release(struct cache_entry *e)
{
	file_release(&e->file, e->body_len);
	free(e->store);
	e->store = NULL;
	e->body = NULL;
	e->body_len = 0;
}

struct cache_entry *
entry_new(void)
{
	struct cache_entry *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->magic = ENTRY_MAGIC;
	e->refcnt = 1;
	e->gen[0] = '\0';
	e->file.fd = e->plain_file.fd = -1;
	hl_init(&e->headers);
	return e;
}

struct cache_entry *
entry_ref(struct cache_entry *e)
{
	assert(e->magic == ENTRY_MAGIC);
	assert(e->refcnt > 0 && e->refcnt < INT_MAX);
	e->refcnt++;
	return e;
}

void
entry_unref(struct cache_entry **ep)
{
	struct cache_entry *e = *ep;

	if (e == NULL)
		return;
	*ep = NULL;
	assert(e->magic == ENTRY_MAGIC);
	assert(e->refcnt > 0);
	if (--e->refcnt > 0)
		return;
	hl_free(&e->headers);
	body_release(e);
	free(e->request);
	free(e->head);
	free(e->plain_head);
	file_release(&e->plain_file, e->plain_len);
	if (e->plain != NULL)
		e->plain_drop(e->plain, e->plain_len);
	e->magic = 0;
	free(e);
}

int
entry_set_body(struct cache_entry *e, struct evbuffer *buf)
{
	size_t len = evbuffer_get_length(buf);
	unsigned char *body = NULL;

	assert(e->magic == ENTRY_MAGIC);
	if (len > 0) {
		if ((body = malloc(len)) == NULL)
			return -1;
		if (evbuffer_copyout(buf, body, len) != (ev_ssize_t)len ||
		    evbuffer_drain(buf, len) == -1) {
			free(body);
			return -1;
		}
	}
	body_release(e);
	e->store = e->body = body;
	e->body_len = len;
	return 0;
}

int
entry_copy_body(struct cache_entry *e, const void *p, size_t len)
{
	unsigned char *body = NULL;

	assert(e->magic == ENTRY_MAGIC);
	if (len > 0) {
		if ((body = malloc(len)) == NULL)
			return -1;
		memcpy(body, p, len);
	}
	body_release(e);
	e->store = e->body = body;
	e->body_len = len;
	return 0;
}

int
entry_set_request(struct cache_entry *e, const void *p, size_t len)
{
	unsigned char *req = NULL;

	assert(e->magic == ENTRY_MAGIC);
	if (len > 0) {
		if ((req = malloc(len)) == NULL)
			return -1;
		memcpy(req, p, len);
	}
	free(e->request);
	e->request = req;
	e->request_len = len;
	return 0;
}

int
entry_add_header(struct cache_entry *e, const char *name, const char *value)
{
	assert(e->magic == ENTRY_MAGIC);
	if (!valid_name(name, strlen(name)) ||
	    !valid_value(value, strlen(value)))
		return -1;
	if (count_headers(e) >= ENTRY_MAX_HEADERS)
		return -1;
	return hl_add(&e->headers, name, value) == 0 ? 0 : -1;
}

static unsigned char *
put_u16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)(v & 0xff);
	p[1] = (unsigned char)(v >> 8);
	return p + 2;
}

static unsigned char *
put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return p + 4;
}

static unsigned char *
put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return p + 8;
}

/* An encoded body's reference to its entry ends (entry_encode). */
static void
on_body_released(const void *data, size_t len, void *arg)
{
	struct cache_entry *e = arg;

	(void)data;
	(void)len;
	entry_unref(&e);
}

/* The body goes into buf by reference: buf keeps e until it lets the
 * body go. An entry's body never changes once it is made. */
static int
add_body(struct evbuffer *buf, const struct cache_entry *e)
{
	/* Only the count of references changes, not the entry. */
	struct cache_entry *held = entry_ref((struct cache_entry *)e);

	if (evbuffer_add_reference(buf, e->body, e->body_len,
	    on_body_released, held) == -1) {
		entry_unref(&held);
		return -1;
	}
	return 0;
}

/* Each header as its name's length (16 bits), name, value's length (32
 * bits) and value. 0, or -1 for one that may not be encoded. */
static int
add_headers(struct evbuffer *tmp, const struct cache_entry *e)
{
	const struct hfield *kv;
	unsigned char lens[4];

	HL_FOREACH(kv, &e->headers) {
		size_t nlen = strlen(kv->key), vlen = strlen(kv->value);

		if (!valid_name(kv->key, nlen) || !valid_value(kv->value, vlen))
			return -1;
		put_u16(lens, (uint16_t)nlen);
		if (evbuffer_add(tmp, lens, 2) == -1 ||
		    evbuffer_add(tmp, kv->key, nlen) == -1)
			return -1;
		put_u32(lens, (uint32_t)vlen);
		if (evbuffer_add(tmp, lens, 4) == -1 ||
		    evbuffer_add(tmp, kv->value, vlen) == -1)
			return -1;
	}
	return 0;
}

/*
 * Refuses what entry_decode would refuse, so an encoded entry always
 * decodes. The record is built in a private buffer and moved to out in
 * one step: on failure out is left as it was. The body is not copied:
 * out refers to it, and holds a reference to e until it lets it go.
 */
int
entry_encode(const struct cache_entry *e, struct evbuffer *out)
{
	unsigned char fixed[ENTRY_FIXED_LEN], lens[8], *p;
	struct evbuffer *tmp = NULL;
	size_t nheaders;

	assert(e->magic == ENTRY_MAGIC);
	nheaders = count_headers(e);
	if (!valid_gen(e->gen, strlen(e->gen)) || !valid_status(e->status) ||
	    !valid_times(e->stored_ms, e->fresh_until_ms, e->stale_until_ms) ||
	    nheaders > ENTRY_MAX_HEADERS ||
	    (e->body_len > 0 && e->body == NULL) ||
	    (e->request_len > 0 && e->request == NULL))
		return -1;

	memcpy(fixed, e->gen, ENTRY_GEN_LEN);
	p = fixed + ENTRY_GEN_LEN;
	p = put_u32(p, ENTRY_MAGIC);
	*p++ = e->request_len > 0 ? ENTRY_VERSION_REQUEST : ENTRY_VERSION;
	p = put_u64(p, (uint64_t)e->stored_ms);
	assert(p == fixed + AT_FRESH_UNTIL);
	p = put_u64(p, (uint64_t)e->fresh_until_ms);
	assert(p == fixed + AT_STALE_UNTIL);
	p = put_u64(p, (uint64_t)e->stale_until_ms);
	assert(p == fixed + AT_FETCH);
	p = put_u32(p, e->fetch_ms);
	p = put_u16(p, (uint16_t)e->status);
	p = put_u16(p, (uint16_t)nheaders);
	assert(p == fixed + sizeof(fixed));

	if ((tmp = evbuffer_new()) == NULL)
		goto fail;
	if (evbuffer_add(tmp, fixed, sizeof(fixed)) == -1 ||
	    add_headers(tmp, e) == -1)
		goto fail;
	put_u64(lens, (uint64_t)e->body_len);
	if (evbuffer_add(tmp, lens, 8) == -1)
		goto fail;
	if (e->body_len > 0 && add_body(tmp, e) == -1)
		goto fail;
	put_u64(lens, (uint64_t)e->request_len);
	if (e->request_len > 0 && (evbuffer_add(tmp, lens, 8) == -1 ||
	    evbuffer_add(tmp, e->request, e->request_len) == -1))
		goto fail;
	if (evbuffer_add_buffer(out, tmp) == -1)
		goto fail;
	evbuffer_free(tmp);
	return 0;
fail:
	if (tmp != NULL)
		evbuffer_free(tmp);
	return -1;
}

static int
get_bytes(struct reader *r, size_t n, const unsigned char **out)
{
	if (r->left < n)
		return -1;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

static int
get_u8(struct reader *r, uint8_t *v)
{
	const unsigned char *p;

	if (get_bytes(r, 1, &p) == -1)
		return -1;
	*v = p[0];
	return 0;
}

static int
get_u16(struct reader *r, uint16_t *v)
{
	const unsigned char *p;

	if (get_bytes(r, 2, &p) == -1)
		return -1;
	*v = (uint16_t)(p[0] | (p[1] << 8));
	return 0;
}

static int
get_u32(struct reader *r, uint32_t *v)
{
	const unsigned char *p;

	if (get_bytes(r, 4, &p) == -1)
		return -1;
	*v = 0;
	for (int i = 3; i >= 0; i--)
		*v = (*v << 8) | p[i];
	return 0;
}

static int
get_u64(struct reader *r, uint64_t *v)
{
	const unsigned char *p;

	if (get_bytes(r, 8, &p) == -1)
		return -1;
	*v = 0;
	for (int i = 7; i >= 0; i--)
		*v = (*v << 8) | p[i];
	return 0;
}

static int
get_i64(struct reader *r, int64_t *v)
{
	uint64_t u;

	if (get_u64(r, &u) == -1)
		return -1;
	/* Two's complement without relying on an out-of-range conversion. */
	if (u <= (uint64_t)INT64_MAX)
		*v = (int64_t)u;
	else
		*v = -(int64_t)(~u) - 1;
	return 0;
}

static int
decode_header(struct reader *r, struct cache_entry *e, char *err,
    size_t errlen)
{
	const unsigned char *name, *value;
	uint16_t nlen;
	uint32_t vlen;

	if (get_u16(r, &nlen) == -1) {
		set_err(err, errlen, "truncated header name length");
		return -1;
	}
	if (get_bytes(r, nlen, &name) == -1) {
		set_err(err, errlen, "truncated header name");
		return -1;
	}
	if (!valid_name((const char *)name, nlen)) {
		set_err(err, errlen, "bad header name");
		return -1;
	}
	if (get_u32(r, &vlen) == -1) {
		set_err(err, errlen, "truncated header value length");
		return -1;
	}
	if (get_bytes(r, vlen, &value) == -1) {
		set_err(err, errlen, "truncated header value");
		return -1;
	}
	if (!valid_value((const char *)value, vlen)) {
		set_err(err, errlen, "bad header value");
		return -1;
	}
	if (hl_addn(&e->headers, (const char *)name, nlen,
	    (const char *)value, vlen) != 0) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static struct cache_entry *decode(const void *buf, size_t len, void *take,
    char *err, size_t errlen);

struct cache_entry *
entry_decode(const void *buf, size_t len, char *err, size_t errlen)
{
	return decode(buf, len, NULL, err, errlen);
}

struct cache_entry *
entry_decode_take(void *buf, size_t len, char *err, size_t errlen)
{
	return decode(buf, len, buf, err, errlen);
}

/* The generation, the magic and the version. */
static int
decode_head(struct reader *r, const unsigned char **gen, uint8_t *version,
    char *err, size_t errlen)
{
	uint32_t magic;

	if (get_bytes(r, ENTRY_GEN_LEN, gen) == -1) {
		set_err(err, errlen, "truncated generation");
		return -1;
	}
	if (!valid_gen((const char *)*gen, ENTRY_GEN_LEN)) {
		set_err(err, errlen, "bad generation");
		return -1;
	}
	if (get_u32(r, &magic) == -1) {
		set_err(err, errlen, "truncated magic");
		return -1;
	}
	if (magic != ENTRY_MAGIC) {
		set_err(err, errlen, "bad magic");
		return -1;
	}
	if (get_u8(r, version) == -1) {
		set_err(err, errlen, "truncated version");
		return -1;
	}
	if (*version != ENTRY_VERSION && *version != ENTRY_VERSION_REQUEST) {
		set_err(err, errlen, "unknown version %u", (unsigned)*version);
		return -1;
	}
	return 0;
}

/* The times, the status and the headers. */
static int
decode_fields(struct reader *r, struct cache_entry *e, char *err,
    size_t errlen)
{
	uint16_t status, nheaders;

	if (get_i64(r, &e->stored_ms) == -1 ||
	    get_i64(r, &e->fresh_until_ms) == -1 ||
	    get_i64(r, &e->stale_until_ms) == -1 ||
	    get_u32(r, &e->fetch_ms) == -1) {
		set_err(err, errlen, "truncated times");
		return -1;
	}
	if (!valid_times(e->stored_ms, e->fresh_until_ms, e->stale_until_ms)) {
		set_err(err, errlen, "times out of order");
		return -1;
	}
	if (get_u16(r, &status) == -1) {
		set_err(err, errlen, "truncated status");
		return -1;
	}
	if (!valid_status(status)) {
		set_err(err, errlen, "bad status %u", (unsigned)status);
		return -1;
	}
	e->status = status;
	if (get_u16(r, &nheaders) == -1) {
		set_err(err, errlen, "truncated header count");
		return -1;
	}
	if (nheaders > ENTRY_MAX_HEADERS) {
		set_err(err, errlen, "too many headers (%u)",
		    (unsigned)nheaders);
		return -1;
	}
	for (unsigned i = 0; i < nheaders; i++)
		if (decode_header(r, e, err, errlen) == -1)
			return -1;
	(void)hl_compact(&e->headers);	/* kept long: no slack */
	return 0;
}

/* Version 2's request body, which ends the record. */
static int
decode_request(struct reader *r, struct cache_entry *e, char *err,
    size_t errlen)
{
	const unsigned char *p;
	uint64_t len;

	if (get_u64(r, &len) == -1 || len != r->left || len == 0 ||
	    get_bytes(r, (size_t)len, &p) == -1) {
		set_err(err, errlen, "bad request body");
		return -1;
	}
	if (entry_set_request(e, p, (size_t)len) == -1) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* The body, which ends the record (version 2: the request body follows):
 * copied, or with take (buf) left where it is. */
static int
decode_body(struct reader *r, struct cache_entry *e, const void *buf,
    void *take, size_t after, char *err, size_t errlen)
{
	const unsigned char *body;
	uint64_t body_len;

	if (get_u64(r, &body_len) == -1) {
		set_err(err, errlen, "truncated body length");
		return -1;
	}
	if (r->left < after || body_len > r->left - after) {
		set_err(err, errlen, "truncated body");
		return -1;
	}
	if (body_len < r->left && after == 0) {
		set_err(err, errlen, "trailing bytes after body");
		return -1;
	}
	if (get_bytes(r, (size_t)body_len, &body) == -1) {
		set_err(err, errlen, "truncated body");
		return -1;
	}
	if (take != NULL) {
		e->store = take;
		e->body = (unsigned char *)take + (body - (const unsigned char *)buf);
		e->body_len = (size_t)body_len;
	} else if (body_len > 0) {
		if ((e->store = malloc((size_t)body_len)) == NULL) {
			set_err(err, errlen, "out of memory");
			return -1;
		}
		memcpy(e->store, body, (size_t)body_len);
		e->body = e->store;
		e->body_len = (size_t)body_len;
	}
	return 0;
}

/* take: NULL to copy the body, or buf to keep it where it is. */
static struct cache_entry *
decode(const void *buf, size_t len, void *take, char *err, size_t errlen)
{
	struct reader r = { buf, len };
	struct cache_entry *e = NULL;
	const unsigned char *gen;
	uint8_t version;
	size_t after;

	if (buf == NULL && len > 0) {
		set_err(err, errlen, "no buffer");
		return NULL;
	}
	if (decode_head(&r, &gen, &version, err, errlen) == -1)
		return NULL;
	/* Version 2: a request length and at least a byte follow the body. */
	after = version == ENTRY_VERSION_REQUEST ? 8 + 1 : 0;
	if ((e = entry_new()) == NULL) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(e->gen, gen, ENTRY_GEN_LEN);
	e->gen[ENTRY_GEN_LEN] = '\0';
	if (decode_fields(&r, e, err, errlen) == -1 ||
	    decode_body(&r, e, buf, take, after, err, errlen) == -1 ||
	    (after > 0 && decode_request(&r, e, err, errlen) == -1))
		goto fail;
	return e;
fail:
	if (take != NULL && e->store == take) {
		e->store = NULL;	/* buf is still the caller's */
		e->body = NULL;
		e->body_len = 0;
	}
	entry_unref(&e);
	return NULL;
}

enum entry_state
entry_state(const struct cache_entry *e, int64_t now_ms)
{
	assert(e->magic == ENTRY_MAGIC);
	if (now_ms < e->fresh_until_ms)
		return ENTRY_FRESH;
	if (now_ms < e->stale_until_ms)
		return ENTRY_STALE;
	return ENTRY_EXPIRED;
}

const char *
entry_state_name(enum entry_state s)
{
	switch (s) {
	case ENTRY_FRESH:
		return "fresh";
	case ENTRY_STALE:
		return "stale";
	case ENTRY_EXPIRED:
		return "expired";
	}
	return "unknown";
}
