/*
 * The origin budget (proxy_budget.h): each worker's queue of requests
 * that wait for an origin slot, the leases its fetches hold, and the
 * local share it falls back to while Redis is unavailable.
 *
 *	ask -> WAITING -> HELD (a Redis lease, renewed; or the local share)
 *	               -> SHED (queue_timeout ran out)
 *	HELD -(move: its server failed)-> MOVING -> HELD (another server)
 *	                                         -> SHED (no room in time)
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
 * them (its others list). With max_requests_per_server, each ask names
 * the servers its asker would take, best first (budget_servers_cb), and
 * the slot comes with one on a server; a moving ticket keeps its pool
 * slot and asks only for a server's, ahead of every waiting ticket here.
 *
 * It asks cache/ and reports through the callback its asker gave; it
 * counts into proxy_stats.h. The budget's own life (its timers, the
 * hello, the fleet's news, its figures) is proxy_budget_fleet.c's.
 */

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_lease.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_budget_int.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_share.h"
#include "proxy/proxy_stats.h"

/*
 * Has a client's request (a miss, a pass-through) waited long enough to
 * go before any newer one, whatever their ranks? Age bounds every wait:
 * a burst of misses with many waiters, or of misses at all, cannot keep
 * an older request from its slot past AGE_FIRST_MS (or half its
 * queue_timeout, if less). Refreshes and operators' fetches keep their
 * ranks: a client waits for none of them.
 */
static int
aged(const struct budget_ticket *t)
{
	int64_t bound = MIN(AGE_FIRST_MS, queue_timeout_ms(t->b) / 2);

	return (t->a.cls == BUDGET_MISS || t->a.cls == BUDGET_PASS) &&
	    util_mono_us() - t->asked_us >= bound * 1000;
}

/* Lower goes first: a moving ticket, which holds its pool slot already;
 * the aged ones (oldest first: ties go by name); then the class, then
 * (misses) the most waiters. */
