/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_PROBE_H
#define PROXY_PROXY_PROBE_H

/*
 * Probes on the fill path, each a histogram in the route's figures (and
 * the total): fill_wake, from the fill notification that woke a flight of
 * waiters to the answer handed to its first request, and rush, the time
 * the flight took to hand its answer to all its requests. (The message's
 * own trip, publish to receipt, is cache/'s redis.fill_delay.)
 */

#include "proxy/proxy.h"
#include "proxy/proxy_waitlist.h"

/* waitlist_rush(list, v, ..., lead_gone) with the variant ids of route
 * rt's keying (proxy_vary.h), timed into px's figures for route. */
void	probe_rush(struct proxy *px, int route, const struct conf_route *rt,
	    struct waiters *list, const struct verdict *v, int lead_gone);

#endif
