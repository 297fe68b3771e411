/* SPDX-License-Identifier: MIT */
/*
 * The near cache of one process. See cache_l1.h.
 *
 * Calls: cache_entry.c, cache_key.c. Called from outside cache/ only.
 */

#include "cache/cache_l1.h"

#include <sys/queue.h>

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_key.h"
#include "common/hlist.h"

/*
 * One node per key, in three lists at once:
 *
 *	lru		every node, most recently used first; eviction takes
 *			from the tail.
 *	buckets		a chained hash table on the whole key: get, put and
 *			the exact part of drop.
 *	base_buckets	a second table on the base key (what precedes the
 *			first '\n'), so "K", "K\na" and "K\nb" share a chain
 *			and l1_drop("K") finds every variant without a scan.
 *
 * The lists are doubly linked, so taking a node out is O(1) in all three.
 * Both tables have the same number of buckets, a power of two, doubled
 * when the nodes outnumber the buckets. The key is stored in the node:
 * one allocation per kept entry, none on a hit.
 *
 * Admission (TinyLFU): every lookup counts its key in a small count-min
 * sketch of 4-bit counters, halved once the lookups since the last
 * halving reach ten times the entries held, so old popularity fades. When
 * a new key would push the least recently used entry out, it gets in only
 * if it was looked up more often than that entry. Under pure LRU, a loop
 * over more keys than fit (a crawler walking every page, a client
 * cycling through a catalogue) evicts each entry just before it is asked
 * for again, and nothing ever hits; with admission, the entries already
 * held stay and keep hitting.
 */

#define L1_MAGIC		0x4c314348u	/* "L1CH" */
/* Charged per entry on top of its key, body and headers: the node, the
 * entry struct, the header records and malloc's own bookkeeping. */
#define L1_ENTRY_OVERHEAD	512
/* An entry charged more than max_bytes / L1_MAX_SHARE is not kept. */
#define L1_MAX_SHARE		8
#define L1_INITIAL_BUCKETS	256

#define SKETCH_ROWS		4
#define SKETCH_MAX		15	/* counters saturate: 4 bits */
#define SKETCH_MIN_WIDTH	4096
#define SKETCH_MAX_WIDTH	(1u << 20)
#define SKETCH_BYTES_PER	1024	/* a counter per this much budget */
#define SKETCH_SAMPLE_PER	10	/* halve after entries x this lookups */
#define SKETCH_MIN_SAMPLE	1024

struct l1_node {
	TAILQ_ENTRY(l1_node)	 lru;
	LIST_ENTRY(l1_node)	 chain;		/* in buckets */
	LIST_ENTRY(l1_node)	 base_chain;	/* in base_buckets */
	struct cache_entry	*e;		/* one reference */
	int64_t			 asked_ms;	/* e started a refresh then
						 * (monotonic ms), or 0 */
	uint64_t		 hash;
	uint64_t		 base_hash;
	int64_t			 charge;
	size_t			 len;
	char			 key[];
};

TAILQ_HEAD(lru_list, l1_node);
LIST_HEAD(chain, l1_node);

struct l1 {
	uint32_t		 magic;
	int64_t			 max_bytes;	/* 0: disabled */
	int64_t			 max_entry;	/* largest charge kept */
	struct chain		*buckets;
	struct chain		*base_buckets;
	size_t			 nbuckets;	/* a power of two */
	struct lru_list		 lru;
	struct l1_counters	 counters;
	uint8_t			*sketch;	/* admission counters */
	size_t			 sketch_mask;	/* width - 1, a power of two */
	uint64_t		 sketch_adds;	/* since the last halving */
};

/* The counter of row i for hash: rows differ by a multiplicative mix. */
static size_t
sketch_slot(const struct l1 *l, uint64_t hash, int i)
{
	uint64_t h = (hash + (uint64_t)i * 0x9e3779b97f4a7c15ULL) *
	    0xbf58476d1ce4e5b9ULL;

	return (size_t)(h >> 32) & l->sketch_mask;
}

