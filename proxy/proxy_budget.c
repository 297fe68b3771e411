/*
 * The origin budget (proxy_budget.h): each worker's queue of requests
 * that wait for an origin slot, the leases its fetches hold, and the
 * local share it falls back to while Redis is unavailable.
 *
 *	ask -> WAITING -> HELD (a Redis lease, renewed; or the local share)
 *	               -> SHED (queue_timeout ran out)
 *
 * A waiting ticket asks Redis when it arrives, when a slot is freed
 * anywhere in the fleet (the freed notification: the best ticket here
 * asks, and the next while slots remain), and on a re-check timer, a
 * quarter lease apart, that keeps its place in the fleet's queue alive and
 * makes up for a notification lost. Redis's acquire script decides
 * between the fleet's tickets. When Redis cannot answer, the best ticket
 * here takes a slot of the local share, if one is free; the workers of an
 * instance count theirs in shared memory, and a waiting worker looks
 * again every LOCAL_POLL_MS.
 *
 * Each pool has its own budget; the main one (the default pool's) says
 * the instance is alive and hears the fleet's freed slots for all of
 * them (its others list).
 *
 * It asks cache/ and reports through the callback its asker gave; it
 * counts into proxy_stats.h.
 */

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_lease.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_stats.h"

#define BUDGET_MAGIC		0x42444754u	/* "BDGT" */
#define TICKET_MAGIC		0x544b4554u	/* "TKET" */
#define RANK_SPAN		INT64_C(1000000)	/* ranks of one class */
#define RENEW_DIVISOR		3	/* a held lease: renewed this often */
#define RECHECK_DIVISOR		4	/* a waiting ticket: asks again */
#define LOCAL_POLL_MS		50	/* Redis down: the share, looked at */
#define HELLO_MS		2000	/* this instance says it is alive */
#define HELLO_MISSES		3	/* ... and is counted this long after */
#define INSTANCE_MAX		(HOST_NAME_MAX + 48)

enum ticket_state {
	T_WAITING,
	T_HELD,
	T_SHED,
};

/* Where a held slot came from. */
enum source {
	FROM_REDIS,		/* a lease, renewed while held */
	FROM_LOCAL,		/* the local share */
	FROM_NOWHERE,		/* max_requests was turned off */
};

struct budget_ticket {
	uint32_t		 magic;
	struct budget		*b;
	enum ticket_state	 state;
	struct budget_args	 a;
	int			 local;		/* HELD from the local share */
	int			 in_redis;	/* Redis may know it: release */
	int			 waited;	/* was told to queue, once */
	int			 lost;		/* its lease ran out */
	char			 token[UTIL_TOKEN_HEX + 1];
	char			 name[LEASE_TICKET_MAX];	/* in the queue */
	struct cache_op		*op;		/* acquire or renew */
	struct event		*timer;		/* deadline, then renewals */
	struct event		*notify;	/* tells its asker, deferred */
	int64_t			 asked_us;
	TAILQ_ENTRY(budget_ticket) link;	/* in b->queue while WAITING */
};

struct budget {
	uint32_t		 magic;
	struct proxy		*px;
	const struct conf_pool	*cp;		/* its pool's settings */
	int			 index;		/* its local share's column */
	struct budget		*main;		/* the default pool's (or itself) */
	LIST_HEAD(, budget)	 others;	/* main: the other pools' */
	LIST_ENTRY(budget)	 other;
	TAILQ_HEAD(, budget_ticket) queue;
	int			 nqueued;
	int			 nheld;
	int			 nlocal;
	int			 releasing;	/* release ops on their way */
	int			 degraded;	/* Redis did not answer last */
	int			 rewake;	/* a slot was freed while the best
						 * ticket's ask was under way */
	int64_t			 refresh_due_us; /* tickets ask again */
	struct event		*recheck_ev;
	struct event		*hello_ev;
	struct cache_op		*hello_op;
	int			 listening;	/* to the freed channel */
	int64_t			 instances;	/* alive, as Redis last said */
	struct lease_figures	 fleet;		/* its last answer */
	char			 instance[INSTANCE_MAX];
};

static void ask(struct budget_ticket *t);
static void pump(struct budget *b);

static int
max_requests(const struct budget *b)
{
	return b->cp->max_requests;
}

static int64_t
lease_ms(const struct budget *b)
{
	return b->cp->slot_lease_ms;
}

static int64_t
queue_timeout_ms(const struct budget *b)
{
	return b->cp->queue_timeout_ms;
}

