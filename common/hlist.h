/* SPDX-License-Identifier: MIT */
#ifndef COMMON_HLIST_H
#define COMMON_HLIST_H

/*
 * A message's header fields in the order they came or were added, each a
 * name and a value as C strings; names compare without case. A field is
 * added as a copy into an arena the list owns, or by reference to bytes
 * that outlive the list's use (a request's head, held by its connection).
 * Clearing a list keeps its memory, so a list used again and again (a
 * connection's request, a reply being built) allocates nothing once it
 * has seen its largest message. Calls nothing of Corral.
 */

#include <stddef.h>

#include "common/arena.h"

struct hfield {
	const char	*key;
	const char	*value;
};

struct hlist {
	struct hfield	*v;
	size_t		 n, cap;
	struct arena	 copies;	/* of the fields added as copies */
};

#define HL_FOREACH(f, h) \
	for ((f) = (h)->v; (f) < (h)->v + (h)->n; (f)++)

void	 hl_init(struct hlist *h);
/* Empties h, keeping its memory (as arena_reset() keeps an arena's). */
void	 hl_clear(struct hlist *h);
/* Empties h and frees its memory; h may be used again. */
void	 hl_free(struct hlist *h);

/* Copies every field into one piece of exactly their size (a list
 * kept long, an entry's): 0, or -1 (out of memory, h unchanged). */
int	 hl_compact(struct hlist *h);
/*
 * Adds a copy of key and value at the end. -1, adding nothing, when out
 * of memory or when either holds a CR, LF or NUL (a field a client or an
 * origin could make into two).
 */
int	 hl_add(struct hlist *h, const char *key, const char *value);
/* The same with lengths: the n bytes at key, the m bytes at value. */
int	 hl_addn(struct hlist *h, const char *key, size_t n,
	    const char *value, size_t m);
/* Adds key and value as they are, by reference: they must outlive h's
 * use. Unchecked (the caller has checked them). -1 when out of memory. */
int	 hl_add_ref(struct hlist *h, const char *key, const char *value);

/* The value of the first field named key, or NULL. */
const char *hl_find(const struct hlist *h, const char *key);
/* Removes the first field named key: 0, or -1 when there is none. */
int	 hl_remove(struct hlist *h, const char *key);
/* Removes every field named key; how many. */
size_t	 hl_remove_all(struct hlist *h, const char *key);
/* Copies every field of src to the end of dst: 0 or -1 (out of memory,
 * dst then holds a part). */
int	 hl_copy(struct hlist *dst, const struct hlist *src);

#endif
