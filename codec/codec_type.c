/* SPDX-License-Identifier: MIT */
/*
 * Which media types are worth compressing: a Content-Type's type and
 * subtype against a list of patterns (codec_compressible in codec.h).
 *
 * Calls nothing outside codec/. Called from outside codec/.
 */

#include "codec/codec_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define OWS	" \t"
#define SEP	" \t,"		/* between a list's entries */
#define EVENT_STREAM	"text/event-stream"	/* never compressed */

/* A run of text: [p, p + n). */
struct word {
	const char	*p;
	size_t		 n;
};

static int
same(struct word a, const char *s, size_t n)
{
	return a.n == n && strncasecmp(a.p, s, n) == 0;
}

/* Splits the media type at s (type "/" subtype, tchar both) into t and
 * st; nothing may follow it but OWS and parameters. 0 or -1. */
static int
media_type(const char *s, struct word *t, struct word *st)
{
	const char *end = s + strlen(s);

	s += strspn(s, OWS);
	t->p = s;
	if ((t->n = codec_tchars(s, end)) == 0 || s[t->n] != '/')
		return -1;
	s += t->n + 1;
	st->p = s;
	if ((st->n = codec_tchars(s, end)) == 0)
		return -1;
	s += st->n;
	s += strspn(s, OWS);
	return *s == '\0' || *s == ';' ? 0 : -1;
}

/* Does pattern pat (pn bytes) match type t / subtype st? */
static int
match(const char *pat, size_t pn, struct word t, struct word st)
{
	const char *slash = memchr(pat, '/', pn);
	struct word pt, ps;

	if (slash == NULL)
		return 0;
	pt.p = pat;
	pt.n = (size_t)(slash - pat);
	ps.p = slash + 1;
	ps.n = pn - pt.n - 1;
	if (!same(pt, "*", 1) && !same(pt, t.p, t.n))
		return 0;
	if (same(ps, "*", 1))
		return 1;
	if (ps.n > 2 && ps.p[0] == '*' && ps.p[1] == '+')	/* *+suffix */
		return st.n > ps.n - 1 && strncasecmp(st.p + st.n -
		    (ps.n - 1), ps.p + 1, ps.n - 1) == 0;
	return same(ps, st.p, st.n);
}

int
codec_compressible(const char *content_type, const char *list)
{
	struct word t, st;
	const char *p;
	size_t n;

	if (list == NULL)
		list = CODEC_COMPRESSIBLE_DEFAULT;
	if (content_type == NULL || media_type(content_type, &t, &st) == -1)
		return 0;
	if (t.n + 1 + st.n == sizeof(EVENT_STREAM) - 1 &&
	    strncasecmp(t.p, EVENT_STREAM, t.n + 1 + st.n) == 0)
		return 0;
	for (p = list; *p != '\0'; p += n) {
		p += strspn(p, SEP);
		if ((n = strcspn(p, SEP)) > 0 && match(p, n, t, st))
			return 1;
	}
	return 0;
}

/* Is the entry p (n bytes) a media type or a pattern? */
static int
entry_valid(const char *p, size_t n)
{
	const char *end = p + n, *slash = memchr(p, '/', n);
	size_t tn, sn;

	if (slash == NULL)
		return 0;
	tn = (size_t)(slash - p);
	sn = (size_t)(end - slash - 1);
	if (tn == 0 || codec_tchars(p, slash) != tn || sn == 0)
		return 0;
	if (sn > 2 && slash[1] == '*' && slash[2] == '+')
		return codec_tchars(slash + 3, end) == sn - 2;
	return codec_tchars(slash + 1, end) == sn &&
	    (sn == 1 || memchr(slash + 1, '*', sn) == NULL) &&
	    (tn == 1 || memchr(p, '*', tn) == NULL);
}

int
codec_types_valid(const char *list, char *err, size_t errlen)
{
	const char *p;
	size_t n;
	int entries = 0;

	for (p = list; *p != '\0'; p += n) {
		p += strspn(p, SEP);
		if ((n = strcspn(p, SEP)) == 0)
			continue;
		if (!entry_valid(p, n)) {
			snprintf(err, errlen, "\"%.*s\" is not a media type "
			    "or a pattern (type/subtype, type/*, */*+suffix)",
			    (int)(n < 64 ? n : 64), p);
			return -1;
		}
		entries++;
	}
	if (entries == 0) {
		snprintf(err, errlen, "no media types");
		return -1;
	}
	return 0;
}
