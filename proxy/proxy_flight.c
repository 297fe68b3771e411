/*
 * struct flight: every request of this process for one key that has no
 * answer yet. One Redis round trip per key per process, not per request;
 * the first request leads (its fetch is the one that runs).
 *
 *	LOOKUP -> DONE (fresh, or stale: served at once, refresh started)
 *	       -> LOCK -> DONE (we fetched, or someone else filled the key)
 *	               -> WAIT -> LOCK ... (woken by a "filled" notification,
 *	                                    or by a bounded fallback poll)
 *	                       -> DIRECT -> DONE (lock_wait ran out)
 *	               -> PEER -> DONE (a sibling worker fetches the key: its
 *	                                response streamed to our waiters)
 *	                       -> WAIT ... (it had no stream for us)
 *	       -> DIRECT -> DONE (Redis is unavailable: fetch without a lock)
 *
 * With workers > 1, a flight whose fetch streams also serves its siblings'
 * PEER requests (proxy_peer.c): they wait in it like its own requests, and
 * one that comes once the body has begun gets what came so far first,
 * as long as all of it was kept.
 */

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"

#define FLIGHT_MAGIC		0x464c4754u	/* "FLGT" */
#define STREAM_RECHECK_MS	50	/* a paused stream, if no client drains */

enum flight_step {
	FL_LOOKUP,
	FL_LOCK,
	FL_WAIT,
	FL_PEER,
	FL_DIRECT,
	FL_DONE,
};

/* What the response being fetched turned out to be. */
enum stream_state {
	STREAM_NONE,		/* no head yet */
	STREAM_ON,		/* streamed to the flight's requests */
	STREAM_WHOLE,		/* answered whole, when it ends */
};

struct flight {
	uint32_t		 magic;
	struct proxy		*px;
	enum flight_step	 step;
	int			 route;		/* for counters; -1 if reloaded away */
	struct conf_route	 rt;		/* its settings when the flight began */
	char			 key[FLOW_KEY_MAX + 1];
	char			*uri;
	struct evkeyvalq	 headers;	/* sent upstream */
	TAILQ_HEAD(, req)	 reqs;		/* the first one led */
	TAILQ_HEAD(, req)	 streams;	/* replies going out as the body
						 * arrives (from reqs) */
	int			 lead_streamed;	/* the lead is among them */
	int			 stream_paused;	/* a client is behind */
	int			 partial;	/* the body was not all kept */
	struct event		*stream_ev;	/* re-checks a paused stream */
	enum stream_state	 stream_state;	/* of the fetch running */
	struct upstream_response *head;	/* workers > 1: its head, and */
	struct evbuffer		*replay;	/* its body while all is kept */
	struct upstream_fetch	*peer;		/* PEER: a sibling's stream */
	int			 peer_slot;	/* PEER: that sibling */
	TAILQ_ENTRY(flight)	 link;
	struct cache_op		*op;
	struct refresh		*refresh;
	struct event		*poll_ev;
	struct event		*deadline_ev;
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	struct cache_entry	*prev;		/* the unusable entry it saw: for
						 * validators, and stale-if-error */
	int			 authorized;	/* the lead sends credentials */
	int			 early_due;	/* a request's XFetch roll said so */
	int			 not_forwarded;	/* answered from a backoff */
	int			 upstream_status;	/* the lead's fetch, if not
						 * the entry's (a 304) */
	int			 waited;
	int			 timed_out;	/* lock_wait ran out */
	int			 degraded;	/* Redis failed */
	int			 fill_pending;	/* a fill arrived mid-acquire */

	/* The answer, set before DONE. */
	enum outcome		 lead_outcome;
	enum outcome		 rest_outcome;
	struct cache_entry	*entry;
	enum upstream_result	 uerr;
	char			 failure[FAILURE_MAX];
	int			 shareable;
	int64_t			 upstream_ms;	/* the lead's fetch, or -1 */
	char			 vary[VARY_SPEC_MAX];	/* the answer varies on */
	char			 variant[CACHE_VARIANT_MAX];	/* the lead's */
	int			 redirect;	/* K varies: every request goes
						 * to its variant instead */
	int			 pass_all;	/* hit-for-miss: all go upstream */
};

/* Every live flight, for a drain and for shutdown. */
static TAILQ_HEAD(, flight)	all_flights = TAILQ_HEAD_INITIALIZER(all_flights);

static void flight_run(struct flight *fl);

static void on_flight_refresh(struct refresh_report *rep, void *arg);
static int on_flight_stream(const struct upstream_response *resp,
    struct evbuffer *chunk, void *arg);

