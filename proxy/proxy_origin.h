/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_ORIGIN_H
#define PROXY_PROXY_ORIGIN_H

#include <stdint.h>

#include "proxy/proxy_budget.h"
#include "upstream/upstream.h"

struct conf;
struct conf_route;
struct proxy;

/*
 * A fetch from the origin through its pool's budget (proxy_budget.h), with
 * upstream_fetch()'s face: the request goes only once it holds an origin
 * slot, and gives the slot back as soon as its response has ended. With
 * no slot within queue_timeout it ends unsent: its callback gets a
 * response whose result is UPSTREAM_NOT_SENT. Without a budget
 * (max_requests and max_requests_per_server 0) it is upstream_fetch()
 * itself, to a server of its pool. It counts the fetches
 * it sends (upstream_fetches).
 */
struct origin_fetch;

/* What the fetch is, for its place in the budget's queue, and where it
 * goes. */
/* Asked as a fetch's first try is about to go, its slot granted: 1 lets
 * it go, 0 holds it back (answered UPSTREAM_NOT_SENT, nothing sent). */
typedef int origin_may_send_cb(void *arg);

struct origin_args {
	enum budget_class	 cls;
	int			 route;		/* for counters, or -1 */
	budget_weight_cb	*weight;	/* NULL: 1 */
	void			*weight_arg;
	origin_may_send_cb	*may_send;	/* NULL: it always may */
	void			*may_send_arg;
	const char		*pool;		/* its [upstream NAME] ("" or
						 * NULL: the default) */
	const char		*target;	/* path and query, after the
						 * server's base URL */
};

/*
 * Starts a fetch of ur through a server of its pool (proxy_pool.h): ur's
 * url is ignored (the server's base URL and oa's target make it), its
 * timeouts are the pool's. It copies the headers; the body, if any, must
 * stay valid until the fetch ends or is cancelled. A fetch that fails to
 * connect, or (ur.replayable) is refused, reset or timed out before any
 * byte of its response, is sent once more to another server of the pool
 * within the pool's timeout, under the same slot (with
 * max_requests_per_server, once it has a slot on that server, waiting at
 * most queue_timeout); nothing else is ever sent twice. It ends in exactly one call of cb, never from inside this
 * call, unless cancelled. NULL if it could not be started (out of
 * memory).
 */
struct origin_fetch *origin_fetch(struct proxy *px, const struct origin_args *oa,
	    const struct upstream_request *ur, upstream_done_cb *cb, void *arg);
/* Goes on with a fetch its on_data paused. */
void	origin_resume(struct origin_fetch *f);
/* Has any try of it gone to a server? (Before: it waits for a slot.) */
int	origin_sent(const struct origin_fetch *f);
/* Stops it, sent or waiting; cb will not run. Sets *fp to NULL. */
void	origin_cancel(struct origin_fetch **fp);
/* The longest a fetch of route rt (NULL: the default pool's) may take
 * from its ask to its end: its pool's timeout, after queue_timeout with a
 * budget (a lock's waiters wait that long for its holder). */
int64_t	origin_fetch_max_ms(const struct conf *c, const struct conf_route *rt);

#endif
