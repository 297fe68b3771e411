/* SPDX-License-Identifier: MIT */
/*
 * What a flight's answers are made of (proxy_flight_int.h): a refresh's
 * report (fetched, stored, someone else's entry, busy, failed, backing
 * off, per user, Redis gone), a failure served stale where stale_if_error
 * allows, lock_wait running out. Each returns the flight's next step.
 * Calls proxy_waitlist.c (the verdict), proxy_hold.c, proxy_peer.c,
 * proxy_stream.c, proxy_vary.c and the near caches; nothing of the
 * machine in proxy_flight.c.
 */

#include <stdio.h>
#include <string.h>


#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flight_int.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_origin.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_stream.h"
#include "proxy/proxy_vary.h"

/* Keeps an entry that can no longer be served as it is: the refresh
 * revalidates it, and stale_if_error may still serve it. */
void
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
	if (fl->prev != NULL && maint_avoids(fl->px, fl->uri))
		return 1;	/* maintenance: however stale */
	return fl->prev != NULL && hdr_stale_if_error(fl->prev->status,
	    &fl->prev->headers, fl->prev->fresh_until_ms, &fl->rt);
}

/* The key's responses vary (a marker says on what): every waiter of the
 * flight goes on to its own variant. */
enum flight_step
flight_redirect(struct flight *fl, struct cache_entry **marker)
{
	const char *spec = hl_find(&(*marker)->headers, "Vary");

	snprintf(fl->verdict.vary, sizeof(fl->verdict.vary), "%s", spec != NULL ? spec : "");
	if (strchr(fl->key, '\n') == NULL)
		vary_learn(fl->px, fl->key, fl->verdict.vary);
	entry_unref(marker);
	fl->verdict.redirect = 1;
	return FL_DONE;
}

/* Every reply under way ends, whole only if ok; the lead's (if it
 * streamed) is lead_o, with what its fetch took. The next fetch, if any,
 * starts from nothing. */
void
flight_end_streams(struct flight *fl, int ok, enum outcome lead_o, int64_t lead_ms)
{
	fl->stream_state = STREAM_NONE;
	if (fl->stream == NULL)
		return;
	stream_end(fl->stream, ok, lead_o, lead_ms);
	stream_reset(fl->stream);
}

/*
 * The upstream failed (e, if not NULL, is its 5xx answer), for our fetch
 * or for the one we waited for (RFR_FAILED). A stale entry that
 * stale_if_error covers is served instead. Otherwise every waiter gets the
 * failure: none fetches again (the key's backoff decides when the next
 * request may).
 */
static enum flight_step
flight_failed(struct flight *fl, const struct refresh_report *rep,
    struct cache_entry *e)
{
	enum outcome rest = e != NULL ? OUT_COLLAPSED : OUT_UPSTREAM_ERROR;
	enum outcome o = e != NULL ? OUT_FETCHED : OUT_UPSTREAM_ERROR;

	fl->verdict.uerr = rep->uerr;
	fl->verdict.not_forwarded = rep->result == RFR_FAILED;
	snprintf(fl->verdict.failure, sizeof(fl->verdict.failure), "%s", rep->failure);
	if (stale_if_error(fl)) {
		entry_unref(&e);
		verdict_set(&fl->verdict, OUT_STALE_ERROR, OUT_STALE_ERROR,
		    entry_ref(fl->prev));
		return FL_DONE;
	}
	verdict_set(&fl->verdict, fl->verdict.not_forwarded ? rest : o, rest, e);
	return FL_DONE;
}

/*
 * lock_wait ran out while another process still fetches: the waiters get
 * the entry stale_if_error still serves, or 504. None fetches; the
 * holder's store answers the next request.
 */
enum flight_step
flight_give_up(struct flight *fl)
{
	evtimer_del(fl->poll_ev);
	STAT_INC(fl->px->stats, fl->route, lock_wait_timeouts);
	fl->verdict.not_forwarded = 1;
	if (stale_if_error(fl))
		verdict_set(&fl->verdict, OUT_STALE_ERROR, OUT_STALE_ERROR,
		    entry_ref(fl->prev));
	else
		verdict_set(&fl->verdict, OUT_WAIT_TIMEOUT, OUT_WAIT_TIMEOUT, NULL);
	return FL_DONE;
}

/* Someone else stored the key meanwhile. */
static enum flight_step
reported_changed(struct flight *fl, struct cache_entry **ep)
{
	if (vary_is_marker(*ep))
		return flight_redirect(fl, ep);
	switch (entry_state(*ep, util_now_ms())) {
	case ENTRY_EXPIRED:
		flight_keep_prev(fl, ep);
		return FL_LOCK;
	case ENTRY_FRESH:
		near_put(fl->px, fl->key, *ep);
		break;
	case ENTRY_STALE:
		break;
	}
	verdict_set(&fl->verdict, OUT_COLLAPSED, OUT_COLLAPSED, *ep);
	*ep = NULL;
	return FL_DONE;
}

/* The fetch brought a response (the entry's body is not whole if it
 * streamed past max_entry_bytes: those that came once it was past what
 * is kept share the next fetch, rather than each fetching its own). */