/* Starts a refresh of fl's key; it reports to cb, if not NULL. */
static struct refresh *
flight_refresh(struct flight *fl, enum refresh_mode mode, const char *seen_gen,
    struct cache_entry *base, refresh_done_cb *cb)
{
	struct refresh_args a = {
		.mode = mode,
		.key = fl->key,
		.uri = fl->uri,
		.route = fl->route,
		.rt = &fl->rt,
		.authorized = fl->authorized,
		.headers = &fl->headers,
		.seen_gen = seen_gen,
		.base = base,
		.stream = cb != NULL ? on_flight_stream : NULL,
	};

	return refresh_start(fl->px, &a, cb, cb != NULL ? fl : NULL);
}

static void
flight_set_answer(struct flight *fl, enum outcome lead, enum outcome rest,
    struct cache_entry *e)
{
	fl->lead_outcome = lead;
	fl->rest_outcome = rest;
	entry_unref(&fl->entry);
	fl->entry = e;
	fl->shareable = 1;
	fl->step = FL_DONE;
}

/* Keeps an entry that can no longer be served as it is: the refresh
 * revalidates it, and stale_if_error may still serve it. */
static void
flight_keep_prev(struct flight *fl, struct cache_entry **ep)
{
	struct cache_entry *e = *ep;

	*ep = NULL;
	snprintf(fl->seen_gen, sizeof(fl->seen_gen), "%s", e->gen);
	entry_unref(&fl->prev);
	if (e->status != 0)
		fl->prev = e;
	else
		entry_unref(&e);	/* unreadable: only its gen counts */
}

/* May the flight serve its previous entry because the upstream failed? */
static int
stale_if_error(const struct flight *fl)
{
	struct freshness f;

	if (fl->prev == NULL)
		return 0;
	hdr_freshness(fl->prev->status, &fl->prev->headers, 0, &fl->rt,
	    util_now_ms(), &f);
	return util_now_ms() < fl->prev->fresh_until_ms + f.sie_ms;
}

/* The key's responses vary (a marker says on what): every request of the
 * flight goes on to its own variant. */
static void
flight_redirect(struct flight *fl, struct cache_entry **marker)
{
	const char *spec = evhttp_find_header(&(*marker)->headers, "Vary");

	snprintf(fl->vary, sizeof(fl->vary), "%s", spec != NULL ? spec : "");
	if (strchr(fl->key, '\n') == NULL)
		vary_learn(fl->px, fl->key, fl->vary);
	entry_unref(marker);
	fl->redirect = 1;
	fl->step = FL_DONE;
}

/*
 * XFetch (Vattani, Chierichetti and Lowenstein, VLDB 2015): a hit on a
 * fresh entry is due for a refresh when now - delta * beta * ln(rand())
 * reaches fresh_until, where delta is how long the entry's fetch took.
 * One draw per hit.
 */
int
xfetch_due(const struct conf_route *rt, const struct cache_entry *e)
{
	double late;

	if (!rt->early_refresh || e->fetch_ms == 0)
		return 0;
	late = -(double)e->fetch_ms * rt->early_refresh_beta *
	    log(util_random_unit());
	return (double)util_now_ms() + late >= (double)e->fresh_until_ms;
}

/* Should a hit of the flight on a fresh entry refresh it now? Refreshes
 * still go through the lock: one per fleet. */
static int
refresh_early(const struct flight *fl, const struct cache_entry *e)
{
	if (!fl->rt.early_refresh || e->fetch_ms == 0 ||
	    refresh_running(fl->px, fl->key))
		return 0;
	/* A request drew already, when its near-cache hit was due. */
	return fl->early_due || xfetch_due(&fl->rt, e);
}

static void
on_flight_lookup(enum cache_result r, struct cache_entry *e, void *arg)
{
	struct flight *fl = arg;
	struct proxy *px = fl->px;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->op = NULL;
	if (r == CACHE_ERROR) {
		fl->degraded = 1;
		fl->step = FL_DIRECT;
	} else if (r == CACHE_ABSENT) {
		fl->step = FL_LOCK;
	} else if (evhttp_find_header(&e->headers, VARY_MARKER) != NULL) {
		flight_redirect(fl, &e);
	} else {
		switch (entry_state(e, util_now_ms())) {
		case ENTRY_FRESH:
			near_put(px, fl->key, e);
			if (refresh_early(fl, e)) {
				STAT_INC(px->stats, fl->route, early_refreshes);
				(void)flight_refresh(fl, RF_LOCKED, e->gen, e,
				    NULL);
			}
			flight_set_answer(fl, OUT_HIT, OUT_HIT, e);
			break;
		case ENTRY_STALE:
			if (!refresh_running(px, fl->key))
				(void)flight_refresh(fl, RF_LOCKED, e->gen, e,
				    NULL);
			flight_set_answer(fl, OUT_STALE, OUT_STALE, e);
			break;
		case ENTRY_EXPIRED:
			flight_keep_prev(fl, &e);
			fl->step = FL_LOCK;
			break;
		}
	}
	flight_run(fl);
}

