/* SPDX-License-Identifier: MIT */
/*
 * Content codings (codec.h): their levels, the codec object that runs a
 * library's backend (codec_gzip.c, codec_br.c, codec_zstd.c) under one
 * output limit, and whole bodies encoded or decoded at once.
 *
 * Calls the backends and libevent's buffers. Called from outside codec/.
 */

#include "codec/codec_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#define GROW_MIN	4096	/* codec_sink_grow's first buffer */
#define X_GZIP		"x-gzip"	/* gzip's old name (RFC 9110 §8.4.1.3) */
#define X_GZIP_LEN	(sizeof(X_GZIP) - 1)

/* Decoders alive in this process (identity aside), and their cap. */
static unsigned decoders_live;
static unsigned decoders_max = CODEC_DECODERS_MAX;

static const struct {
	int	min, max, def;
} levels[CODING_COUNT] = {
	[CODING_IDENTITY] = { 0, 0, 0 },
	[CODING_GZIP] = { CODEC_GZIP_LEVEL_MIN, CODEC_GZIP_LEVEL_MAX,
	    CODEC_GZIP_LEVEL_DEFAULT },
	[CODING_BR] = { CODEC_BR_LEVEL_MIN, CODEC_BR_LEVEL_MAX,
	    CODEC_BR_LEVEL_DEFAULT },
	[CODING_ZSTD] = { CODEC_ZSTD_LEVEL_MIN, CODEC_ZSTD_LEVEL_MAX,
	    CODEC_ZSTD_LEVEL_DEFAULT },
};

/* Identity copies: no library, its input handed on in chunks. */
static enum codec_result
identity_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	enum codec_result r;
	size_t n;

	for (; len > 0; in += n, len -= n) {
		n = len < CODEC_CHUNK ? len : CODEC_CHUNK;
		if ((r = codec_emit(cd, in, n)) != CODEC_OK)
			return r;
	}
	return CODEC_OK;
}

static int
identity_init(struct codec *cd)
{
	return 0;
}

/* Any prefix of a body is a whole body. */
static enum codec_result
identity_finish(struct codec *cd)
{
	return CODEC_OK;
}

static void
identity_done(struct codec *cd)
{
}

static const struct codec_ops identity_ops = {
	identity_init, identity_feed, identity_finish, identity_done,
};

static const struct codec_ops *const decoders[CODING_COUNT] = {
	&identity_ops, &codec_gzip_decoder, &codec_br_decoder,
	&codec_zstd_decoder,
};
static const struct codec_ops *const encoders[CODING_COUNT] = {
	&identity_ops, &codec_gzip_encoder, &codec_br_encoder,
	&codec_zstd_encoder,
};

enum coding
codec_token(const char *p, size_t n)
{
	for (int c = 0; c < CODING_COUNT; c++)
		if (strlen(codec_name((enum coding)c)) == n &&
		    strncasecmp(p, codec_name((enum coding)c), n) == 0)
			return (enum coding)c;
	if (n == X_GZIP_LEN && strncasecmp(p, X_GZIP, n) == 0)
		return CODING_GZIP;
	return CODING_UNKNOWN;
}

size_t
codec_tchars(const char *p, const char *end)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";
	const char *s = p;

	while (s < end && *s != '\0' && ((*s >= '0' && *s <= '9') ||
	    (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	    strchr(extra, *s) != NULL))
		s++;
	return (size_t)(s - p);
}

enum coding
codec_parse(const char *value)
{
	const char *p = value, *end;
	enum coding c = CODING_IDENTITY;
	size_t n;
	int seen = 0;

	if (value == NULL)
		return CODING_IDENTITY;
	end = value + strlen(value);
	for (;;) {
		p += strspn(p, " \t");
		if (*p == '\0')
			return c;
		if (*p == ',') {
			p++;	/* an empty member (RFC 9110 §5.6.1.2) */
			continue;
		}
		if ((n = codec_tchars(p, end)) == 0 || seen++)
			return CODING_UNKNOWN;
		c = codec_token(p, n);
		if (c == CODING_IDENTITY)
			return CODING_UNKNOWN;
		p += n;
		p += strspn(p, " \t");
		if (*p != ',' && *p != '\0')
			return CODING_UNKNOWN;
	}
}

int
codec_level_default(enum coding c)
{
	return c >= 0 && c < CODING_COUNT ? levels[c].def : 0;
}

