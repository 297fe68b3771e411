/* SPDX-License-Identifier: MIT */
/*
 * struct flight: every request of this process for one key that has no
 * answer yet. One Redis round trip per key per process, not per request;
 * the first waiter leads (its fetch is the one that runs).
 *
 *	LOOKUP -> DONE (fresh, or stale: served at once, refresh started)
 *	       -> LOCK -> DONE (we fetched, someone else filled the key, or
 *	                        the fetch we waited for failed: its error)
 *	               -> WAIT -> LOCK ... (woken by a "filled" notification,
 *	                                    or by a bounded fallback poll)
 *	                       -> DONE (lock_wait ran out: stale or 504,
 *	                                never a fetch of its own)
 *	               -> PEER -> DONE (a sibling worker fetches the key: its
 *	                                response streamed to our waiters)
 *	                       -> WAIT ... (it had no stream for us)
 *	       -> DIRECT -> DONE (Redis is unavailable: fetch without a lock)
 *
 * Each step is one function that returns the next step, or FL_PARK to
 * wait; flight_run() drives them. Callbacks (the lookup, the refresh's
 * report, the sibling's stream, the timers, a fill) copy what they got
 * into the flight and re-enter flight_run(): the step decides. What a
 * refresh's report or a failure makes of the answer is
 * proxy_flight_answer.c's. It asks proxy_refresh.c, proxy_stream.c (a
 * long shareable response streams to the waiters), proxy_waitlist.c
 * (which hands them their answers), proxy_hold.c (how long they wait),
 * proxy_peer.c, the near caches and cache/.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "common/dict.h"
#include "common/hlist.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flight.h"
#include "proxy/proxy_flight_int.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_hold.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_origin.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_probe.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_stream.h"
#include "proxy/proxy_vary.h"
#include "proxy/proxy_waitlist.h"

static const char *const step_names[] = {
	[FL_LOOKUP] = "LOOKUP", [FL_LOCK] = "LOCK", [FL_WAIT] = "WAIT",
	[FL_PEER] = "PEER", [FL_DIRECT] = "DIRECT", [FL_DONE] = "DONE",
	[FL_PARK] = "PARK",
};

static void flight_run(struct flight *fl);
static void on_flight_lookup(enum cache_result r, struct cache_entry *e,
    void *arg);
static void on_flight_report(struct refresh_report *rep, void *arg);
static void on_flight_peer(struct upstream_response *resp, void *arg);
static int on_flight_stream(const struct upstream_response *resp,
    struct evbuffer *chunk, void *arg);

/* Starts a refresh of fl's key: the flight's own, or a background one. */
static struct refresh *
flight_refresh(struct flight *fl, enum refresh_mode mode, const char *seen_gen,
    struct cache_entry *base, int own)
{
	struct refresh_args a = {
		.mode = mode,
		.key = fl->key,
		.uri = fl->uri,
		.route = fl->route,
		.rt = &fl->rt,
		.authorized = fl->authorized,
		.headers = &fl->headers,
		.fetch = &fl->fetch,
		.seen_gen = seen_gen,
		.waited = own ? fl->hold.holder : "",
		.base = base,
		.stream = own ? on_flight_stream : NULL,
		.waiters = own ? &fl->waiters : NULL,	/* rank its origin slot */
		/* Redis cannot lock it: once per instance (proxy_peer.h). */
		.claim = own && mode == RF_DIRECT && fl->degraded,
	};

	return refresh_start(fl->px, &a, own ? on_flight_report : NULL,
	    own ? fl : NULL);
}




/* Should a hit on a fresh entry refresh it now (still one per fleet)? */
static int
refresh_early(const struct flight *fl, const struct cache_entry *e)
{
	if (!fl->rt.early_refresh || e->fetch_ms == 0 ||
	    refresh_running(fl->px, fl->key))
		return 0;
	/* A request drew already, when its near-cache hit was due. */
	return fl->early_due || refresh_early_due(&fl->rt, e);
}

/* ---- streaming: the body to every waiting client as it arrives ------ */

/* The stream's clients caught up: the fetch goes on. */
static void
on_stream_resume(void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	if (fl->refresh != NULL)
		refresh_resume(fl->refresh);
	else if (fl->peer != NULL)
		upstream_resume(fl->peer);
}

