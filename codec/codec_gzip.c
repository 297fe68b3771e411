/* SPDX-License-Identifier: MIT */
/*
 * gzip (RFC 1952) on zlib: exactly one member, header and trailer
 * checked (CRC-32 and length); nothing may follow it. See codec.h.
 *
 * Calls zlib and codec.c's emit. Called from codec.c only.
 */

#define ZLIB_CONST
#include "codec/codec_int.h"

#include <stdlib.h>

#include <zlib.h>

#define GZIP_WINDOW_BITS	(16 + MAX_WBITS)	/* gzip wrapper only */
#define GZIP_MEM_LEVEL		8			/* zlib's default */

static int
inflate_init(struct codec *cd)
{
	z_stream *z;

	if ((z = calloc(1, sizeof(*z))) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	if (inflateInit2(z, GZIP_WINDOW_BITS) != Z_OK) {
		codec_fail(cd, CODEC_ERROR, "cannot start zlib");
		free(z);
		return -1;
	}
	cd->lib = z;
	return 0;
}

static enum codec_result
inflate_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	z_stream *z = cd->lib;
	enum codec_result r;
	int zr;

	z->next_in = in;
	z->avail_in = (uInt)len;
	do {
		z->next_out = cd->chunk;
		z->avail_out = CODEC_CHUNK;
		zr = inflate(z, Z_NO_FLUSH);
		/* What came before a fault is handed on, then the fault. */
		r = codec_emit(cd, cd->chunk, CODEC_CHUNK - z->avail_out);
		if (r != CODEC_OK)
			return r;
		if (zr == Z_MEM_ERROR)
			return codec_fail(cd, CODEC_ERROR, "out of memory");
		if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT ||
		    zr == Z_STREAM_ERROR)
			return codec_fail(cd, CODEC_CORRUPT, z->msg != NULL ?
			    z->msg : "invalid data");
		if (zr == Z_STREAM_END) {
			cd->ended = 1;
			break;
		}
	} while (z->avail_in > 0 || z->avail_out == 0);
	if (z->avail_in > 0)
		return codec_fail(cd, CODEC_CORRUPT,
		    "bytes after the end of the stream");
	return CODEC_OK;
}

static void
inflate_done(struct codec *cd)
{
	if (cd->lib != NULL)
		inflateEnd(cd->lib);
	free(cd->lib);
	cd->lib = NULL;
}

static int
deflate_init(struct codec *cd)
{
	z_stream *z;

	if ((z = calloc(1, sizeof(*z))) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	if (deflateInit2(z, cd->level, Z_DEFLATED, GZIP_WINDOW_BITS,
	    GZIP_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK) {
		codec_fail(cd, CODEC_ERROR, "cannot start zlib");
		free(z);
		return -1;
	}
	cd->lib = z;
	return 0;
}

/* Deflates in[len] with flush, every output piece emitted. */
static enum codec_result
deflate_run(struct codec *cd, const unsigned char *in, size_t len, int flush)
{
	z_stream *z = cd->lib;
	enum codec_result r;
	int zr;

	z->next_in = in;
	z->avail_in = (uInt)len;
	do {
		z->next_out = cd->chunk;
		z->avail_out = CODEC_CHUNK;
		zr = deflate(z, flush);
		if (zr == Z_STREAM_ERROR)
			return codec_fail(cd, CODEC_ERROR, "zlib state broken");
		r = codec_emit(cd, cd->chunk, CODEC_CHUNK - z->avail_out);
		if (r != CODEC_OK)
			return r;
	} while (flush == Z_FINISH ? zr != Z_STREAM_END : z->avail_out == 0);
	return CODEC_OK;
}

static enum codec_result
deflate_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	return deflate_run(cd, in, len, Z_NO_FLUSH);
}

static enum codec_result
deflate_finish(struct codec *cd)
{
	return deflate_run(cd, NULL, 0, Z_FINISH);
}

static void
deflate_done(struct codec *cd)
{
	if (cd->lib != NULL)
		deflateEnd(cd->lib);
	free(cd->lib);
	cd->lib = NULL;
}

const struct codec_ops codec_gzip_decoder = {
	inflate_init, inflate_feed, NULL, inflate_done,
};

const struct codec_ops codec_gzip_encoder = {
	deflate_init, deflate_feed, deflate_finish, deflate_done,
};