static unsigned
sketch_freq(const struct l1 *l, uint64_t hash)
{
	unsigned f = SKETCH_MAX;

	for (int i = 0; i < SKETCH_ROWS; i++) {
		unsigned c = l->sketch[sketch_slot(l, hash, i)];

		if (c < f)
			f = c;
	}
	return f;
}

static void
sketch_count(struct l1 *l, uint64_t hash)
{
	uint64_t sample = (uint64_t)l->counters.entries * SKETCH_SAMPLE_PER;

	for (int i = 0; i < SKETCH_ROWS; i++) {
		uint8_t *c = &l->sketch[sketch_slot(l, hash, i)];

		if (*c < SKETCH_MAX)
			(*c)++;
	}
	if (++l->sketch_adds < (sample > SKETCH_MIN_SAMPLE ? sample :
	    SKETCH_MIN_SAMPLE))
		return;
	for (size_t j = 0; j <= l->sketch_mask; j++)
		l->sketch[j] >>= 1;
	l->sketch_adds = 0;
}

static int
enabled(const struct l1 *l)
{
	return l->max_bytes > 0;
}

static struct chain *
bucket(const struct l1 *l, uint64_t hash)
{
	return &l->buckets[hash & (l->nbuckets - 1)];
}

static struct chain *
base_bucket(const struct l1 *l, uint64_t hash)
{
	return &l->base_buckets[hash & (l->nbuckets - 1)];
}

static struct l1_node *
find(const struct l1 *l, const char *key, const struct cache_key_hash *ki)
{
	struct l1_node *n;

	LIST_FOREACH(n, bucket(l, ki->hash), chain)
		if (n->hash == ki->hash && n->len == ki->len &&
		    memcmp(n->key, key, ki->len) == 0)
			return n;
	return NULL;
}

static void
touch(struct l1 *l, struct l1_node *n)
{
	if (TAILQ_FIRST(&l->lru) == n)
		return;
	TAILQ_REMOVE(&l->lru, n, lru);
	TAILQ_INSERT_HEAD(&l->lru, n, lru);
}

/* Takes *np out of every list, drops its reference and frees it. */
static void
unlink_node(struct l1 *l, struct l1_node **np)
{
	struct l1_node *n = *np;

	*np = NULL;
	TAILQ_REMOVE(&l->lru, n, lru);
	LIST_REMOVE(n, chain);
	LIST_REMOVE(n, base_chain);
	l->counters.bytes -= n->charge;
	l->counters.entries--;
	assert(l->counters.bytes >= 0 && l->counters.entries >= 0);
	entry_unref(&n->e);
	free(n);
}

/*
 * What keeping e under a key of len bytes costs, in *chargep. -1 as soon
 * as it passes l->max_entry, so a huge entry costs no more than a small
 * one to refuse.
 */
static int
charge_of(const struct l1 *l, size_t len, const struct cache_entry *e,
    int64_t *chargep)
{
	const struct hfield *kv;
	uint64_t limit = (uint64_t)l->max_entry, c;

	if (limit < L1_ENTRY_OVERHEAD)
		return -1;
	c = L1_ENTRY_OVERHEAD;		/* from here on c <= limit */
	if (len > limit - c)
		return -1;
	c += len;
	if (e->body_len > limit - c)
		return -1;
	c += e->body_len;
	if (e->request_len > limit - c)
		return -1;
	c += e->request_len;
	HL_FOREACH(kv, &e->headers) {
		size_t hl = strlen(kv->key) + strlen(kv->value);

		if (hl > limit - c)
			return -1;
		c += hl;
	}
	*chargep = (int64_t)c;
	return 0;
}

/* Doubles both tables. Without memory it keeps the old ones: chains only
 * get longer. */