/* The head of a long, shareable response: every GET waiting gets it, the
 * siblings' first (with a sibling's stream, nobody here leads). */
static int
stream_start(struct flight *fl, const struct upstream_response *resp)
{
	if (fl->stream == NULL && (fl->stream = stream_new(fl->px->base,
	    (size_t)fl->px->conf->stream_window, 1, on_stream_resume,
	    fl)) == NULL)
		return -1;
	/* Workers > 1: a sibling's request that comes once the body has
	 * begun gets what came so far, while all of it is kept. */
	stream_begin(fl->stream, resp, (size_t)fl->px->conf->max_entry_bytes);
	fl->lead_streamed |= stream_join_all(fl->stream, &fl->waiters, resp,
	    fl->peer == NULL ? TAILQ_FIRST(&fl->waiters) : NULL);
	return 0;	/* the others get the entry when it is whole */
}

/*
 * The fetch's response as it arrives (from the upstream, or from the
 * sibling that fetches it: PEER). A long, shareable one goes to every
 * GET of the flight at once through the stream. Waiters that join later
 * without a replay, or are HEADs, get the entry when it is whole.
 */
static int
on_flight_stream(const struct upstream_response *resp, struct evbuffer *chunk,
    void *arg)
{
	struct flight *fl = arg;
	const char *why;

	assert(fl->magic == FLIGHT_MAGIC);
	if (chunk != NULL)
		return fl->stream != NULL ? stream_data(fl->stream, chunk) : 0;
	if (resp->status < 200)		/* a 1xx: to every waiter, not kept */
		return waitlist_interim(&fl->waiters, resp);
	if (!stream_wanted(resp, 1) ||
	    !hdr_shareable(&resp->headers, fl->authorized, &fl->rt, &why) ||
	    hl_find(&resp->headers, "Vary") != NULL ||
	    stream_start(fl, resp) == -1) {
		fl->stream_state = STREAM_WHOLE;
		waitlist_refuse_peers(&fl->waiters, &fl->verdict);
		return 0;	/* answered whole, as it may vary */
	}
	fl->stream_state = STREAM_ON;
	if (fl->peer != NULL)
		STAT_INC(fl->px->stats, fl->route, peer_streams);
	return UPSTREAM_STREAM;
}


/* ---- the steps ------------------------------------------------------ */

/* A fresh or stale entry answers at once; a stale one (or a fresh one
 * whose XFetch roll says so) starts a refresh in the background. */
static enum flight_step
looked_usable(struct flight *fl, struct cache_entry *e)
{
	struct proxy *px = fl->px;

	near_put(px, fl->key, e);	/* stale too: its next hits skip Redis */
	if (entry_state(e, util_now_ms()) == ENTRY_FRESH) {
		if (refresh_early(fl, e)) {
			STAT_INC(px->stats, fl->route, early_refreshes);
			(void)flight_refresh(fl, RF_LOCKED, e->gen, e, 0);
		}
		verdict_set(&fl->verdict, OUT_HIT, OUT_HIT, e);
	} else {
		if (!refresh_running(px, fl->key))
			(void)flight_refresh(fl, RF_LOCKED, e->gen, e, 0);
		verdict_set(&fl->verdict, OUT_STALE, OUT_STALE, e);
	}
	return FL_DONE;
}

static enum flight_step
flight_lookup(struct flight *fl)
{
	struct cache_entry *e;

	if (fl->op != NULL)
		return FL_PARK;
	if (!fl->looked) {
		fl->op = cache_lookup(fl->px->cache, fl->key, on_flight_lookup,
		    fl);
		if (fl->op != NULL)
			return FL_PARK;
		fl->look_result = CACHE_ERROR;
	}
	e = fl->look_entry;
	fl->look_entry = NULL;
	switch (fl->look_result) {
	case CACHE_ERROR:
		fl->degraded = 1;
		return FL_DIRECT;
	case CACHE_ABSENT:
		return FL_LOCK;
	default:
		break;
	}
	if (vary_is_marker(e))
		return flight_redirect(fl, &e);
	if (entry_state(e, util_now_ms()) == ENTRY_EXPIRED) {
		flight_keep_prev(fl, &e);
		return FL_LOCK;
	}
	return looked_usable(fl, e);
}







