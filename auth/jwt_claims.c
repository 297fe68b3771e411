/* SPDX-License-Identifier: MIT */
/*
 * The claims a cache key is made from (jwt.h): a list of claim paths,
 * and one text for the values they name in a token's claims.
 *
 * Calls common/json.c. Called from outside auth/.
 */

#include "auth/jwt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define NAME_SEPS	" \t\r\n,"
/* Bytes of a name as a list writes it: a path's name escaped in full. */
#define NAME_TEXT_MAX	(2 * JSON_PATH_MAX + 1)
#define TEXT_MIN	256	/* bytes of the text's first allocation */

/* The text being written: p[0..len), a NUL after it. */
struct text {
	char	*p;
	size_t	 len, cap;
};

/* The next name in the list at *pp into buf, with a NUL: its length, 0
 * at the list's end, or -1 when it is longer than NAME_TEXT_MAX. */
static int
next_name(const char **pp, char buf[NAME_TEXT_MAX + 1])
{
	const char *p = *pp + strspn(*pp, NAME_SEPS);
	size_t n = strcspn(p, NAME_SEPS);

	*pp = p + n;
	if (n > NAME_TEXT_MAX)
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return (int)n;
}

int
jwt_claims_valid(const char *names, char *err, size_t errlen)
{
	char name[NAME_TEXT_MAX + 1];
	int n, count = 0;

	while ((n = next_name(&names, name)) != 0) {
		if (n == -1) {
			snprintf(err, errlen, "a claim name longer than %d "
			    "bytes", NAME_TEXT_MAX);
			return -1;
		}
		if (!json_path_valid(name)) {
			snprintf(err, errlen, "claim \"%s\" is not a valid name "
			    "(an empty name, or a '\\' before neither '.' nor "
			    "'\\')", name);
			return -1;
		}
		count++;
	}
	if (count == 0) {
		snprintf(err, errlen, "no claim names");
		return -1;
	}
	return 0;
}

/* Room in t for n more bytes and a NUL. */
static int
room(struct text *t, size_t n)
{
	size_t cap = t->cap > 0 ? t->cap : TEXT_MIN;
	char *p;

	if (t->len + n < t->cap)
		return 0;
	while (cap <= t->len + n)
		cap *= 2;
	if ((p = realloc(t->p, cap)) == NULL)
		return -1;
	t->p = p;
	t->cap = cap;
	return 0;
}

static int
put(struct text *t, const char *s, size_t n)
{
	if (room(t, n) == -1)
		return -1;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
	return 0;
}

/* The name, then a space and v's canonical JSON unless v is NULL (the
 * claim is absent), then a newline. */
static int
put_claim(struct text *t, const char *name, size_t namelen,
    const struct json_value *v)
{
	size_t n;

	if (put(t, name, namelen) == -1)
		return -1;
	if (v != NULL) {
		n = json_write(v, NULL, 0);
		if (put(t, " ", 1) == -1 || room(t, n) == -1)
			return -1;
		json_write(v, t->p + t->len, n + 1);
		t->len += n;
	}
	return put(t, "\n", 1);
}

int
jwt_claims_canon(const struct json *claims, const char *names, char **out,
    size_t *outlen, char *err, size_t errlen)
{
	char name[NAME_TEXT_MAX + 1];
	struct text t = { NULL, 0, 0 };
	int n;

	*out = NULL;
	*outlen = 0;
	if (jwt_claims_valid(names, err, errlen) == -1)
		return -1;
	while ((n = next_name(&names, name)) > 0)
		if (put_claim(&t, name, (size_t)n, json_path(json_root(claims),
		    name)) == -1) {
			snprintf(err, errlen, "out of memory");
			free(t.p);
			return -1;
		}
	*out = t.p;
	*outlen = t.len;
	return 0;
}
