/* SPDX-License-Identifier: MIT */
/*
 * The near caches, asked as one: the worker's own (L1), then the one its
 * instance's workers share (L2). A fresh entry is kept in L2 alone until
 * its copy there has been read NEAR_L1_READS times (by any worker): each
 * worker's L1 copy is then one worth its memory, and an entry asked for
 * once or twice costs one copy for the instance, not one per worker. A
 * stale entry, one L2 could not keep, and a newer copy of a key L1 holds
 * go to L1 at once. Calls cache_l1.c and cache_l2.c only.
 */

#include <assert.h>


#include "cache/cache_entry.h"
#include "cache/cache_l1.h"
#include "cache/cache_l2.h"
#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_near.h"

#define NEAR_L1_READS	2	/* L2 reads of a fresh copy before L1 keeps it */

struct cache_entry *
near_get(struct proxy *px, const char *key, int64_t now_ms, int stale_ok)
{
	struct cache_entry *e;
	uint32_t reads = 0;

	if ((e = l1_get(px->l1, key, now_ms, stale_ok)) != NULL)
		return e;
	if ((e = l2_get(px->l2, key, now_ms, stale_ok, &reads)) != NULL &&
	    (reads >= NEAR_L1_READS || entry_state(e, now_ms) != ENTRY_FRESH))
		l1_put(px->l1, key, e);
	return e;
}

void
near_put(struct proxy *px, const char *key, struct cache_entry *e)
{
	int64_t now_ms = util_now_ms();

	if (!l2_put(px->l2, key, e, now_ms) ||
	    entry_state(e, now_ms) != ENTRY_FRESH)
		l1_put(px->l1, key, e);
	else
		(void)l1_replace(px->l1, key, e);
}

int
near_refresh_asked(struct proxy *px, const char *key, int64_t within_ms)
{
	return l1_refresh_asked(px->l1, key, util_mono_us() / 1000, within_ms);
}

void
near_drop(struct proxy *px, const char *key)
{
	l1_drop(px->l1, key);
	l2_drop(px->l2, key);
}

void
near_drop_prefix(struct proxy *px, const char *prefix)
{
	l1_drop_prefix(px->l1, prefix);
	l2_drop_prefix(px->l2, prefix);
}

struct cache_entry *
near_fill(struct proxy *px, const char *key, struct cache_entry *e)
{
	near_drop(px, key);	/* a newer entry is in Redis */
	/* What came along serves only fresh, and only as itself. */
	if (e == NULL || entry_state(e, util_now_ms()) != ENTRY_FRESH ||
	    hl_find(&e->headers, VARY_MARKER) != NULL)
		return NULL;
	near_put(px, key, e);
	return e;
}

void
near_on_purge(const char *key, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	if (key != NULL)
		near_drop(px, key);
	else
		near_drop_prefix(px, "");
}
