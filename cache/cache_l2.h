/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_L2_H
#define CACHE_CACHE_L2_H

/*
 * The shared near cache ("L2"): fresh entries kept in memory that every
 * worker of one instance shares, behind each worker's own near cache
 * (cache_l1.h) and in front of Redis. It is mapped once, before the
 * workers are forked, so an instance holds one copy of an entry however
 * many workers serve it, and an entry one worker read from Redis or
 * fetched answers the others without a round trip.
 *
 * It keeps entries in their encoded form (cache_entry.h) in a ring,
 * oldest out first, bounded by its byte budget. A get copies the entry
 * out and decodes it, so what it returns is the caller's alone: nothing
 * a caller holds points into the shared memory, and a worker that dies
 * holds nothing of it. Only the index and writes take the lock (a robust
 * process-shared mutex: if its holder dies, the next taker empties the
 * cache and goes on); a copy is checked afterwards against the ring's
 * tail, and one overwritten meanwhile is a miss. Nobody waits for the
 * lock more than a millisecond, so a worker that stalls holding it does
 * not stall the others: a get or a put that cannot take it does without
 * the cache (its process then skips it a moment), and a drop that cannot
 * leaves the cache for the next taker to empty first.
 *
 * Keys are cache keys; a variant of key "K" is "K\nID", and dropping K
 * drops its variants.
 */

#include <stdint.h>

#include "cache/cache_entry.h"

struct l2;

/* Shared by the workers: what every worker sees. */
struct l2_counters {
	uint64_t	hits;		/* l2_get returned an entry */
	uint64_t	misses;		/* l2_get returned NULL */
	uint64_t	stores;		/* l2_put kept an entry */
	uint64_t	evictions;	/* entries pushed out by the byte bound */
	uint64_t	drops;		/* no longer fresh, purged or replaced */
	uint64_t	resets;		/* emptied after a worker died holding
					 * the lock */
	uint64_t	lock_busy;	/* gets, puts and drops that found the
					 * lock held too long by another */
	int64_t		bytes;		/* of the ring in use by live entries */
	int64_t		entries;	/* entries held */
	int64_t		max_bytes;	/* its budget */
};

/* A shared near cache of max_bytes (index included), mapped shared and
 * anonymous: call it before forking the workers. 0 (or less) disables
 * it, as does NULL for l in every call below. NULL with a reason in err
 * when it cannot be mapped. */
struct l2	*l2_new(int64_t max_bytes, char *err, size_t errlen);
/* Unmaps it (in the process that calls it). Sets *lp to NULL. */
void		 l2_free(struct l2 **lp);

/* A new entry decoded from key's copy if that is present and fresh at
 * now_ms, or stale and stale_ok, with in *readsp (unless NULL) how many
 * times, this one too, any worker has had the copy; else NULL. A present copy past its
 * stale window is dropped; a stale one stays for the callers that take it
 * stale. */
struct cache_entry *l2_get(struct l2 *l, const char *key, int64_t now_ms,
    int stale_ok, uint32_t *readsp);
/* Keeps a copy of e, fresh or stale at now_ms, under key, replacing any other
 * copy (one of the same generation is kept as it is). An entry larger
 * than an eighth of the budget is not kept (and an older copy goes).
 * Without memory, or the lock, it keeps nothing. 1 if a copy of e is
 * held, else 0. */
int		 l2_put(struct l2 *l, const char *key,
		    const struct cache_entry *e, int64_t now_ms);
/* Drops key and every variant of it ("key\n..."). */
void		 l2_drop(struct l2 *l, const char *key);
/* Drops every key starting with prefix: "" empties it. Walks every entry:
 * for purges, not for the request path. */
void		 l2_drop_prefix(struct l2 *l, const char *prefix);
/* Zeroes with l NULL. */
void		 l2_counters(const struct l2 *l, struct l2_counters *out);
/* For tests: takes the lock and keeps it, as a worker that dies (or
 * stalls) while changing the cache would; l2_unhold_lock lets it go. */
void		 l2_hold_lock(struct l2 *l);
void		 l2_unhold_lock(struct l2 *l);

#endif