/*
 * Hands req, taken out of fl, its answer: outcome o and entry e (req takes
 * this reference; NULL for an answer Corral makes up). The lead also gets
 * what its own fetch took and said.
 */
static void
flight_hand(struct flight *fl, struct req *req, enum outcome o,
    struct cache_entry *e, int lead)
{
	struct handover h = {
		.outcome = o,
		.entry = e,
		.uerr = fl->uerr,
		.not_forwarded = fl->not_forwarded,
		.failure = fl->failure,
		.upstream_ms = lead ? fl->upstream_ms : -1,
		.upstream_status = lead ? fl->upstream_status : 0,
	};

	req->flight = NULL;
	req_answer(req, &h);
}

/* Answers the flight's first request now; the rest stay in the flight. */
static void
flight_answer_lead(struct flight *fl, enum outcome o, struct cache_entry *e)
{
	struct req *req = TAILQ_FIRST(&fl->reqs);

	TAILQ_REMOVE(&fl->reqs, req, flight_link);
	flight_hand(fl, req, o, e, 1);
}

/* Starts the lock_wait budget, once per flight. */
static void
flight_start_wait(struct flight *fl)
{
	if (!fl->waited) {
		fl->waited = 1;
		timer_arm(fl->deadline_ev, fl->rt.lock_wait_ms);
	}
}

/* ---- streaming: the body to every waiting client as it arrives ------ */

/* Goes on with the fetch once every client has caught up. */
static void
stream_check(struct flight *fl)
{
	size_t low = (size_t)fl->px->conf->stream_window / 2;
	struct req *req;

	TAILQ_FOREACH(req, &fl->streams, flight_link) {
		if (req_stream_backlog(req) > low) {
			timer_arm(fl->stream_ev, STREAM_RECHECK_MS);
			return;
		}
	}
	fl->stream_paused = 0;
	evtimer_del(fl->stream_ev);
	if (fl->refresh != NULL)
		refresh_resume(fl->refresh);
	else if (fl->peer != NULL)
		upstream_resume(fl->peer);
}

static void
on_stream_recheck(evutil_socket_t fd, short what, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	if (fl->stream_paused)
		stream_check(fl);	/* a client that left drains nothing */
}

void
flight_stream_drained(struct req *req)
{
	struct flight *fl = req->flight;

	assert(fl->magic == FLIGHT_MAGIC);
	if (fl->stream_paused)
		stream_check(fl);
}

/* The siblings' requests waiting in fl get no stream: each is answered
 * at once (204), and its sibling waits for the entry as before. */
static void
refuse_peers(struct flight *fl)
{
	struct req *req, *next;

	for (req = TAILQ_FIRST(&fl->reqs); req != NULL; req = next) {
		next = TAILQ_NEXT(req, flight_link);
		if (!req->peer)
			continue;
		TAILQ_REMOVE(&fl->reqs, req, flight_link);
		flight_hand(fl, req, OUT_NONE, NULL, 0);
	}
}

/* Workers > 1: the head of a response that streams, and its body while
 * all of it is kept (as the entry is, up to max_entry_bytes), for a
 * sibling's request that comes once the body has begun. */
static void
keep_head(struct flight *fl, const struct upstream_response *resp)
{
	if ((fl->head = calloc(1, sizeof(*fl->head))) == NULL ||
	    (fl->replay = evbuffer_new()) == NULL) {
		free(fl->head);
		fl->head = NULL;
		return;		/* such a request gets a 204 */
	}
	TAILQ_INIT(&fl->head->headers);
	fl->head->status = resp->status;
	hdr_copy(&resp->headers, &fl->head->headers, 0);
}

static void
keep_body(struct flight *fl, struct evbuffer *chunk)
{
	if (fl->replay == NULL)
		return;
	if (evbuffer_get_length(fl->replay) + evbuffer_get_length(chunk) >
	    (size_t)fl->px->conf->max_entry_bytes ||
	    evbuffer_add_buffer_reference(fl->replay, chunk) == -1) {
		evbuffer_free(fl->replay);	/* no longer from the start */
		fl->replay = NULL;
	}
}

/* The fetch is over: the next one starts from nothing. */
static void
forget_head(struct flight *fl)
{
	fl->stream_state = STREAM_NONE;
	upstream_response_free(&fl->head);
	if (fl->replay != NULL)
		evbuffer_free(fl->replay);
	fl->replay = NULL;
}

/*
 * req gets the stream from now on. A sibling worker's request goes first,
 * so that each piece reaches the sibling before this worker's own
 * clients, and the sibling's clients get it while these do.
 */
static void
stream_join(struct flight *fl, struct req *req)
{
	if (req->peer)
		TAILQ_INSERT_HEAD(&fl->streams, req, flight_link);
	else
		TAILQ_INSERT_TAIL(&fl->streams, req, flight_link);
}

