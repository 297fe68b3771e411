/* SPDX-License-Identifier: MIT */
/*
 * A fetch from the origin through its pool's budget and a server of the
 * pool (origin_fetch(), proxy_budget.h).
 *
 *	ASK -> SLOT (a ticket waits in the pool's budget: a slot, and one on
 *	             a server with max_requests_per_server) -> SEND
 *	    -> SEND (no budget) -> SENT -> TRIED -> DONE (answered)
 *	TRIED -> SEND, once, to another server, under the same slot, when
 *	         it failed before any byte and may go again (MOVE first,
 *	         with max_requests_per_server: a slot on another server)
 *	SLOT, MOVE -> DONE (no slot within queue_timeout: not sent, or the
 *	              first try's failure)
 *	ASK -> DONE (its route is in maintenance, proxy_maint.c: not sent)
 *	SEND -> DONE (its asker's may_send holds its first try back: not
 *	              sent; a refresh whose token expired meanwhile)
 *
 * It keeps a copy of the request while it waits, gives the budget the
 * servers it would take, best first (its pool's choice), starts
 * upstream_fetch() once the budget grants a slot, tells the pool how each
 * try ended (its server's health), and gives the slot back when the
 * response has ended, before its asker hears of it. It asks
 * proxy_budget.c, proxy_pool.c and upstream/; its asker hears back
 * through the callback it gave, once, whatever the tries. Each step is one
 * function returning the next (OS_PARK: wait); origin_run() drives them,
 * and the callbacks (the slot's answer, a try's response, the first-byte
 * timer, maintenance) copy what they got and re-enter it.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/hlist.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_origin.h"
#include "proxy/proxy_pool.h"
#include "proxy/proxy_stats.h"
#include "upstream/upstream.h"

#define ORIGIN_MAGIC		0x4f524947u	/* "ORIG" */
#define TRIES_MAX		2	/* a request goes to two servers at most */
#define STATUS_SERVER_ERROR	500

enum origin_step {
	OS_ASK,			/* maintenance, or its place in the budget */
	OS_SLOT,		/* waits for an origin slot */
	OS_SEND,		/* a try goes to a server */
	OS_SENT,		/* a try is in flight */
	OS_TRIED,		/* a try ended: the answer, or another try */
	OS_MOVE,		/* a retry waits for a slot on another server */
	OS_DONE,		/* answered (freed) */
	OS_PARK,		/* not a step: wait for a callback */
};

static const char *const step_names[] = {
	[OS_ASK] = "ASK", [OS_SLOT] = "SLOT", [OS_SEND] = "SEND",
	[OS_SENT] = "SENT", [OS_TRIED] = "TRIED", [OS_MOVE] = "MOVE",
	[OS_DONE] = "DONE", [OS_PARK] = "PARK",
};

struct origin_fetch {
	uint32_t		 magic;
	uint64_t		 id;		/* for the step trace */
	enum origin_step	 step;
	struct proxy		*px;
	int			 route;
	struct pool		*pool;		/* held while it lives */
	struct upstream_request	 ur;		/* its url and headers are ours */
	char			*target;
	char			*url;		/* the server's URL and target */
	struct hlist	 headers;
	struct budget_ticket	*ticket;	/* its slot, or its place in line */
	struct pool_choice	 choice;	/* the servers its ticket asks for */
	struct pool_server	*server;	/* the try in flight's */
	char			 tried[CONF_SERVER_URL_MAX];	/* the last */
	struct pool_server	*failed_at;	/* ... held while a retry waits */
	struct upstream_response *failure;	/* ... and how it failed */
	struct upstream_fetch	*up;		/* a try in flight */
	struct event		*timer;		/* no first byte, refused */
	upstream_done_cb	*cb;
	void			*arg;
	origin_may_send_cb	*may_send;	/* NULL: it always may */
	void			*may_send_arg;
	int64_t			 asked_us;
	int64_t			 sent_us;	/* its first try's start */
	int			 tries;
	int			 starting;	/* inside origin_fetch(): no answer
						 * may be given yet */
	int			 start_failed;	/* ... one was due: NULL instead */

	/* What callbacks left for the step they re-enter. */
	int			 refused;	/* ASK: its route is in maintenance */
	int			 slot_answered;	/* SLOT, MOVE: the budget's answer */
	enum budget_answer	 slot;
	struct upstream_response *resp;		/* SENT: the try's response */
};

