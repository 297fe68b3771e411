/* SPDX-License-Identifier: MIT */
#ifndef CODEC_CODEC_INT_H
#define CODEC_CODEC_INT_H

/*
 * Inside codec/: the codec object and the face each library's file
 * (codec_gzip.c, codec_br.c, codec_zstd.c) gives codec.c. A backend turns
 * input into output in cd->chunk and hands every piece to codec_emit();
 * it reports a failure through codec_fail(), which makes it stick.
 */

#include "codec/codec.h"

#define CODEC_MAGIC	0x636f6463u	/* "codc" */
/* The most input a backend is given at once: fits the libraries' counts. */
#define CODEC_FEED_MAX	((size_t)1 << 30)
/* The largest body zstd_decode_once decodes in one buffer. */
#define CODEC_ONCE_MAX	((size_t)64 << 20)

struct codec_ops {
	/* Sets cd->lib up (from cd->level and cd->size); 0 or -1 with
	 * cd->err set. */
	int		(*init)(struct codec *cd);
	enum codec_result (*feed)(struct codec *cd, const unsigned char *in,
			    size_t len);
	/* NULL for a decoder: its stream must have ended (cd->ended). */
	enum codec_result (*finish)(struct codec *cd);
	void		(*done)(struct codec *cd);
};

struct codec {
	unsigned		 magic;
	enum coding		 coding;
	int			 encode;
	int			 level;		/* encoder */
	size_t			 size;		/* encoder: input length */
	const struct codec_ops	*ops;
	void			*lib;		/* the library's state */
	codec_out_fn		 out;
	void			*arg;
	size_t			 max_out;
	size_t			 total_out;
	enum codec_result	 result;	/* not CODEC_OK: stopped */
	int			 ended;		/* decoder: the stream ended */
	int			 finished;	/* codec_finish was called */
	char			 err[CODEC_ERR_LEN];
	unsigned char		 chunk[CODEC_CHUNK];
};

extern const struct codec_ops codec_gzip_decoder, codec_gzip_encoder;
extern const struct codec_ops codec_br_decoder, codec_br_encoder;
extern const struct codec_ops codec_zstd_decoder, codec_zstd_encoder;

/*
 * A whole zstd body of one data frame that records its length (at most
 * max_out and CODEC_ONCE_MAX) decoded in one call, with no window buffer:
 * 1 with *outp malloc'd, 0 when it cannot be (the streaming decoder then
 * runs and says why), -1 out of memory.
 */
int	zstd_decode_once(const unsigned char *in, size_t len, size_t max_out,
	    unsigned char **outp, size_t *outlen);

/* Hands n bytes at p to the sink, as many as max_out leaves room for:
 * CODEC_OK, CODEC_TOO_LARGE (the rest dropped) or CODEC_ERROR. */
enum codec_result codec_emit(struct codec *cd, const unsigned char *p,
	    size_t n);
/* How many bytes at p (before end or a NUL) are RFC 9110 tchar. */
size_t	codec_tchars(const char *p, const char *end);
/* Stops cd with r for why (copied); returns r. */
enum codec_result codec_fail(struct codec *cd, enum codec_result r,
	    const char *why);

#endif
