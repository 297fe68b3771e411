/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the cache key. The input is host NUL path NUL query.
 * A key is at most CACHE_KEY_MAX bytes, never holds '{', '}', spaces or
 * control bytes (Redis hash tags and log lines rely on it), and
 * normalising is idempotent: a key built from a key's own path and query
 * is the same key. cache_query_sorted() keeps every parameter, and
 * sorting a sorted query changes nothing.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok, const char *what, const char *key)
{
	if (!ok) {
		fprintf(stderr, "%s: \"%s\"\n", what, key);
		abort();
	}
}

static size_t
count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		n += *s == c;
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char key[CACHE_KEY_MAX + 1], again[CACHE_KEY_MAX + 1];
	char *buf, *host, *path, *query, *sorted, *resorted, *q;
	size_t len;

	if ((buf = malloc(size + 3)) == NULL)
		abort();
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = buf[size + 2] = '\0';
	host = buf;
	path = host + strlen(host) + 1;
	if (path > buf + size)
		path = buf + size + 1;
	query = path + strlen(path) + 1;
	if (query > buf + size + 1)
		query = buf + size + 2;

	cache_key_build(host, path, *query != '\0' ? query : NULL, key);
	len = strlen(key);
	check(len > 0 && len <= CACHE_KEY_MAX, "key length", key);
	for (size_t i = 0; i < len; i++)
		check(key[i] != '{' && key[i] != '}' &&
		    (unsigned char)key[i] > ' ' && (unsigned char)key[i] < 0x7f,
		    "forbidden byte in key", key);

	/* Without a host, a key that was not hashed rebuilds to itself. */
	cache_key_build(NULL, path, *query != '\0' ? query : NULL, key);
	if (strchr(key, '#') == NULL) {
		char *rebuilt_path = strdup(key);

		if (rebuilt_path == NULL)
			abort();
		q = strchr(rebuilt_path, '?');
		if (q != NULL)
			*q++ = '\0';
		cache_key_build(NULL, rebuilt_path, q, again);
		check(strcmp(key, again) == 0, "normalising twice changes the key", key);
		free(rebuilt_path);
	}

	/* Sorting keeps every parameter and is idempotent. */
	if ((sorted = cache_query_sorted(query)) == NULL ||
	    (resorted = cache_query_sorted(sorted)) == NULL)
		abort();
	check(count_char(sorted, '&') == count_char(query, '&'),
	    "sorting changes the number of parameters", sorted);
	check(strcmp(sorted, resorted) == 0, "sorting twice changes the query",
	    sorted);
	free(resorted);
	free(sorted);
	free(buf);
	return 0;
}