static int64_t
rank(const struct budget_ticket *t)
{
	int64_t w;

	if (t->state == T_MOVING)
		return RANK_MOVING;
	if (aged(t))
		return RANK_AGED;
	w = t->a.weight != NULL ? t->a.weight(t->a.weight_arg) : 1;
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

/* The identity of a cap: the pool's (server NULL) or one server's. */
static uint64_t
cap_id(const struct budget *b, const char *server)
{
	return share_id(b->cp->name, server);
}

/* Local slots for t: its pool's (unless it has one) and one on the first
 * of its servers with room. 1 taken, 0 none free. */
static int
take_locals(struct budget_ticket *t)
{
	struct budget *b = t->b;
	int pool_col = -1;

	if (t->slot == FROM_NONE && max_requests(b) > 0 &&
	    (pool_col = share_take(b->px, cap_id(b, NULL), local_share(b))) ==
	    -1)
		return 0;
	if (server_cap(b) > 0) {
		for (int i = 0; i < t->nnames; i++) {
			t->server_col = share_take(b->px, cap_id(b,
			    t->names[i]), server_share(b));
			if (t->server_col != -1) {
				t->at = i;
				break;
			}
		}
		if (t->server_col == -1) {
			share_give(b->px, &pool_col);
			return 0;
		}
	}
	if (t->slot == FROM_NONE)
		t->local_col = pool_col;
	return 1;
}

/* ---- a ticket's life ----------------------------------------------- */

void
budget_recheck_arm(struct budget *b)
{
	int64_t ms = b->degraded ? LOCAL_POLL_MS :
	    lease_ms(b) / RECHECK_DIVISOR;

	if (b->nqueued > 0)
		timer_arm(b->recheck_ev, MAX(ms, 1));
}

void
budget_publish(const struct budget *b, struct budget_gauges *g)
{
	const struct budget_ticket *t;
	struct budget_gauges now;

	memset(&now, 0, sizeof(now));
	now.fleet_held = now.fleet_queued = now.instances = -1;
	if (b == NULL) {
		*g = now;
		return;
	}
	now.held = b->nheld;
	now.queued = b->nqueued;
	TAILQ_FOREACH(t, &b->queue, link)
		now.oldest_ms = MAX(now.oldest_ms,
		    (util_mono_us() - t->asked_us) / 1000);
	now.local_held = b->nlocal;
	now.share = max_requests(b) > 0 ? local_share(b) : 0;
	/* Redis's figures while they are news: a hello every HELLO_MS
	 * renews them; missed HELLO_MISSES times, they are not known. */
	if (util_now_ms() - b->fleet_ms <= HELLO_MS * HELLO_MISSES) {
		now.fleet_held = b->fleet.held;
		now.fleet_queued = b->fleet.queued;
	}
	now.instances = b->main->instances > 0 ? b->main->instances : -1;
	/* One store a field: a sibling reading meanwhile sees each field
	 * old or new, never zeroed. */
	*g = now;
}

/*
 * The slots this worker holds and the requests it queues, as its sibling
 * workers read them: written as they change, not every PUBLISH_MS, so that
 * workers' figures summed are of one moment (summed a publication apart,
 * they counted slots one worker had given back and another had taken).
 */
static void
counts_changed(struct budget *b)
{
	struct proxy *px = b->px;

	if (b == b->main && px->slots != NULL)
		budget_publish(b, &px->slots[px->slot].budget.g);
	if (b->on_counts != NULL)
		b->on_counts(b->counts_arg);
}

static void
enqueue(struct budget_ticket *t)
{
	assert(!t->queued);
	t->queued = 1;
	TAILQ_INSERT_TAIL(&t->b->queue, t, link);
	t->b->nqueued++;
	counts_changed(t->b);
}

static void
dequeue(struct budget_ticket *t)
{
	if (!t->queued)
		return;
	t->queued = 0;
	TAILQ_REMOVE(&t->b->queue, t, link);
	t->b->nqueued--;
	counts_changed(t->b);
}

static void on_renew_tick(evutil_socket_t fd, short what, void *arg);

/* t holds its slot (from), and its server's (at, an index of its names,
 * or -1) from the same place. */
static void
grant(struct budget_ticket *t, enum source from, int at)
{
	struct budget *b = t->b;
	struct stats *st = b->px->stats;
	int moving = t->state == T_MOVING;	/* its pool slot is the same */
	int local = from == FROM_LOCAL;

	dequeue(t);
	if (at >= 0 && at < t->nnames) {
		t->at = at;
		t->at_from = from;
		snprintf(t->server, sizeof(t->server), "%s", t->names[at]);
	} else {
		t->at = -1;
		t->at_from = FROM_NONE;
	}
	evtimer_del(t->timer);
	t->state = T_HELD;
	if (!moving) {
		t->slot = from;
		b->nheld++;
		b->nlocal += local;
		counts_changed(b);
		STAT_INC(st, t->a.route, slot_grants);
		if (t->waited)
			STAT_INC(st, t->a.route, slot_waits);
		if (local)
			STAT_INC(st, t->a.route, slot_local);
		STAT_OBSERVE(st, t->a.route, slot_wait,
		    (double)(util_mono_us() - t->asked_us) / 1e6);
	}
	if (t->slot == FROM_REDIS) {
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

/* The local share, if a slot of it is free (and one of a server's). */
static void
try_local(struct budget_ticket *t)
{
	if (take_locals(t))
		grant(t, FROM_LOCAL, t->at);
	else if (t->wait_ms == 0)
		shed(t);
	else
		budget_recheck_arm(t->b);
}

/* Redis could not answer. */
static void
ask_local(struct budget_ticket *t)
{
	struct budget *b = t->b;

	if (!b->degraded && max_requests(b) > 0)
		log_warn("origin budget: Redis unavailable; this instance "
		    "allows itself %" PRId64 " origin requests at once",
		    local_share(b));
	if (!b->degraded && server_cap(b) > 0)
		log_warn("origin budget: Redis unavailable; this instance "
		    "allows itself %" PRId64 " requests at once to each server",
		    server_share(b));
	b->degraded = 1;
	try_local(t);
}

static void
on_acquired(enum lease_result r, const struct lease_figures *f, void *arg)
{
	struct budget_ticket *t = arg;
	struct budget *b = t->b;

	assert(t->magic == TICKET_MAGIC &&
	    (t->state == T_WAITING || t->state == T_MOVING));
	t->op = NULL;
	if (r == LEASE_ERROR) {
		ask_local(t);
		return;
	}
	b->degraded = 0;
	b->fleet.held = f->held;
	b->fleet.queued = f->queued;
	b->fleet_ms = util_now_ms();
	if (t->leaving) {	/* the server it left has it no more */
		t->leaving = 0;
		t->at_from = FROM_NONE;
	}
	if (r == LEASE_QUEUED) {
		t->waited = 1;
		if (t->wait_ms == 0)
			shed(t);
		/* Its answer may predate a release heard meanwhile. */
		if (b->rewake) {
			b->rewake = 0;
			budget_pump(b);
		}
		return;
	}
	grant(t, FROM_REDIS, f->server);
	if (max_requests(b) == 0 || f->held < max_requests(b) || b->rewake) {
		b->rewake = 0;
		budget_pump(b);	/* room for the next one here too */
	}
}

void
ticket_ask(struct budget_ticket *t)
{
	struct budget *b = t->b;
	struct proxy *px = b->px;
	struct lease_ask la = {
		.pool = b->cp->name,
		.token = t->token,
		.ticket = t->name,
		.max = max_requests(b),
		.lease_ms = lease_ms(b),
		.server_cap = server_cap(b),
	};

	assert(t->state == T_WAITING || t->state == T_MOVING);
	if (t->op != NULL)
		return;
	if (!enabled(b)) {		/* turned off by a reload */
		grant(t, FROM_NOWHERE, -1);
		return;
	}
	t->nnames = 0;
	if (server_cap(b) > 0 && t->a.servers != NULL) {
		t->nnames = t->a.servers(t->a.arg, t->names, CONF_SERVERS_MAX);
		if (t->nnames == 0) {	/* a move, and no other server */
			shed(t);
			return;
		}
		la.servers = t->names;
		la.nservers = t->nnames;
	}
	if (t->state == T_MOVING && t->slot != FROM_REDIS) {
		try_local(t);		/* its pool slot is not in Redis */
		return;
	}
	la.rank = rank(t);
	t->leaving = t->at_from == FROM_REDIS;
	la.leave = t->leaving ? t->server : NULL;
	if ((t->op = lease_acquire(px->cache, &la, on_acquired, t)) == NULL) {
		t->leaving = 0;
		ask_local(t);
		return;
	}
	t->in_redis = 1;
}

/* The best ticket here asks; if it is asking already, it asks again
 * once that answer is in. */
void
budget_pump(struct budget *b)
{
	struct budget_ticket *t = best(b);

	if (t == NULL)
		return;
	if (t->op != NULL)
		b->rewake = 1;
	else
		ticket_ask(t);
}

static void
on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct budget_ticket *t = arg;

	assert(t->magic == TICKET_MAGIC && t->state != T_WAITING &&
	    t->state != T_MOVING);
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
		    t->at_from == FROM_REDIS ? t->server : NULL, lease_ms(b),
		    on_renewed, t);
	timer_arm(t->timer, lease_ms(b) / RENEW_DIVISOR);
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct budget_ticket *t = arg;

	assert(t->magic == TICKET_MAGIC &&
	    (t->state == T_WAITING || t->state == T_MOVING));
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
	    t->at_from == FROM_REDIS || t->leaving ? t->server : NULL,
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
	held = t->slot != FROM_NONE;
	dequeue(t);
	cache_op_cancel(&t->op);
	share_give(b->px, &t->local_col);
	share_give(b->px, &t->server_col);
	if (t->slot != FROM_LOCAL)
		release(t);
	b->nheld -= held;
	b->nlocal -= t->slot == FROM_LOCAL;
	if (held)
		counts_changed(b);
	event_free(t->timer);
	event_free(t->notify);
	t->magic = 0;
	free(t);
	/* The slot goes to the best ticket of the fleet: if it is here, it
	 * asks at once (its acquire goes after the release). */
	if (held)
		budget_pump(b);
}

struct budget_ticket *
budget_ask(struct budget *b, const struct budget_args *a)
{
	struct proxy *px;
	struct budget_ticket *t;

	if (b == NULL || !enabled(b))
		return NULL;
	px = b->px;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->magic = TICKET_MAGIC;
	t->b = b;
	t->a = *a;
	t->at = t->local_col = t->server_col = -1;
	t->wait_ms = queue_timeout_ms(b);
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
	enqueue(t);
	if (queue_timeout_ms(b) > 0)
		timer_arm(t->timer, queue_timeout_ms(b));
	ticket_ask(t);
	if (t->state == T_WAITING)
		budget_recheck_arm(b);
	return t;
}

int
budget_server(const struct budget_ticket *t)
{
	assert(t->magic == TICKET_MAGIC);
	return t->state == T_HELD ? t->at : -1;
}

void
budget_move(struct budget_ticket *t, int64_t wait_ms)
{
	struct budget *b = t->b;

	assert(t->magic == TICKET_MAGIC && t->state == T_HELD && t->at >= 0);
	cache_op_cancel(&t->op);	/* a renewal: the asks renew now */
	evtimer_del(t->timer);
	share_give(b->px, &t->server_col);
	if (t->at_from == FROM_LOCAL)
		t->at_from = FROM_NONE;
	t->at = -1;
	t->state = T_MOVING;
	t->wait_ms = MAX(wait_ms, 0);
	enqueue(t);
	event_assign(t->timer, b->px->base, -1, 0, on_deadline, t);
	if (t->wait_ms > 0)
		timer_arm(t->timer, t->wait_ms);
	ticket_ask(t);
	if (t->state == T_MOVING)
		budget_recheck_arm(b);
}
