/* SPDX-License-Identifier: MIT */
/*
 * How long a flight's waiters stay with the lock's holder (lock_wait):
 * see proxy_hold.h. Calls libevent only.
 */

#include <stdio.h>
#include <string.h>

#include "conf/conf.h"
#include "proxy/proxy_hold.h"

static void
on_hold_expired(evutil_socket_t fd, short what, void *arg)
{
	struct hold *h = arg;

	h->expired = 1;
	h->cb(h->arg);
}

int
hold_init(struct hold *h, struct event_base *base, hold_cb *cb, void *arg)
{
	memset(h, 0, sizeof(*h));
	h->cb = cb;
	h->arg = arg;
	h->timer = evtimer_new(base, on_hold_expired, h);
	return h->timer != NULL ? 0 : -1;
}

void
hold_free(struct hold *h)
{
	if (h->timer != NULL)
		event_free(h->timer);
	h->timer = NULL;
}

int64_t
hold_budget_ms(const struct conf_route *rt, int64_t fetch_max_ms)
{
	if (rt->lock_wait_ms > 0)
		return rt->lock_wait_ms;
	return fetch_max_ms + rt->lock_ttl_ms + rt->lock_poll_ms;
}

void
hold_busy(struct hold *h, const struct conf_route *rt,
    int64_t fetch_max_ms, const char *holder)
{
	int same = strcmp(h->holder, holder) == 0;
	struct timeval tv;

	snprintf(h->holder, sizeof(h->holder), "%s", holder);
	if (h->expired || (h->started && (same || rt->lock_wait_ms > 0)))
		return;
	h->started = 1;
	tv = util_timeval(hold_budget_ms(rt, fetch_max_ms));
	evtimer_add(h->timer, &tv);
}
