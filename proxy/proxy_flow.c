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

#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"

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