/* The local share of this instance. */
static int64_t
local_share(const struct budget *b)
{
	const struct conf_pool *c = b->cp;
	int64_t n = b->main->instances > 0 ? b->main->instances : 1;

	if (c->local_share > 0)
		return c->local_share;
	return (c->max_requests + n - 1) / n;
}

/* Lower goes first: the class, then (misses) the most waiters. */
static int64_t
rank(const struct budget_ticket *t)
{
	int64_t w = t->a.weight != NULL ? t->a.weight(t->a.weight_arg) : 1;

	w = MAX(0, MIN(w, RANK_SPAN - 1));
	return (int64_t)t->a.cls * RANK_SPAN + (RANK_SPAN - 1 - w);
}

/* The best waiting ticket here, in the order of the fleet's queue: its
 * rank, then its name (the time it was queued, then its token), so that
 * the fleet's best ticket is the best of the process that holds it. */
static struct budget_ticket *
best(struct budget *b)
{
	struct budget_ticket *t, *top = NULL;
	int64_t r, top_rank = 0;

	TAILQ_FOREACH(t, &b->queue, link) {
		r = rank(t);
		if (top == NULL || r < top_rank ||
		    (r == top_rank && strcmp(t->name, top->name) < 0)) {
			top = t;
			top_rank = r;
		}
	}
	return top;
}

/* ---- the local share ----------------------------------------------- */

static _Atomic int64_t *
my_local(struct budget *b)
{
	return &b->px->slots[b->px->slot].budget.local[b->index];
}

/* One slot of the instance's local share, if one is free. Every worker
 * adds its own first and then counts them all, so that two at once can
 * never both take the last one (both may miss it: they look again). */
static int
take_local(struct budget *b)
{
	int64_t sum = 0;

	atomic_fetch_add(my_local(b), 1);
	for (int i = 0; i < b->px->nslots; i++)
		sum += atomic_load(&b->px->slots[i].budget.local[b->index]);
	if (sum <= local_share(b))
		return 1;
	atomic_fetch_sub(my_local(b), 1);
	return 0;
}

/* ---- a ticket's life ----------------------------------------------- */

static void
recheck_arm(struct budget *b)
{
	int64_t ms = b->degraded ? LOCAL_POLL_MS :
	    lease_ms(b) / RECHECK_DIVISOR;

	if (b->nqueued > 0)
		timer_arm(b->recheck_ev, MAX(ms, 1));
}

static void
dequeue(struct budget_ticket *t)
{
	if (t->state != T_WAITING)
		return;
	TAILQ_REMOVE(&t->b->queue, t, link);
	t->b->nqueued--;
}

static void on_renew_tick(evutil_socket_t fd, short what, void *arg);

static void
grant(struct budget_ticket *t, enum source from)
{
	struct budget *b = t->b;
	struct stats *st = b->px->stats;
	double waited = (double)(util_mono_us() - t->asked_us) / 1e6;
	int local = from == FROM_LOCAL;

	dequeue(t);
	t->state = T_HELD;
	t->local = local;
	b->nheld++;
	b->nlocal += local;
	STAT_INC(st, t->a.route, slot_grants);
	if (t->waited)
		STAT_INC(st, t->a.route, slot_waits);
	if (local)
		STAT_INC(st, t->a.route, slot_local);
	STAT_OBSERVE(st, t->a.route, slot_wait, waited);
	evtimer_del(t->timer);
	if (from == FROM_REDIS) {
		event_assign(t->timer, b->px->base, -1, 0, on_renew_tick, t);
		timer_arm(t->timer, lease_ms(b) / RENEW_DIVISOR);
	}
	event_active(t->notify, 0, 0);
}

/* No slot for t now, and it may not wait (queue_timeout 0), or its
 * queue_timeout ran out. */
static void
shed(struct budget_ticket *t)
{
	dequeue(t);
	t->state = T_SHED;
	evtimer_del(t->timer);
	cache_op_cancel(&t->op);	/* budget_done() releases it in Redis */
	event_active(t->notify, 0, 0);
}

/* Redis could not answer: the local share, if a slot of it is free. */
static void
ask_local(struct budget_ticket *t)
{
	struct budget *b = t->b;

	if (!b->degraded)
		log_warn("origin budget: Redis unavailable; this instance "
		    "allows itself %" PRId64 " origin requests at once",
		    local_share(b));
	b->degraded = 1;
	if (take_local(b))
		grant(t, FROM_LOCAL);
	else if (queue_timeout_ms(b) == 0)
		shed(t);
	else
		recheck_arm(b);
}

