/* SPDX-License-Identifier: MIT */
/*
 * common/arena.c: pieces aligned and never moved, a reset that keeps one
 * block as large as they all were (so the same requests again allocate
 * nothing), and the most a reset keeps.
 */

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/arena.h"
#include "tests/unit/unit.h"

#define KEEP_MAX	(256 * 1024)	/* arena.c's ARENA_KEEP_MAX */

/* A connection's request: a few pieces of growing sizes. */
static int
one_request(struct arena *a, char **first)
{
	for (size_t i = 0; i < 40; i++) {
		size_t n = 1 + i * 37;
		char *p = arena_alloc(a, n);

		if (p == NULL || (uintptr_t)p % alignof(max_align_t) != 0)
			return -1;
		memset(p, (int)i, n);
		if (i == 0)
			*first = p;
	}
	return 0;
}

static void
t_pieces_are_aligned_and_never_move(void)
{
	struct arena a = ARENA_INIT;
	char *s[200];

	for (int i = 0; i < 200; i++) {
		char text[32];
		int n = snprintf(text, sizeof(text), "piece %d", i);

		CHECK((s[i] = arena_strndup(&a, text, (size_t)n)) != NULL);
		/* A larger piece between them forces new blocks. */
		CHECK(arena_alloc(&a, (size_t)i * 13 + 1) != NULL);
	}
	for (int i = 0; i < 200; i++) {
		char text[32];

		snprintf(text, sizeof(text), "piece %d", i);
		CHECK_STR(s[i], text);
	}
	CHECK_STR(arena_strndup(&a, "abc", 2), "ab");
	CHECK(arena_alloc(&a, SIZE_MAX - 8) == NULL);
	arena_free(&a);
	CHECK(a.blocks == NULL);
}

static void
t_the_same_requests_after_a_reset_allocate_nothing(void)
{
	struct arena a = ARENA_INIT;
	struct arena_block *kept;
	char *first = NULL;

	CHECK(one_request(&a, &first) == 0);
	arena_reset(&a);
	kept = a.blocks;
	CHECK(kept != NULL);
	for (int i = 0; i < 100; i++) {
		CHECK(one_request(&a, &first) == 0);
		arena_reset(&a);
		CHECK(a.blocks == kept);	/* newest first: a new one shows */
	}
	/* A larger request grows it once, then stays. */
	CHECK(arena_alloc(&a, 64 * 1024) != NULL);
	arena_reset(&a);
	kept = a.blocks;
	CHECK(arena_alloc(&a, 64 * 1024) != NULL);
	CHECK(a.blocks == kept);
	arena_free(&a);
}

static void
t_a_reset_keeps_at_most_its_limit(void)
{
	struct arena a = ARENA_INIT;

	/* In many blocks, above the limit: nothing kept. */
	for (int i = 0; i < 40; i++)
		CHECK(arena_alloc(&a, 16 * 1024) != NULL);
	arena_reset(&a);
	CHECK(a.blocks == NULL);
	/* In one block, above the limit: nothing kept either. */
	CHECK(arena_alloc(&a, KEEP_MAX + 1) != NULL);
	arena_reset(&a);
	CHECK(a.blocks == NULL);
	/* At the limit, one block: kept. */
	CHECK(arena_alloc(&a, KEEP_MAX) != NULL);
	arena_reset(&a);
	CHECK(a.blocks != NULL);
	arena_free(&a);
	arena_reset(&a);		/* an empty arena: nothing to do */
	CHECK(a.blocks == NULL);
}

int
main(void)
{
	RUN(t_pieces_are_aligned_and_never_move);
	RUN(t_the_same_requests_after_a_reset_allocate_nothing);
	RUN(t_a_reset_keeps_at_most_its_limit);
	return unit_exit();
}
