/* SPDX-License-Identifier: MIT */
/*
 * The origin budget's own life (see proxy_budget.c for a ticket's): made
 * and freed with its pool, its timers (the waiting tickets' re-check, the
 * hello that says the instance is alive), the fleet's news (a slot freed
 * anywhere, how many instances live, the fleet's slots and queue) and the
 * sum of the figures workers publish for their siblings. It asks
 * proxy_budget.c's tickets to ask again; nothing there calls back here.
 */

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_lease.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_budget_int.h"
#include "proxy/proxy_share.h"

/* ---- the worker's timers and the fleet's news ----------------------- */

/* Lost notifications, expired leases of dead instances, the tickets'
 * places in Redis: every waiting ticket asks again now and then; while
 * Redis is down, the best one looks at the local share more often. */
static void
on_recheck(evutil_socket_t fd, short what, void *arg)
{
	struct budget *b = arg;
	struct budget_ticket *t, *next;
	int64_t now = util_mono_us();

	assert(b->magic == BUDGET_MAGIC);
	if (now >= b->refresh_due_us) {
		b->refresh_due_us = now + lease_ms(b) / RECHECK_DIVISOR * 1000;
		for (t = TAILQ_FIRST(&b->queue); t != NULL; t = next) {
			next = TAILQ_NEXT(t, link);
			ticket_ask(t);		/* may be granted: off the queue */
		}
	} else {
		budget_pump(b);
	}
	budget_recheck_arm(b);
}

/* A slot was freed in the fleet, in one of the pools: each asks. */
static void
on_freed(void *arg)
{
	struct budget *b = arg, *o, *next;

	assert(b->magic == BUDGET_MAGIC && b->main == b);
	budget_pump(b);
	for (o = LIST_FIRST(&b->others); o != NULL; o = next) {
		next = LIST_NEXT(o, other);
		budget_pump(o);
	}
}

/* Does any pool have a budget? */
static int
any_budget(const struct budget *b)
{
	const struct budget *o;

	if (enabled(b))
		return 1;
	LIST_FOREACH(o, &b->others, other)
		if (enabled(o))
			return 1;
	return 0;
}

static void
on_hello(enum lease_result r, const struct lease_figures *f, void *arg)
{
	struct budget *b = arg;

	assert(b->magic == BUDGET_MAGIC);
	b->hello_op = NULL;
	if (r != LEASE_GRANTED)
		return;
	if (f->instances > 0)
		b->instances = f->instances;
	b->fleet.held = f->held;
	b->fleet.queued = f->queued;
	b->fleet_ms = util_now_ms();
}

/* Says this instance is alive, so that each knows its local share; and
 * listens for freed slots while a budget is set. */
static void
on_hello_tick(evutil_socket_t fd, short what, void *arg)
{
	struct budget *b = arg;
	struct proxy *px = b->px;

	assert(b->magic == BUDGET_MAGIC);
	timer_arm(b->hello_ev, HELLO_MS);
	if (!any_budget(b)) {
		if (b->listening)
			lease_on_freed(px->cache, NULL, NULL);
		b->listening = 0;
		return;
	}
	if (!b->listening)
		lease_on_freed(px->cache, on_freed, b);
	b->listening = 1;
	if (b->hello_op == NULL)
		b->hello_op = lease_hello(px->cache, b->instance,
		    HELLO_MS * HELLO_MISSES, on_hello, b);
}

struct budget *
budget_new(struct proxy *px, struct budget *main, const struct conf_pool *cp)
{
	struct budget *b;
	char host[HOST_NAME_MAX + 1] = "";

	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->magic = BUDGET_MAGIC;
	b->px = px;
	b->cp = cp;
	b->main = main != NULL ? main : b;
	b->fleet.held = b->fleet.queued = -1;
	TAILQ_INIT(&b->queue);
	LIST_INIT(&b->others);
	b->recheck_ev = evtimer_new(px->base, on_recheck, b);
	if (b->recheck_ev == NULL)
		goto fail;
	if (main != NULL) {
		LIST_INSERT_HEAD(&main->others, b, other);
		return b;
	}
	share_forget(&px->slots[px->slot].budget);	/* a dead predecessor's */
	(void)gethostname(host, sizeof(host) - 1);
	/* The workers of one instance are one instance. */
	snprintf(b->instance, sizeof(b->instance), "%s:%d:%d", host,
	    (int)(px->nslots > 1 ? getppid() : getpid()), px->conf->listen_port);
	if ((b->hello_ev = evtimer_new(px->base, on_hello_tick, b)) == NULL)
		goto fail;
	on_hello_tick(-1, 0, b);
	return b;
fail:
	if (b->recheck_ev != NULL)
		event_free(b->recheck_ev);
	free(b);
	return NULL;
}

void
budget_free(struct budget **bp)
{
	struct budget *b = *bp;
	struct proxy *px;

	if (b == NULL)
		return;
	*bp = NULL;
	assert(b->magic == BUDGET_MAGIC);
	assert(b->nqueued == 0 && b->nheld == 0 && LIST_EMPTY(&b->others));
	px = b->px;
	if (b->main != b)
		LIST_REMOVE(b, other);
	cache_op_cancel(&b->hello_op);
	if (b->listening && px->cache != NULL)
		lease_on_freed(px->cache, NULL, NULL);
	event_free(b->recheck_ev);
	if (b->hello_ev != NULL)
		event_free(b->hello_ev);
	b->magic = 0;
	free(b);
}

void
budget_on_counts(struct budget *b, void (*fn)(void *), void *arg)
{
	b->on_counts = fn;
	b->counts_arg = arg;
}

int
budget_idle(const struct budget *b)
{
	return b->nqueued == 0 && b->nheld == 0 && b->releasing == 0;
}

/* ---- figures -------------------------------------------------------- */

int
budget_pending(const struct proxy *px)
{
	const struct budget *b = px->budget, *o;
	int n;

	if (b == NULL)
		return 0;
	n = b->releasing;
	LIST_FOREACH(o, &b->others, other)
		n += o->releasing;
	return n;
}

void
budget_gauges_add(struct budget_gauges *dst, const struct budget_gauges *src)
{
	dst->held += src->held;
	dst->queued += src->queued;
	dst->oldest_ms = MAX(dst->oldest_ms, src->oldest_ms);
	dst->local_held += src->local_held;
	dst->share = MAX(dst->share, src->share);
	dst->fleet_held = MAX(dst->fleet_held, src->fleet_held);
	dst->fleet_queued = MAX(dst->fleet_queued, src->fleet_queued);
	/* The fewest any worker counts (-1: one has heard none yet), so
	 * that a worker lagging behind its siblings shows; 0 before the
	 * first worker is added. */
	if (dst->instances == 0)
		dst->instances = src->instances;
	else if (dst->instances < 0 || src->instances < 0)
		dst->instances = -1;
	else
		dst->instances = MIN(dst->instances, src->instances);
}

void
budget_forget(struct budget_slot *bs)
{
	share_forget(bs);
}