/*
 * The fetch's response as it arrives (from the upstream, or from the
 * sibling that fetches it: PEER). A long, shareable one goes to every
 * GET of the flight at once, a piece at a time by reference, the fetch
 * pausing while a client is more than stream_window behind. Requests that
 * join later, or are HEADs, get the entry when it is whole.
 */
static int
on_flight_stream(const struct upstream_response *resp, struct evbuffer *chunk,
    void *arg)
{
	struct flight *fl = arg;
	struct req *req, *next, *first;
	size_t most = 0;
	int lead, siblings;

	assert(fl->magic == FLIGHT_MAGIC);
	if (chunk == NULL) {
		if (!stream_wanted(resp, 1) || !hdr_shareable(&resp->headers) ||
		    evhttp_find_header(&resp->headers, "Vary") != NULL) {
			fl->stream_state = STREAM_WHOLE;
			refuse_peers(fl);
			return 0;	/* answered whole, as it may vary */
		}
		/* A sibling's stream: every request waited. */
		first = fl->peer == NULL ? TAILQ_FIRST(&fl->reqs) : NULL;
		/* The siblings' heads first too (see stream_join()). */
		for (siblings = 1; siblings >= 0; siblings--) {
			for (req = TAILQ_FIRST(&fl->reqs); req != NULL;
			    req = next) {
				next = TAILQ_NEXT(req, flight_link);
				lead = req == first;
				if (!req->peer != !siblings ||
				    req_stream_start(req, resp, !lead) == -1)
					continue;
				TAILQ_REMOVE(&fl->reqs, req, flight_link);
				stream_join(fl, req);
				fl->lead_streamed |= lead;
			}
		}
		fl->stream_state = STREAM_ON;
		if (fl->peer != NULL)
			STAT_INC(fl->px->stats, fl->route, peer_streams);
		keep_head(fl, resp);
		return UPSTREAM_STREAM;
	}
	keep_body(fl, chunk);
	TAILQ_FOREACH(req, &fl->streams, flight_link) {
		size_t queued = req_stream_data(req, chunk);

		most = MAX(most, queued);
	}
	if (most <= (size_t)fl->px->conf->stream_window)
		return 0;
	fl->stream_paused = 1;
	timer_arm(fl->stream_ev, STREAM_RECHECK_MS);
	return UPSTREAM_PAUSE;
}

/* Every reply under way ends, whole only if ok; the lead's (if it
 * streamed: the first of this worker's, the siblings' going first) is
 * lead_o, with what its fetch took. */
static void
end_streams(struct flight *fl, int ok, enum outcome lead_o, int64_t lead_ms)
{
	int lead = fl->lead_streamed, this;
	struct req *req;

	evtimer_del(fl->stream_ev);
	fl->stream_paused = 0;
	while ((req = TAILQ_FIRST(&fl->streams)) != NULL) {
		TAILQ_REMOVE(&fl->streams, req, flight_link);
		req->flight = NULL;
		this = lead && !req->peer;
		req_stream_end(req, ok, this ? lead_o : OUT_COLLAPSED,
		    this ? lead_ms : -1);
		lead &= !this;
	}
}

/* The fetch ended (rf NULL: the flight is given up): every reply under
 * way ends, whole only if the fetch brought the whole response. */
static void
flight_end_streams(struct flight *fl, const struct refresh_report *rf)
{
	int ok = rf != NULL && rf->result == RFR_FETCHED &&
	    rf->failure[0] == '\0';

	if (rf != NULL)
		fl->partial = rf->partial;
	end_streams(fl, ok, rf != NULL && rf->stored ? OUT_STORED :
	    OUT_FETCHED, rf != NULL ? rf->fetch_ms : -1);
}

/*
 * The upstream failed (e, if not NULL, is its 5xx answer). A stale entry
 * that stale_if_error covers is served instead. Otherwise the request
 * whose fetch failed gets the failure, and one of the others, if any and
 * within lock_wait, takes the lock over: they are not all thrown at the
 * upstream at once (and while the key backs off, none is).
 */
static void
flight_failed(struct flight *fl, const struct refresh_report *rf,
    struct cache_entry *e)
{
	enum outcome o = e != NULL ? OUT_FETCHED : OUT_UPSTREAM_ERROR;

