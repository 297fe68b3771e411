/* SPDX-License-Identifier: MIT */
/*
 * The near caches, asked as one: the worker's own (L1), then the one its
 * instance's workers share (L2). An entry found in L2 is offered to L1,
 * which keeps it if admission lets it in. Calls cache_l1.c and cache_l2.c
 * only.
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

struct cache_entry *
near_get(struct proxy *px, const char *key, int64_t now_ms, int stale_ok)
{
	struct cache_entry *e;

	if ((e = l1_get(px->l1, key, now_ms, stale_ok)) != NULL)
		return e;
	if ((e = l2_get(px->l2, key, now_ms, stale_ok)) != NULL)
		l1_put(px->l1, key, e);
	return e;
}

void
near_put(struct proxy *px, const char *key, struct cache_entry *e)
{
	l1_put(px->l1, key, e);
	l2_put(px->l2, key, e, util_now_ms());
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
