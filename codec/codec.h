/* SPDX-License-Identifier: MIT */
#ifndef CODEC_CODEC_H
#define CODEC_CODEC_H

/*
 * Content codings: one compressed copy of a body, stored once and
 * served as each client asks (accept.h chooses which). Pure: no event
 * loop, no globals; zlib, brotli and zstd are used only here.
 *
 * A codec object encodes or decodes one stream fed in pieces as they
 * come, and hands its output, at most CODEC_CHUNK bytes at a time, to a
 * sink. A decoder has a hard output limit, max_out: past it, it stops
 * with CODEC_TOO_LARGE, and its sink never gets more than max_out bytes.
 * The output past the limit it ever holds is its own CODEC_SLACK bytes;
 * the libraries' state besides is bounded by each coding's window: gzip
 * 32 KiB, zstd 8 MiB (CODEC_ZSTD_WINDOW_LOG_MAX: RFC 8878 §3 asks no more
 * of a decoder of HTTP bodies, and a larger frame is refused as corrupt),
 * brotli 16 MiB (RFC 7932's largest; large windows are refused).
 *
 * A coded body holds exactly one stream: one gzip member, one zstd frame,
 * one brotli stream. A byte after its end is CODEC_CORRUPT, a second gzip
 * member too: RFC 1952 allows several, but decoders disagree (gunzip
 * reads them all, Chromium ignores what follows the first), and a body
 * that would mean two things is refused rather than read one way.
 * Brotli has no checksum, and a zstd frame may have none (ours always
 * do): a damaged stream of those may decode to other bytes unnoticed.
 */

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

enum coding {
	CODING_IDENTITY,	/* no coding */
	CODING_GZIP,		/* RFC 9110 §8.4.1.3; x-gzip is the same */
	CODING_BR,		/* RFC 7932 */
	CODING_ZSTD,		/* RFC 8878 */
	CODING_UNKNOWN,		/* another, or more than one: pass through */
};
#define CODING_COUNT	CODING_UNKNOWN		/* the codings Corral knows */
#define CODING_BIT(c)	(1u << (c))		/* a set of codings */

enum codec_result {
	CODEC_OK,		/* input taken; from codec_finish: whole */
	CODEC_TOO_LARGE,	/* decoded output past max_out */
	CODEC_CORRUPT,		/* not a valid stream, or bytes after its end */
	CODEC_TRUNCATED,	/* the input ended before the stream's end */
	CODEC_ERROR,		/* out of memory, or the sink refused output */
};

#define CODEC_CHUNK	(16 * 1024)	/* the most a sink gets at once */
#define CODEC_SLACK	CODEC_CHUNK	/* the most output past max_out held */
#define CODEC_NO_LIMIT	SIZE_MAX	/* a max_out that never stops */
#define CODEC_SIZE_UNKNOWN SIZE_MAX	/* an encoder's input length, unknown */
#define CODEC_ERR_LEN	128		/* a codec's error text */
#define CODEC_ZSTD_WINDOW_LOG_MAX 23	/* 8 MiB */
/*
 * Decoders alive at once in a process, by default: each may hold its
 * coding's window (brotli up to 16 MiB, zstd 8 MiB, gzip 32 KiB), so 16
 * bound a worker's decoders to 256 MiB at worst. Past the cap
 * codec_decoder_new fails (the caller sends what is stored, or 503).
 */
#define CODEC_DECODERS_MAX	16

/* Levels: gzip 1-9, brotli quality 0-11, zstd 1-19 (20-22 want windows
 * past what a decoder must accept). The defaults are store_encoding's. */
#define CODEC_GZIP_LEVEL_MIN	1
#define CODEC_GZIP_LEVEL_MAX	9
#define CODEC_GZIP_LEVEL_DEFAULT 6
#define CODEC_BR_LEVEL_MIN	0
#define CODEC_BR_LEVEL_MAX	11
#define CODEC_BR_LEVEL_DEFAULT	5
#define CODEC_ZSTD_LEVEL_MIN	1
#define CODEC_ZSTD_LEVEL_MAX	19
#define CODEC_ZSTD_LEVEL_DEFAULT 3

/* Media types worth compressing (codec_compressible's list). Text of
 * every kind, JSON, JavaScript, XML, SVG, WebAssembly and the uncompressed
 * font formats; images, audio, video and archives are compressed already.
 * Commas separate them, so that the list is one word. */
#define CODEC_COMPRESSIBLE_DEFAULT					\
	"text/*,application/json,application/*+json,"			\
	"application/javascript,application/x-javascript,"		\
	"application/xml,application/*+xml,image/svg+xml,"		\
	"application/wasm,font/ttf,font/otf"

/* A sink: takes len (1 to CODEC_CHUNK) bytes of output; 0, or -1 to stop
 * the codec with CODEC_ERROR. */