/*
 * LOCK and DIRECT: the refresh the flight waits for, with the lock
 * (revalidating what it saw) or directly; once it has reported, its
 * report decides.
 */
static enum flight_step
flight_fetch(struct flight *fl, enum refresh_mode mode)
{
	int locked = mode == RF_LOCKED;
	enum flight_step next;

	if (fl->refresh != NULL)
		return FL_PARK;
	if (fl->reported) {
		fl->reported = 0;
		next = flight_reported(fl);
		entry_unref(&fl->rep.entry);
		return next;
	}
	if (locked) {
		fl->fill_pending = 0;
		entry_unref(&fl->fill);
	}
	fl->refresh = flight_refresh(fl, mode, locked ? fl->seen_gen : "",
	    locked ? fl->prev : NULL, 1);
	if (fl->refresh != NULL)
		return FL_PARK;
	verdict_set(&fl->verdict, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
	return FL_DONE;
}

/* Another process holds the lock: a fill (or a poll) wakes the flight,
 * with the entry itself when it came along and is not the one seen. */
static enum flight_step
flight_wait(struct flight *fl)
{
	struct cache_entry *e;

	if (!fl->fill_pending) {
		if (fl->hold.expired)
			return flight_give_up(fl);
		if (!evtimer_pending(fl->poll_ev, NULL))
			timer_arm(fl->poll_ev, fl->rt.lock_poll_ms);
		return FL_PARK;
	}
	evtimer_del(fl->poll_ev);
	e = fl->fill;
	fl->fill = NULL;
	if (e == NULL || strcmp(e->gen, fl->seen_gen) == 0) {
		entry_unref(&e);
		return FL_LOCK;
	}
	verdict_set(&fl->verdict, OUT_COLLAPSED, OUT_COLLAPSED, e);
	return FL_DONE;
}

/*
 * A sibling worker fetches the key: its response streams to our waiters.
 * Once it has ended (streamed, whole or cut, or no stream for us), the
 * waiters that did not get it (HEADs, late ones) go on as after a busy
 * lock: the entry is stored, or its lock released, soon.
 */
static enum flight_step
flight_peer(struct flight *fl)
{
	if (fl->peer != NULL)
		return FL_PARK;
	if (!fl->peer_ended) {
		/* Still subscribed: a fill meanwhile is noted. */
		fl->peer = peer_fetch(fl->px, fl->peer_slot, fl->key, fl->uri,
		    on_flight_stream, on_flight_peer, fl);
		return fl->peer != NULL ? FL_PARK : FL_WAIT;
	}
	fl->peer_ended = 0;
	if (fl->stream_state == STREAM_ON)
		flight_end_streams(fl, fl->peer_ok, OUT_COLLAPSED, -1);
	else
		STAT_INC(fl->px->stats, fl->route, peer_fallbacks);
	fl->stream_state = STREAM_NONE;
	if (TAILQ_EMPTY(&fl->waiters))
		return FL_DONE;
	return flight_after_busy(fl);
}

/* Hands the answer to every waiter and frees the flight. */
static void
flight_done(struct flight *fl)
{
	struct proxy *px = fl->px;

	upstream_cancel(&fl->peer);
	flight_end_streams(fl, 0, OUT_FETCHED, -1);	/* any left: cut short */
	waitlist_refuse_peers(&fl->waiters, &fl->verdict);
	dict_del(px->flights, fl->key);
	TAILQ_REMOVE(&px->flight_list, fl, link);
	probe_rush(px, fl->route, &fl->rt, &fl->waiters, &fl->verdict,
	    fl->lead_streamed || fl->lead_left);
	cache_op_cancel(&fl->op);
	stream_free(&fl->stream);
	entry_unref(&fl->verdict.entry);
	entry_unref(&fl->prev);
	entry_unref(&fl->look_entry);
	entry_unref(&fl->rep.entry);
	entry_unref(&fl->fill);
	hl_free(&fl->headers);
	fetch_drop(&fl->fetch);
	event_free(fl->poll_ev);
	hold_free(&fl->hold);
	free(fl->uri);
	fl->magic = 0;
	free(fl);
}

static void
flight_run(struct flight *fl)
{
	enum flight_step next;

	for (;;) {
		assert(fl->magic == FLIGHT_MAGIC);
		switch (fl->step) {
		case FL_LOOKUP:
			next = flight_lookup(fl);
			break;
		case FL_LOCK:
			next = flight_fetch(fl, RF_LOCKED);
			break;
		case FL_WAIT:
			next = flight_wait(fl);
			break;
		case FL_PEER:
			next = flight_peer(fl);
			break;
		case FL_DIRECT:
			next = flight_fetch(fl, RF_DIRECT);
			break;
		case FL_DONE:
			flight_done(fl);
			return;
		case FL_PARK:
		default:
			return;
		}
		if (next == FL_PARK)
			return;
		log_step("flight", fl->id, step_names[fl->step],
		    step_names[next]);
		fl->step = next;
	}
}

/* ---- callbacks: each copies its result and re-enters flight_run() --- */

static void
on_flight_lookup(enum cache_result r, struct cache_entry *e, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC && fl->step == FL_LOOKUP);
	fl->op = NULL;
	fl->looked = 1;
	fl->look_result = r;
	fl->look_entry = e;
	flight_run(fl);
}

