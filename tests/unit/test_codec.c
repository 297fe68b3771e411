/* SPDX-License-Identifier: MIT */
/*
 * codec/: bodies encoded and decoded whole or in any pieces come back
 * byte for byte; damaged, cut and padded streams are told apart; a
 * decoder never hands on more than its limit however much a small input
 * expands to; Content-Encoding names one coding or it is passed through;
 * compressible media types are matched by pattern, and their lists
 * checked; zstd's skippable frames are skipped; decoders alive at once
 * are capped.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "codec/codec.h"
#include "tests/unit/unit.h"

#define KIB		1024
#define MIB		(1024 * 1024)
#define BOMB_SIZE	((size_t)1 << 30)	/* zeros a bomb expands to */
#define BOMB_PIECE	(256 * KIB)		/* fed to its encoder at once */
#define BOMB_LIMIT	(8 * MIB)		/* max_out it meets */
#define BOMB_PACKED_MAX	(2 * MIB)		/* what it may take packed */
#define CUT_BODY	(6 * KIB)		/* cut at every byte */
#define SPLITS		50			/* random splits tried */
#define FAULT_BODY	(100 * KIB)		/* decoded, then a fault */

static const enum coding codings[] = {
	CODING_IDENTITY, CODING_GZIP, CODING_BR, CODING_ZSTD,
};
static const enum coding packed[] = { CODING_GZIP, CODING_BR, CODING_ZSTD };
#define NCODINGS	(sizeof(codings) / sizeof(codings[0]))
#define NPACKED		(sizeof(packed) / sizeof(packed[0]))

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* len bytes of JSON-like text (compressible) or of noise (not). */
static unsigned char *
make_body(size_t len, int noise)
{
	unsigned char *b = malloc(len > 0 ? len : 1);
	size_t i = 0;
	int n;

	if (b == NULL)
		return NULL;
	if (noise) {
		for (i = 0; i < len; i++)
			b[i] = (unsigned char)next_rand();
		return b;
	}
	while (i < len) {
		char rec[128];

		n = snprintf(rec, sizeof(rec), "{\"id\":%zu,\"name\":"
		    "\"user%zu\",\"active\":%s},", i, i % 97,
		    i % 3 ? "true" : "false");
		memcpy(b + i, rec, (size_t)n < len - i ? (size_t)n : len - i);
		i += (size_t)n < len - i ? (size_t)n : len - i;
	}
	return b;
}

static unsigned char *
pack(enum coding c, const unsigned char *in, size_t len, size_t *outlen)
{
	unsigned char *out;
	char err[CODEC_ERR_LEN];

	if (codec_encode_alloc(c, codec_level_default(c), in, len, &out, outlen,
	    err, sizeof(err)) == -1)
		return NULL;
	return out;
}

/* A sink that keeps what it gets and the most it ever held. */
struct sink {
	struct evbuffer	*buf;
	size_t		 peak;
	int		 refuse;
};

static int
on_out(void *arg, const void *p, size_t len)
{
	struct sink *s = arg;

	if (s->refuse || len == 0 || len > CODEC_CHUNK)
		return -1;
	if (evbuffer_add(s->buf, p, len) == -1)
		return -1;
	if (evbuffer_get_length(s->buf) > s->peak)
		s->peak = evbuffer_get_length(s->buf);
	return 0;
}

/* Decodes in[len] fed in pieces (step: at most that many; 0: random),
 * into s; the result. */
static enum codec_result
decode_pieces(enum coding c, const unsigned char *in, size_t len,
    size_t step, size_t max_out, struct sink *s)
{
	struct codec *cd;
	enum codec_result r = CODEC_OK;
	char err[CODEC_ERR_LEN];
	size_t n;

	cd = codec_decoder_new(c, max_out, on_out, s, err, sizeof(err));
	if (cd == NULL)
		return CODEC_ERROR;
	for (size_t at = 0; at < len && r == CODEC_OK; at += n) {
		n = step > 0 ? step : 1 + next_rand() % (len / 4 + 1);
		if (n > len - at)
			n = len - at;
		r = codec_feed(cd, in + at, n);
	}
	if (r == CODEC_OK)
		r = codec_finish(cd);
	codec_free(&cd);
	return r;
}

static int
same_bytes(struct evbuffer *b, const unsigned char *want, size_t len)
{
	return evbuffer_get_length(b) == len && (len == 0 ||
	    memcmp(evbuffer_pullup(b, -1), want, len) == 0);
}

