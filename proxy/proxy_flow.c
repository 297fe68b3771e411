/*
 * The life of a request, as three small state machines, each with one
 * driver function that runs its steps top to bottom, in a file of its
 * own. Async callbacks only copy their result into the object and
 * re-enter its driver.
 *
 *	proxy_req.c	struct req: one client request
 *	proxy_flight.c	struct flight: every request of this process for
 *			one key, one Redis round trip for them all
 *	proxy_refresh.c	struct refresh: one fetch that owns a lock token
 *			and a curl handle and never points at a client
 *
 * A req joins a flight; a flight starts refreshes and hands each req its
 * answer; a refresh reports to its flight. What spans all three (a
 * reload, a drain past its deadline, shutdown) is here.
 */

#include "cache/cache_l1.h"
#include "cache/cache_l2.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"

/*
 * The near caches: the worker's own (L1), then the one its instance's
 * workers share (L2). An entry found in L2 is offered to L1, which keeps
 * it if admission lets it in.
 */
struct cache_entry *
near_get(struct proxy *px, const char *key, int64_t now_ms)
{
	struct cache_entry *e;

	if ((e = l1_get(px->l1, key, now_ms)) != NULL)
		return e;
	if ((e = l2_get(px->l2, key, now_ms)) != NULL)
		l1_put(px->l1, key, e);
	return e;
}

/* e is fresh: both keep it. */
void
near_put(struct proxy *px, const char *key, struct cache_entry *e)
{
	l1_put(px->l1, key, e);
	l2_put(px->l2, key, e, util_now_ms());
}

/* Drops key and its variants from both. */
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

/*
 * Past the stop deadline: every fetch that holds a lock gives it up and
 * releases the lock (so the fleet does not wait out lock_ttl), and every
 * client still waiting gets a 503. Releases finish asynchronously.
 */
void
flow_abandon(struct proxy *px)
{
	px->abandoned = 1;
	refresh_abandon_all();
	flight_abandon_all();
	req_abandon_all();
}

/*
 * A reload replaced old with new: work in progress keeps the settings it
 * began with, but counts under the route of the same prefix, if any.
 */
void
flow_remap_routes(struct proxy *px, const struct conf *old,
    const struct conf *new)
{
	req_remap(old, new);
	flight_remap(new);
	refresh_remap(new);
}

/*
 * Ends everything in progress: every waiting client gets a 503, every
 * refresh gives up its fetch (its lock expires after lock_ttl).
 */
void
flow_shutdown(struct proxy *px)
{
	flight_shutdown_all();
	req_shutdown_all();
	refresh_shutdown_all();
}
