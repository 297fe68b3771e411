/* SPDX-License-Identifier: MIT */
/*
 * The near cache the workers of one instance share. See cache_l2.h.
 *
 * Calls: cache_entry.c, cache_key.c. Called from outside cache/ only.
 */

#include "cache/cache_l2.h"

#include <sys/mman.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "cache/cache_key.h"

/*
 * The mapping: a header, the index (a chained hash table on the base key,
 * what precedes the first '\n', so that a key and its variants share a
 * chain) and the ring. Blocks are written one after another at the ring's
 * head, at logical positions that only grow (a physical offset is the
 * position modulo the ring's size); a block never wraps: when the rest of
 * the ring is too short, that rest is skipped (with a filler block when a
 * block header fits in it). Making room pushes the tail past the oldest
 * blocks, unlinking those still live.
 *
 * Readers find a block under the lock and copy it out without it. A
 * writer moves the tail past a block before it writes over it, so a copy
 * whose block still lies at or past the tail once the copy is done was
 * not overwritten meanwhile (a seqlock on the tail).
 *
 * Nobody waits long for the lock: a worker stalled while it holds it
 * (stopped, swapped out) must not stall its siblings. A lookup or a write
 * that cannot take it within L2_LOCK_WAIT_US does without the cache (the
 * lookup goes to Redis), and its process skips the cache for
 * L2_BUSY_SKIP_MS. A drop that cannot take it leaves a reset for the next
 * taker to make first: a copy that should be gone is never served.
 *
 * Chains link blocks by position + 1; 0 ends a chain.
 */

#define L2_MAGIC		0x4c324348u	/* "L2CH" */
#define L2_ALIGN		8
#define L2_BYTES_PER_BUCKET	4096	/* one chain per this much budget */
#define L2_MIN_BUCKETS		1024
#define L2_MAX_SHARE		8	/* an entry may use 1/8 of the ring */
#define L2_LOCK_WAIT_US		1000	/* the longest wait for the lock */
#define L2_BUSY_SKIP_MS		100	/* then this process skips the cache */

struct block {
	uint64_t	next;		/* position + 1 of the next in its chain */
	uint64_t	base_hash;
	int64_t		fresh_until_ms;
	int64_t		stale_until_ms;
	uint32_t	size;		/* the whole block, aligned */
	uint32_t	key_len;
	uint32_t	blob_len;
	uint32_t	live;		/* linked in its chain (a filler: never) */
	uint32_t	reads;		/* l2_get copies of it so far */
	char		key[];		/* key_len bytes, NUL, then the blob */
};

struct shared {
	pthread_mutex_t		lock;
	uint64_t		nbuckets;	/* a power of two */
	uint64_t		ring_size;	/* a multiple of L2_ALIGN */
	uint64_t		max_block;
	uint64_t		head;		/* under the lock */
	_Atomic uint64_t	tail;		/* written under the lock */
	_Atomic uint64_t	hits;
	_Atomic uint64_t	misses;
	_Atomic uint64_t	stores;
	_Atomic uint64_t	evictions;
	_Atomic uint64_t	drops;
	_Atomic uint64_t	resets;
	_Atomic uint64_t	lock_busy;
	_Atomic int		reset_due;	/* a drop found the lock busy */
	_Atomic int64_t		bytes;
	_Atomic int64_t		entries;
	int64_t			max_bytes;
	uint64_t		buckets[];
};

struct l2 {
	uint32_t		 magic;
	struct shared		*sh;
	unsigned char		*ring;
	size_t			 map_len;
	struct timespec		 skip_until;	/* this process's own */
};

static uint64_t
align_up(uint64_t n)
{
	return (n + L2_ALIGN - 1) & ~(uint64_t)(L2_ALIGN - 1);
}

static struct block *
at(const struct l2 *l, uint64_t pos)
{
	return (struct block *)(l->ring + pos % l->sh->ring_size);
}