static void
t_every_coding_round_trips_at_every_size(void)
{
	static const size_t sizes[] = { 0, 1, 64 * KIB, MIB };
	struct evbuffer *out = evbuffer_new(), *enc = evbuffer_new();
	unsigned char *body, *z;
	size_t zlen;
	char err[CODEC_ERR_LEN];

	CHECK(out != NULL && enc != NULL);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
	for (int noise = 0; noise < 2; noise++)
	for (size_t i = 0; i < NCODINGS; i++) {
		enum coding c = codings[i];

		CHECK((body = make_body(sizes[s], noise)) != NULL);
		CHECK((z = pack(c, body, sizes[s], &zlen)) != NULL);
		if (c != CODING_IDENTITY && !noise && sizes[s] >= 64 * KIB)
			CHECK(zlen < sizes[s] / 4);
		CHECK(codec_encode(enc, c, codec_level_default(c), body,
		    sizes[s], err, sizeof(err)) == 0);
		CHECK(same_bytes(enc, z, zlen));
		CHECK(codec_decode_to(out, c, z, zlen, sizes[s]) == CODEC_OK);
		CHECK(same_bytes(out, body, sizes[s]));
		evbuffer_drain(out, sizes[s]);
		evbuffer_drain(enc, zlen);
		free(z);
		free(body);
	}
	evbuffer_free(out);
	evbuffer_free(enc);
}

static void
t_every_level_round_trips(void)
{
	static const int lo[] = { 0, CODEC_GZIP_LEVEL_MIN, CODEC_BR_LEVEL_MIN,
	    CODEC_ZSTD_LEVEL_MIN };
	static const int hi[] = { 0, CODEC_GZIP_LEVEL_MAX, CODEC_BR_LEVEL_MAX,
	    CODEC_ZSTD_LEVEL_MAX };
	struct evbuffer *out = evbuffer_new();
	unsigned char *body = make_body(16 * KIB, 0), *z;
	size_t zlen;
	char err[CODEC_ERR_LEN];

	CHECK(out != NULL && body != NULL);
	for (size_t i = 0; i < NCODINGS; i++)
		for (int lv = lo[i]; lv <= hi[i]; lv++) {
			CHECK(codec_encode_alloc(codings[i], lv, body, 16 * KIB,
			    &z, &zlen, err, sizeof(err)) == 0);
			CHECK(codec_decode_to(out, codings[i], z, zlen,
			    CODEC_NO_LIMIT) == CODEC_OK);
			CHECK(same_bytes(out, body, 16 * KIB));
			evbuffer_drain(out, 16 * KIB);
			free(z);
		}
	free(body);
	evbuffer_free(out);
}

static void
t_levels_out_of_range_are_refused(void)
{
	char err[CODEC_ERR_LEN];
	unsigned char *z;
	size_t zlen;

	CHECK(codec_level_check(CODING_GZIP, 0) == -1);
	CHECK(codec_level_check(CODING_GZIP, 10) == -1);
	CHECK(codec_level_check(CODING_BR, 12) == -1);
	CHECK(codec_level_check(CODING_ZSTD, 20) == -1);
	CHECK(codec_level_check(CODING_ZSTD, 0) == -1);
	CHECK(codec_level_check(CODING_UNKNOWN, 0) == -1);
	for (size_t i = 0; i < NCODINGS; i++)
		CHECK(codec_level_check(codings[i],
		    codec_level_default(codings[i])) == 0);
	CHECK(codec_encoder_new(CODING_ZSTD, 22, CODEC_SIZE_UNKNOWN, NULL, NULL,
	    err, sizeof(err)) == NULL);
	CHECK(strstr(err, "level 22") != NULL);
	CHECK(codec_encode_alloc(CODING_UNKNOWN, 0, "a", 1, &z, &zlen, err,
	    sizeof(err)) == -1);
	CHECK(codec_decoder_new(CODING_UNKNOWN, 1, NULL, NULL, err,
	    sizeof(err)) == NULL);
}

static void
t_decoding_in_any_pieces_gives_the_same_body(void)
{
	struct sink s = { evbuffer_new(), 0, 0 };
	unsigned char *body = make_body(64 * KIB, 0), *z;
	size_t zlen;

	CHECK(s.buf != NULL && body != NULL);
	for (size_t i = 0; i < NCODINGS; i++) {
		CHECK((z = pack(codings[i], body, 64 * KIB, &zlen)) != NULL);
		CHECK(decode_pieces(codings[i], z, zlen, 1, CODEC_NO_LIMIT,
		    &s) == CODEC_OK);
		CHECK(same_bytes(s.buf, body, 64 * KIB));
		evbuffer_drain(s.buf, 64 * KIB);
		for (int k = 0; k < SPLITS; k++) {
			CHECK(decode_pieces(codings[i], z, zlen, 0,
			    CODEC_NO_LIMIT, &s) == CODEC_OK);
			CHECK(same_bytes(s.buf, body, 64 * KIB));
			evbuffer_drain(s.buf, 64 * KIB);
		}
		free(z);
	}
	free(body);
	evbuffer_free(s.buf);
}

