/* SPDX-License-Identifier: MIT */
/*
 * What the codec object (codec.c) and its backends (codec_gzip.c,
 * codec_br.c, codec_zstd.c) both use: the codings' names, a coder's output
 * under its limit, and its first failure. Calls nothing of codec/.
 */

#include "codec/codec_int.h"

#include <assert.h>
#include <stdio.h>

static const char *const names[CODING_COUNT] = {
	"identity", "gzip", "br", "zstd",
};

const char *
codec_name(enum coding c)
{
	return c >= 0 && c < CODING_COUNT ? names[c] : "unknown";
}

enum codec_result
codec_fail(struct codec *cd, enum codec_result r, const char *why)
{
	assert(r != CODEC_OK);
	if (cd->result == CODEC_OK) {
		cd->result = r;
		snprintf(cd->err, sizeof(cd->err), "%s: %s",
		    codec_name(cd->coding), why);
	}
	return cd->result;
}

enum codec_result
codec_emit(struct codec *cd, const unsigned char *p, size_t n)
{
	size_t room = cd->max_out - cd->total_out;
	int over = n > room;

	if (over)
		n = room;
	if (n > 0 && cd->out != NULL && cd->out(cd->arg, p, n) == -1)
		return codec_fail(cd, CODEC_ERROR, "the output was refused");
	cd->total_out += n;
	if (over)
		return codec_fail(cd, CODEC_TOO_LARGE, "output past its limit");
	return CODEC_OK;
}
