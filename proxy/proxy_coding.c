/* SPDX-License-Identifier: MIT */
/*
 * Content codings in the flow (proxy_coding.h): an entry's body checked
 * or compressed as it is stored, and what each client gets of it. Calls
 * codec/ and reads entries' and requests' fields; nothing of the flow.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "conf/conf.h"
#include "proxy/proxy_coding.h"

#define CODING_VALUE_MAX	256	/* a Content-Encoding, lines joined */
#define WEAK_PREFIX		"W/"
#define NO_TRANSFORM		"no-transform"

/* Bytes of decoded bodies queued to clients, not sent yet, in this
 * process (at most CODING_QUEUED_MAX), and kept with their entries (at
 * most CODING_KEPT_MAX). */
static size_t queued;
static size_t kept;

/* The lines of field name in h joined with ", " into out; NULL: none. */
static const char *
joined(const struct hlist *h, const char *name, char *out, size_t len)
{
	const struct hfield *f;
	size_t n = 0;

	HL_FOREACH(f, h) {
		if (strcasecmp(f->key, name) != 0)
			continue;
		n += (size_t)snprintf(out + n, len - n, "%s%s", n > 0 ? ", " :
		    "", f->value);
		if (n >= len)
			return "unknown-coding";	/* too long to be one */
	}
	return n > 0 ? out : NULL;
}

static enum coding
coding_in(const struct hlist *h)
{
	char value[CODING_VALUE_MAX];

	return codec_parse(joined(h, "Content-Encoding", value,
	    sizeof(value)));
}

enum coding
coding_of(const struct cache_entry *e)
{
	return coding_in(&e->headers);
}

/* Does the response forbid an intermediary to transform its content
 * (Cache-Control: no-transform, RFC 9111 §5.2.2.6)? */
static int
no_transform(const struct hlist *h)
{
	const struct hfield *f;
	const char *p;

	HL_FOREACH(f, h) {
		if (strcasecmp(f->key, "Cache-Control") != 0)
			continue;
		for (p = f->value; (p = strcasestr(p, NO_TRANSFORM)) != NULL;
		    p += sizeof(NO_TRANSFORM) - 1)
			if ((p == f->value || p[-1] == ',' || p[-1] == ' ' ||
			    p[-1] == '\t') && strchr(",; \t", p[
			    sizeof(NO_TRANSFORM) - 1]) != NULL)
				return 1;
	}
	return 0;
}

/* Compresses e's identity body with c at its default level, when that
 * makes it shorter; 0 (compressed or not) or -1 out of memory. */
static int
compress_body(struct cache_entry *e, enum coding c, int *done)
{
	struct evbuffer *z;
	char err[CODEC_ERR_LEN];
	int rc = -1;

	*done = 0;
	if ((z = evbuffer_new()) == NULL)
		return -1;
	if (codec_encode(z, c, codec_level_default(c), e->body, e->body_len,
	    err, sizeof(err)) == -1)
		goto fail;
	if (evbuffer_get_length(z) >= e->body_len) {
		rc = 0;		/* no gain: kept as it came */
		goto fail;
	}
	if (entry_set_body(e, z) == -1 ||
	    entry_add_header(e, "Content-Encoding", codec_name(c)) == -1 ||
	    entry_add_header(e, CODING_MARKER, codec_name(c)) == -1)
		goto fail;
	*done = 1;
	rc = 0;
fail:
	evbuffer_free(z);
	return rc;
}

const char *
coding_store(struct cache_entry *e, const struct conf_route *rt,
    size_t max_out, enum coding *made, size_t *plain)
{
	enum coding c = coding_of(e), want;
	int done;

	*made = CODING_IDENTITY;
	*plain = e->body_len;
	if (c == CODING_UNKNOWN)
		return "";	/* stored and sent as it came */
	if (c != CODING_IDENTITY)
		return coding_decode(e, max_out, NULL, plain) == CODEC_OK ? "" :
		    "bad-encoding";	/* decoded to nowhere: checked */
	want = codec_token(rt->store_encoding, strlen(rt->store_encoding));
	/* Past max_out it is not stored (too-large), but still answers its
	 * waiters: as it came, so that no client has to decode it. */
	if (want == CODING_IDENTITY || want == CODING_UNKNOWN ||
	    no_transform(&e->headers) || e->body_len > max_out ||
	    e->body_len == 0 || e->body_len < (uint64_t)rt->compress_min_bytes ||
	    !codec_compressible(hl_find(&e->headers, "Content-Type"),
	    rt->compress_types))
		return "";
	if (compress_body(e, want, &done) == -1)
		return "out-of-memory";
	if (done)
		*made = want;
	return "";
}

/* Is there a Vary: Accept-Encoding (or *) among h's already? */
static int
varies_on_coding(const struct hlist *h)
{
	const struct hfield *f;

	HL_FOREACH(f, h)
		if (strcasecmp(f->key, "Vary") == 0 &&
		    (strcasestr(f->value, "Accept-Encoding") != NULL ||
		    strchr(f->value, '*') != NULL))
			return 1;
	return 0;
}

/* Would rt compress an identity body with these headers on store (a
 * length it says at least compress_min_bytes)? Then the answers that
 * carry it as it came vary with Accept-Encoding too. */
static int
route_compresses(const struct hlist *h, const struct conf_route *rt)
{
	const char *cl = hl_find(h, "Content-Length");
	enum coding want;

	if (rt == NULL || (cl != NULL && strtoll(cl, NULL, 10) <
	    rt->compress_min_bytes))
		return 0;
	want = codec_token(rt->store_encoding, strlen(rt->store_encoding));
	return want != CODING_IDENTITY && want != CODING_UNKNOWN &&
	    !no_transform(h) && codec_compressible(hl_find(h, "Content-Type"),
	    rt->compress_types);
}