static void
on_flight_report(struct refresh_report *rep, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->refresh = NULL;
	fl->rep = *rep;
	rep->entry = NULL;	/* the flight takes it */
	fl->reported = 1;
	flight_run(fl);
}

static void
on_flight_peer(struct upstream_response *resp, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC && fl->step == FL_PEER);
	fl->peer = NULL;
	fl->peer_ended = 1;
	fl->peer_ok = resp->result == UPSTREAM_OK;
	if (fl->stream_state == STREAM_ON && !fl->peer_ok)
		log_warn("%s: the sibling worker's stream failed: %s",
		    fl->key, resp->error);
	else if (fl->stream_state != STREAM_ON)
		log_debug("%s: no stream from the sibling worker (%s%d)",
		    fl->key, fl->peer_ok ? "status " : resp->error,
		    fl->peer_ok ? resp->status : 0);
	upstream_response_free(&resp);
	flight_run(fl);
}

static void
on_flight_poll(evutil_socket_t fd, short what, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->fill_pending = 1;
	flight_run(fl);
}

/* lock_wait ran out (fl->hold.expired): a sibling asked for a stream
 * that has not begun is asked no more. */
static void
on_flight_held_too_long(void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	if (fl->step == FL_PEER && fl->peer != NULL &&
	    fl->stream_state == STREAM_NONE) {
		upstream_cancel(&fl->peer);
		fl->peer_ended = 1;
		fl->peer_ok = 0;
	}
	flight_run(fl);
}

/* A fill for fl's key (e: the entry, if it came along and may serve).
 * The notification may overtake the acquire's reply, or come while a
 * sibling's stream still runs: the step it finds decides. */
static void
flight_filled(struct flight *fl, struct cache_entry *e)
{
	fl->fill_pending = 1;
	fl->verdict.woken_us = util_mono_us();
	entry_unref(&fl->fill);
	fl->fill = e != NULL ? entry_ref(e) : NULL;
	if (fl->step == FL_WAIT)
		flight_run(fl);
}

void
flight_on_fill(const char *key, struct cache_entry *e, void *arg)
{
	struct proxy *px = arg;
	struct flight *fl, *next;

	assert(px->magic == PROXY_MAGIC);
	if (key != NULL) {
		e = near_fill(px, key, e);
		if ((fl = dict_get(px->flights, key)) != NULL)
			flight_filled(fl, e);
		return;
	}
	near_drop_prefix(px, "");
	/* Resubscribed: anything may have been filled meanwhile. */
	for (fl = TAILQ_FIRST(&px->flight_list); fl != NULL; fl = next) {
		next = TAILQ_NEXT(fl, link);
		flight_filled(fl, NULL);
	}
}

/* ---- the face ------------------------------------------------------- */

/* w waits in fl: late if the body has begun (it could not be fed it). */
static void
flight_enter(struct flight *fl, struct waiter *w)
{
	TAILQ_INSERT_TAIL(&fl->waiters, w, flight_link);
	w->flight = fl;
	w->late = fl->stream_state != STREAM_NONE;
}

