/* SPDX-License-Identifier: MIT */
/*
 * brotli (RFC 7932) on libbrotli: one stream, windows up to RFC 7932's
 * 16 MiB (large windows refused), nothing after its end. See codec.h.
 *
 * Calls libbrotlienc, libbrotlidec and codec.c's emit. Called from codec.c
 * only.
 */

#include "codec/codec_int.h"

#include <stdint.h>

#include <brotli/decode.h>
#include <brotli/encode.h>

static int
dec_init(struct codec *cd)
{
	if ((cd->lib = BrotliDecoderCreateInstance(NULL, NULL, NULL)) ==
	    NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	return 0;
}

/* A decoder's failure: its memory, or the stream's fault. */
static enum codec_result
dec_error(struct codec *cd)
{
	BrotliDecoderErrorCode e = BrotliDecoderGetErrorCode(cd->lib);

	if (e <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES &&
	    e != BROTLI_DECODER_ERROR_UNREACHABLE)
		return codec_fail(cd, CODEC_ERROR, "out of memory");
	return codec_fail(cd, CODEC_CORRUPT, BrotliDecoderErrorString(e));
}

static enum codec_result
dec_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	BrotliDecoderResult br;
	enum codec_result r;
	const uint8_t *next_in = in;
	uint8_t *next_out;
	size_t avail_out;

	for (;;) {
		next_out = cd->chunk;
		avail_out = CODEC_CHUNK;
		br = BrotliDecoderDecompressStream(cd->lib, &len, &next_in,
		    &avail_out, &next_out, NULL);
		/* What came before a fault is handed on, then the fault. */
		if ((r = codec_emit(cd, cd->chunk, CODEC_CHUNK - avail_out)) !=
		    CODEC_OK)
			return r;
		if (br == BROTLI_DECODER_RESULT_ERROR)
			return dec_error(cd);
		if (br == BROTLI_DECODER_RESULT_SUCCESS) {
			cd->ended = 1;
			break;
		}
		if (br == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
			break;
	}
	if (len > 0)
		return codec_fail(cd, CODEC_CORRUPT,
		    "bytes after the end of the stream");
	return CODEC_OK;
}

static void
dec_done(struct codec *cd)
{
	if (cd->lib != NULL)
		BrotliDecoderDestroyInstance(cd->lib);
	cd->lib = NULL;
}

static int
enc_init(struct codec *cd)
{
	BrotliEncoderState *s;

	if ((s = BrotliEncoderCreateInstance(NULL, NULL, NULL)) == NULL) {
		codec_fail(cd, CODEC_ERROR, "out of memory");
		return -1;
	}
	cd->lib = s;
	if (!BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY,
	    (uint32_t)cd->level) ||
	    (cd->size != CODEC_SIZE_UNKNOWN && cd->size <= UINT32_MAX &&
	    !BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT,
	    (uint32_t)cd->size))) {
		codec_fail(cd, CODEC_ERROR, "cannot set the quality");
		BrotliEncoderDestroyInstance(s);
		cd->lib = NULL;
		return -1;
	}
	return 0;
}

/* Compresses in[len] with op, every output piece emitted. */
static enum codec_result
enc_run(struct codec *cd, const unsigned char *in, size_t len,
    BrotliEncoderOperation op)
{
	BrotliEncoderState *s = cd->lib;
	enum codec_result r;
	const uint8_t *next_in = in;
	uint8_t *next_out;
	size_t avail_out;

	do {
		next_out = cd->chunk;
		avail_out = CODEC_CHUNK;
		if (!BrotliEncoderCompressStream(s, op, &len, &next_in,
		    &avail_out, &next_out, NULL))
			return codec_fail(cd, CODEC_ERROR, "encoder failed");
		if ((r = codec_emit(cd, cd->chunk, CODEC_CHUNK - avail_out)) !=
		    CODEC_OK)
			return r;
	} while (len > 0 || BrotliEncoderHasMoreOutput(s) ||
	    (op == BROTLI_OPERATION_FINISH && !BrotliEncoderIsFinished(s)));
	return CODEC_OK;
}

static enum codec_result
enc_feed(struct codec *cd, const unsigned char *in, size_t len)
{
	return enc_run(cd, in, len, BROTLI_OPERATION_PROCESS);
}

static enum codec_result
enc_finish(struct codec *cd)
{
	return enc_run(cd, NULL, 0, BROTLI_OPERATION_FINISH);
}

static void
enc_done(struct codec *cd)
{
	if (cd->lib != NULL)
		BrotliEncoderDestroyInstance(cd->lib);
	cd->lib = NULL;
}

const struct codec_ops codec_br_decoder = {
	dec_init, dec_feed, NULL, dec_done,
};

const struct codec_ops codec_br_encoder = {
	enc_init, enc_feed, enc_finish, enc_done,
};
