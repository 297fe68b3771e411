/* SPDX-License-Identifier: MIT */
/*
 * Accept-Encoding: the field read into a weight per coding, the coding
 * to send chosen from them, and the field's class (accept.h).
 *
 * Calls codec.c's token names. Called from outside codec/.
 */

#include "codec/accept.h"
#include "codec/codec_int.h"

#include <string.h>

#define OWS		" \t"
#define WEIGHT_DEFAULT	0	/* identity, acceptable only by default */
#define WEIGHT_REFUSED	(-1)

/* The order of a tie: the smaller output first. */
static const enum coding prefer[CODING_COUNT] = {
	CODING_BR, CODING_ZSTD, CODING_GZIP, CODING_IDENTITY,
};

/* What one member named: a coding, "*", or nothing to count. */
enum member {
	MEMBER_CODING,
	MEMBER_STAR,
	MEMBER_SKIP,		/* empty, unknown coding, or invalid */
};

void
accept_init(struct accept *a)
{
	a->present = 0;
	for (int c = 0; c < CODING_COUNT; c++)
		a->q[c] = ACCEPT_UNLISTED;
	a->star = ACCEPT_UNLISTED;
	a->ignored = 0;
}

/* The end of the member at p: its comma outside a quoted string, or the
 * line's end (never past it, even after a trailing backslash). */
static const char *
member_end(const char *p)
{
	int quoted = 0;

	for (; *p != '\0'; p++) {
		if (quoted && *p == '\\' && p[1] != '\0')
			p++;
		else if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == ',')
			break;
	}
	return p;
}

/* A qvalue at *pp (RFC 9110 §12.4.2) in thousandths, *pp moved past it.
 * 0 or -1. */
static int
qvalue(const char **pp, const char *end, int *q)
{
	const char *p = *pp;
	int v, digits = 0, scale = ACCEPT_Q_MAX / 10;

	if (p >= end || (*p != '0' && *p != '1'))
		return -1;
	v = (*p++ - '0') * ACCEPT_Q_MAX;
	if (p < end && *p == '.')
		for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
			if (++digits > ACCEPT_Q_DIGITS)
				return -1;
			v += (*p - '0') * scale;
			scale /= 10;
		}
	if (v > ACCEPT_Q_MAX)
		return -1;
	*pp = p;
	*q = v;
	return 0;
}