static void origin_run(struct origin_fetch *f);

static void
origin_free(struct origin_fetch *f)
{
	assert(f->magic == ORIGIN_MAGIC);
	if (f->up != NULL) {
		upstream_cancel(&f->up);
		pool_end(f->server, POOL_NEUTRAL, "cancelled");
	}
	pool_choice_drop(&f->choice);
	pool_unhold_server(&f->failed_at);
	if (f->failure != NULL)
		upstream_response_free(&f->failure);
	if (f->resp != NULL)
		upstream_response_free(&f->resp);
	budget_done(&f->ticket);
	if (f->timer != NULL)
		event_free(f->timer);
	pool_release(f->pool);
	hl_free(&f->headers);
	free(f->url);
	free(f->target);
	f->magic = 0;
	free(f);
}

/* Ends it with resp (its asker's now): DONE, the fetch freed. */
static enum origin_step
origin_answer(struct origin_fetch *f, struct upstream_response *resp)
{
	upstream_done_cb *cb = f->cb;
	void *cb_arg = f->arg;

	if (f->starting) {	/* origin_fetch() returns NULL instead */
		upstream_response_free(&resp);
		f->start_failed = 1;
		return OS_PARK;
	}
	origin_free(f);
	cb(resp, cb_arg);
	return OS_DONE;
}

/* Ends it with the failure of the try that could not go again. */
static enum origin_step
answer_failure(struct origin_fetch *f)
{
	struct upstream_response *resp = f->failure;

	f->failure = NULL;
	return origin_answer(f, resp);
}

/* An answer made here for a fetch that was not sent (or could not be). */
static enum origin_step
origin_unsent(struct origin_fetch *f, enum upstream_result r, const char *why)
{
	struct upstream_response *resp = calloc(1, sizeof(*resp));

	if (resp == NULL) {
		/* No memory even for that: the asker's fetch stays unanswered
		 * until it gives up (its request's timeout or a stop). */
		log_error("origin: out of memory for an unsent fetch's answer");
		return OS_PARK;
	}
	hl_init(&resp->headers);
	resp->result = r;
	resp->elapsed_ms = (util_mono_us() - f->asked_us) / 1000;
	snprintf(resp->error, sizeof(resp->error), "%s", why);
	return origin_answer(f, resp);
}

/* How a try ended, for its server's health. */
static enum pool_outcome
try_outcome(const struct upstream_response *resp)
{
	switch (resp->result) {
	case UPSTREAM_OK:
		return resp->status >= STATUS_SERVER_ERROR ? POOL_5XX : POOL_OK;
	case UPSTREAM_ERR_CONNECT:
		return POOL_CONNECT;
	case UPSTREAM_ERR_TIMEOUT:
		return POOL_TIMEOUT;
	case UPSTREAM_ERR_PROTOCOL:
		return POOL_BROKEN;
	case UPSTREAM_ERR_TOO_BIG:
	case UPSTREAM_NOT_SENT:
		break;
	}
	return POOL_NEUTRAL;
}

/*
 * May the request go to another server? Only if nothing of a response
 * came, and only if it never reached the server (it could not connect)
 * or its caller says it may be sent twice (RFC 9110 9.2.2): a reset or a
 * timeout may come after the server acted on it.
 */
static int
may_retry(const struct origin_fetch *f, const struct upstream_response *resp)
{
	if (f->tries >= TRIES_MAX || resp->received)
		return 0;
	switch (resp->result) {
	case UPSTREAM_ERR_CONNECT:
		return 1;
	case UPSTREAM_ERR_TIMEOUT:
	case UPSTREAM_ERR_PROTOCOL:
		return f->ur.replayable;
	default:
		return 0;
	}
}

static int64_t
left_ms(const struct origin_fetch *f)
{
	return pool_conf(f->pool)->timeout_ms -
	    (util_mono_us() - f->sent_us) / 1000;
}

/* How long a try waits for its response to begin: first_byte_timeout;
 * by default (0), in a pool of several servers, timeout's share of each
 * try, so that a hung server's request still has time for another (0:
 * the whole timeout, for a pool of one). */