static void
t_streaming_encode_in_any_pieces_round_trips(void)
{
	struct evbuffer *z = evbuffer_new(), *out = evbuffer_new();
	unsigned char *body = make_body(200 * KIB, 0);
	struct codec *cd;
	char err[CODEC_ERR_LEN];
	size_t n, zlen;

	CHECK(z != NULL && out != NULL && body != NULL);
	for (size_t i = 0; i < NCODINGS; i++) {
		enum coding c = codings[i];

		cd = codec_encoder_new(c, codec_level_default(c),
		    CODEC_SIZE_UNKNOWN, codec_sink_evbuffer, z, err,
		    sizeof(err));
		CHECK(cd != NULL);
		for (size_t at = 0; at < 200 * KIB; at += n) {
			n = 1 + next_rand() % (8 * KIB);
			n = n < 200 * KIB - at ? n : 200 * KIB - at;
			CHECK(codec_feed(cd, body + at, n) == CODEC_OK);
		}
		CHECK(codec_finish(cd) == CODEC_OK);
		CHECK(codec_finish(cd) == CODEC_OK);
		CHECK(codec_feed(cd, "x", 1) == CODEC_ERROR);
		zlen = evbuffer_get_length(z);
		CHECK(codec_total_out(cd) == zlen);
		codec_free(&cd);
		CHECK(cd == NULL);
		CHECK(codec_decode_to(out, c, evbuffer_pullup(z, -1), zlen,
		    200 * KIB) == CODEC_OK);
		CHECK(same_bytes(out, body, 200 * KIB));
		evbuffer_drain(out, 200 * KIB);
		evbuffer_drain(z, zlen);
	}
	free(body);
	evbuffer_free(z);
	evbuffer_free(out);
}

/* A zstd encoder told the input's length refuses another length. */
static void
t_a_zstd_length_told_must_be_kept(void)
{
	struct codec *cd;
	char err[CODEC_ERR_LEN];

	cd = codec_encoder_new(CODING_ZSTD, 3, 10, NULL, NULL, err,
	    sizeof(err));
	CHECK(cd != NULL);
	CHECK(codec_feed(cd, "12345", 5) == CODEC_OK);
	CHECK(codec_finish(cd) == CODEC_ERROR);
	CHECK(strstr(codec_error(cd), "zstd: ") == codec_error(cd));
	codec_free(&cd);
}

static enum codec_result
decode_whole(enum coding c, const unsigned char *z, size_t zlen,
    size_t max_out)
{
	struct evbuffer *out = evbuffer_new();
	enum codec_result r;

	if (out == NULL)
		return CODEC_ERROR;
	r = codec_decode_to(out, c, z, zlen, max_out);
	if (r != CODEC_OK && evbuffer_get_length(out) != 0)
		r = CODEC_ERROR;	/* out must be untouched */
	evbuffer_free(out);
	return r;
}

static void
t_a_flipped_byte_in_the_middle_is_caught(void)
{
	unsigned char *body = make_body(64 * KIB, 0), *z;
	struct sink s = { evbuffer_new(), 0, 0 };
	enum codec_result r;
	size_t zlen;

	CHECK(body != NULL && s.buf != NULL);
	for (size_t i = 0; i < NPACKED; i++) {
		CHECK((z = pack(packed[i], body, 64 * KIB, &zlen)) != NULL);
		z[zlen / 2] ^= 0x55;
		r = decode_pieces(packed[i], z, zlen, 0, CODEC_NO_LIMIT, &s);
		if (packed[i] == CODING_BR)	/* no checksum: other bytes */
			CHECK(r != CODEC_OK || !same_bytes(s.buf, body,
			    64 * KIB));
		else
			CHECK(r == CODEC_CORRUPT || r == CODEC_TRUNCATED);
		CHECK(r != CODEC_TOO_LARGE && r != CODEC_ERROR);
		evbuffer_drain(s.buf, evbuffer_get_length(s.buf));
		free(z);
	}
	free(body);
	evbuffer_free(s.buf);
}

