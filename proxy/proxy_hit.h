/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HIT_H
#define PROXY_PROXY_HIT_H

/*
 * A request answered from the near caches (proxy_near.h) without a
 * Redis round trip: with a fresh copy, or with a stale one (in its
 * stale_while_revalidate window) while the key's refresh runs, started
 * here in the background if this process has none running (at most one
 * start per lock_poll for one copy: another process's refresh, whose
 * fill replaces the copy here, is not asked for again on every request).
 * A stale copy's refresh that cannot reach Redis drops it
 * (proxy_refresh.c), so the next request takes the usual path.
 */

#include "conf/conf.h"

struct cache_entry;
struct proxy;
struct waiter;

enum hit_kind {
	HIT_NONE,	/* not held: the usual path */
	HIT_EARLY,	/* fresh, but its early refresh is due: the usual path */
	HIT_FRESH,
	HIT_STALE,	/* stale; its refresh runs */
};

/* The answer for w's key (its route rt, index route, its target uri): on
 * HIT_FRESH and HIT_STALE *ep takes a reference to the copy. */
enum hit_kind hit_near(struct proxy *px, struct waiter *w, const char *key,
	    const char *uri, int route, const struct conf_route *rt,
	    struct cache_entry **ep);

#endif