static int64_t
first_byte_ms(const struct conf_pool *c)
{
	if (c->first_byte_timeout_ms > 0)
		return c->first_byte_timeout_ms;
	return c->nservers > 1 ? c->timeout_ms / TRIES_MAX : 0;
}

static void on_origin_done(struct upstream_response *resp, void *arg);
static void on_first_byte_timeout(evutil_socket_t fd, short what, void *arg);

/* One try, to s. 0, or -1 (no memory: s has heard it ended). */
static int
send_to(struct origin_fetch *f, struct pool_server *s)
{
	const struct conf_pool *c = pool_conf(f->pool);
	const char *base = pool_server_url(s);
	size_t len = strlen(base) + strlen(f->target) + 1;
	char *url;
	int64_t left, first_byte;

	if ((url = malloc(len)) == NULL)
		return -1;
	snprintf(url, len, "%s%s", base, f->target);
	free(f->url);
	f->url = url;
	if (f->tries++ == 0)
		f->sent_us = util_mono_us();
	left = MAX(left_ms(f), 1);
	f->ur.url = url;
	f->ur.connect_timeout_ms = MIN(c->connect_timeout_ms, left);
	f->ur.timeout_ms = left;
	f->server = s;
	evtimer_del(f->timer);
	pool_begin(s);
	pool_choice_drop(&f->choice);	/* s is held by its request now */
	STAT_INC(f->px->stats, f->route, upstream_fetches);
	if ((f->up = upstream_fetch(f->px->upstream, &f->ur, on_origin_done,
	    f)) == NULL) {
		pool_end(s, POOL_NEUTRAL, "out of memory");
		f->server = NULL;
		return -1;
	}
	if ((first_byte = first_byte_ms(c)) > 0 && first_byte < left) {
		event_assign(f->timer, f->px->base, -1, 0,
		    on_first_byte_timeout, f);
		timer_arm(f->timer, first_byte);
	}
	return 0;
}

/* The try that failed goes once more, to s (which has room): 0, or -1
 * (no memory: the failure stands). */
static int
retry_to(struct origin_fetch *f, struct pool_server *s)
{
	log_info("origin: %s%s failed before any response (%s); sent again "
	    "to %s", f->tried, f->target, f->failure->error,
	    pool_server_url(s));
	if (send_to(f, s) == -1)
		return -1;
	pool_count_retry(f->failed_at);
	STAT_INC(f->px->stats, f->route, upstream_retries);
	pool_unhold_server(&f->failed_at);
	upstream_response_free(&f->failure);
	return 0;
}

/* ---- the steps ------------------------------------------------------ */

/* Its ticket asks: the servers it would take now, best first. */
static int
on_origin_servers(void *arg, const char **names, int max)
{
	struct origin_fetch *f = arg;
	int n;

	assert(f->magic == ORIGIN_MAGIC);
	pool_choose(f->pool, f->failure != NULL ? f->tried : NULL, &f->choice);
	n = MIN(f->choice.n, max);
	for (int i = 0; i < n; i++)
		names[i] = pool_server_url(f->choice.s[i]);
	return n;
}

static void on_origin_slot(enum budget_answer a, void *arg);

/* ASK: not at all (its route is in maintenance: answered from the loop),
 * at once (no budget), or once the budget grants it a slot. */
static enum origin_step
origin_ask(struct origin_fetch *f, const struct budget_args *ba)
{
	if (f->refused)
		return origin_unsent(f, UPSTREAM_NOT_SENT,
		    "route in maintenance");
	if (ba == NULL)
		return OS_PARK;
	if (maint_avoids(f->px, f->target)) {
		timer_arm(f->timer, 0);
		return OS_PARK;
	}
	/* No budget, or no memory to queue with: it goes now. */
	f->ticket = budget_ask(pool_budget(f->pool), ba);
	return f->ticket == NULL ? OS_SEND : OS_SLOT;
}

/* SLOT and MOVE: the budget's answer, once it came. */
static enum origin_step
origin_slot(struct origin_fetch *f)
{
	if (!f->slot_answered)
		return OS_PARK;
	f->slot_answered = 0;
	if (f->slot == BUDGET_GRANTED)
		return OS_SEND;
	if (f->failure != NULL)		/* a retry without room */
		return answer_failure(f);
	return origin_unsent(f, UPSTREAM_NOT_SENT,
	    "no origin slot within queue_timeout");
}

