/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HOLD_H
#define PROXY_PROXY_HOLD_H

/*
 * struct hold: how long a flight's waiters stay with the lock's holder.
 * While another process fetches the key (its lock held, and renewed), the
 * waiters wait for its store; past the route's lock_wait they are
 * answered without a fetch of their own (stale, or 504). lock_wait 0, the
 * default, waits as long as the holder's fetch may take (fetch_max_ms:
 * the upstream timeout, and queue_timeout with an origin budget), plus
 * lock_ttl for a dead holder's lock to expire and lock_poll for one
 * waiter to take it over, counted again from each new holder.
 */

#include <stdint.h>

#include <event2/event.h>

#include "common/util.h"

struct conf_route;

typedef void hold_cb(void *arg);

struct hold {
	struct event	*timer;		/* the budget */
	hold_cb		*cb;		/* runs once it has run out */
	void		*arg;
	char		 holder[UTIL_TOKEN_HEX + 1];	/* waited for, or "" */
	int		 started;	/* the budget runs */
	int		 expired;	/* ... and has run out */
};

/* 0, or -1 on no memory. */
int	hold_init(struct hold *h, struct event_base *base, hold_cb *cb,
	    void *arg);
void	hold_free(struct hold *h);
/* The key's lock was found held by holder (its token; "" if unknown):
 * starts the budget, or (lock_wait 0) starts it again for a new holder. */
void	hold_busy(struct hold *h, const struct conf_route *rt,
	    int64_t fetch_max_ms, const char *holder);
/* How long the waiters of rt wait for one holder. */
int64_t	hold_budget_ms(const struct conf_route *rt,
	    int64_t fetch_max_ms);

#endif