static uint64_t *
chain_of(const struct l2 *l, uint64_t base_hash)
{
	return &l->sh->buckets[base_hash & (l->sh->nbuckets - 1)];
}

static unsigned char *
blob_of(struct block *b)
{
	return (unsigned char *)b->key + b->key_len + 1;
}

static void
count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Empties it: every chain, and the ring from the head on. */
static void
reset(struct l2 *l)
{
	struct shared *sh = l->sh;

	memset(sh->buckets, 0, sh->nbuckets * sizeof(sh->buckets[0]));
	atomic_store_explicit(&sh->tail, sh->head, memory_order_relaxed);
	atomic_fetch_add_explicit(&sh->drops,
	    (uint64_t)atomic_load(&sh->entries), memory_order_relaxed);
	atomic_store(&sh->bytes, 0);
	atomic_store(&sh->entries, 0);
}

/* t plus us microseconds. */
static struct timespec
later(struct timespec t, long us)
{
	t.tv_nsec += us * 1000;
	t.tv_sec += t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

static int
before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	    (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * 0 with the lock held, or -1: busy past L2_LOCK_WAIT_US (or this process
 * skips the cache a while after that: a drop never does), or lost for
 * good. A drop that finds it busy leaves the reset due.
 */
static int
lock(struct l2 *l, int dropping)
{
	struct shared *sh = l->sh;
	struct timespec now, until;
	int r = EBUSY;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (dropping || !before(&now, &l->skip_until)) {
		until = later(now, L2_LOCK_WAIT_US);
		if ((r = pthread_mutex_clocklock(&sh->lock, CLOCK_MONOTONIC,
		    &until)) == ETIMEDOUT && !dropping)
			l->skip_until = later(until, L2_BUSY_SKIP_MS * 1000L);
	}
	if (r == EOWNERDEAD) {
		/* Its holder died, maybe halfway through a change. */
		reset(l);
		count(&sh->resets);
		pthread_mutex_consistent(&sh->lock);
		r = 0;
	}
	if (r == ETIMEDOUT || r == EBUSY) {
		count(&sh->lock_busy);
		if (dropping)
			atomic_store(&sh->reset_due, 1);
		return -1;
	}
	if (r == 0 && atomic_exchange(&sh->reset_due, 0))
		reset(l);
	return r == 0 ? 0 : -1;
}

static void
unlock(struct l2 *l)
{
	pthread_mutex_unlock(&l->sh->lock);
}

static int
enabled(const struct l2 *l)
{
	return l != NULL && l->sh != NULL;
}

struct l2 *
l2_new(int64_t max_bytes, char *err, size_t errlen)
{
	pthread_mutexattr_t ma;
	struct l2 *l;
	struct shared *sh;
	uint64_t nbuckets = L2_MIN_BUCKETS, head_len;

	if ((l = calloc(1, sizeof(*l))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->magic = L2_MAGIC;
	if (max_bytes <= 0)
		return l;
	while (nbuckets < (uint64_t)max_bytes / L2_BYTES_PER_BUCKET)
		nbuckets <<= 1;
	head_len = align_up(sizeof(*sh) + nbuckets * sizeof(sh->buckets[0]));
	l->map_len = (size_t)(head_len + align_up((uint64_t)max_bytes));
	sh = mmap(NULL, l->map_len, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the shared near cache (%lld "
		    "bytes): %s", (long long)max_bytes, strerror(errno));
		free(l);
		return NULL;
	}
	sh->nbuckets = nbuckets;
	sh->ring_size = align_up((uint64_t)max_bytes);
	sh->max_block = sh->ring_size / L2_MAX_SHARE;
	if (sh->max_block > (UINT32_MAX & ~(uint64_t)(L2_ALIGN - 1)))
		sh->max_block = UINT32_MAX & ~(uint64_t)(L2_ALIGN - 1);
	sh->max_bytes = max_bytes;
	if (pthread_mutexattr_init(&ma) != 0 ||
	    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) != 0 ||
	    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST) != 0 ||
	    pthread_mutex_init(&sh->lock, &ma) != 0) {
		snprintf(err, errlen, "cannot set up the shared near cache's "
		    "lock");
		munmap(sh, l->map_len);
		free(l);
		return NULL;
	}
	pthread_mutexattr_destroy(&ma);
	l->sh = sh;
	l->ring = (unsigned char *)sh + head_len;
	return l;
}

void
l2_free(struct l2 **lp)
{
	struct l2 *l = *lp;

	if (l == NULL)
		return;
	assert(l->magic == L2_MAGIC);
	if (l->sh != NULL)
		munmap(l->sh, l->map_len);
	free(l);
	*lp = NULL;
}

/* The position + 1 of key's live block, or 0. */
static uint64_t
find(const struct l2 *l, const char *key, const struct cache_key_hash *kh)
{
	uint64_t p;
	struct block *b;

	for (p = *chain_of(l, kh->base_hash); p != 0; p = b->next) {
		b = at(l, p - 1);
		if (b->base_hash == kh->base_hash && b->key_len == kh->len &&
		    memcmp(b->key, key, kh->len) == 0)
			return p;
	}
	return 0;
}

/* Takes the live block at pos out of its chain. */
static void
unlink_block(struct l2 *l, uint64_t pos)
{
	struct block *b = at(l, pos);
	uint64_t *pp = chain_of(l, b->base_hash);

	assert(b->live);
	while (*pp != 0 && *pp != pos + 1)
		pp = &at(l, *pp - 1)->next;
	assert(*pp == pos + 1);
	*pp = b->next;
	b->live = 0;
	atomic_fetch_sub(&l->sh->bytes, (int64_t)b->size);
	atomic_fetch_sub(&l->sh->entries, 1);
}

/* The size of what starts at pos (a block, or a rest too short for one). */
static uint64_t
span_at(const struct l2 *l, uint64_t pos)
{
	uint64_t rest = l->sh->ring_size - pos % l->sh->ring_size;

	return rest < sizeof(struct block) ? rest : at(l, pos)->size;
}

/* Pushes the tail past the oldest blocks until the ring up to end is free
 * to write. */
static void
reserve(struct l2 *l, uint64_t end)
{
	struct shared *sh = l->sh;
	uint64_t t = atomic_load_explicit(&sh->tail, memory_order_relaxed);

	while (t + sh->ring_size < end && t < sh->head) {
		if (span_at(l, t) >= sizeof(struct block) && at(l, t)->live) {
			unlink_block(l, t);
			count(&sh->evictions);
		}
		t += span_at(l, t);
	}
	atomic_store_explicit(&sh->tail, t, memory_order_relaxed);
	/* The tail moves before anything is written over what it passed. */
	atomic_thread_fence(memory_order_release);
}

/* Room for n bytes at the head, where the returned position starts. */
static uint64_t
make_room(struct l2 *l, uint64_t n)
{
	struct shared *sh = l->sh;
	uint64_t p = sh->head, rest = sh->ring_size - p % sh->ring_size;
	struct block *b;

	if (rest < n) {
		reserve(l, p + rest);
		if (rest >= sizeof(struct block)) {
			b = at(l, p);
			memset(b, 0, sizeof(*b));
			b->size = (uint32_t)rest;
		}
		sh->head = p += rest;
	}
	reserve(l, p + n);
	return p;
}

/*
 * Copies key's blob out of the map, or returns NULL: not held, past its
 * stale end (dropped then), stale and not wanted, or written over while
 * it was copied. Takes and gives back the lock.
 */
static unsigned char *
copy_blob(struct l2 *l, const char *key, int64_t now_ms, int stale_ok,
    size_t *lenp, uint32_t *readsp)
{
	struct shared *sh = l->sh;
	struct cache_key_hash kh;
	struct block *b;
	uint64_t p;
	unsigned char *buf;
	const unsigned char *src;

	cache_key_hash(key, &kh);
	if (lock(l, 0) == -1)
		return NULL;
	if ((p = find(l, key, &kh)) == 0) {
		unlock(l);
		return NULL;
	}
	b = at(l, --p);
	if (b->stale_until_ms <= now_ms) {
		unlink_block(l, p);
		count(&sh->drops);
		unlock(l);
		return NULL;
	}
	if (b->fresh_until_ms <= now_ms && !stale_ok) {
		unlock(l);	/* kept for those who take it stale */
		return NULL;
	}
	*lenp = b->blob_len;
	if (b->reads < UINT32_MAX)
		b->reads++;
	if (readsp != NULL)
		*readsp = b->reads;
	src = blob_of(b);
	unlock(l);

	if ((buf = malloc(*lenp)) == NULL)
		return NULL;
	memcpy(buf, src, *lenp);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&sh->tail, memory_order_relaxed) > p) {
		free(buf);	/* written over while it was copied */
		return NULL;
	}
	return buf;
}