/* SEND: a server for its first try, or for its retry: the one its slot
 * is on, else the pool's choice (no max_requests_per_server). */
static enum origin_step
origin_send(struct origin_fetch *f)
{
	struct pool_server *s;
	int at = f->ticket != NULL ? budget_server(f->ticket) : -1;
	int rc;

	if (f->failure == NULL && f->may_send != NULL &&
	    !f->may_send(f->may_send_arg))
		return origin_unsent(f, UPSTREAM_NOT_SENT, "held back by its "
		    "asker");
	if (at >= 0 && at < f->choice.n)
		s = f->choice.s[at];
	else
		s = pool_pick(f->pool, f->failure != NULL ? f->tried : NULL);
	rc = s == NULL ? -1 : f->failure != NULL ? retry_to(f, s) :
	    send_to(f, s);
	if (rc == 0)
		return OS_SENT;
	if (f->failure != NULL)		/* no other server, or no memory */
		return answer_failure(f);
	return origin_unsent(f, UPSTREAM_ERR_PROTOCOL, "out of memory");
}

/* SENT: its response, once it came (or the first-byte timeout's). */
static enum origin_step
origin_sent_step(struct origin_fetch *f)
{
	return f->resp != NULL ? OS_TRIED : OS_PARK;
}

/* TRIED: its server hears how the try ended; then the answer, or
 * another try (with a server's cap: a slot on another server first, at
 * most queue_timeout). */
static enum origin_step
origin_tried(struct origin_fetch *f)
{
	struct upstream_response *resp = f->resp;
	int64_t left;
	char why[sizeof(resp->error) + 16];

	f->resp = NULL;
	evtimer_del(f->timer);
	if (resp->result == UPSTREAM_OK)
		snprintf(why, sizeof(why), "status %d", resp->status);
	else
		snprintf(why, sizeof(why), "%s", resp->error);
	snprintf(f->tried, sizeof(f->tried), "%s", pool_server_url(f->server));
	if (!may_retry(f, resp) || (left = left_ms(f)) <= 0) {
		pool_end(f->server, try_outcome(resp), why);
		f->server = NULL;
		return origin_answer(f, resp);
	}
	/* It may go to another server: counted as a retry once sent. */
	f->failed_at = f->server;
	f->server = NULL;
	pool_hold_server(f->failed_at);
	pool_end(f->failed_at, try_outcome(resp), why);
	f->failure = resp;
	if (f->ticket == NULL || budget_server(f->ticket) < 0)
		return OS_SEND;
	budget_move(f->ticket, MIN(left, pool_conf(f->pool)->queue_timeout_ms));
	return OS_MOVE;
}

static void
origin_run(struct origin_fetch *f)
{
	enum origin_step next;

	for (;;) {
		assert(f->magic == ORIGIN_MAGIC);
		switch (f->step) {
		case OS_ASK:	/* begun by origin_fetch(), with its asks */
			next = origin_ask(f, NULL);
			break;
		case OS_SLOT:
		case OS_MOVE:
			next = origin_slot(f);
			break;
		case OS_SEND:
			next = origin_send(f);
			break;
		case OS_SENT:
			next = origin_sent_step(f);
			break;
		case OS_TRIED:
			next = origin_tried(f);
			break;
		case OS_DONE:	/* f is gone */
		case OS_PARK:
		default:
			return;
		}
		if (next == OS_PARK || next == OS_DONE)
			return;
		log_step("origin", f->id, step_names[f->step],
		    step_names[next]);
		f->step = next;
	}
}

/* ---- callbacks: each copies its result and re-enters origin_run() --- */

static void
on_origin_slot(enum budget_answer a, void *arg)
{
	struct origin_fetch *f = arg;

	assert(f->magic == ORIGIN_MAGIC && f->up == NULL &&
	    (f->step == OS_SLOT || f->step == OS_MOVE));
	f->slot_answered = 1;
	f->slot = a;
	origin_run(f);
}

static void
on_origin_done(struct upstream_response *resp, void *arg)
{
	struct origin_fetch *f = arg;

	assert(f->magic == ORIGIN_MAGIC && f->step == OS_SENT);
	f->up = NULL;
	f->resp = resp;
	origin_run(f);
}