static void
grow(struct l1 *l)
{
	size_t nb = l->nbuckets * 2, i;
	struct chain *b, *bb;
	struct l1_node *n;

	if (nb < l->nbuckets || nb > SIZE_MAX / sizeof(*b))
		return;
	b = malloc(nb * sizeof(*b));
	bb = malloc(nb * sizeof(*bb));
	if (b == NULL || bb == NULL) {
		free(b);
		free(bb);
		return;
	}
	for (i = 0; i < nb; i++) {
		LIST_INIT(&b[i]);
		LIST_INIT(&bb[i]);
	}
	/* Every node is on the LRU list: rechain from there. */
	TAILQ_FOREACH(n, &l->lru, lru) {
		LIST_INSERT_HEAD(&b[n->hash & (nb - 1)], n, chain);
		LIST_INSERT_HEAD(&bb[n->base_hash & (nb - 1)], n, base_chain);
	}
	free(l->buckets);
	free(l->base_buckets);
	l->buckets = b;
	l->base_buckets = bb;
	l->nbuckets = nb;
}

/* Evicts from the LRU tail until the total fits, never evicting keep. */
static void
evict(struct l1 *l, const struct l1_node *keep)
{
	struct l1_node *n;

	while (l->counters.bytes > l->max_bytes &&
	    (n = TAILQ_LAST(&l->lru, lru_list)) != NULL && n != keep) {
		unlink_node(l, &n);
		l->counters.evictions++;
	}
}

struct l1 *
l1_new(int64_t max_bytes)
{
	size_t width;
	struct l1 *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->magic = L1_MAGIC;
	TAILQ_INIT(&l->lru);
	if (max_bytes <= 0)
		return l;	/* disabled: no tables */
	l->nbuckets = L1_INITIAL_BUCKETS;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	l->base_buckets = calloc(l->nbuckets, sizeof(*l->base_buckets));
	if (l->buckets == NULL || l->base_buckets == NULL)
		goto fail;
	for (size_t i = 0; i < l->nbuckets; i++) {
		LIST_INIT(&l->buckets[i]);
		LIST_INIT(&l->base_buckets[i]);
	}
	width = SKETCH_MIN_WIDTH;
	while (width < SKETCH_MAX_WIDTH &&
	    (int64_t)width < max_bytes / SKETCH_BYTES_PER)
		width *= 2;
	if ((l->sketch = calloc(width, 1)) == NULL)
		goto fail;
	l->sketch_mask = width - 1;
	l->max_bytes = max_bytes;
	l->max_entry = max_bytes / L1_MAX_SHARE;
	return l;
fail:
	free(l->buckets);
	free(l->base_buckets);
	free(l);
	return NULL;
}

void
l1_free(struct l1 **lp)
{
	struct l1 *l = *lp;
	struct l1_node *n;

	if (l == NULL)
		return;
	*lp = NULL;
	assert(l->magic == L1_MAGIC);
	while ((n = TAILQ_FIRST(&l->lru)) != NULL)
		unlink_node(l, &n);
	free(l->buckets);
	free(l->base_buckets);
	free(l->sketch);
	l->magic = 0;
	free(l);
}

struct cache_entry *
l1_get(struct l1 *l, const char *key, int64_t now_ms, int stale_ok)
{
	struct cache_key_hash ki;
	struct l1_node *n;
	enum entry_state st;

	assert(l->magic == L1_MAGIC);
	if (!enabled(l))
		return NULL;
	cache_key_hash(key, &ki);
	sketch_count(l, ki.hash);
	if ((n = find(l, key, &ki)) == NULL) {
		l->counters.misses++;
		return NULL;
	}
	if ((st = entry_state(n->e, now_ms)) == ENTRY_EXPIRED) {
		unlink_node(l, &n);
		l->counters.drops++;
		l->counters.misses++;
		return NULL;
	}
	if (st == ENTRY_STALE && !stale_ok) {
		l->counters.misses++;	/* kept for those who take it stale */
		return NULL;
	}
	touch(l, n);
	l->counters.hits++;
	return entry_ref(n->e);
}