struct cache_entry *
l2_get(struct l2 *l, const char *key, int64_t now_ms, int stale_ok,
    uint32_t *readsp)
{
	struct cache_entry *e;
	unsigned char *buf;
	size_t blob_len;
	char err[64];
	enum entry_state st;

	if (!enabled(l))
		return NULL;
	if ((buf = copy_blob(l, key, now_ms, stale_ok, &blob_len, readsp)) ==
	    NULL)
		goto miss;
	if ((e = entry_decode_take(buf, blob_len, err, sizeof(err))) == NULL) {
		free(buf);
		goto miss;
	}
	if ((st = entry_state(e, now_ms)) == ENTRY_EXPIRED ||
	    (st == ENTRY_STALE && !stale_ok)) {
		entry_unref(&e);
		goto miss;
	}
	count(&l->sh->hits);
	return e;
miss:
	count(&l->sh->misses);
	return NULL;
}

/* Drops key's own copy (not its variants'), if any. Locked. */
static void
drop_exact(struct l2 *l, const char *key, const struct cache_key_hash *kh)
{
	uint64_t p;

	if ((p = find(l, key, kh)) != 0) {
		unlink_block(l, p - 1);
		count(&l->sh->drops);
	}
}

/* Whether key's copy of this very generation is held already: 1 or 0,
 * -1 when the lock could not be had. */