static void
t_bad_headers_are_corrupt(void)
{
	/* A zstd frame of "A" with a 2^23 window, then with 2^24. */
	unsigned char zs[] = { 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x68,
	    0x09, 0x00, 0x00, 'A' };
	unsigned char *body = make_body(4 * KIB, 0), *z;
	size_t zlen;

	CHECK(body != NULL);
	CHECK(decode_whole(CODING_ZSTD, zs, sizeof(zs), 1) == CODEC_OK);
	zs[5] = 0x70;
	CHECK(decode_whole(CODING_ZSTD, zs, sizeof(zs), 1) == CODEC_CORRUPT);
	for (size_t i = 0; i < NPACKED; i++) {
		CHECK((z = pack(packed[i], body, 4 * KIB, &zlen)) != NULL);
		z[0] ^= 0xff;
		CHECK(decode_whole(packed[i], z, zlen, CODEC_NO_LIMIT) ==
		    CODEC_CORRUPT);
		free(z);
	}
	/* zlib's own wrapper and raw deflate are not gzip. */
	CHECK(decode_whole(CODING_GZIP, (const unsigned char *)"\x78\x9c\x4b"
	    "\x04\x00\x00\x62\x00\x62", 9, 10) == CODEC_CORRUPT);
	/* Brotli's large-window header, which RFC 7932 does not allow. */
	CHECK(decode_whole(CODING_BR, (const unsigned char *)"\x11\x00", 2,
	    10) == CODEC_CORRUPT);
	free(body);
}

static void
t_bad_checksums_are_corrupt(void)
{
	unsigned char *body = make_body(64 * KIB, 0), *z;
	size_t zlen;

	CHECK(body != NULL);
	CHECK((z = pack(CODING_GZIP, body, 64 * KIB, &zlen)) != NULL);
	z[zlen - 8] ^= 0x01;		/* CRC-32 */
	CHECK(decode_whole(CODING_GZIP, z, zlen, CODEC_NO_LIMIT) ==
	    CODEC_CORRUPT);
	z[zlen - 8] ^= 0x01;
	z[zlen - 1] ^= 0x01;		/* ISIZE */
	CHECK(decode_whole(CODING_GZIP, z, zlen, CODEC_NO_LIMIT) ==
	    CODEC_CORRUPT);
	z[zlen - 1] ^= 0x01;
	CHECK(decode_whole(CODING_GZIP, z, zlen, CODEC_NO_LIMIT) == CODEC_OK);
	free(z);
	CHECK((z = pack(CODING_ZSTD, body, 64 * KIB, &zlen)) != NULL);
	CHECK(z[4] & 0x04);		/* Content_Checksum_flag */
	z[zlen - 1] ^= 0x01;		/* XXH64's low 32 bits */
	CHECK(decode_whole(CODING_ZSTD, z, zlen, CODEC_NO_LIMIT) ==
	    CODEC_CORRUPT);
	free(z);
	free(body);
}

static void
t_input_cut_anywhere_is_truncated(void)
{
	static const size_t sizes[] = { 0, 1, CUT_BODY };
	struct sink s = { evbuffer_new(), 0, 0 };
	unsigned char *body = make_body(CUT_BODY, 1), *z;
	enum codec_result r;
	size_t zlen;

	CHECK(body != NULL && s.buf != NULL);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
	for (size_t i = 0; i < NPACKED; i++) {
		CHECK((z = pack(packed[i], body, sizes[k], &zlen)) != NULL);
		for (size_t cut = 0; cut < zlen; cut++) {
			r = decode_pieces(packed[i], z, cut, 0, CODEC_NO_LIMIT,
			    &s);
			if (r != CODEC_TRUNCATED)
				printf("# %s of %zu cut at %zu of %zu: %s\n",
				    codec_name(packed[i]), sizes[k], cut, zlen,
				    codec_result_name(r));
			CHECK(r == CODEC_TRUNCATED);
			evbuffer_drain(s.buf, evbuffer_get_length(s.buf));
		}
		free(z);
	}
	free(body);
	evbuffer_free(s.buf);
}

static void
t_bytes_after_the_end_are_corrupt(void)
{
	unsigned char *body = make_body(10 * KIB, 0), *z, *two;
	struct sink s = { evbuffer_new(), 0, 0 };
	struct codec *cd;
	char err[CODEC_ERR_LEN];
	size_t zlen;

	CHECK(body != NULL && s.buf != NULL);
	for (size_t i = 0; i < NPACKED; i++) {
		enum coding c = packed[i];

		CHECK((z = pack(c, body, 10 * KIB, &zlen)) != NULL);
		CHECK((two = malloc(2 * zlen)) != NULL);
		memcpy(two, z, zlen);
		memcpy(two + zlen, z, zlen);	/* a second member, frame */
		CHECK(decode_whole(c, two, 2 * zlen, CODEC_NO_LIMIT) ==
		    CODEC_CORRUPT);
		two[zlen] = '\n';		/* one stray byte */
		CHECK(decode_whole(c, two, zlen + 1, CODEC_NO_LIMIT) ==
		    CODEC_CORRUPT);
		/* The same byte in a piece of its own, after the end. */
		cd = codec_decoder_new(c, CODEC_NO_LIMIT, on_out, &s, err,
		    sizeof(err));
		CHECK(cd != NULL);
		CHECK(codec_feed(cd, two, zlen) == CODEC_OK);
		CHECK(codec_feed(cd, two + zlen, 1) == CODEC_CORRUPT);
		CHECK(codec_finish(cd) == CODEC_CORRUPT);
		CHECK(codec_feed(cd, two, 1) == CODEC_CORRUPT);
		CHECK(strstr(codec_error(cd), "after the end") != NULL);
		codec_free(&cd);
		evbuffer_drain(s.buf, evbuffer_get_length(s.buf));
		free(two);
		free(z);
	}
	free(body);
	evbuffer_free(s.buf);
}

