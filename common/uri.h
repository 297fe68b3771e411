/* SPDX-License-Identifier: MIT */
#ifndef COMMON_URI_H
#define COMMON_URI_H

/*
 * URLs and request-targets (RFC 3986, RFC 9112 3.2) read where they lie,
 * percent-decoding, and query strings. Calls nothing of Corral but the
 * header list the query's pairs go into.
 */

#include <stddef.h>

struct hlist;

/* The parts of a URL or a request-target: pointers into its text and
 * lengths; nothing decoded. */
struct uri {
	const char	*scheme;	/* NULL: none (origin-form, "*") */
	size_t		 scheme_len;
	const char	*host;		/* NULL: no authority; an IPv6
					 * literal keeps its brackets */
	size_t		 host_len;
	int		 port;		/* -1: none given */
	const char	*path;		/* "" when an authority has none */
	size_t		 path_len;
	const char	*query;		/* after '?', NULL: no '?' */
	size_t		 query_len;
};

/*
 * Splits the n bytes at s: origin-form ("/p?q"), asterisk-form ("*"), or
 * an absolute URL ("scheme://[userinfo@]host[:port]/p?q#f", the fragment
 * dropped). -1 for what is none of these, or has a port that is not 1 to
 * 5 digits below 65536.
 */
int	uri_split(const char *s, size_t n, struct uri *u);

/* Percent-decodes the n bytes at s into out (room for n + 1 bytes), '+'
 * as a space when plus; an escape that is not two hex digits is kept as
 * it is. NUL-terminated; its length. */
size_t	uri_decode(const char *s, size_t n, int plus, char *out);

/*
 * Adds each "name=value" of the n bytes of a query string (split at '&',
 * both decoded, '+' as a space) to h, in order; an empty part is
 * skipped. -1, h then holding a part, for a part without '=', an empty
 * name, or no memory.
 */
int	uri_query_parse(const char *q, size_t n, struct hlist *h);

#endif
