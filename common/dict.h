/* SPDX-License-Identifier: MIT */
#ifndef COMMON_DICT_H
#define COMMON_DICT_H

#include <stddef.h>

/* A string-keyed hash table that maps a key to a caller-owned pointer.
 * Keys are copied. The table grows as it fills; it never shrinks. */

struct dict;

struct dict	*dict_new(void);
void		 dict_free(struct dict **dp);
void		*dict_get(const struct dict *d, const char *key);
/* Inserts or replaces. 0 or -1 (out of memory). */
int		 dict_set(struct dict *d, const char *key, void *value);
/* Removes the key if present; returns the value it had, or NULL. */
void		*dict_del(struct dict *d, const char *key);
size_t		 dict_count(const struct dict *d);
/* Calls fn for every key and value, in no order; fn must not change d. */
void		 dict_foreach(const struct dict *d,
		    void (*fn)(const char *key, void *value, void *arg), void *arg);

#endif