/* BOMB_SIZE zeros, packed by a streaming encoder at the default level
 * (gzip's 1 MiB is near deflate's best, 1:1032). */
static struct evbuffer *
make_bomb(enum coding c)
{
	static const unsigned char zeros[BOMB_PIECE];
	struct evbuffer *z = evbuffer_new();
	struct codec *cd;
	char err[CODEC_ERR_LEN];
	enum codec_result r = CODEC_OK;

	if (z == NULL)
		return NULL;
	cd = codec_encoder_new(c, codec_level_default(c), CODEC_SIZE_UNKNOWN,
	    codec_sink_evbuffer, z, err, sizeof(err));
	if (cd == NULL)
		goto fail;
	for (size_t at = 0; at < BOMB_SIZE && r == CODEC_OK; at += BOMB_PIECE)
		r = codec_feed(cd, zeros, BOMB_PIECE);
	if (r != CODEC_OK || codec_finish(cd) != CODEC_OK)
		goto fail;
	codec_free(&cd);
	return z;
fail:
	codec_free(&cd);
	evbuffer_free(z);
	return NULL;
}

static void
t_a_bomb_stops_at_max_out_holding_no_more(void)
{
	struct sink s = { evbuffer_new(), 0, 0 };
	struct evbuffer *z, *out = evbuffer_new();
	unsigned char *p;
	size_t zlen;

	CHECK(s.buf != NULL && out != NULL);
	for (size_t i = 0; i < NPACKED; i++) {
		CHECK((z = make_bomb(packed[i])) != NULL);
		zlen = evbuffer_get_length(z);
		CHECK(zlen < BOMB_PACKED_MAX);
		p = evbuffer_pullup(z, -1);
		s.peak = 0;
		CHECK(decode_pieces(packed[i], p, zlen, 4 * KIB, BOMB_LIMIT,
		    &s) == CODEC_TOO_LARGE);
		CHECK(s.peak <= BOMB_LIMIT + CODEC_SLACK);
		CHECK(evbuffer_get_length(s.buf) == BOMB_LIMIT);
		evbuffer_drain(s.buf, BOMB_LIMIT);
		CHECK(codec_decode_to(out, packed[i], p, zlen, BOMB_LIMIT) ==
		    CODEC_TOO_LARGE);
		CHECK(evbuffer_get_length(out) == 0);
		evbuffer_free(z);
	}
	evbuffer_free(s.buf);
	evbuffer_free(out);
}

static void
t_output_of_exactly_max_out_passes_and_one_more_is_too_large(void)
{
	static const size_t sizes[] = { 0, 1, 100000 };
	unsigned char *body = make_body(100000, 0), *z;
	size_t zlen, n;

	CHECK(body != NULL);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
	for (size_t i = 0; i < NCODINGS; i++) {
		n = sizes[k];
		CHECK((z = pack(codings[i], body, n, &zlen)) != NULL);
		CHECK(decode_whole(codings[i], z, zlen, n) == CODEC_OK);
		if (n > 0)
			CHECK(decode_whole(codings[i], z, zlen, n - 1) ==
			    CODEC_TOO_LARGE);
		free(z);
	}
	free(body);
}

static void
t_a_sink_that_refuses_stops_the_codec(void)
{
	struct sink s = { evbuffer_new(), 0, 1 };
	unsigned char *z;
	size_t zlen;

	CHECK(s.buf != NULL);
	for (size_t i = 0; i < NCODINGS; i++) {
		CHECK((z = pack(codings[i], (const unsigned char *)"hello", 5,
		    &zlen)) != NULL);
		CHECK(decode_pieces(codings[i], z, zlen, 0, 100, &s) ==
		    CODEC_ERROR);
		free(z);
	}
	evbuffer_free(s.buf);
}