typedef int	(*codec_out_fn)(void *arg, const void *p, size_t len);

struct codec;

/* "identity", "gzip", "br", "zstd"; "unknown" for CODING_UNKNOWN. */
const char	*codec_name(enum coding c);
/* One token of an Accept-Encoding member (n bytes, case-insensitive):
 * a known coding, identity included, or CODING_UNKNOWN. */
enum coding	 codec_token(const char *p, size_t n);
/*
 * A Content-Encoding value (its lines joined with ", "; NULL: none):
 * CODING_IDENTITY when it names no coding (empty list members ignored),
 * the coding when it names exactly one Corral knows, else CODING_UNKNOWN
 * (two codings, deflate, compress, "identity", which RFC 9110 §8.4.1
 * keeps out of Content-Encoding, or anything not a token).
 */
enum coding	 codec_parse(const char *value);

/* The level a coding is stored at by default; 0 or -1 (not in range). */
int	codec_level_default(enum coding c);
int	codec_level_check(enum coding c, int level);

/*
 * A decoder of coding c (CODING_IDENTITY copies) that stops past max_out
 * bytes of output, or an encoder at level, told size, the exact input
 * length when known (a zstd frame records it; a different length is then
 * CODEC_ERROR) or CODEC_SIZE_UNKNOWN. out may be NULL: output dropped.
 * NULL on failure, with err set.
 */
struct codec	*codec_decoder_new(enum coding c, size_t max_out,
		    codec_out_fn out, void *arg, char *err, size_t errlen);
struct codec	*codec_encoder_new(enum coding c, int level, size_t size,
		    codec_out_fn out, void *arg, char *err, size_t errlen);
/* The cap on decoders alive at once (CODEC_DECODERS_MAX by default), and
 * how many are. An encoder, or identity, is not counted. */
void		 codec_decoders_limit(unsigned max);
unsigned	 codec_decoders_live(void);
/*
 * Feeds len bytes. CODEC_OK when all were taken; any other result stops
 * the codec, and every later call returns it again.
 */
enum codec_result codec_feed(struct codec *cd, const void *in, size_t len);
/* The input's end: an encoder writes its stream's end; a decoder answers
 * CODEC_TRUNCATED when its stream has not ended. */
enum codec_result codec_finish(struct codec *cd);
/* Bytes handed to the sink so far. */
size_t		 codec_total_out(const struct codec *cd);
/* Why the codec stopped ("" while it has not). */
const char	*codec_error(const struct codec *cd);
void		 codec_free(struct codec **cdp);
/* A sink that appends to the struct evbuffer given as arg. */
int		 codec_sink_evbuffer(void *arg, const void *p, size_t len);
/* A malloc'd buffer that doubles as it fills (start it { NULL, 0, 0 }; the
 * caller frees p), and the sink that appends to one given as arg. */
struct codec_grow {
	unsigned char	*p;
	size_t		 len, cap;
};
int		 codec_sink_grow(void *arg, const void *p, size_t len);
/* "ok", "too large", "corrupt", "truncated", "error". */
const char	*codec_result_name(enum codec_result r);

/*
 * A whole body encoded at once: appended to out, or into a malloc'd
 * buffer (*outp, *outlen; free() it). 0, or -1 with err set and out
 * unchanged.
 */
int	codec_encode(struct evbuffer *out, enum coding c, int level,
	    const void *in, size_t len, char *err, size_t errlen);
int	codec_encode_alloc(enum coding c, int level, const void *in,
	    size_t len, unsigned char **outp, size_t *outlen, char *err,
	    size_t errlen);
/*
 * A whole stored body decoded into out, in pieces, at most max_out bytes
 * (identity to a client that does not accept the stored coding). Out is
 * appended to only on CODEC_OK. A zstd frame that records its length is
 * decoded in one call, with no window buffer and not counted among the
 * decoders alive.
 */
enum codec_result codec_decode_to(struct evbuffer *out, enum coding c,
	    const void *in, size_t len, size_t max_out);

/*
 * Is content_type (a Content-Type value; parameters ignored; NULL: none)
 * one of list's media types (separated by commas or spaces,
 * case-insensitive; NULL:
 * the default list)? A list entry is a media type, or a pattern: a
 * subtype of "*" matches any, one of "*+json" any ending in "+json", and
 * a type of "*" any type. text/event-stream never is, whatever the list:
 * a stream of events must reach its client as each is sent, and a
 * compressor holds them back.
 */
int	codec_compressible(const char *content_type, const char *list);
/* Is list a valid list for codec_compressible (at least one entry, each
 * type "/" subtype of tchar, "*" or "*+suffix")? 0, or -1 with err set
 * naming the first bad entry. */
int	codec_types_valid(const char *list, char *err, size_t errlen);

#endif