	fl->uerr = rf->uerr;
	snprintf(fl->failure, sizeof(fl->failure), "%s", rf->failure);
	if (stale_if_error(fl)) {
		entry_unref(&e);
		flight_set_answer(fl, OUT_STALE_ERROR, OUT_STALE_ERROR,
		    entry_ref(fl->prev));
		return;
	}
	if (fl->lead_streamed) {
		/* Its lead's reply was cut (and its connection closed): the
		 * others, if any, try again within lock_wait. */
		fl->lead_streamed = 0;
		if (rf->mode == RF_LOCKED && !fl->timed_out &&
		    !TAILQ_EMPTY(&fl->reqs)) {
			entry_unref(&e);
			flight_start_wait(fl);
			fl->step = FL_LOCK;
			return;
		}
	} else if (rf->mode == RF_LOCKED && !fl->timed_out &&
	    TAILQ_NEXT(TAILQ_FIRST(&fl->reqs), flight_link) != NULL) {
		flight_answer_lead(fl, o, e);
		flight_start_wait(fl);
		fl->step = FL_LOCK;
		return;
	}
	flight_set_answer(fl, o, o, e);
}

static void
on_flight_refresh(struct refresh_report *rf, void *arg)
{
	struct flight *fl = arg;
	enum outcome lead;
	int direct;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->refresh = NULL;
	flight_end_streams(fl, rf);
	refuse_peers(fl);
	forget_head(fl);
	if (rf->fetch_ms >= 0)
		fl->upstream_ms = rf->fetch_ms;
	fl->upstream_status = rf->upstream_status;
	if (rf->result == RFR_STOPPING || (fl->px->abandoned &&
	    rf->result != RFR_FETCHED && rf->result != RFR_CHANGED)) {
		flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_run(fl);
		return;
	}
	switch (rf->result) {
	case RFR_BUSY:
		if (fl->timed_out)
			fl->step = FL_DIRECT;
		else if (fl->fill_pending)
			fl->step = FL_LOCK;
		else if ((fl->peer_slot = peer_find(fl->px, fl->key)) >= 0)
			fl->step = FL_PEER;	/* a sibling fetches it */
		else
			fl->step = FL_WAIT;
		break;
	case RFR_CHANGED:
		if (evhttp_find_header(&rf->entry->headers, VARY_MARKER) != NULL) {
			flight_redirect(fl, &rf->entry);
			break;
		}
		if (entry_state(rf->entry, util_now_ms()) == ENTRY_EXPIRED) {
			flight_keep_prev(fl, &rf->entry);
			fl->step = FL_LOCK;
			break;
		}
		if (entry_state(rf->entry, util_now_ms()) == ENTRY_FRESH)
			near_put(fl->px, fl->key, rf->entry);
		flight_set_answer(fl, OUT_COLLAPSED, OUT_COLLAPSED,
		    entry_ref(rf->entry));
		break;
	case RFR_FETCHED:
		if (rf->failure[0] != '\0') {
			/* A 5xx too long to keep whole is not passed on cut. */
			flight_failed(fl, rf, rf->partial ? NULL :
			    entry_ref(rf->entry));
			break;
		}
		direct = rf->mode == RF_DIRECT;
		if (direct && fl->timed_out)
			lead = OUT_WAIT_TIMEOUT;
		else if (direct && fl->degraded)
			lead = OUT_DEGRADED;
		else
			lead = rf->stored ? OUT_STORED : OUT_FETCHED;
		flight_set_answer(fl, lead, direct && fl->timed_out ?
		    OUT_WAIT_TIMEOUT : OUT_COLLAPSED, entry_ref(rf->entry));
		fl->shareable = rf->shareable;
		if (rf->vary[0] != '\0' && strchr(fl->key, '\n') == NULL) {
			/* Only requests of the lead's variant share it. */
			snprintf(fl->vary, sizeof(fl->vary), "%s", rf->vary);
			snprintf(fl->variant, sizeof(fl->variant), "%s",
			    strchr(rf->variant, '\n') + 1);
		}
		break;
	case RFR_UPSTREAM_ERROR:
	case RFR_NONE:
	case RFR_STOPPING:	/* answered above */
		flight_failed(fl, rf, NULL);
		break;
	case RFR_BACKOFF:
		fl->not_forwarded = 1;
		snprintf(fl->failure, sizeof(fl->failure), "%s", rf->failure);
		if (stale_if_error(fl))
			flight_set_answer(fl, OUT_STALE_ERROR, OUT_STALE_ERROR,
			    entry_ref(fl->prev));
		else	/* the upstream's own last error, if it sent one */
			flight_set_answer(fl, OUT_BACKOFF, OUT_BACKOFF,
			    rf->entry != NULL ? entry_ref(rf->entry) : NULL);
		break;
	case RFR_PASS:
		/* Hit-for-miss: the key's responses are per user; every
		 * request fetches its own, in parallel, without the lock. */
		flight_set_answer(fl, OUT_BYPASS, OUT_BYPASS, NULL);
		fl->pass_all = 1;
		break;
	case RFR_REDIS_ERROR:
		fl->degraded = 1;
		fl->step = FL_DIRECT;
		break;
	}
	flight_run(fl);
}