static void
t_content_encoding_names_exactly_one_known_coding(void)
{
	CHECK(codec_parse(NULL) == CODING_IDENTITY);
	CHECK(codec_parse("") == CODING_IDENTITY);
	CHECK(codec_parse(" , ") == CODING_IDENTITY);
	CHECK(codec_parse("gzip") == CODING_GZIP);
	CHECK(codec_parse("x-gzip") == CODING_GZIP);
	CHECK(codec_parse(" GZip\t") == CODING_GZIP);
	CHECK(codec_parse("gzip,") == CODING_GZIP);
	CHECK(codec_parse("br") == CODING_BR);
	CHECK(codec_parse("ZSTD") == CODING_ZSTD);
	CHECK(codec_parse("gzip, br") == CODING_UNKNOWN);
	CHECK(codec_parse("gzip, gzip") == CODING_UNKNOWN);
	CHECK(codec_parse("identity") == CODING_UNKNOWN);
	CHECK(codec_parse("deflate") == CODING_UNKNOWN);
	CHECK(codec_parse("compress") == CODING_UNKNOWN);
	CHECK(codec_parse("gzip;q=1") == CODING_UNKNOWN);
	CHECK(codec_parse("gzip br") == CODING_UNKNOWN);
	CHECK(codec_parse("\"gzip\"") == CODING_UNKNOWN);
	CHECK(codec_parse("gzipp") == CODING_UNKNOWN);
	CHECK_STR(codec_name(CODING_BR), "br");
	CHECK_STR(codec_name(CODING_UNKNOWN), "unknown");
	CHECK_STR(codec_result_name(CODEC_TRUNCATED), "truncated");
}

static void
t_compressible_types_match_by_pattern(void)
{
	const char *d = NULL;

	CHECK(codec_compressible("text/html; charset=utf-8", d));
	CHECK(codec_compressible("TEXT/CSS", d));
	CHECK(codec_compressible("  application/json", d));
	CHECK(codec_compressible("application/json;charset=UTF-8", d));
	CHECK(codec_compressible("application/vnd.api+json", d));
	CHECK(codec_compressible("application/ld+JSON ; x=y", d));
	CHECK(codec_compressible("application/atom+xml", d));
	CHECK(codec_compressible("image/svg+xml", d));
	CHECK(codec_compressible("application/javascript", d));
	CHECK(!codec_compressible("application/+json", d));
	CHECK(!codec_compressible("application/jsonx", d));
	CHECK(!codec_compressible("application/json x", d));
	CHECK(!codec_compressible("image/png", d));
	CHECK(!codec_compressible("application/octet-stream", d));
	CHECK(!codec_compressible("text", d));
	CHECK(!codec_compressible("text/", d));
	CHECK(!codec_compressible("/html", d));
	CHECK(!codec_compressible("", d));
	CHECK(!codec_compressible(NULL, d));
	CHECK(codec_compressible("image/png", "image/*"));
	CHECK(codec_compressible("font/woff2", " */* "));
	CHECK(!codec_compressible("text/html", "image/* "));
	CHECK(!codec_compressible("text/html", ""));
	CHECK(!codec_compressible("text/html", "text"));
	CHECK(codec_compressible("text/html", "\ttext/plain  Text/HTML"));
}

/* A zstd skippable frame (RFC 8878 §3.1.2) of n bytes of payload. */
static size_t
skippable_frame(unsigned char *p, size_t n)
{
	static const unsigned char magic[] = { 0x5a, 0x2a, 0x4d, 0x18 };

	memcpy(p, magic, 4);
	p[4] = (unsigned char)n;
	p[5] = (unsigned char)(n >> 8);
	p[6] = (unsigned char)(n >> 16);
	p[7] = (unsigned char)(n >> 24);
	memset(p + 8, 'S', n);
	return 8 + n;
}

static void
t_zstd_skippable_frames_are_skipped_and_are_not_a_body(void)
{
	unsigned char *body = make_body(40 * KIB, 0), *z, *framed;
	struct sink s = { evbuffer_new(), 0, 0 };
	size_t zlen, n;

	CHECK(body != NULL && s.buf != NULL);
	CHECK((z = pack(CODING_ZSTD, body, 40 * KIB, &zlen)) != NULL);
	CHECK((framed = malloc(zlen + 2 * (8 + 300))) != NULL);
	/* Two skippable frames, then the data frame: read in any pieces. */
	n = skippable_frame(framed, 300);
	n += skippable_frame(framed + n, 0);
	memcpy(framed + n, z, zlen);
	for (size_t step = 1; step <= 4 * KIB; step *= 4) {
		CHECK(decode_pieces(CODING_ZSTD, framed, n + zlen, step,
		    CODEC_NO_LIMIT, &s) == CODEC_OK);
		CHECK(same_bytes(s.buf, body, 40 * KIB));
		evbuffer_drain(s.buf, 40 * KIB);
	}
	CHECK(decode_whole(CODING_ZSTD, framed, n + zlen, CODEC_NO_LIMIT) ==
	    CODEC_OK);
	/* Skippable frames only: no data frame, not a whole body. */
	CHECK(decode_pieces(CODING_ZSTD, framed, n, 0, CODEC_NO_LIMIT, &s) ==
	    CODEC_TRUNCATED);
	CHECK(decode_whole(CODING_ZSTD, framed, n, CODEC_NO_LIMIT) ==
	    CODEC_TRUNCATED);
	CHECK(evbuffer_get_length(s.buf) == 0);
	/* A skippable frame after the data frame is a byte after its end. */
	memcpy(framed, z, zlen);
	n = skippable_frame(framed + zlen, 4);
	CHECK(decode_whole(CODING_ZSTD, framed, zlen + n, CODEC_NO_LIMIT) ==
	    CODEC_CORRUPT);
	free(framed);
	free(z);
	free(body);
	evbuffer_free(s.buf);
}

