/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_L1_H
#define CACHE_CACHE_L1_H

/*
 * The near cache ("L1"): entries this process used recently, kept in
 * memory and bounded by a byte budget, least recently used out first.
 * An entry still fresh by its own stored times is served from here
 * without a Redis round trip; once it is not fresh it is dropped and the
 * caller asks Redis as usual. A newer entry seen in Redis, or a purge,
 * replaces or drops the copy here.
 *
 * Keys are cache keys; a variant of key "K" is "K\nID". Each kept entry
 * holds one reference (entry_ref) that the L1 drops when the entry leaves.
 * An entry is charged its key length, body length, header names and
 * values, and a fixed per-entry overhead.
 *
 * Single-threaded: one L1 per process, used from its event loop.
 */

#include <stdint.h>

#include "cache/cache_entry.h"

struct l1;

struct l1_counters {
	uint64_t	hits;		/* l1_get returned an entry */
	uint64_t	misses;		/* l1_get returned NULL */
	uint64_t	stores;		/* l1_put kept a new or newer entry */
	uint64_t	evictions;	/* entries pushed out by the byte bound */
	uint64_t	rejected;	/* new keys not let in: looked up no
					 * more often than the entry they would
					 * have pushed out */
	uint64_t	drops;		/* no longer fresh, purged, or replaced
					 * by an entry too large to keep */
	int64_t		bytes;		/* charged for the entries held */
	int64_t		entries;	/* entries held */
};

/* A near cache of at most max_bytes. max_bytes 0 (or less) disables it:
 * every call is then a cheap no-op or miss and the counters stay zero.
 * NULL on no memory. */
struct l1	*l1_new(int64_t max_bytes);
/* Drops every reference it holds and frees it. Sets *lp to NULL. */
void		 l1_free(struct l1 **lp);

/*
 * A new reference to key's entry if it is present and fresh at now_ms
 * (entry_state() == ENTRY_FRESH), or stale and stale_ok, counted as a
 * hit; otherwise NULL, a miss. A present entry past its stale window
 * (ENTRY_EXPIRED) is dropped; a stale one stays for the callers that
 * take it stale. Never allocates.
 */
struct cache_entry *l1_get(struct l1 *l, const char *key, int64_t now_ms,
    int stale_ok);
/*
 * Keeps a reference to e under key, replacing any older copy. If the copy
 * held is e itself or has the same (non-empty) generation, it only becomes
 * the most recently used. An entry charged more than max_bytes / 8 is not
 * kept (and any older copy is dropped). A key not held yet that does not
 * fit without evicting is let in only if l1_get() was asked for it more
 * often, of late, than for the least recently used entry (admission, see
 * cache_l1.c); else it is counted in rejected and not kept. Evicts least
 * recently used entries until the total fits in max_bytes. Without memory
 * it keeps nothing.
 */
void		 l1_put(struct l1 *l, const char *key, struct cache_entry *e);
/* l1_put(), only if a copy of key is held: 1 then, else 0 (and nothing
 * is kept). */
int		 l1_replace(struct l1 *l, const char *key, struct cache_entry *e);
/* Drops key and every variant of it ("key\n..."). */
void		 l1_drop(struct l1 *l, const char *key);
/* Drops every key starting with prefix (and so their variants). Walks
 * every entry: for admin purges, not for the request path. */
void		 l1_drop_prefix(struct l1 *l, const char *prefix);
const struct l1_counters *l1_counters(const struct l1 *l);
/*
 * The near cache's own mark on the copy of key it holds: with within_ms
 * 0, notes that it started a refresh at now_ms (monotonic); with
 * within_ms, says whether it did less than within_ms ago. A new copy of
 * the key starts unmarked. 0 for a key not held.
 */
int		 l1_refresh_asked(struct l1 *l, const char *key, int64_t now_ms,
		    int64_t within_ms);

#endif
