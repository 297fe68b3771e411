/* SPDX-License-Identifier: MIT */
/*
 * A string-keyed hash table (dict.h): chained buckets, grown as it fills.
 * Calls common/util.c only.
 */

#include "common/dict.h"
#include "common/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DICT_INITIAL_BUCKETS	64

struct dict_node {
	struct dict_node	*next;
	uint64_t		 hash;
	void			*value;
	char			 key[];
};

struct dict {
	struct dict_node	**buckets;
	size_t			  nbuckets;	/* a power of two */
	size_t			  count;
};

struct dict *
dict_new(void)
{
	struct dict *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->nbuckets = DICT_INITIAL_BUCKETS;
	d->buckets = calloc(d->nbuckets, sizeof(*d->buckets));
	if (d->buckets == NULL) {
		free(d);
		return NULL;
	}
	return d;
}

void
dict_free(struct dict **dp)
{
	struct dict *d = *dp;

	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nbuckets; i++) {
		struct dict_node *n = d->buckets[i];
		while (n != NULL) {
			struct dict_node *next = n->next;
			free(n);
			n = next;
		}
	}
	free(d->buckets);
	free(d);
	*dp = NULL;
}

static struct dict_node **
find_slot(const struct dict *d, const char *key, uint64_t h)
{
	struct dict_node **np = &d->buckets[h & (d->nbuckets - 1)];

	for (; *np != NULL; np = &(*np)->next)
		if ((*np)->hash == h && strcmp((*np)->key, key) == 0)
			break;
	return np;
}

void *
dict_get(const struct dict *d, const char *key)
{
	struct dict_node *n = *find_slot(d, key, util_hash(key));

	return n != NULL ? n->value : NULL;
}

static void
grow(struct dict *d)
{
	size_t nb = d->nbuckets * 2;
	struct dict_node **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return;		/* keep working with longer chains */
	for (size_t i = 0; i < d->nbuckets; i++) {
		struct dict_node *n = d->buckets[i];
		while (n != NULL) {
			struct dict_node *next = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
			n = next;
		}
	}
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = nb;
}

int
dict_set(struct dict *d, const char *key, void *value)
{
	uint64_t h = util_hash(key);
	struct dict_node **np = find_slot(d, key, h);
	size_t kl;

	if (*np != NULL) {
		(*np)->value = value;
		return 0;
	}
	kl = strlen(key);
	if ((*np = malloc(sizeof(**np) + kl + 1)) == NULL)
		return -1;
	(*np)->next = NULL;
	(*np)->hash = h;
	(*np)->value = value;
	memcpy((*np)->key, key, kl + 1);
	if (++d->count > d->nbuckets)
		grow(d);
	return 0;
}

void *
dict_del(struct dict *d, const char *key)
{
	struct dict_node **np = find_slot(d, key, util_hash(key));
	struct dict_node *n = *np;
	void *v;

	if (n == NULL)
		return NULL;
	*np = n->next;
	v = n->value;
	free(n);
	d->count--;
	return v;
}

size_t
dict_count(const struct dict *d)
{
	return d->count;
}

void
dict_foreach(const struct dict *d,
    void (*fn)(const char *key, void *value, void *arg), void *arg)
{
	for (size_t i = 0; i < d->nbuckets; i++)
		for (struct dict_node *n = d->buckets[i]; n != NULL; n = n->next)
			fn(n->key, n->value, arg);
}