/*
 * The sibling's answer has ended: streamed (whole, or cut short: its
 * clients' connections are then closed), or there was no stream for us.
 * Requests that did not get it (HEADs, late ones) go on as after a busy
 * lock: the entry is stored, or its lock released, soon.
 */
static void
on_flight_peer(struct upstream_response *resp, void *arg)
{
	struct flight *fl = arg;
	int ok = resp->result == UPSTREAM_OK;

	assert(fl->magic == FLIGHT_MAGIC && fl->step == FL_PEER);
	fl->peer = NULL;
	if (fl->stream_state == STREAM_ON) {
		if (!ok)
			log_warn("%s: the sibling worker's stream failed: %s",
			    fl->key, resp->error);
		end_streams(fl, ok, OUT_COLLAPSED, -1);
	} else {
		STAT_INC(fl->px->stats, fl->route, peer_fallbacks);
		log_debug("%s: no stream from the sibling worker (%s%d)",
		    fl->key, ok ? "status " : resp->error, ok ? resp->status : 0);
	}
	upstream_response_free(&resp);
	forget_head(fl);
	if (TAILQ_EMPTY(&fl->reqs))
		fl->step = FL_DONE;
	else if (fl->timed_out)
		fl->step = FL_DIRECT;
	else if (fl->fill_pending)
		fl->step = FL_LOCK;
	else
		fl->step = FL_WAIT;
	flight_run(fl);
}

static void
flight_wake(struct flight *fl)
{
	if (fl->step == FL_WAIT) {
		evtimer_del(fl->poll_ev);
		fl->step = FL_LOCK;
		flight_run(fl);
	} else if (fl->step == FL_LOCK || fl->step == FL_PEER) {
		/* The notification may overtake the acquire's reply, or come
		 * while a sibling's stream still runs. */
		fl->fill_pending = 1;
	}
}

static void
on_flight_poll(evutil_socket_t fd, short what, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	flight_wake(fl);
}

static void
on_flight_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->timed_out = 1;
	if (fl->step == FL_WAIT) {
		evtimer_del(fl->poll_ev);
		fl->step = FL_DIRECT;
		flight_run(fl);
	}
}

/* Would req get the variant fl's lead got? */
static int
same_variant(const struct flight *fl, struct req *req)
{
	char id[CACHE_VARIANT_MAX];

	variant_id(fl->vary, req_headers(req), id);
	return strcmp(id, fl->variant) == 0;
}

/* Hands the answer to every request and frees the flight. */
static void
flight_done(struct flight *fl)
{
	struct proxy *px = fl->px;
	struct req *req;
	int lead = !fl->lead_streamed;

	upstream_cancel(&fl->peer);
	flight_end_streams(fl, NULL);	/* any left: cut short */
	refuse_peers(fl);
	forget_head(fl);
	dict_del(px->flights, fl->key);
	TAILQ_REMOVE(&all_flights, fl, link);
	while ((req = TAILQ_FIRST(&fl->reqs)) != NULL) {
		TAILQ_REMOVE(&fl->reqs, req, flight_link);
		req->flight = NULL;
		if (fl->redirect || (!lead && fl->vary[0] != '\0' &&
		    !same_variant(fl, req))) {
			req_to_variant(req, fl->vary);
			continue;
		}
		if (fl->pass_all) {
			req_pass(req, 1);
		} else if (fl->partial && fl->entry != NULL) {
			/* Its body went only to the streams: never half. */
			req_pass(req, 0);
		} else if (!lead && !fl->shareable) {
			req_pass(req, 0);	/* a per-user response */
		} else {
			flight_hand(fl, req, lead ? fl->lead_outcome :
			    fl->rest_outcome, fl->entry != NULL ?
			    entry_ref(fl->entry) : NULL, lead);
		}
		lead = 0;
	}
	cache_op_cancel(&fl->op);
	entry_unref(&fl->entry);
	entry_unref(&fl->prev);
	evhttp_clear_headers(&fl->headers);
	event_free(fl->poll_ev);
	event_free(fl->deadline_ev);
	event_free(fl->stream_ev);
	free(fl->uri);
	fl->magic = 0;
	free(fl);
}

/* A copy of src's bytes (src holds references, which cannot be
 * referenced again), or NULL. */
static struct evbuffer *
copy_of(struct evbuffer *src)
{
	int n = evbuffer_peek(src, -1, NULL, NULL, 0);
	struct evbuffer_iovec *v = NULL;
	struct evbuffer *dst;

	if ((dst = evbuffer_new()) == NULL)
		return NULL;
	if (n > 0 && (v = calloc((size_t)n, sizeof(*v))) == NULL)
		goto fail;
	n = evbuffer_peek(src, -1, NULL, v, n);
	for (int i = 0; i < n; i++)
		if (evbuffer_add(dst, v[i].iov_base, v[i].iov_len) == -1)
			goto fail;
	free(v);
	return dst;
fail:
	free(v);
	evbuffer_free(dst);
	return NULL;
}

