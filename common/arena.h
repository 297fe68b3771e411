/* SPDX-License-Identifier: MIT */
#ifndef COMMON_ARENA_H
#define COMMON_ARENA_H

/*
 * Memory handed out in pieces and given back all at once: a request's
 * scratch (its path, its host, its key's parts). Its blocks never move,
 * and a reset keeps one as large as they all were, so that a connection
 * serving request after request allocates nothing once it has seen its
 * largest. Calls nothing of Corral.
 */

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block	*blocks;	/* the newest first */
};

#define ARENA_INIT	{ NULL }

/* n bytes, aligned for any type; NULL when out of memory. */
void	*arena_alloc(struct arena *a, size_t n);
/* A copy of the n bytes at s, NUL-terminated; NULL when out of memory. */
char	*arena_strndup(struct arena *a, const char *s, size_t n);
/* Gives back everything, keeping the memory (up to ARENA_KEEP_MAX). */
void	 arena_reset(struct arena *a);
/* Frees everything. */
void	 arena_free(struct arena *a);

#endif