static const char *
skip_ows(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Reads the member [p, end): what it names into *c, its weight into *q. */
static enum member
member(struct accept *a, const char *p, const char *end, enum coding *c,
    int *q)
{
	const char *tok;
	size_t n;

	p = skip_ows(p, end);
	if (p == end)
		return MEMBER_SKIP;	/* empty */
	tok = p;
	if ((n = codec_tchars(tok, end)) == 0)
		goto fail;
	*c = codec_token(tok, n);
	*q = ACCEPT_Q_MAX;
	p = skip_ows(p + n, end);
	if (p < end && *p == ';') {
		p = skip_ows(p + 1, end);
		if (p == end || (*p != 'q' && *p != 'Q'))
			goto fail;
		p = skip_ows(p + 1, end);
		if (p == end || *p != '=')
			goto fail;
		p = skip_ows(p + 1, end);
		if (qvalue(&p, end, q) == -1)
			goto fail;
		p = skip_ows(p, end);
	}
	if (p != end)
		goto fail;
	if (n == 1 && *tok == '*')
		return MEMBER_STAR;
	return *c != CODING_UNKNOWN ? MEMBER_CODING : MEMBER_SKIP;
fail:
	a->ignored++;
	return MEMBER_SKIP;
}

void
accept_parse(struct accept *a, const char *line)
{
	const char *p = line, *end;
	enum coding c;
	int q;

	a->present = 1;
	if (line == NULL)
		return;
	for (;; p = end + 1) {
		end = member_end(p);
		switch (member(a, p, end, &c, &q)) {
		case MEMBER_CODING:
			if (a->q[c] == ACCEPT_UNLISTED)
				a->q[c] = q;
			break;
		case MEMBER_STAR:
			if (a->star == ACCEPT_UNLISTED)
				a->star = q;
			break;
		case MEMBER_SKIP:
			break;
		}
		if (*end == '\0')
			break;
	}
}

/* How much the client wants c: a weight in thousandths, WEIGHT_DEFAULT
 * (identity, unlisted and not excluded), or WEIGHT_REFUSED. */
static int
weight(const struct accept *a, enum coding c)
{
	int q = a->q[c];

	if (q == ACCEPT_UNLISTED)
		q = a->star;
	if (q == ACCEPT_UNLISTED)
		return c == CODING_IDENTITY ? WEIGHT_DEFAULT : WEIGHT_REFUSED;
	return q > 0 ? q : WEIGHT_REFUSED;
}

/* No field: identity when offered, else the first held coding. */
static enum accept_verdict
choose_unasked(unsigned held, unsigned offer, enum coding *send)
{
	if (offer & CODING_BIT(CODING_IDENTITY)) {
		*send = CODING_IDENTITY;
		return ACCEPT_SEND;
	}
	for (int i = 0; i < CODING_COUNT; i++)
		if (held & CODING_BIT(prefer[i])) {
			*send = prefer[i];
			return ACCEPT_SEND;
		}
	return ACCEPT_UNAVAILABLE;
}

enum accept_verdict
accept_choose(const struct accept *a, unsigned held, int can_decode,
    enum coding *send)
{
	unsigned offer, made = 0;
	int best = WEIGHT_REFUSED, w;

	held &= CODING_BIT(CODING_COUNT) - 1;
	if (can_decode && held != 0 && !(held & CODING_BIT(CODING_IDENTITY)))
		made = CODING_BIT(CODING_IDENTITY);
	offer = held | made;
	if (!a->present)
		return choose_unasked(held, offer, send);
	/* Held codings first, then what decoding makes: the first of the
	 * highest weight wins. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < CODING_COUNT; i++) {
			enum coding c = prefer[i];

			if (!((pass == 0 ? held : made) & CODING_BIT(c)))
				continue;
			if ((w = weight(a, c)) > best) {
				best = w;
				*send = c;
			}
		}
	if (best != WEIGHT_REFUSED)
		return ACCEPT_SEND;
	if (weight(a, CODING_IDENTITY) != WEIGHT_REFUSED)
		return ACCEPT_UNAVAILABLE;
	return ACCEPT_NOT_ACCEPTABLE;
}

enum accept_class
accept_classify(const struct accept *a)
{
	static const enum accept_class of[CODING_COUNT] = {
		[CODING_IDENTITY] = ACCEPT_CLASS_IDENTITY,
		[CODING_GZIP] = ACCEPT_CLASS_GZIP,
		[CODING_BR] = ACCEPT_CLASS_BR,
		[CODING_ZSTD] = ACCEPT_CLASS_ZSTD,
	};
	enum coding c;

	if (!a->present)
		return ACCEPT_CLASS_NONE;
	if (accept_choose(a, CODING_BIT(CODING_COUNT) - 1, 0, &c) !=
	    ACCEPT_SEND)
		return ACCEPT_CLASS_REFUSED;
	return of[c];
}

const char *
accept_class_value(enum accept_class cls)
{
	switch (cls) {
	case ACCEPT_CLASS_NONE:
		return NULL;
	case ACCEPT_CLASS_IDENTITY:
		return "identity";
	case ACCEPT_CLASS_GZIP:
		return "gzip";
	case ACCEPT_CLASS_BR:
		return "br";
	case ACCEPT_CLASS_ZSTD:
		return "zstd";
	case ACCEPT_CLASS_REFUSED:
		break;
	}
	return "identity;q=0";
}
