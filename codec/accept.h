/* SPDX-License-Identifier: MIT */
#ifndef CODEC_ACCEPT_H
#define CODEC_ACCEPT_H

/*
 * Accept-Encoding (RFC 9110 §12.5.3): which coding to send a client,
 * from what the cache holds and what Corral can make by decoding. Pure.
 *
 * A member is a coding (a token, case-insensitive; x-gzip is gzip),
 * "identity" or "*", with an optional weight ";q=" 0 to 1 and up to three
 * decimals (§12.4.2: "q" in either case; whitespace is allowed around
 * ";" and, leniently, around "="). A member that is not that (a bad
 * qvalue, another parameter, a quoted string, a stray byte) is ignored as
 * if absent, so a request never fails on this field; empty members are
 * ignored as §5.6.1.2 asks. A coding named twice counts at its first
 * naming. Codings Corral does not know are read and ignored.
 *
 * The choice:
 * - no Accept-Encoding at all: any coding is acceptable (rule 1), but
 *   Corral sends identity when it can, as nginx and Varnish do, since a
 *   client that sent nothing may decode nothing; else the held coding;
 * - a coding is acceptable when listed with q > 0, or unlisted under a
 *   "*" with q > 0; identity also when unlisted and not excluded by
 *   "*;q=0" (rule 2), at a weight below any listed one;
 * - the highest weight wins; on a tie, a held coding before one made by
 *   decoding, then the smaller output: br, zstd, gzip, identity;
 * - nothing acceptable can be sent: ACCEPT_NOT_ACCEPTABLE (406) when
 *   identity is excluded too, else ACCEPT_UNAVAILABLE (identity would do
 *   but is neither held nor made: ask the origin).
 */

#include "codec/codec.h"

#define ACCEPT_Q_MAX	1000	/* q=1: weights are in thousandths */
#define ACCEPT_Q_DIGITS	3	/* decimals a qvalue may have */
#define ACCEPT_UNLISTED	(-1)	/* a coding the field did not name */

struct accept {
	int	present;		/* the field was in the request */
	int	q[CODING_COUNT];	/* thousandths, or ACCEPT_UNLISTED */
	int	star;			/* the weight of "*", likewise */
	int	ignored;		/* invalid members */
};

enum accept_verdict {
	ACCEPT_SEND,		/* send *send */
	ACCEPT_UNAVAILABLE,	/* identity would do, not held nor made */
	ACCEPT_NOT_ACCEPTABLE,	/* nothing, not even identity: 406 */
};

/* What Corral would send a client holding every coding: the class of
 * its Accept-Encoding, one cache variant each under Vary. */
enum accept_class {
	ACCEPT_CLASS_NONE,	/* no field: identity */
	ACCEPT_CLASS_IDENTITY,
	ACCEPT_CLASS_GZIP,
	ACCEPT_CLASS_BR,
	ACCEPT_CLASS_ZSTD,
	ACCEPT_CLASS_REFUSED,	/* nothing acceptable */
};

/* An empty reading: as if the request had no Accept-Encoding. */
void	accept_init(struct accept *a);
/* Reads one line of the field (call once per line, in order). */
void	accept_parse(struct accept *a, const char *line);
/*
 * held: the codings stored (CODING_BIT of each; identity may be one);
 * can_decode: identity may be made by decoding a held coding.
 */
enum accept_verdict accept_choose(const struct accept *a, unsigned held,
	    int can_decode, enum coding *send);
enum accept_class accept_classify(const struct accept *a);
/* The canonical field value of a class, to key a variant by or send the
 * origin; NULL: send no field. */
const char	*accept_class_value(enum accept_class cls);

#endif