static int
held_already(struct l2 *l, const char *key, const struct cache_key_hash *kh,
    const struct cache_entry *e)
{
	uint64_t p;
	int held;

	if (lock(l, 0) == -1)
		return -1;
	p = find(l, key, kh);
	held = p != 0 && memcmp(blob_of(at(l, p - 1)), e->gen,
	    ENTRY_GEN_LEN) == 0;
	unlock(l);
	return held;
}

/* Writes enc's blob as key's block of n bytes at the head. Locked. */
static void
write_block(struct l2 *l, const char *key, const struct cache_key_hash *kh,
    const struct cache_entry *e, struct evbuffer *enc, uint64_t n)
{
	struct shared *sh = l->sh;
	size_t blob_len = evbuffer_get_length(enc);
	struct block *b;
	uint64_t p;

	p = make_room(l, n);
	b = at(l, p);
	b->base_hash = kh->base_hash;
	b->fresh_until_ms = e->fresh_until_ms;
	b->stale_until_ms = e->stale_until_ms;
	b->size = (uint32_t)n;
	b->key_len = (uint32_t)kh->len;
	b->blob_len = (uint32_t)blob_len;
	memcpy(b->key, key, kh->len + 1);
	evbuffer_copyout(enc, blob_of(b), blob_len);
	b->next = *chain_of(l, kh->base_hash);
	*chain_of(l, kh->base_hash) = p + 1;
	b->live = 1;
	b->reads = 0;
	sh->head = p + n;
	atomic_fetch_add(&sh->bytes, (int64_t)n);
	atomic_fetch_add(&sh->entries, 1);
	count(&sh->stores);
}