/*
 * req joins a stream that has begun (a late request of this worker, or a
 * sibling's): it gets the head and the body so far first, then the rest
 * as it comes, if all of it was kept. 0, or -1: it waits for the entry.
 */
static int
stream_late(struct flight *fl, struct req *req)
{
	struct evbuffer *sofar;

	if (fl->stream_state != STREAM_ON || fl->head == NULL ||
	    fl->replay == NULL || (sofar = copy_of(fl->replay)) == NULL)
		return -1;
	if (req_stream_start(req, fl->head, 1) == -1) {
		evbuffer_free(sofar);
		return -1;
	}
	stream_join(fl, req);
	req->flight = fl;
	(void)req_stream_data(req, sofar);
	evbuffer_free(sofar);
	return 0;
}

/* Starts the refresh the flight waits for: with the lock (revalidating
 * what it saw) or directly. 0, or -1 with the flight answered 503. */
static int
flight_fetch(struct flight *fl, enum refresh_mode mode)
{
	int locked = mode == RF_LOCKED;

	fl->refresh = flight_refresh(fl, mode, locked ? fl->seen_gen : "",
	    locked ? fl->prev : NULL, on_flight_refresh);
	if (fl->refresh != NULL)
		return 0;
	flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
	return -1;
}

static void
flight_run(struct flight *fl)
{
	struct proxy *px = fl->px;
	const struct conf_route *rt = &fl->rt;

	assert(fl->magic == FLIGHT_MAGIC);
	for (;;) {
		switch (fl->step) {
		case FL_LOOKUP:
			fl->op = cache_lookup(px->cache, fl->key,
			    on_flight_lookup, fl);
			if (fl->op == NULL) {
				fl->degraded = 1;
				fl->step = FL_DIRECT;
				continue;
			}
			return;
		case FL_LOCK:
			fl->fill_pending = 0;
			if (flight_fetch(fl, RF_LOCKED) == -1)
				continue;
			return;
		case FL_WAIT:
			flight_start_wait(fl);
			timer_arm(fl->poll_ev, rt->lock_poll_ms);
			return;
		case FL_PEER:
			/* Still subscribed: a fill meanwhile is noted. */
			flight_start_wait(fl);
			fl->peer = peer_fetch(px, fl->peer_slot, fl->key, fl->uri,
			    on_flight_stream, on_flight_peer, fl);
			if (fl->peer == NULL) {
				fl->step = FL_WAIT;
				continue;
			}
			return;
		case FL_DIRECT:
			evtimer_del(fl->deadline_ev);
			if (fl->timed_out)
				STAT_INC(px->stats, fl->route, lock_wait_timeouts);
			if (flight_fetch(fl, RF_DIRECT) == -1)
				continue;
			return;
		case FL_DONE:
			flight_done(fl);
			return;
		}
	}
}

int
flight_join(struct proxy *px, struct req *req, const char *key,
    const char *uri, int route, const struct conf_route *rt, int early_due)
{
	struct flight *fl;
	int flags;

	if ((fl = dict_get(px->flights, key)) != NULL) {
		fl->early_due |= early_due;
		if (fl->stream_state != STREAM_NONE && stream_late(fl, req) == 0)
			return 0;
		TAILQ_INSERT_TAIL(&fl->reqs, req, flight_link);
		req->flight = fl;
		return 0;
	}
	if ((fl = calloc(1, sizeof(*fl))) == NULL)
		return -1;
	fl->magic = FLIGHT_MAGIC;
	fl->px = px;
	fl->step = FL_LOOKUP;
	fl->route = route;
	fl->rt = *rt;
	fl->early_due = early_due;
	fl->upstream_ms = -1;
	TAILQ_INIT(&fl->reqs);
	TAILQ_INIT(&fl->streams);
	TAILQ_INIT(&fl->headers);
	snprintf(fl->key, sizeof(fl->key), "%s", key);
	fl->uri = strdup(uri);
	fl->poll_ev = evtimer_new(px->base, on_flight_poll, fl);
	fl->deadline_ev = evtimer_new(px->base, on_flight_deadline, fl);
	fl->stream_ev = evtimer_new(px->base, on_stream_recheck, fl);
	if (fl->uri == NULL || fl->poll_ev == NULL || fl->deadline_ev == NULL ||
	    fl->stream_ev == NULL ||
	    dict_set(px->flights, fl->key, fl) == -1)
		goto fail;
	/* A shared fetch: nothing that would make the answer one client's. */
	flags = HDR_DROP_HOST | HDR_DROP_LENGTH | HDR_DROP_CONDITIONAL |
	    HDR_DROP_ENCODING | (rt->cache_authorized ? 0 : HDR_DROP_CREDENTIALS);
	fl->authorized = rt->cache_authorized &&
	    evhttp_find_header(req_headers(req), "Authorization") != NULL;
	req_forward_headers(req, &fl->headers, flags);
	TAILQ_INSERT_TAIL(&fl->reqs, req, flight_link);
	req->flight = fl;
	TAILQ_INSERT_TAIL(&all_flights, fl, link);
	flight_run(fl);
	return 0;
fail:
	if (fl->poll_ev != NULL)
		event_free(fl->poll_ev);
	if (fl->deadline_ev != NULL)
		event_free(fl->deadline_ev);
	if (fl->stream_ev != NULL)
		event_free(fl->stream_ev);
	evhttp_clear_headers(&fl->headers);
	free(fl->uri);
	free(fl);
	return -1;
}