/* A damaged checksum (gzip's CRC-32, zstd's XXH64) is found after the
 * whole body has been made: it is all handed on, then the failure. A
 * damaged brotli stream hands on a prefix of the body at most. */
static void
t_decoders_hand_on_what_they_made_before_a_fault(void)
{
	unsigned char *body = make_body(FAULT_BODY, 0), *z;
	struct sink s = { evbuffer_new(), 0, 0 };
	enum codec_result r;
	size_t zlen, got;

	CHECK(body != NULL && s.buf != NULL);
	for (size_t i = 0; i < NPACKED; i++) {
		enum coding c = packed[i];

		CHECK((z = pack(c, body, FAULT_BODY, &zlen)) != NULL);
		if (c == CODING_GZIP)
			z[zlen - 8] ^= 0x01;	/* the CRC-32 */
		else if (c == CODING_ZSTD)
			z[zlen - 1] ^= 0x01;	/* the checksum */
		else
			z[zlen - 3] ^= 0xff;	/* near the stream's end */
		r = decode_pieces(c, z, zlen, zlen, CODEC_NO_LIMIT, &s);
		got = evbuffer_get_length(s.buf);
		CHECK(r == CODEC_CORRUPT || (c == CODING_BR && r != CODEC_OK));
		CHECK(got <= FAULT_BODY && (got == 0 ||
		    memcmp(evbuffer_pullup(s.buf, -1), body, got) == 0));
		if (c != CODING_BR)
			CHECK(got == FAULT_BODY);
		evbuffer_drain(s.buf, got);
		free(z);
	}
	free(body);
	evbuffer_free(s.buf);
}

static void
t_an_event_stream_is_never_compressible(void)
{
	CHECK(codec_compressible("text/event-stream", NULL) == 0);
	CHECK(codec_compressible("Text/Event-Stream; charset=utf-8",
	    "text/*") == 0);
	CHECK(codec_compressible("text/event-stream", "text/event-stream") ==
	    0);
	CHECK(codec_compressible("text/event-stream", "*/*") == 0);
	CHECK(codec_compressible("text/event-streams", "text/*") == 1);
	CHECK(codec_compressible("text/plain", "text/*") == 1);
}

