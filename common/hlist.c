/* SPDX-License-Identifier: MIT */
/*
 * Header fields in order (see hlist.h). Copies go into an arena, whose
 * blocks never move, so a value found stays valid until the list is
 * cleared; clearing keeps its memory, so the next message of the same size
 * takes no allocation.
 */

#include "common/hlist.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HL_FIELDS_MIN	16

void
hl_init(struct hlist *h)
{
	memset(h, 0, sizeof(*h));
}

void
hl_clear(struct hlist *h)
{
	h->n = 0;
	arena_reset(&h->copies);
}

void
hl_free(struct hlist *h)
{
	arena_free(&h->copies);
	free(h->v);
	hl_init(h);
}

int
hl_compact(struct hlist *h)
{
	struct arena fresh = ARENA_INIT;
	struct hfield *v;
	size_t bytes = 0, k, n;
	char *p;

	for (size_t i = 0; i < h->n; i++)
		bytes += strlen(h->v[i].key) + strlen(h->v[i].value) + 2;
	if (h->n == 0) {
		hl_free(h);
		return 0;
	}
	if ((p = arena_alloc(&fresh, bytes)) == NULL ||
	    (v = malloc(h->n * sizeof(*v))) == NULL) {
		arena_free(&fresh);
		return -1;
	}
	for (size_t i = 0; i < h->n; i++) {
		k = strlen(h->v[i].key) + 1;
		n = strlen(h->v[i].value) + 1;
		v[i].key = memcpy(p, h->v[i].key, k);
		v[i].value = memcpy(p + k, h->v[i].value, n);
		p += k + n;
	}
	arena_free(&h->copies);
	free(h->v);
	h->copies = fresh;
	h->v = v;
	h->cap = h->n;
	return 0;
}

static int
append(struct hlist *h, const char *key, const char *value)
{
	struct hfield *v;
	size_t cap;

	if (h->n == h->cap) {
		cap = h->cap == 0 ? HL_FIELDS_MIN : h->cap * 2;
		if ((v = realloc(h->v, cap * sizeof(*v))) == NULL)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n].key = key;
	h->v[h->n].value = value;
	h->n++;
	return 0;
}

/* Would the n bytes at p, as a field's name or value, read as two? */
static int
splits(const char *p, size_t n)
{
	return memchr(p, '\r', n) != NULL || memchr(p, '\n', n) != NULL ||
	    memchr(p, '\0', n) != NULL;
}

int
hl_addn(struct hlist *h, const char *key, size_t n, const char *value,
    size_t m)
{
	char *k, *v;

	if (splits(key, n) || splits(value, m) || n > SIZE_MAX / 2 - m)
		return -1;
	if ((k = arena_alloc(&h->copies, n + 1 + m + 1)) == NULL)
		return -1;
	v = k + n + 1;
	memcpy(k, key, n);
	k[n] = '\0';
	memcpy(v, value, m);
	v[m] = '\0';
	return append(h, k, v);	/* on failure the copy waits for a clear */
}

int
hl_add(struct hlist *h, const char *key, const char *value)
{
	return hl_addn(h, key, strlen(key), value, strlen(value));
}

int
hl_add_ref(struct hlist *h, const char *key, const char *value)
{
	return append(h, key, value);
}

const char *
hl_find(const struct hlist *h, const char *key)
{
	const struct hfield *f;

	HL_FOREACH(f, h)
		if (strcasecmp(f->key, key) == 0)
			return f->value;
	return NULL;
}

static void
drop_at(struct hlist *h, size_t i)
{
	memmove(&h->v[i], &h->v[i + 1], (h->n - i - 1) * sizeof(h->v[0]));
	h->n--;
}

int
hl_remove(struct hlist *h, const char *key)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->v[i].key, key) == 0) {
			drop_at(h, i);
			return 0;
		}
	return -1;
}

size_t
hl_remove_all(struct hlist *h, const char *key)
{
	size_t i, j, gone;

	for (i = j = 0; i < h->n; i++)
		if (strcasecmp(h->v[i].key, key) != 0)
			h->v[j++] = h->v[i];
	gone = h->n - j;
	h->n = j;
	return gone;
}

int
hl_copy(struct hlist *dst, const struct hlist *src)
{
	const struct hfield *f;

	assert(dst != src);
	HL_FOREACH(f, src)
		if (hl_add(dst, f->key, f->value) == -1)
			return -1;
	return 0;
}
