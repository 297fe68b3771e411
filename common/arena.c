/* SPDX-License-Identifier: MIT */
/*
 * A bump allocator over blocks that never move (see arena.h).
 */

#include "common/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK_MIN	256
#define ARENA_KEEP_MAX	(256 * 1024)	/* bytes a reset keeps */
#define ARENA_ALIGN	alignof(max_align_t)

struct arena_block {
	struct arena_block	*next;
	size_t			 used, cap;
	alignas(max_align_t) char data[];
};

static void
free_blocks(struct arena_block *b)
{
	struct arena_block *next;

	for (; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
}

void *
arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->blocks;
	size_t at, cap;

	if (n > SIZE_MAX / 2)
		return NULL;
	at = b != NULL ? (b->used + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1) : 0;
	if (b == NULL || at > b->cap || b->cap - at < n) {
		cap = b == NULL ? ARENA_BLOCK_MIN : b->cap * 2;
		if (cap < n)
			cap = n;
		if ((b = malloc(sizeof(*b) + cap)) == NULL)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = a->blocks;
		a->blocks = b;
		at = 0;
	}
	b->used = at + n;
	return b->data + at;
}

char *
arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p;

	if ((p = arena_alloc(a, n + 1)) == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void
arena_reset(struct arena *a)
{
	struct arena_block *b = a->blocks;
	size_t total = 0;

	if (b == NULL)
		return;
	if (b->next == NULL && b->cap <= ARENA_KEEP_MAX) {
		b->used = 0;
		return;
	}
	for (; b != NULL; b = b->next)
		total += b->cap;
	free_blocks(a->blocks);
	a->blocks = NULL;
	if (total > ARENA_KEEP_MAX)
		return;
	if ((b = malloc(sizeof(*b) + total)) != NULL) {
		b->next = NULL;
		b->used = 0;
		b->cap = total;
		a->blocks = b;
	}
}

void
arena_free(struct arena *a)
{
	free_blocks(a->blocks);
	a->blocks = NULL;
}