static void
on_acquired(enum lease_result r, const struct lease_figures *f, void *arg)
{
	struct budget_ticket *t = arg;
	struct budget *b = t->b;

	assert(t->magic == TICKET_MAGIC && t->state == T_WAITING);
	t->op = NULL;
	if (r == LEASE_ERROR) {
		ask_local(t);
		return;
	}
	b->degraded = 0;
	b->fleet.held = f->held;
	b->fleet.queued = f->queued;
	if (r == LEASE_QUEUED) {
		t->waited = 1;
		if (queue_timeout_ms(b) == 0)
			shed(t);
		/* Its answer may predate a release heard meanwhile. */
		if (b->rewake) {
			b->rewake = 0;
			pump(b);
		}
		return;
	}
	grant(t, FROM_REDIS);
	if (f->held < max_requests(b) || b->rewake) {
		b->rewake = 0;
		pump(b);	/* room for the next one here too */
	}
}

static void
ask(struct budget_ticket *t)
{
	struct budget *b = t->b;
	struct proxy *px = b->px;

	assert(t->state == T_WAITING);
	if (t->op != NULL)
		return;
	if (max_requests(b) == 0) {	/* turned off by a reload */
		grant(t, FROM_NOWHERE);
		return;
	}
	t->op = lease_acquire(px->cache, b->cp->name, t->token, t->name, rank(t),
	    max_requests(b), lease_ms(b), on_acquired, t);
	if (t->op == NULL) {
		ask_local(t);
		return;
	}
	t->in_redis = 1;
}

/* The best ticket here asks; if it is asking already, it asks again
 * once that answer is in. */
static void
pump(struct budget *b)
{
	struct budget_ticket *t = best(b);

	if (t == NULL)
		return;
	if (t->op != NULL)
		b->rewake = 1;
	else
		ask(t);
}

static void
on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct budget_ticket *t = arg;

	assert(t->magic == TICKET_MAGIC && t->state != T_WAITING);
	/* The asker may end the ticket in there: t is not touched after. */
	t->a.cb(t->state == T_HELD ? BUDGET_GRANTED : BUDGET_TIMEOUT, t->a.arg);
}

static void
on_renewed(enum fence_result r, void *arg)
{
	struct budget_ticket *t = arg;

	assert(t->magic == TICKET_MAGIC);
	t->op = NULL;
	if (r == FENCE_LOST && !t->lost) {
		t->lost = 1;
		STAT_INC(t->b->px->stats, t->a.route, slot_lost);
		log_warn("origin budget: a slot's lease ran out during its "
		    "fetch (the fetch goes on)");
	}
}

static void
on_renew_tick(evutil_socket_t fd, short what, void *arg)
{
	struct budget_ticket *t = arg;
	struct budget *b = t->b;

	assert(t->magic == TICKET_MAGIC && t->state == T_HELD);
	if (t->lost)
		return;
	if (t->op == NULL)
		t->op = lease_renew(b->px->cache, b->cp->name, t->token,
		    lease_ms(b), on_renewed, t);
	timer_arm(t->timer, lease_ms(b) / RENEW_DIVISOR);
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct budget_ticket *t = arg;

	assert(t->magic == TICKET_MAGIC && t->state == T_WAITING);
	shed(t);
}

static void
on_released(enum fence_result r, void *arg)
{
	struct budget *b = arg;

	assert(b->magic == BUDGET_MAGIC);
	b->releasing--;
}

/* Redis forgets t: its lease or its place in the queue. */
static void
release(struct budget_ticket *t)
{
	struct budget *b = t->b;

	if (!t->in_redis)
		return;
	if (lease_release(b->px->cache, b->cp->name, t->token, t->name,
	    max_requests(b), on_released, b) != NULL)
		b->releasing++;
}

void
budget_done(struct budget_ticket **tp)
{
	struct budget_ticket *t = *tp;
	struct budget *b;
	int held;

	if (t == NULL)
		return;
	*tp = NULL;
	assert(t->magic == TICKET_MAGIC);
	b = t->b;
	held = t->state == T_HELD;
	dequeue(t);
	cache_op_cancel(&t->op);
	if (held && t->local)
		atomic_fetch_sub(my_local(b), 1);
	if (!held || !t->local)
		release(t);
	b->nheld -= held;
	b->nlocal -= held && t->local;
	event_free(t->timer);
	event_free(t->notify);
	t->magic = 0;
	free(t);
	/* The slot goes to the best ticket of the fleet: if it is here, it
	 * asks at once (its acquire goes after the release). */
	if (held)
		pump(b);
}

