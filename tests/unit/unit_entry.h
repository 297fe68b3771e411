/* SPDX-License-Identifier: MIT */
#ifndef TESTS_UNIT_ENTRY_H
#define TESTS_UNIT_ENTRY_H

/* Entries for the near-cache tests. */

#include <stdlib.h>
#include <string.h>

#include "cache/cache_entry.h"

#define NOW		1700000000000LL
#define FRESH_MS	10000
#define STALE_MS	60000

/* An entry of generation "dd...d" (32 times digit), fresh for FRESH_MS
 * from NOW then stale for STALE_MS, with one header and a body of
 * body_len bytes. */
static inline struct cache_entry *
make_entry(char digit, size_t body_len)
{
	struct cache_entry *e = entry_new();

	if (e == NULL)
		abort();
	memset(e->gen, digit, ENTRY_GEN_LEN);
	e->gen[ENTRY_GEN_LEN] = '\0';
	e->stored_ms = NOW;
	e->fresh_until_ms = NOW + FRESH_MS;
	e->stale_until_ms = NOW + FRESH_MS + STALE_MS;
	e->status = 200;
	if (entry_add_header(e, "Content-Type", "text/plain") == -1)
		abort();
	if (body_len > 0) {
		unsigned char *body = malloc(body_len);

		if (body == NULL)
			abort();
		memset(body, 'x', body_len);
		if (entry_copy_body(e, body, body_len) == -1)
			abort();
		free(body);
	}
	return e;
}

#endif
