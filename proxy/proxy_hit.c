/* SPDX-License-Identifier: MIT */
/*
 * Answers from the near caches (proxy_hit.h). A stale copy starts the
 * key's refresh as a flight's stale lookup does (proxy_flight.c), with
 * the request's own shared headers and body: a background refresh that
 * revalidates the copy and never points back at the request.
 *
 * Calls proxy_near.c, proxy_refresh.c, proxy_key.c. Called by
 * proxy_req.c.
 */

#include <assert.h>
#include <string.h>
#include <sys/queue.h>


#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hit.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_refresh.h"

/* Starts the refresh of key's stale copy e in the background, unless
 * one runs here or this copy started one within lock_poll. */
static void
refresh_stale(struct proxy *px, struct waiter *w, const char *key,
    const char *uri, int route, const struct conf_route *rt,
    struct cache_entry *e)
{
	struct hlist headers;
	struct fetch_kept fetch;
	struct refresh_args a = {
		.mode = RF_LOCKED,
		.key = key,
		.uri = uri,
		.route = route,
		.rt = rt,
		.headers = &headers,
		.fetch = &fetch,
		.seen_gen = e->gen,
		.waited = "",
		.base = e,
		.stale_copy = 1,
	};

	if (refresh_running(px, key) ||
	    near_refresh_asked(px, key, rt->lock_poll_ms))
		return;
	hl_init(&headers);
	if (fetch_keep(&fetch, w->spec) == -1)
		return;
	a.authorized = fetch_shared_headers(w, rt, &headers);
	(void)refresh_start(px, &a, NULL, NULL);	/* it copies a */
	hl_free(&headers);
	fetch_drop(&fetch);
}

enum hit_kind
hit_near(struct proxy *px, struct waiter *w, const char *key,
    const char *uri, int route, const struct conf_route *rt,
    struct cache_entry **ep)
{
	int64_t now_ms = util_now_ms();
	struct cache_entry *e;

	assert(rt != NULL);	/* keys are made for routes only */
	*ep = NULL;
	if ((e = near_get(px, key, now_ms, 1)) == NULL)
		return HIT_NONE;
	if (entry_state(e, now_ms) == ENTRY_STALE) {
		refresh_stale(px, w, key, uri, route, rt, e);
		*ep = e;
		return HIT_STALE;
	}
	if (refresh_early_due(rt, e)) {
		/* Due: the flight refreshes without drawing again. */
		entry_unref(&e);
		return HIT_EARLY;
	}
	*ep = e;
	return HIT_FRESH;
}