int
codec_level_check(enum coding c, int level)
{
	if (c < 0 || c >= CODING_COUNT || level < levels[c].min ||
	    level > levels[c].max)
		return -1;
	return 0;
}

const char *
codec_result_name(enum codec_result r)
{
	switch (r) {
	case CODEC_OK:
		return "ok";
	case CODEC_TOO_LARGE:
		return "too large";
	case CODEC_CORRUPT:
		return "corrupt";
	case CODEC_TRUNCATED:
		return "truncated";
	case CODEC_ERROR:
		break;
	}
	return "error";
}

static struct codec *
alloc_codec(enum coding c, int encode, codec_out_fn out, void *arg, char *err,
    size_t errlen)
{
	struct codec *cd;

	if (c < 0 || c >= CODING_COUNT) {
		snprintf(err, errlen, "no such coding");
		return NULL;
	}
	if ((cd = calloc(1, sizeof(*cd))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	cd->magic = CODEC_MAGIC;
	cd->coding = c;
	cd->encode = encode;
	cd->ops = encode ? encoders[c] : decoders[c];
	cd->out = out;
	cd->arg = arg;
	cd->max_out = CODEC_NO_LIMIT;
	cd->size = CODEC_SIZE_UNKNOWN;
	return cd;
}

static struct codec *
start(struct codec *cd, char *err, size_t errlen)
{
	if (cd->ops->init(cd) == -1) {
		snprintf(err, errlen, "%s", cd->err);
		cd->magic = 0;
		free(cd);
		return NULL;
	}
	return cd;
}

void
codec_decoders_limit(unsigned max)
{
	decoders_max = max;
}

unsigned
codec_decoders_live(void)
{
	return decoders_live;
}

struct codec *
codec_decoder_new(enum coding c, size_t max_out, codec_out_fn out, void *arg,
    char *err, size_t errlen)
{
	struct codec *cd;

	if (c != CODING_IDENTITY && decoders_live >= decoders_max) {
		snprintf(err, errlen, "%s: %u decoders at once already",
		    codec_name(c), decoders_live);
		return NULL;
	}
	if ((cd = alloc_codec(c, 0, out, arg, err, errlen)) == NULL)
		return NULL;
	cd->max_out = max_out;
	if ((cd = start(cd, err, errlen)) != NULL && c != CODING_IDENTITY)
		decoders_live++;
	return cd;
}

struct codec *
codec_encoder_new(enum coding c, int level, size_t size, codec_out_fn out,
    void *arg, char *err, size_t errlen)
{
	struct codec *cd;

	if (codec_level_check(c, level) == -1) {
		snprintf(err, errlen, "%s: level %d out of range",
		    codec_name(c), level);
		return NULL;
	}
	if ((cd = alloc_codec(c, 1, out, arg, err, errlen)) == NULL)
		return NULL;
	cd->level = level;
	cd->size = size;
	return start(cd, err, errlen);
}

enum codec_result
codec_feed(struct codec *cd, const void *in, size_t len)
{
	const unsigned char *p = in;
	enum codec_result r = CODEC_OK;
	size_t n;

	assert(cd->magic == CODEC_MAGIC);
	if (cd->result != CODEC_OK)
		return cd->result;
	if (cd->finished)
		return codec_fail(cd, CODEC_ERROR, "fed after its end");
	if (len > 0 && cd->ended)
		return codec_fail(cd, CODEC_CORRUPT,
		    "bytes after the end of the stream");
	for (; len > 0 && r == CODEC_OK; p += n, len -= n) {
		n = len < CODEC_FEED_MAX ? len : CODEC_FEED_MAX;
		r = cd->ops->feed(cd, p, n);
	}
	return r;
}

enum codec_result
codec_finish(struct codec *cd)
{
	assert(cd->magic == CODEC_MAGIC);
	if (cd->result != CODEC_OK || cd->finished)
		return cd->result;
	cd->finished = 1;
	if (cd->ops->finish != NULL)
		return cd->ops->finish(cd);
	if (!cd->ended)
		return codec_fail(cd, CODEC_TRUNCATED,
		    "the input ended inside the stream");
	return CODEC_OK;
}

size_t
codec_total_out(const struct codec *cd)
{
	assert(cd->magic == CODEC_MAGIC);
	return cd->total_out;
}

const char *
codec_error(const struct codec *cd)
{
	assert(cd->magic == CODEC_MAGIC);
	return cd->err;
}

void
codec_free(struct codec **cdp)
{
	struct codec *cd = *cdp;

	if (cd == NULL)
		return;
	assert(cd->magic == CODEC_MAGIC);
	cd->ops->done(cd);
	if (!cd->encode && cd->coding != CODING_IDENTITY) {
		assert(decoders_live > 0);
		decoders_live--;
	}
	cd->magic = 0;
	free(cd);
	*cdp = NULL;
}

int
codec_sink_evbuffer(void *arg, const void *p, size_t len)
{
	return evbuffer_add(arg, p, len);
}

int
codec_sink_grow(void *arg, const void *p, size_t len)
{
	struct codec_grow *g = arg;
	unsigned char *np;
	size_t cap = g->cap > 0 ? g->cap : GROW_MIN;

	while (cap - g->len < len) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	if (cap != g->cap) {
		if ((np = realloc(g->p, cap)) == NULL)
			return -1;
		g->p = np;
		g->cap = cap;
	}
	memcpy(g->p + g->len, p, len);
	g->len += len;
	return 0;
}

/* Encodes in[len] through an encoder writing to out(arg). 0 or -1. */
static int
encode_all(enum coding c, int level, const void *in, size_t len,
    codec_out_fn out, void *arg, char *err, size_t errlen)
{
	struct codec *cd;
	int rc = -1;

	cd = codec_encoder_new(c, level, len, out, arg, err, errlen);
	if (cd == NULL)
		return -1;
	if (codec_feed(cd, in, len) != CODEC_OK ||
	    codec_finish(cd) != CODEC_OK) {
		snprintf(err, errlen, "%s", cd->err);
		goto fail;
	}
	rc = 0;
fail:
	codec_free(&cd);
	return rc;
}

int
codec_encode(struct evbuffer *out, enum coding c, int level, const void *in,
    size_t len, char *err, size_t errlen)
{
	struct evbuffer *tmp;
	int rc = -1;

	if ((tmp = evbuffer_new()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (encode_all(c, level, in, len, codec_sink_evbuffer, tmp, err,
	    errlen) == -1)
		goto fail;
	if (evbuffer_add_buffer(out, tmp) == -1) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rc = 0;
fail:
	evbuffer_free(tmp);
	return rc;
}

int
codec_encode_alloc(enum coding c, int level, const void *in, size_t len,
    unsigned char **outp, size_t *outlen, char *err, size_t errlen)
{
	struct codec_grow g = { NULL, 0, 0 };

	if (encode_all(c, level, in, len, codec_sink_grow, &g, err, errlen) ==
	    -1) {
		free(g.p);
		return -1;
	}
	if (g.p == NULL && (g.p = malloc(1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*outp = g.p;
	*outlen = g.len;
	return 0;
}

static void
on_free_once(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

/* A zstd body decoded in one call into out, if it can be (1; 0: it
 * cannot, -1: out of memory); out is appended to only on 1. */
static int
decode_once(struct evbuffer *out, const void *in, size_t len, size_t max_out)
{
	unsigned char *p;
	size_t n;
	int rc;

	if ((rc = zstd_decode_once(in, len, max_out, &p, &n)) != 1)
		return rc;
	if (evbuffer_add_reference(out, p, n, on_free_once, NULL) == -1) {
		free(p);
		return -1;
	}
	return 1;
}

enum codec_result
codec_decode_to(struct evbuffer *out, enum coding c, const void *in,
    size_t len, size_t max_out)
{
	struct evbuffer *tmp;
	struct codec *cd = NULL;
	enum codec_result r = CODEC_ERROR;
	char err[CODEC_ERR_LEN];

	if (c == CODING_ZSTD)
		switch (decode_once(out, in, len, max_out)) {
		case 1:
			return CODEC_OK;
		case -1:
			return CODEC_ERROR;
		}
	if ((tmp = evbuffer_new()) == NULL)
		return CODEC_ERROR;
	cd = codec_decoder_new(c, max_out, codec_sink_evbuffer, tmp, err,
	    sizeof(err));
	if (cd == NULL)
		goto fail;
	if ((r = codec_feed(cd, in, len)) != CODEC_OK ||
	    (r = codec_finish(cd)) != CODEC_OK)
		goto fail;
	if (evbuffer_add_buffer(out, tmp) == -1)
		r = CODEC_ERROR;
fail:
	codec_free(&cd);
	evbuffer_free(tmp);
	return r;
}