/* first_byte_timeout: a try whose response has not begun fails as a
 * timeout (and may go to another server). */
static void
on_first_byte_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct origin_fetch *f = arg;
	struct upstream_response *resp;

	assert(f->magic == ORIGIN_MAGIC && f->up != NULL);
	if (upstream_received(f->up))
		return;		/* begun: the whole timeout applies */
	if ((resp = calloc(1, sizeof(*resp))) == NULL ||
	    (resp->body = evbuffer_new()) == NULL) {
		free(resp);
		return;		/* the whole timeout ends it */
	}
	hl_init(&resp->headers);
	upstream_cancel(&f->up);
	resp->result = UPSTREAM_ERR_TIMEOUT;
	resp->elapsed_ms = first_byte_ms(pool_conf(f->pool));
	snprintf(resp->error, sizeof(resp->error), "no response within "
	    "first_byte_timeout (%lld ms)", (long long)resp->elapsed_ms);
	on_origin_done(resp, f);
}

/* Its route is in maintenance: answered unsent, from the loop. */
static void
on_origin_refused(evutil_socket_t fd, short what, void *arg)
{
	struct origin_fetch *f = arg;

	assert(f->magic == ORIGIN_MAGIC && f->step == OS_ASK);
	f->refused = 1;
	origin_run(f);
}

/* Its own copy of the target and the headers: it may wait, and try
 * twice. */
static int
origin_copy(struct origin_fetch *f, const struct origin_args *oa,
    const struct upstream_request *ur)
{
	const struct hfield *h;

	f->ur = *ur;
	f->ur.url = NULL;
	if ((f->target = strdup(oa->target != NULL ? oa->target : "/")) ==
	    NULL)
		return -1;
	if (ur->headers != NULL) {
		HL_FOREACH(h, ur->headers)
			if (hl_add(&f->headers, h->key,
			    h->value) == -1)
				return -1;
		f->ur.headers = &f->headers;
	}
	return 0;
}

struct origin_fetch *
origin_fetch(struct proxy *px, const struct origin_args *oa,
    const struct upstream_request *ur, upstream_done_cb *cb, void *arg)
{
	struct budget_args ba = {
		.cls = oa->cls,
		.route = oa->route,
		.weight = oa->weight,
		.weight_arg = oa->weight_arg,
		.servers = on_origin_servers,
		.cb = on_origin_slot,
	};
	struct origin_fetch *f;
	enum origin_step next;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->magic = ORIGIN_MAGIC;
	f->id = ++px->machine_ids;
	f->step = OS_ASK;
	f->px = px;
	f->route = oa->route;
	f->cb = cb;
	f->arg = arg;
	f->may_send = oa->may_send;
	f->may_send_arg = oa->may_send_arg;
	f->asked_us = util_mono_us();
	f->pool = pool_get(px, oa->pool);
	pool_hold(f->pool);
	hl_init(&f->headers);
	if ((f->timer = evtimer_new(px->base, on_origin_refused, f)) == NULL ||
	    origin_copy(f, oa, ur) == -1)
		goto fail;
	ba.arg = f;
	f->starting = 1;
	if ((next = origin_ask(f, &ba)) != OS_PARK) {
		log_step("origin", f->id, step_names[OS_ASK], step_names[next]);
		f->step = next;
		origin_run(f);
	}
	f->starting = 0;
	if (f->start_failed)
		goto fail;
	return f;
fail:
	origin_free(f);
	return NULL;
}

void
origin_resume(struct origin_fetch *f)
{
	assert(f->magic == ORIGIN_MAGIC);
	if (f->up != NULL)
		upstream_resume(f->up);
}

int
origin_sent(const struct origin_fetch *f)
{
	assert(f->magic == ORIGIN_MAGIC);
	return f->tries > 0;
}

void
origin_cancel(struct origin_fetch **fp)
{
	struct origin_fetch *f = *fp;

	if (f == NULL)
		return;
	*fp = NULL;
	origin_free(f);
}

int64_t
origin_fetch_max_ms(const struct conf *c, const struct conf_route *rt)
{
	const struct conf_pool *p = conf_route_pool(c, rt);

	return p->timeout_ms + (p->max_requests > 0 ||
	    p->max_requests_per_server > 0 ? p->queue_timeout_ms : 0);
}