static struct flight *
flight_new(struct proxy *px, const char *key, const char *uri, int route,
    const struct conf_route *rt, const struct fetch_spec *spec)
{
	struct flight *fl;

	if ((fl = calloc(1, sizeof(*fl))) == NULL)
		return NULL;
	fl->magic = FLIGHT_MAGIC;
	fl->id = ++px->machine_ids;
	fl->px = px;
	fl->step = FL_LOOKUP;
	fl->route = route;
	fl->rt = *rt;
	fl->verdict.upstream_ms = -1;
	TAILQ_INIT(&fl->waiters);
	hl_init(&fl->headers);
	snprintf(fl->key, sizeof(fl->key), "%s", key);
	fl->uri = strdup(uri);
	fl->poll_ev = evtimer_new(px->base, on_flight_poll, fl);
	if (hold_init(&fl->hold, px->base, on_flight_held_too_long, fl) == -1 ||
	    fetch_keep(&fl->fetch, spec) == -1 || fl->uri == NULL ||
	    fl->poll_ev == NULL || dict_set(px->flights, fl->key, fl) == -1) {
		if (fl->poll_ev != NULL)
			event_free(fl->poll_ev);
		hold_free(&fl->hold);
		fetch_drop(&fl->fetch);
		free(fl->uri);
		free(fl);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&px->flight_list, fl, link);
	log_debug("flight %llu: %s", (unsigned long long)fl->id, fl->key);
	return fl;
}

int
flight_join(struct proxy *px, struct waiter *w, const char *key,
    const char *uri, int route, const struct conf_route *rt, int early_due)
{
	struct flight *fl;

	if ((fl = dict_get(px->flights, key)) != NULL) {
		fl->early_due |= early_due;
		if (fl->stream_state == STREAM_NONE || fl->stream == NULL ||
		    stream_join_late(fl->stream, w) == -1)
			flight_enter(fl, w);
		return 0;
	}
	if ((fl = flight_new(px, key, uri, route, rt, w->spec)) == NULL)
		return -1;
	fl->early_due = early_due;
	fl->authorized = fetch_shared_headers(w, rt, &fl->headers);
	flight_enter(fl, w);
	flight_run(fl);
	return 0;
}

/* The last waiter left: a fetch not sent yet is no one's work now. */
void
flight_leave(struct waiter *w)
{
	struct flight *fl = w->flight;

	if (fl == NULL)
		return;
	fl->lead_left |= w == TAILQ_FIRST(&fl->waiters);
	TAILQ_REMOVE(&fl->waiters, w, flight_link);
	w->flight = NULL;
	if (TAILQ_EMPTY(&fl->waiters) && fl->refresh != NULL &&
	    fl->step == FL_LOCK)
		refresh_unwanted(fl->refresh);
}

int
flight_attach_peer(struct proxy *px, struct waiter *w, const char *key)
{
	struct flight *fl = dict_get(px->flights, key);

	assert(w->peer);
	if (fl == NULL || fl->refresh == NULL)
		return -1;	/* nothing is fetched for it here */
	if (fl->stream_state == STREAM_NONE) {
		/* It gets the head with the flight's own waiters. */
		flight_enter(fl, w);
		return 0;
	}
	if (fl->stream_state != STREAM_ON || fl->stream == NULL)
		return -1;
	return stream_join_late(fl->stream, w);
}

void
flight_abandon_waiting(struct proxy *px)
{
	struct flight *fl, *next;

	for (fl = TAILQ_FIRST(&px->flight_list); fl != NULL; fl = next) {
		next = TAILQ_NEXT(fl, link);
		if (fl->refresh != NULL)
			continue;	/* answered when its refresh reports */
		verdict_set(&fl->verdict, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_done(fl);	/* cancels its op and timers */
	}
}

void
flight_shutdown_all(struct proxy *px)
{
	struct flight *fl;

	while ((fl = TAILQ_FIRST(&px->flight_list)) != NULL) {
		if (fl->refresh != NULL) {
			refresh_detach(fl->refresh);
			fl->refresh = NULL;
		}
		verdict_set(&fl->verdict, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_done(fl);	/* cancels its op and timers */
	}
}

void
flight_remap(struct proxy *px, const struct conf *new)
{
	struct flight *fl;

	TAILQ_FOREACH(fl, &px->flight_list, link)
		fl->route = conf_route_index(new, fl->rt.prefix);
}