static void
t_type_lists_are_checked(void)
{
	char err[CODEC_ERR_LEN];

	CHECK(codec_types_valid(CODEC_COMPRESSIBLE_DEFAULT, err,
	    sizeof(err)) == 0);
	CHECK(codec_types_valid("text/*  */*+json\tapplication/json", err,
	    sizeof(err)) == 0);
	CHECK(codec_types_valid("*/*", err, sizeof(err)) == 0);
	CHECK(codec_types_valid("", err, sizeof(err)) == -1);
	CHECK(strstr(err, "no media types") != NULL);
	CHECK(codec_types_valid("   ", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("text/html json", err, sizeof(err)) == -1);
	CHECK(strstr(err, "\"json\"") != NULL);
	CHECK(codec_types_valid("text/", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("/json", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("text/ht*ml", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("te*t/html", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("text/html,text/css, image/svg+xml", err,
	    sizeof(err)) == 0);
	CHECK(codec_types_valid("text/html;q=1", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("application/*+", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("text/a/b", err, sizeof(err)) == -1);
	CHECK(codec_types_valid("text/\"x\"", err, sizeof(err)) == -1);
}

static void
t_decoders_alive_at_once_are_capped(void)
{
	unsigned char *body = make_body(20 * KIB, 0), *gz, *zs, *zs_unsized;
	struct evbuffer *out = evbuffer_new(), *enc = evbuffer_new();
	struct codec *a, *b, *c, *id, *e;
	char err[CODEC_ERR_LEN];
	size_t gzlen, zslen, ulen;
	struct codec *cd;

	CHECK(body != NULL && out != NULL && enc != NULL);
	CHECK(codec_decoders_live() == 0);
	codec_decoders_limit(2);
	a = codec_decoder_new(CODING_GZIP, CODEC_NO_LIMIT, NULL, NULL, err,
	    sizeof(err));
	b = codec_decoder_new(CODING_BR, CODEC_NO_LIMIT, NULL, NULL, err,
	    sizeof(err));
	CHECK(a != NULL && b != NULL && codec_decoders_live() == 2);
	c = codec_decoder_new(CODING_ZSTD, CODEC_NO_LIMIT, NULL, NULL, err,
	    sizeof(err));
	CHECK(c == NULL);
	CHECK(strstr(err, "2 decoders at once") != NULL);
	/* Identity and encoders are not counted. */
	id = codec_decoder_new(CODING_IDENTITY, CODEC_NO_LIMIT, NULL, NULL,
	    err, sizeof(err));
	e = codec_encoder_new(CODING_GZIP, 1, CODEC_SIZE_UNKNOWN, NULL, NULL,
	    err, sizeof(err));
	CHECK(id != NULL && e != NULL && codec_decoders_live() == 2);
	codec_free(&id);
	codec_free(&e);
	/* At the cap, a gzip body cannot be decoded whole; a zstd frame
	 * that records its length can, in one call, with no decoder. */
	CHECK((gz = pack(CODING_GZIP, body, 20 * KIB, &gzlen)) != NULL);
	CHECK((zs = pack(CODING_ZSTD, body, 20 * KIB, &zslen)) != NULL);
	CHECK(codec_decode_to(out, CODING_GZIP, gz, gzlen, CODEC_NO_LIMIT) ==
	    CODEC_ERROR);
	CHECK(codec_decode_to(out, CODING_ZSTD, zs, zslen, 20 * KIB) ==
	    CODEC_OK);
	CHECK(same_bytes(out, body, 20 * KIB));
	evbuffer_drain(out, 20 * KIB);
	/* ... but not past max_out, nor a frame that does not record it. */
	CHECK(codec_decode_to(out, CODING_ZSTD, zs, zslen, 20 * KIB - 1) ==
	    CODEC_ERROR);
	cd = codec_encoder_new(CODING_ZSTD, 3, CODEC_SIZE_UNKNOWN,
	    codec_sink_evbuffer, enc, err, sizeof(err));
	CHECK(cd != NULL);
	CHECK(codec_feed(cd, body, 20 * KIB) == CODEC_OK);
	CHECK(codec_finish(cd) == CODEC_OK);
	codec_free(&cd);
	ulen = evbuffer_get_length(enc);
	zs_unsized = evbuffer_pullup(enc, -1);
	CHECK(codec_decode_to(out, CODING_ZSTD, zs_unsized, ulen,
	    CODEC_NO_LIMIT) == CODEC_ERROR);
	codec_free(&a);
	CHECK(codec_decoders_live() == 1);
	CHECK(codec_decode_to(out, CODING_ZSTD, zs_unsized, ulen,
	    CODEC_NO_LIMIT) == CODEC_OK);
	CHECK(same_bytes(out, body, 20 * KIB));
	evbuffer_drain(out, 20 * KIB);
	CHECK(codec_decoders_live() == 1);
	codec_free(&b);
	CHECK(codec_decoders_live() == 0);
	codec_decoders_limit(CODEC_DECODERS_MAX);
	free(gz);
	free(zs);
	free(body);
	evbuffer_free(out);
	evbuffer_free(enc);
}

int
main(void)
{
	RUN(t_every_coding_round_trips_at_every_size);
	RUN(t_every_level_round_trips);
	RUN(t_levels_out_of_range_are_refused);
	RUN(t_decoding_in_any_pieces_gives_the_same_body);
	RUN(t_streaming_encode_in_any_pieces_round_trips);
	RUN(t_a_zstd_length_told_must_be_kept);
	RUN(t_a_flipped_byte_in_the_middle_is_caught);
	RUN(t_bad_headers_are_corrupt);
	RUN(t_bad_checksums_are_corrupt);
	RUN(t_input_cut_anywhere_is_truncated);
	RUN(t_bytes_after_the_end_are_corrupt);
	RUN(t_a_bomb_stops_at_max_out_holding_no_more);
	RUN(t_output_of_exactly_max_out_passes_and_one_more_is_too_large);
	RUN(t_a_sink_that_refuses_stops_the_codec);
	RUN(t_content_encoding_names_exactly_one_known_coding);
	RUN(t_compressible_types_match_by_pattern);
	RUN(t_zstd_skippable_frames_are_skipped_and_are_not_a_body);
	RUN(t_decoders_hand_on_what_they_made_before_a_fault);
	RUN(t_an_event_stream_is_never_compressible);
	RUN(t_type_lists_are_checked);
	RUN(t_decoders_alive_at_once_are_capped);
	return unit_exit();
}