void
l1_put(struct l1 *l, const char *key, struct cache_entry *e)
{
	struct cache_entry *old;
	struct l1_node *n, *victim;
	struct cache_key_hash ki;
	int64_t charge;

	assert(l->magic == L1_MAGIC);
	assert(e->magic == ENTRY_MAGIC);
	if (!enabled(l))
		return;
	cache_key_hash(key, &ki);
	n = find(l, key, &ki);
	if (n != NULL && (n->e == e ||
	    (e->gen[0] != '\0' && strcmp(n->e->gen, e->gen) == 0))) {
		touch(l, n);
		return;
	}
	if (charge_of(l, ki.len, e, &charge) == -1) {
		/* Too large to keep, and newer than any copy held. */
		if (n != NULL) {
			unlink_node(l, &n);
			l->counters.drops++;
		}
		return;
	}
	if (n != NULL) {
		old = n->e;
		n->e = entry_ref(e);
		n->asked_ms = 0;	/* a new copy: not asked yet */
		entry_unref(&old);
		l->counters.bytes += charge - n->charge;
		n->charge = charge;
		touch(l, n);
	} else {
		if (l->counters.bytes + charge > l->max_bytes &&
		    (victim = TAILQ_LAST(&l->lru, lru_list)) != NULL &&
		    sketch_freq(l, ki.hash) <= sketch_freq(l, victim->hash)) {
			l->counters.rejected++;
			return;
		}
		if ((n = calloc(1, sizeof(*n) + ki.len + 1)) == NULL)
			return;
		memcpy(n->key, key, ki.len + 1);
		n->len = ki.len;
		n->hash = ki.hash;
		n->base_hash = ki.base_hash;
		n->charge = charge;
		n->e = entry_ref(e);
		TAILQ_INSERT_HEAD(&l->lru, n, lru);
		LIST_INSERT_HEAD(bucket(l, ki.hash), n, chain);
		LIST_INSERT_HEAD(base_bucket(l, ki.base_hash), n, base_chain);
		l->counters.bytes += charge;
		l->counters.entries++;
		if ((uint64_t)l->counters.entries > l->nbuckets)
			grow(l);
	}
	l->counters.stores++;
	evict(l, n);
}

int
l1_replace(struct l1 *l, const char *key, struct cache_entry *e)
{
	struct cache_key_hash ki;

	assert(l->magic == L1_MAGIC);
	if (!enabled(l))
		return 0;
	cache_key_hash(key, &ki);
	if (find(l, key, &ki) == NULL)
		return 0;
	l1_put(l, key, e);
	return 1;
}

void
l1_drop(struct l1 *l, const char *key)
{
	struct l1_node *n, *next;
	struct cache_key_hash ki;

	assert(l->magic == L1_MAGIC);
	if (!enabled(l))
		return;
	cache_key_hash(key, &ki);
	/* key and its variants share key's base, so they share a chain. */
	for (n = LIST_FIRST(base_bucket(l, ki.base_hash)); n != NULL;
	    n = next) {
		next = LIST_NEXT(n, base_chain);
		if (n->base_hash == ki.base_hash &&
		    cache_key_covers(key, ki.len, n->key, n->len)) {
			unlink_node(l, &n);
			l->counters.drops++;
		}
	}
}

void
l1_drop_prefix(struct l1 *l, const char *prefix)
{
	struct l1_node *n, *next;
	size_t plen = strlen(prefix);

	assert(l->magic == L1_MAGIC);
	if (!enabled(l))
		return;
	for (n = TAILQ_FIRST(&l->lru); n != NULL; n = next) {
		next = TAILQ_NEXT(n, lru);
		if (n->len >= plen && memcmp(n->key, prefix, plen) == 0) {
			unlink_node(l, &n);
			l->counters.drops++;
		}
	}
}

const struct l1_counters *
l1_counters(const struct l1 *l)
{
	assert(l->magic == L1_MAGIC);
	return &l->counters;
}

int
l1_refresh_asked(struct l1 *l, const char *key, int64_t now_ms,
    int64_t within_ms)
{
	struct cache_key_hash ki;
	struct l1_node *n;

	assert(l->magic == L1_MAGIC);
	if (!enabled(l))
		return 0;
	cache_key_hash(key, &ki);
	if ((n = find(l, key, &ki)) == NULL)
		return 0;
	if (within_ms > 0)
		return n->asked_ms != 0 && now_ms - n->asked_ms < within_ms;
	n->asked_ms = now_ms;
	return 1;
}
