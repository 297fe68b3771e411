/* SPDX-License-Identifier: MIT */
/*
 * URLs read where they lie (see uri.h): the scheme, the authority, the
 * path, the query and the fragment are found by the characters that end
 * each (RFC 3986 3); nothing is copied or decoded but by uri_decode().
 */

#include "common/uri.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/hlist.h"

#define PORT_DIGITS	5
#define QUERY_PART_MAX	8192	/* a name or value decoded on the stack */

static int
hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* scheme ":" : ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). Its length,
 * 0 when s does not start with one followed by "://". */
static size_t
scheme_len(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || !isalpha((unsigned char)s[0]))
		return 0;
	for (i = 1; i < n && (isalnum((unsigned char)s[i]) || s[i] == '+' ||
	    s[i] == '-' || s[i] == '.'); i++)
		;
	return n - i >= 3 && memcmp(s + i, "://", 3) == 0 ? i : 0;
}

/* authority = [ userinfo "@" ] host [ ":" port ], host an IPv6 literal
 * in brackets or anything up to the port. */
static int
split_authority(const char *a, size_t n, struct uri *u)
{
	const char *at = memchr(a, '@', n), *colon, *end = a + n;
	int port = 0;

	if (at != NULL) {
		n -= (size_t)(at + 1 - a);
		a = at + 1;
	}
	if (n > 0 && a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (close == NULL)
			return -1;
		colon = close + 1 < end ? close + 1 : NULL;
		if (colon != NULL && *colon != ':')
			return -1;
	} else {
		colon = memchr(a, ':', n);
	}
	u->host = a;
	u->host_len = colon != NULL ? (size_t)(colon - a) : n;
	u->port = -1;
	if (colon == NULL)
		return 0;
	if (end - colon - 1 < 1 || end - colon - 1 > PORT_DIGITS)
		return -1;
	for (const char *p = colon + 1; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		port = port * 10 + (*p - '0');
	}
	if (port > 65535)
		return -1;
	u->port = port;
	return 0;
}

/* path [ "?" query ] [ "#" fragment ]. */
static void
split_rest(const char *s, size_t n, struct uri *u)
{
	const char *hash = memchr(s, '#', n), *q;

	if (hash != NULL)
		n = (size_t)(hash - s);
	q = memchr(s, '?', n);
	u->path = s;
	u->path_len = q != NULL ? (size_t)(q - s) : n;
	u->query = q != NULL ? q + 1 : NULL;
	u->query_len = q != NULL ? n - (size_t)(q + 1 - s) : 0;
}

int
uri_split(const char *s, size_t n, struct uri *u)
{
	size_t sl, al;
	const char *a;

	memset(u, 0, sizeof(*u));
	u->port = -1;
	if (n == 1 && s[0] == '*') {
		u->path = s;
		u->path_len = 1;
		return 0;
	}
	if (n > 0 && s[0] == '/') {
		split_rest(s, n, u);
		return 0;
	}
	if ((sl = scheme_len(s, n)) == 0)
		return -1;
	u->scheme = s;
	u->scheme_len = sl;
	a = s + sl + 3;
	al = strcspn(a, "/?#");
	if (al > n - sl - 3)
		al = n - sl - 3;
	if (split_authority(a, al, u) == -1)
		return -1;
	split_rest(a + al, n - sl - 3 - al, u);
	return 0;
}

size_t
uri_decode(const char *s, size_t n, int plus, char *out)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		if (s[i] == '%' && n - i >= 3 &&
		    (hi = hex_value((unsigned char)s[i + 1])) >= 0 &&
		    (lo = hex_value((unsigned char)s[i + 2])) >= 0) {
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[o++] = plus && s[i] == '+' ? ' ' : s[i];
		}
	}
	out[o] = '\0';
	return o;
}

/* One "name=value" part into h. */
static int
add_pair(const char *p, size_t n, struct hlist *h)
{
	const char *eq = memchr(p, '=', n);
	char name[QUERY_PART_MAX + 1], *value;
	size_t nl, vl;
	int rc;

	if (eq == NULL || eq == p || (size_t)(eq - p) > QUERY_PART_MAX)
		return -1;
	nl = uri_decode(p, (size_t)(eq - p), 1, name);
	vl = n - (size_t)(eq + 1 - p);
	if ((value = malloc(vl + 1)) == NULL)
		return -1;
	vl = uri_decode(eq + 1, vl, 1, value);
	rc = hl_addn(h, name, nl, value, vl);
	free(value);
	return rc;
}

int
uri_query_parse(const char *q, size_t n, struct hlist *h)
{
	const char *end = q + n, *amp;

	while (q < end) {
		if ((amp = memchr(q, '&', (size_t)(end - q))) == NULL)
			amp = end;
		if (amp > q && add_pair(q, (size_t)(amp - q), h) == -1)
			return -1;
		q = amp + 1;
	}
	return 0;
}
