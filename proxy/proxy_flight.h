/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_FLIGHT_H
#define PROXY_PROXY_FLIGHT_H

/*
 * struct flight: every request of this process for one key that has no
 * answer yet; one Redis round trip per key per process, not per request.
 * A request joins with a struct waiter; the flight answers it once through
 * the waiter's ops (an answer, "pass", or "go to your variant"), or
 * streams the response to it (proxy_stream.h).
 */

#include <stdint.h>

#include "proxy/proxy_flow.h"

struct cache_entry;
struct conf;
struct conf_route;
struct proxy;

/* w joins the flight for key, starting one if there is none; the flight
 * may answer w before this returns. 0, or -1 on no memory. */
int	flight_join(struct proxy *px, struct waiter *w, const char *key,
	    const char *uri, int route, const struct conf_route *rt,
	    int early_due);
/* w leaves the flight it waits in, if any, unanswered. */
void	flight_leave(struct waiter *w);
/* A sibling's request (w->peer) joins the flight of key if that flight's
 * fetch runs here and may still stream to it from the first byte: 0, or
 * -1 (nothing to stream: w is in no flight). */
int	flight_attach_peer(struct proxy *px, struct waiter *w, const char *key);
/* cache_new()'s fill callback: key was stored (e: the entry, when it came
 * along), or NULL after a resubscription, when anything may have been. */
void	flight_on_fill(const char *key, struct cache_entry *e, void *arg);
/* Past the stop deadline: a flight that waits (for a lookup, a fill or a
 * sibling, with no refresh of its own running) answers 503; one whose
 * refresh runs answers when the refresh, given up, reports. */
void	flight_abandon_waiting(struct proxy *px);
/* A reload: each counts under the route of its prefix, if any. */
void	flight_remap(struct proxy *px, const struct conf *new);
/* Every flight answers 503 now; its refresh goes on alone. */
void	flight_shutdown_all(struct proxy *px);

#endif