int
flight_attach_peer(struct proxy *px, struct req *req)
{
	struct flight *fl = dict_get(px->flights, req->key);

	assert(req->peer);
	if (fl == NULL || fl->refresh == NULL)
		return -1;	/* nothing is fetched for it here */
	if (fl->stream_state == STREAM_NONE) {
		/* It gets the head with the flight's own requests. */
		TAILQ_INSERT_TAIL(&fl->reqs, req, flight_link);
		req->flight = fl;
		return 0;
	}
	return stream_late(fl, req);
}

/* A purge or invalidation anywhere in the fleet: key, or NULL when some
 * may have been missed. */
void
flow_on_purge(const char *key, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	if (key != NULL)
		near_drop(px, key);
	else
		near_drop_prefix(px, "");
}

/*
 * A fill came with the entry stored, fresh: a flight waiting for it is
 * answered with it at once, without reading it. 0, or -1 when the flight
 * must look (it is not waiting, or the entry is the one it saw).
 */
static int
flight_filled(struct flight *fl, struct cache_entry *e)
{
	if (fl->step != FL_WAIT || strcmp(e->gen, fl->seen_gen) == 0)
		return -1;
	evtimer_del(fl->poll_ev);
	flight_set_answer(fl, OUT_COLLAPSED, OUT_COLLAPSED, entry_ref(e));
	flight_run(fl);
	return 0;
}

void
flow_on_fill(const char *key, struct cache_entry *e, void *arg)
{
	struct proxy *px = arg;
	struct flight *fl, *next;

	assert(px->magic == PROXY_MAGIC);
	if (key != NULL) {
		near_drop(px, key);	/* a newer entry is in Redis */
		/* What came along serves only fresh, and only as itself. */
		if (e != NULL && (entry_state(e, util_now_ms()) != ENTRY_FRESH ||
		    evhttp_find_header(&e->headers, VARY_MARKER) != NULL))
			e = NULL;
		if (e != NULL)
			near_put(px, key, e);
		if ((fl = dict_get(px->flights, key)) != NULL &&
		    (e == NULL || flight_filled(fl, e) == -1))
			flight_wake(fl);
		return;
	}
	near_drop_prefix(px, "");
	/* Resubscribed: anything may have been filled meanwhile. */
	for (fl = TAILQ_FIRST(&all_flights); fl != NULL; fl = next) {
		next = TAILQ_NEXT(fl, link);
		flight_wake(fl);
	}
}

/* ================================================================
 * req
 * ================================================================ */


void
flight_leave(struct req *req)
{
	if (req->flight == NULL)
		return;
	if (req->streaming)
		TAILQ_REMOVE(&req->flight->streams, req, flight_link);
	else
		TAILQ_REMOVE(&req->flight->reqs, req, flight_link);
	req->flight = NULL;
}

/* Past the stop deadline: a flight with no refresh running answers its
 * requests with a 503 now (the others when their refresh reports). */
void
flight_abandon_all(void)
{
	struct flight *fl, *next;

	for (fl = TAILQ_FIRST(&all_flights); fl != NULL; fl = next) {
		next = TAILQ_NEXT(fl, link);
		if (fl->refresh != NULL)
			continue;	/* answered when its refresh reports */
		flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_done(fl);	/* cancels its op and timers */
	}
}

/* Every flight answers 503 now; its refresh goes on alone. */
void
flight_shutdown_all(void)
{
	struct flight *fl;

	while ((fl = TAILQ_FIRST(&all_flights)) != NULL) {
		if (fl->refresh != NULL) {
			refresh_detach(fl->refresh);
			fl->refresh = NULL;
		}
		flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_done(fl);	/* cancels its op and timers */
	}
}

/* A reload: each counts under the route of its prefix, if any. */
void
flight_remap(const struct conf *new)
{
	struct flight *fl;

	TAILQ_FOREACH(fl, &all_flights, link)
		fl->route = conf_route_index(new, fl->rt.prefix);
}
