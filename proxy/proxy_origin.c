/*
 * A fetch from the origin through the origin budget (origin_fetch(),
 * proxy_budget.h).
 *
 *	SLOT (a ticket waits in the budget's queue) -> SENT -> done
 *	     -> NOT_SENT (no slot within queue_timeout) -> done
 *	NOT_SENT (its route is in maintenance, proxy_maint.c) -> done
 *
 * It keeps a copy of the request while it waits, starts upstream_fetch()
 * once the budget grants a slot, and gives the slot back when the
 * response has ended, before its asker hears of it. It asks
 * proxy_budget.c and upstream/; its asker hears back through the
 * callback it gave.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_control.h"
#include "proxy/proxy_stats.h"
#include "upstream/upstream.h"

#define ORIGIN_MAGIC		0x4f524947u	/* "ORIG" */

struct origin_fetch {
	uint32_t		 magic;
	struct proxy		*px;
	int			 route;
	struct upstream_request	 ur;		/* its url and headers are ours */
	char			*url;
	struct evkeyvalq	 headers;
	struct budget_ticket	*ticket;	/* its slot, or its place in line */
	struct upstream_fetch	*up;		/* once sent */
	upstream_done_cb	*cb;
	void			*arg;
	int64_t			 asked_us;
	struct event		*refused_ev;	/* maintenance: answers unsent */
};

static void
origin_free(struct origin_fetch *f)
{
	assert(f->magic == ORIGIN_MAGIC);
	upstream_cancel(&f->up);
	budget_done(&f->ticket);
	if (f->refused_ev != NULL)
		event_free(f->refused_ev);
	evhttp_clear_headers(&f->headers);
	free(f->url);
	f->magic = 0;
	free(f);
}

/* The response has ended: the slot goes back before the asker hears. */
static void
on_origin_done(struct upstream_response *resp, void *arg)
{
	struct origin_fetch *f = arg;
	upstream_done_cb *cb = f->cb;
	void *cb_arg = f->arg;

	assert(f->magic == ORIGIN_MAGIC);
	f->up = NULL;
	origin_free(f);
	cb(resp, cb_arg);
}

/* An answer made here for a fetch that was not sent (or could not be). */
static void
origin_unsent(struct origin_fetch *f, enum upstream_result r, const char *why)
{
	struct upstream_response *resp = calloc(1, sizeof(*resp));
	upstream_done_cb *cb = f->cb;
	void *cb_arg = f->arg;

	if (resp == NULL) {
		/* No memory even for that: the asker's fetch stays unanswered
		 * until it gives up (its request's timeout or a stop). */
		log_error("origin: out of memory for an unsent fetch's answer");
		return;
	}
	TAILQ_INIT(&resp->headers);
	resp->result = r;
	resp->elapsed_ms = (util_mono_us() - f->asked_us) / 1000;
	snprintf(resp->error, sizeof(resp->error), "%s", why);
	origin_free(f);
	cb(resp, cb_arg);
}

static int
origin_send(struct origin_fetch *f)
{
	struct proxy *px = f->px;

	STAT_INC(px->stats, f->route, upstream_fetches);
	f->up = upstream_fetch(px->upstream, &f->ur, on_origin_done, f);
	return f->up != NULL ? 0 : -1;
}

static void
on_origin_slot(enum budget_answer a, void *arg)
{
	struct origin_fetch *f = arg;

	assert(f->magic == ORIGIN_MAGIC && f->up == NULL);
	if (a != BUDGET_GRANTED)
		origin_unsent(f, UPSTREAM_NOT_SENT,
		    "no origin slot within queue_timeout");
	else if (origin_send(f) == -1)
		origin_unsent(f, UPSTREAM_ERR_PROTOCOL, "out of memory");
}

/* Its route is in maintenance: answered unsent, from the loop. */
static void
on_origin_refused(evutil_socket_t fd, short what, void *arg)
{
	struct origin_fetch *f = arg;

	assert(f->magic == ORIGIN_MAGIC);
	origin_unsent(f, UPSTREAM_NOT_SENT, "route in maintenance");
}

/* Its own copy of the URL and the headers, for a fetch that waits. */
static int
origin_copy(struct origin_fetch *f, const struct upstream_request *ur)
{
	const struct evkeyval *h;

	f->ur = *ur;
	if ((f->url = strdup(ur->url)) == NULL)
		return -1;
	f->ur.url = f->url;
	if (ur->headers != NULL) {
		TAILQ_FOREACH(h, ur->headers, next)
			if (evhttp_add_header(&f->headers, h->key,
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
		.cb = on_origin_slot,
	};
	struct origin_fetch *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->magic = ORIGIN_MAGIC;
	f->px = px;
	f->route = oa->route;
	f->cb = cb;
	f->arg = arg;
	f->asked_us = util_mono_us();
	TAILQ_INIT(&f->headers);
	if (maint_avoids_url(px, ur->url)) {
		if ((f->refused_ev = event_new(px->base, -1, 0,
		    on_origin_refused, f)) == NULL)
			goto fail;
		event_active(f->refused_ev, EV_TIMEOUT, 0);
		return f;
	}
	if (px->conf->max_requests == 0) {	/* no budget: it goes now */
		f->ur = *ur;		/* upstream_fetch() copies what it keeps */
		if (origin_send(f) == -1)
			goto fail;
		return f;
	}
	if (origin_copy(f, ur) == -1)
		goto fail;
	ba.arg = f;
	/* No memory to queue with: it goes now. */
	if ((f->ticket = budget_ask(px, &ba)) == NULL && origin_send(f) == -1)
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
origin_fetch_max_ms(const struct conf *c)
{
	return c->upstream_timeout_ms + (c->max_requests > 0 ?
	    c->queue_timeout_ms : 0);
}
