/* SPDX-License-Identifier: MIT */
/*
 * zstd (RFC 8878) on libzstd: one data frame, windows up to 8 MiB
 * (CODEC_ZSTD_WINDOW_LOG_MAX), nothing after its end. Skippable frames
 * (RFC 8878 §3.1.2) before it are skipped, as the RFC asks; a body of
 * skippable frames only has no data frame and never ends (truncated).
 * The frames written carry a checksum, and their length when it is
 * known. A whole body whose frame records its length is decoded in one
 * call, with no window buffer (zstd_decode_once). See codec.h.
 *
 * Calls libzstd and codec.c's emit. Called from codec.c only.
 */

#include "codec/codec_int.h"

#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#define MAGIC_LEN		4		/* a frame's magic number */
#define SKIPPABLE_MAGIC		0x184D2A50u	/* RFC 8878 §3.1.2 */
#define SKIPPABLE_MASK		0xFFFFFFF0u	/* its low 4 bits are free */

/* The decoder: libzstd's context, and the magic of the frame it is in. */
struct zdec {
	ZSTD_DCtx	*d;
	unsigned char	 magic[MAGIC_LEN];
	size_t		 seen;		/* bytes of magic seen, 0-4 */
	size_t		 next;		/* input libzstd asks for next */
};

static ZSTD_DCtx *
new_dctx(struct codec *cd)
{
	ZSTD_DCtx *d;

	if ((d = ZSTD_createDCtx()) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return NULL;
	}
	if (ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax,
	    CODEC_ZSTD_WINDOW_LOG_MAX))) {
		codec_fail(cd, CODEC_ERROR, "cannot bound the window");
		ZSTD_freeDCtx(d);
		return NULL;
	}
	return d;
}

static int
dec_init(struct codec *cd)
{
	struct zdec *z;

	if ((z = calloc(1, sizeof(*z))) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	if ((z->d = new_dctx(cd)) == NULL) {
		free(z);
		return -1;
	}
	z->next = MAGIC_LEN;
	cd->lib = z;
	return 0;
}

/* Notes the magic bytes of the current frame among in[*at, len), bytes
 * not looked at yet, without taking them from libzstd; moves *at. */
static void
see_magic(struct zdec *z, const unsigned char *in, size_t len, size_t *at)
{
	size_t n = MAGIC_LEN - z->seen;

	if (n > len - *at)
		n = len - *at;
	memcpy(z->magic + z->seen, in + *at, n);
	z->seen += n;
	*at += n;
}

static int
skippable(const struct zdec *z)
{
	uint32_t m = (uint32_t)z->magic[0] | (uint32_t)z->magic[1] << 8 |
	    (uint32_t)z->magic[2] << 16 | (uint32_t)z->magic[3] << 24;

	return z->seen == MAGIC_LEN && (m & SKIPPABLE_MASK) == SKIPPABLE_MAGIC;
}

/* A library failure: memory is ours, anything else the stream's. */
static enum codec_result
zstd_error(struct codec *cd, size_t zr, enum codec_result otherwise)
{
	if (ZSTD_getErrorCode(zr) == ZSTD_error_memory_allocation)
		return codec_fail(cd, CODEC_ERROR, "out of memory");
	return codec_fail(cd, otherwise, ZSTD_getErrorName(zr));
}

/*
 * The output made before an error is handed on first (a client of a
 * stream cut by a bad byte still gets what came before it), then the
 * error. libzstd does not say how much it wrote in a call that fails, so
 * no call may both make output and fail: each is given only the input
 * libzstd asks for next (one block, or the checksum), and none while
 * the last call's output filled the chunk (it is flushed first, with no
 * input). A skippable frame's end starts the next frame.
 */
static enum codec_result
dec_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	struct zdec *z = cd->lib;
	ZSTD_inBuffer ib;
	ZSTD_outBuffer ob;
	enum codec_result r;
	size_t zr, pos = 0, looked = 0, want;
	int full = 0;

	for (;;) {
		see_magic(z, in, len, &looked);
		want = full ? 0 : len - pos < z->next ? len - pos : z->next;
		ib.src = in;
		ib.size = pos + want;
		ib.pos = pos;
		ob.dst = cd->chunk;
		ob.size = CODEC_CHUNK;
		ob.pos = 0;
		zr = ZSTD_decompressStream(z->d, &ob, &ib);
		pos = ib.pos;
		if ((r = codec_emit(cd, cd->chunk, ob.pos)) != CODEC_OK)
			return r;
		if (ZSTD_isError(zr))
			return zstd_error(cd, zr, CODEC_CORRUPT);
		full = ob.pos == ob.size;
		z->next = zr > 0 ? zr : MAGIC_LEN;
		if (zr == 0 && skippable(z)) {
			z->seen = 0;	/* skipped: a frame may follow */
			looked = pos;
			if (pos == len)
				break;
			continue;
		}
		if (zr == 0) {
			cd->ended = 1;	/* the frame is whole and flushed */
			break;
		}
		if (pos == len && !full)
			break;
	}
	if (pos < len)
		return codec_fail(cd, CODEC_CORRUPT,
		    "bytes after the end of the stream");
	return CODEC_OK;
}

static void
dec_done(struct codec *cd)
{
	struct zdec *z = cd->lib;

	if (z != NULL)
		ZSTD_freeDCtx(z->d);
	free(z);
	cd->lib = NULL;
}

int
zstd_decode_once(const unsigned char *in, size_t len, size_t max_out,
    unsigned char **outp, size_t *outlen)
{
	unsigned long long size;
	struct zdec magic = { NULL, { 0 }, 0, 0 };
	ZSTD_DCtx *d;
	unsigned char *out;
	size_t zr, looked = 0;

	see_magic(&magic, in, len, &looked);
	if (magic.seen < MAGIC_LEN || skippable(&magic))
		return 0;
	size = ZSTD_getFrameContentSize(in, len);
	if (size == ZSTD_CONTENTSIZE_UNKNOWN ||
	    size == ZSTD_CONTENTSIZE_ERROR || size > max_out ||
	    size > CODEC_ONCE_MAX || ZSTD_findFrameCompressedSize(in, len) !=
	    len)
		return 0;	/* the streaming decoder says why, if not ok */
	if ((out = malloc(size > 0 ? (size_t)size : 1)) == NULL)
		return -1;
	if ((d = ZSTD_createDCtx()) == NULL) {
		free(out);
		return -1;
	}
	zr = ZSTD_decompressDCtx(d, out, (size_t)size, in, len);
	ZSTD_freeDCtx(d);
	if (ZSTD_isError(zr) || zr != size) {
		free(out);
		return 0;
	}
	*outp = out;
	*outlen = zr;
	return 1;
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