int
coding_reply_varies(const struct hlist *resp, const struct conf_route *rt)
{
	enum coding c = coding_in(resp);

	if (varies_on_coding(resp) || c == CODING_UNKNOWN)
		return 0;
	return c != CODING_IDENTITY || route_compresses(resp, rt);
}

static void
read_accept(const struct hlist *req, struct accept *a)
{
	const struct hfield *f;

	accept_init(a);
	HL_FOREACH(f, req)
		if (strcasecmp(f->key, "Accept-Encoding") == 0)
			accept_parse(a, f->value);
}

void
coding_choose(const struct hlist *req, const struct cache_entry *e,
    struct coding_reply *cr)
{
	struct accept a;
	int corral_made = hl_find(&e->headers, CODING_MARKER) != NULL;

	cr->stored = coding_of(e);
	cr->send = cr->stored;
	cr->transformed = corral_made;
	cr->vary = 0;
	cr->verdict = ACCEPT_SEND;
	if (cr->stored == CODING_IDENTITY || cr->stored == CODING_UNKNOWN)
		return;		/* one body for every client */
	cr->vary = !varies_on_coding(&e->headers);
	read_accept(req, &a);
	cr->verdict = accept_choose(&a, CODING_BIT(cr->stored), 1, &cr->send);
	if (cr->verdict != ACCEPT_SEND)
		cr->send = cr->stored;
	/* The origin's representation is the stored body, or (Corral
	 * compressed it) identity; anything else is Corral's making. */
	cr->transformed = cr->send != (corral_made ? CODING_IDENTITY :
	    cr->stored);
}

int
coding_takes(const struct hlist *req, const struct hlist *resp)
{
	struct accept a;
	enum coding c = coding_in(resp), send;

	if (c == CODING_IDENTITY || c == CODING_UNKNOWN)
		return 1;
	read_accept(req, &a);
	return accept_choose(&a, CODING_BIT(c), 0, &send) == ACCEPT_SEND &&
	    send == c;
}

/* A decoded body has been sent (or its client is gone). */
static void
on_decoded_sent(const void *data, size_t len, void *arg)
{
	free((void *)data);
	queued -= len;
}

/* Decodes e's body with a decoder writing to out(arg). */
static enum codec_result
decode_with(const struct cache_entry *e, enum coding c, size_t max_out,
    codec_out_fn out, void *arg, size_t *len)
{
	struct codec *cd;
	enum codec_result r;
	char err[CODEC_ERR_LEN];

	if ((cd = codec_decoder_new(c, max_out, out, arg, err,
	    sizeof(err))) == NULL)
		return CODEC_ERROR;
	if ((r = codec_feed(cd, e->body, e->body_len)) == CODEC_OK)
		r = codec_finish(cd);
	if (len != NULL)
		*len = codec_total_out(cd);
	codec_free(&cd);
	return r;
}

enum codec_result
coding_decode(const struct cache_entry *e, size_t max_out,
    struct evbuffer *out, size_t *len)
{
	enum coding c = coding_of(e);
	struct codec_grow g = { NULL, 0, 0 };
	enum codec_result r;

	if (c == CODING_UNKNOWN)
		return CODEC_CORRUPT;
	if (out == NULL)
		return decode_with(e, c, max_out, NULL, NULL, len);
	if ((r = decode_with(e, c, max_out, codec_sink_grow, &g, len)) !=
	    CODEC_OK || g.len == 0) {
		free(g.p);
		return r;
	}
	/* Held until sent: past what the process may hold, none is made. */
	if (queued + g.len > CODING_QUEUED_MAX ||
	    evbuffer_add_reference(out, g.p, g.len, on_decoded_sent,
	    NULL) == -1) {
		free(g.p);
		return CODEC_ERROR;
	}
	queued += g.len;
	return CODEC_OK;
}

size_t
coding_queued(void)
{
	return queued;
}

size_t
coding_kept(void)
{
	return kept;
}

static void
on_plain_drop(unsigned char *plain, size_t len)
{
	free(plain);
	kept -= len;
}

int
coding_plain(struct cache_entry *e, size_t max_out)
{
	struct codec_grow g = { NULL, 0, 0 };
	enum coding c = coding_of(e);

	if (e->plain != NULL)
		return 0;
	if (c == CODING_UNKNOWN || kept >= CODING_KEPT_MAX ||
	    decode_with(e, c, max_out, codec_sink_grow, &g, NULL) != CODEC_OK ||
	    g.len == 0 || kept + g.len > CODING_KEPT_MAX) {
		free(g.p);
		return -1;
	}
	e->plain = g.p;
	e->plain_len = g.len;
	e->plain_drop = on_plain_drop;
	kept += g.len;
	return 0;
}

const char *
coding_identity(struct cache_entry *e, size_t max_out, size_t *len)
{
	if (coding_of(e) == CODING_IDENTITY) {
		*len = e->body_len;
		return (const char *)e->body;
	}
	if (coding_plain(e, max_out) == -1)
		return NULL;
	*len = e->plain_len;
	return (const char *)e->plain;
}

const char *
coding_weak_etag(const char *etag, char *out, size_t len)
{
	if (strncmp(etag, WEAK_PREFIX, sizeof(WEAK_PREFIX) - 1) == 0)
		return etag;
	snprintf(out, len, WEAK_PREFIX "%s", etag);
	return out;
}
