/* SPDX-License-Identifier: MIT */
/*
 * zstd (RFC 8878) on libzstd: one frame, windows up to 8 MiB
 * (CODEC_ZSTD_WINDOW_LOG_MAX), nothing after its end. The frames written
 * carry a checksum, and their length when it is known. See codec.h.
 *
 * Calls libzstd and codec.c's emit. Called from codec.c only.
 */

#include "codec/codec_int.h"

#include <zstd.h>
#include <zstd_errors.h>

static int
dec_init(struct codec *cd)
{
	ZSTD_DCtx *d;

	if ((d = ZSTD_createDCtx()) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	if (ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax,
	    CODEC_ZSTD_WINDOW_LOG_MAX))) {
		codec_fail(cd, CODEC_ERROR, "cannot bound the window");
		ZSTD_freeDCtx(d);
		return -1;
	}
	cd->lib = d;
	return 0;
}

/* A library failure: memory is ours, anything else the stream's. */
static enum codec_result
zstd_error(struct codec *cd, size_t zr, enum codec_result otherwise)
{
	if (ZSTD_getErrorCode(zr) == ZSTD_error_memory_allocation)
		return codec_fail(cd, CODEC_ERROR, "out of memory");
	return codec_fail(cd, otherwise, ZSTD_getErrorName(zr));
}

static enum codec_result
dec_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	ZSTD_outBuffer ob;
	enum codec_result r;
	size_t zr;

	for (;;) {
		ob.dst = cd->chunk;
		ob.size = CODEC_CHUNK;
		ob.pos = 0;
		zr = ZSTD_decompressStream(cd->lib, &ob, &ib);
		if (ZSTD_isError(zr))
			return zstd_error(cd, zr, CODEC_CORRUPT);
		if ((r = codec_emit(cd, cd->chunk, ob.pos)) != CODEC_OK)
			return r;
		if (zr == 0) {
			cd->ended = 1;	/* the frame is whole and flushed */
			break;
		}
		if (ib.pos == ib.size && ob.pos < ob.size)
			break;
	}
	if (ib.pos < ib.size)
		return codec_fail(cd, CODEC_CORRUPT,
		    "bytes after the end of the stream");
	return CODEC_OK;
}

static void
dec_done(struct codec *cd)
{
	ZSTD_freeDCtx(cd->lib);
	cd->lib = NULL;
}

static int
enc_init(struct codec *cd)
{
	ZSTD_CCtx *c;

	if ((c = ZSTD_createCCtx()) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel,
	    cd->level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)) ||
	    (cd->size != CODEC_SIZE_UNKNOWN &&
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, cd->size)))) {
		codec_fail(cd, CODEC_ERROR, "cannot set the level");
		ZSTD_freeCCtx(c);
		return -1;
	}
	cd->lib = c;
	return 0;
}

/* Compresses in[len] up to end, every output piece emitted. */
static enum codec_result
enc_run(struct codec *cd, const unsigned char *in, size_t len,
    ZSTD_EndDirective end)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	ZSTD_outBuffer ob;
	enum codec_result r;
	size_t zr;

	do {
		ob.dst = cd->chunk;
		ob.size = CODEC_CHUNK;
		ob.pos = 0;
		zr = ZSTD_compressStream2(cd->lib, &ob, &ib, end);
		if (ZSTD_isError(zr))
			return zstd_error(cd, zr, CODEC_ERROR);
		if ((r = codec_emit(cd, cd->chunk, ob.pos)) != CODEC_OK)
			return r;
	} while (end == ZSTD_e_end ? zr != 0 : ib.pos < ib.size);
	return CODEC_OK;
}

static enum codec_result
enc_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	return enc_run(cd, in, len, ZSTD_e_continue);
}

static enum codec_result
enc_finish(struct codec *cd)
{
	return enc_run(cd, NULL, 0, ZSTD_e_end);
}

static void
enc_done(struct codec *cd)
{
	ZSTD_freeCCtx(cd->lib);
	cd->lib = NULL;
}

const struct codec_ops codec_zstd_decoder = {
	dec_init, dec_feed, NULL, dec_done,
};

const struct codec_ops codec_zstd_encoder = {
	enc_init, enc_feed, enc_finish, enc_done,
};