struct budget_ticket *
budget_ask(struct budget *b, const struct budget_args *a)
{
	struct proxy *px;
	struct budget_ticket *t;

	if (b == NULL || max_requests(b) == 0)
		return NULL;
	px = b->px;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->magic = TICKET_MAGIC;
	t->b = b;
	t->a = *a;
	t->asked_us = util_mono_us();
	t->timer = evtimer_new(px->base, on_deadline, t);
	t->notify = event_new(px->base, -1, 0, on_notify, t);
	if (t->timer == NULL || t->notify == NULL ||
	    util_random_token(t->token) == -1) {
		if (t->timer != NULL)
			event_free(t->timer);
		if (t->notify != NULL)
			event_free(t->notify);
		free(t);
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%013" PRId64 ":%s", util_now_ms(),
	    t->token);
	TAILQ_INSERT_TAIL(&b->queue, t, link);
	b->nqueued++;
	if (queue_timeout_ms(b) > 0)
		timer_arm(t->timer, queue_timeout_ms(b));
	ask(t);
	if (t->state == T_WAITING)
		recheck_arm(b);
	return t;
}

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
			ask(t);		/* may be granted: off the queue */
		}
	} else {
		pump(b);
	}
	recheck_arm(b);
}

/* A slot was freed in the fleet, in one of the pools: each asks. */
static void
on_freed(void *arg)
{
	struct budget *b = arg, *o, *next;

	assert(b->magic == BUDGET_MAGIC && b->main == b);
	pump(b);
	for (o = LIST_FIRST(&b->others); o != NULL; o = next) {
		next = LIST_NEXT(o, other);
		pump(o);
	}
}

/* Does any pool have a budget? */
static int
any_budget(const struct budget *b)
{
	const struct budget *o;

	if (max_requests(b) > 0)
		return 1;
	LIST_FOREACH(o, &b->others, other)
		if (max_requests(o) > 0)
			return 1;
	return 0;
}

static void
on_hello(enum lease_result r, const struct lease_figures *f, void *arg)
{
	struct budget *b = arg;

	assert(b->magic == BUDGET_MAGIC);
	b->hello_op = NULL;
	if (r == LEASE_GRANTED && f->instances > 0)
		b->instances = f->instances;
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
budget_new(struct proxy *px, struct budget *main, const struct conf_pool *cp,
    int index)
{
	struct budget *b;
	char host[HOST_NAME_MAX + 1] = "";

	assert(index >= 0 && index < BUDGET_POOLS_MAX);
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->magic = BUDGET_MAGIC;
	b->px = px;
	b->cp = cp;
	b->index = index;
	b->main = main != NULL ? main : b;
	b->fleet.held = b->fleet.queued = -1;
	TAILQ_INIT(&b->queue);
	LIST_INIT(&b->others);
	b->recheck_ev = evtimer_new(px->base, on_recheck, b);
	if (b->recheck_ev == NULL)
		goto fail;
	atomic_store(my_local(b), 0);	/* a dead predecessor's are free */
	if (main != NULL) {
		LIST_INSERT_HEAD(&main->others, b, other);
		return b;
	}
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
budget_publish(const struct budget *b, struct budget_gauges *g)
{
	memset(g, 0, sizeof(*g));
	g->fleet_held = g->fleet_queued = g->instances = -1;
	if (b == NULL)
		return;
	g->held = b->nheld;
	g->queued = b->nqueued;
	g->local_held = b->nlocal;
	g->share = max_requests(b) > 0 ? local_share(b) : 0;
	g->fleet_held = b->fleet.held;
	g->fleet_queued = b->fleet.queued;
	g->instances = b->main->instances > 0 ? b->main->instances : -1;
}

void
budget_gauges_add(struct budget_gauges *dst, const struct budget_gauges *src)
{
	dst->held += src->held;
	dst->queued += src->queued;
	dst->local_held += src->local_held;
	dst->share = MAX(dst->share, src->share);
	dst->fleet_held = MAX(dst->fleet_held, src->fleet_held);
	dst->fleet_queued = MAX(dst->fleet_queued, src->fleet_queued);
	dst->instances = MAX(dst->instances, src->instances);
}

void
budget_forget(struct budget_slot *bs)
{
	for (int i = 0; i < BUDGET_POOLS_MAX; i++)
		atomic_store(&bs->local[i], 0);
}