static enum flight_step
reported_fetched(struct flight *fl, struct refresh_report *rep)
{
	int direct = rep->mode == RF_DIRECT;
	enum outcome lead;

	if (rep->failure[0] != '\0')	/* a 5xx too long to keep whole is
					 * not passed on cut */
		return flight_failed(fl, rep, rep->partial ? NULL :
		    entry_ref(rep->entry));
	if (rep->partial && waitlist_next_round(&fl->waiters, &fl->verdict)) {
		fl->lead_streamed = 0;
		return direct ? FL_DIRECT : FL_LOCK;
	}
	if (direct && fl->degraded)
		lead = OUT_DEGRADED;
	else
		lead = rep->stored ? OUT_STORED : OUT_FETCHED;
	verdict_set(&fl->verdict, lead, OUT_COLLAPSED, entry_ref(rep->entry));
	fl->verdict.shareable = rep->shareable;
	fl->verdict.not_stored = rep->not_stored;
	if (rep->vary[0] != '\0' && strchr(fl->key, '\n') == NULL) {
		/* Only waiters of the lead's variant share it. */
		snprintf(fl->verdict.vary, sizeof(fl->verdict.vary), "%s", rep->vary);
		snprintf(fl->verdict.variant, sizeof(fl->verdict.variant), "%s",
		    strchr(rep->variant, '\n') + 1);
	}
	return FL_DONE;
}

/* After a busy lock, or a sibling that had no stream for us. */
enum flight_step
flight_after_busy(struct flight *fl)
{
	if (fl->fill_pending)
		return FL_LOCK;
	if (fl->hold.expired)
		return flight_give_up(fl);
	return FL_WAIT;
}

/* The flight's refresh has ended: what its report says comes next. */
/* The key backs off (or no origin slot came): nothing went upstream; the
 * stale entry where stale_if_error allows, else the upstream's own last
 * error, if it sent one. */
static enum flight_step
reported_backoff(struct flight *fl, const struct refresh_report *rep)
{
	fl->verdict.not_forwarded = 1;
	snprintf(fl->verdict.failure, sizeof(fl->verdict.failure), "%s",
	    rep->failure);
	if (stale_if_error(fl))
		verdict_set(&fl->verdict, OUT_STALE_ERROR, OUT_STALE_ERROR,
		    entry_ref(fl->prev));
	else
		verdict_set(&fl->verdict, OUT_BACKOFF, OUT_BACKOFF,
		    rep->entry != NULL ? entry_ref(rep->entry) : NULL);
	return FL_DONE;
}

enum flight_step
flight_reported(struct flight *fl)
{
	struct refresh_report *rep = &fl->rep;

	fl->verdict.partial = rep->partial;
	flight_end_streams(fl, rep->result == RFR_FETCHED && rep->failure[0] == '\0',
	    rep->stored ? OUT_STORED : OUT_FETCHED, rep->fetch_ms);
	waitlist_refuse_peers(&fl->waiters, &fl->verdict);
	if (rep->fetch_ms >= 0)
		fl->verdict.upstream_ms = rep->fetch_ms;
	fl->verdict.upstream_status = rep->upstream_status;
	if (rep->result == RFR_STOPPING || (fl->px->abandoned &&
	    rep->result != RFR_FETCHED && rep->result != RFR_CHANGED)) {
		verdict_set(&fl->verdict, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		return FL_DONE;
	}
	switch (rep->result) {
	case RFR_BUSY:
		hold_busy(&fl->hold, &fl->rt,
		    origin_fetch_max_ms(fl->px->conf, &fl->rt), rep->holder);
		if (!fl->hold.expired && !fl->fill_pending &&
		    (fl->peer_slot = peer_find(fl->px, fl->key)) >= 0)
			return FL_PEER;		/* a sibling fetches it */
		return flight_after_busy(fl);
	case RFR_CHANGED:
		return reported_changed(fl, &rep->entry);
	case RFR_FETCHED:
		return reported_fetched(fl, rep);
	case RFR_ORIGIN_BUSY:	/* as a backoff: nothing went upstream */
	case RFR_BACKOFF:
		return reported_backoff(fl, rep);
	case RFR_PASS:
		/* Hit-for-miss: the key's responses are per user; every
		 * request fetches its own, in parallel, without the lock. */
		verdict_set(&fl->verdict, OUT_BYPASS, OUT_BYPASS, NULL);
		fl->verdict.pass_all = 1;
		return FL_DONE;
	case RFR_REDIS_ERROR:
		fl->degraded = 1;
		return FL_DIRECT;
	case RFR_UNWANTED:
		/* Its waiters had all left; one that came since asks again. */
		if (!TAILQ_EMPTY(&fl->waiters))
			return FL_LOCK;
		verdict_set(&fl->verdict, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		return FL_DONE;
	case RFR_FAILED:	/* the fetch we waited for */
		return flight_failed(fl, rep, rep->entry != NULL ?
		    entry_ref(rep->entry) : NULL);
	case RFR_UPSTREAM_ERROR:
	case RFR_NONE:
	case RFR_STOPPING:	/* answered above */
		break;
	}
	return flight_failed(fl, rep, NULL);
}