int
l2_put(struct l2 *l, const char *key, const struct cache_entry *e,
    int64_t now_ms)
{
	struct evbuffer *enc;
	struct cache_key_hash kh;
	uint64_t n;
	int held;

	if (!enabled(l) || e->stale_until_ms <= now_ms)
		return 0;
	cache_key_hash(key, &kh);
	if ((held = held_already(l, key, &kh, e)) != 0)
		return held == 1;
	if ((enc = evbuffer_new()) == NULL)
		return 0;
	if (entry_encode(e, enc) == -1) {
		evbuffer_free(enc);
		return 0;
	}
	n = align_up(sizeof(struct block) + kh.len + 1 +
	    evbuffer_get_length(enc));
	if (lock(l, 0) == -1) {
		evbuffer_free(enc);
		return 0;
	}
	drop_exact(l, key, &kh);
	if ((held = n <= l->sh->max_block))
		write_block(l, key, &kh, e, enc, n);
	unlock(l);
	evbuffer_free(enc);
	return held;
}

void
l2_drop(struct l2 *l, const char *key)
{
	struct cache_key_hash kh;
	uint64_t p, *pp;
	struct block *b;

	if (!enabled(l))
		return;
	cache_key_hash(key, &kh);
	if (lock(l, 1) == -1)
		return;
	for (pp = chain_of(l, kh.base_hash); (p = *pp) != 0; ) {
		b = at(l, p - 1);
		if (b->base_hash == kh.base_hash &&
		    cache_key_covers(key, kh.len, b->key, b->key_len)) {
			unlink_block(l, p - 1);	/* *pp is b->next now */
			count(&l->sh->drops);
		} else
			pp = &b->next;
	}
	unlock(l);
}

void
l2_drop_prefix(struct l2 *l, const char *prefix)
{
	size_t len = strlen(prefix);
	uint64_t t;
	struct block *b;

	if (!enabled(l) || lock(l, 1) == -1)
		return;
	if (len == 0) {
		reset(l);
		unlock(l);
		return;
	}
	for (t = atomic_load(&l->sh->tail); t < l->sh->head;
	    t += span_at(l, t)) {
		if (span_at(l, t) < sizeof(struct block))
			continue;
		b = at(l, t);
		if (b->live && b->key_len >= len &&
		    memcmp(b->key, prefix, len) == 0) {
			unlink_block(l, t);
			count(&l->sh->drops);
		}
	}
	unlock(l);
}

void
l2_counters(const struct l2 *l, struct l2_counters *out)
{
	const struct shared *sh;

	memset(out, 0, sizeof(*out));
	if (!enabled(l))
		return;
	sh = l->sh;
	out->hits = atomic_load_explicit(&sh->hits, memory_order_relaxed);
	out->misses = atomic_load_explicit(&sh->misses, memory_order_relaxed);
	out->stores = atomic_load_explicit(&sh->stores, memory_order_relaxed);
	out->evictions = atomic_load_explicit(&sh->evictions,
	    memory_order_relaxed);
	out->drops = atomic_load_explicit(&sh->drops, memory_order_relaxed);
	out->resets = atomic_load_explicit(&sh->resets, memory_order_relaxed);
	out->lock_busy = atomic_load_explicit(&sh->lock_busy,
	    memory_order_relaxed);
	out->bytes = atomic_load_explicit(&sh->bytes, memory_order_relaxed);
	out->entries = atomic_load_explicit(&sh->entries,
	    memory_order_relaxed);
	out->max_bytes = sh->max_bytes;
}

void
l2_hold_lock(struct l2 *l)
{
	if (enabled(l))
		(void)lock(l, 0);
}

void
l2_unhold_lock(struct l2 *l)
{
	if (enabled(l))
		unlock(l);
}
