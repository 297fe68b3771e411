/* SPDX-License-Identifier: MIT */
/*
 * struct refresh: one fetch of a key for a flight (or for nobody: a
 * background refresh of a stale entry). It owns a lock token and a curl
 * handle and never points back at a client request, so a client that
 * leaves cannot break it. It reports once, after it has ended, through
 * the callback its starter gave. It asks cache/, upstream/, the near
 * caches, proxy_peer.c and proxy_vary.c; nothing above it by name.
 *
 *	LOCK -> FETCH (lock renewed) -> DECIDE -> STORE (fenced) -> DONE
 *	                                       -> RELEASE -> DONE
 *	     -> DONE (busy, a newer entry, the failure waited for, backoff,
 *	              hit-for-miss, Redis failed)
 *	     -> CLAIM -> FETCH -> DECIDE -> DONE	(DIRECT)
 *	FETCH -> RELEASE (given up: a stop, or nobody waits for it)
 *
 * LOCK runs one script: the lock (SET NX PX with a random token), or the
 * entry if it changed from the generation the flight saw, or the failure
 * of the holder the flight waited for, or the backoff of a failing key.
 * FETCH waits for its origin slot (proxy_budget.h) and then for the
 * origin. DECIDE is the protocol's table (proxy_decide.c). DIRECT
 * refreshes (Redis unavailable) skip STORE and RELEASE, and take the
 * instance's claim in CLAIM (proxy_peer.h) when Redis could not lock the
 * key: its holder fetches, puts what it would have stored in the near
 * caches and lets the claim go as it ends; a sibling's refresh meanwhile
 * polls for that entry (answered RFR_CHANGED), fetching itself if the
 * claim goes with no entry left for it, or after the route's wait for a
 * holder (proxy_hold.h).
 *
 * Each step is one function that returns the next, or RF_PARK to wait;
 * refresh_run() drives them and traces each move at debug level. The
 * callbacks (Redis's answers, the response, the sibling poll) copy what
 * they got into the refresh and re-enter refresh_run().
 */

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_graphql.h"
#include "common/dict.h"
#include "common/hlist.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_hold.h"
#include "proxy/proxy_jwt.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_origin.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_refresh_int.h"
#include "proxy/proxy_tags.h"
#include "proxy/proxy_vary.h"
#include "proxy/proxy_waitlist.h"
#include "upstream/upstream.h"

#define RENEW_DIVISOR		3	/* renew the lock every lock_ttl / 3 */
#define BACKOFF_BASE_MS		1000	/* first pause after a failed refresh */
#define KEEP_VALIDATORS_MS	60000	/* entries with validators: kept at least */
#define SIBLING_POLL_MS		20	/* a sibling's claim: let go yet? */
#define FAILED_KEEP_POLLS	4	/* a failure waits for its waiters' re-check */

static const char *const step_names[] = {
	[RF_LOCK] = "LOCK", [RF_CLAIM] = "CLAIM", [RF_FETCH] = "FETCH",
	[RF_DECIDE] = "DECIDE", [RF_STORE] = "STORE",
	[RF_RELEASE] = "RELEASE", [RF_DONE] = "DONE", [RF_PARK] = "PARK",
};

static void refresh_run(struct refresh *rf);
static int64_t expire_at(const struct refresh *rf);
static lock_cb on_refresh_lock;
static upstream_done_cb on_refresh_fetched;
static fence_cb on_refresh_stored;
static fence_cb on_refresh_released;

static void
mark_lost(struct refresh *rf)
{
	if (rf->lost)
		return;
	rf->lost = 1;
	STAT_INC(rf->px->stats, rf->route, lock_lost);
	log_warn("lock for %s was taken over, or a purge fenced it; this "
	    "fetch will not be stored", rf->key);
}

/*
 * What a background refresh leaves in the near caches: the newer entry
 * the lock found (while fresh), and no stale copy that only Redis could
 * have refreshed (the next request takes the usual path, which fetches
 * without Redis).
 */
static void
background_ended(struct refresh *rf)
{
	if (rf->report.mode != RF_LOCKED)
		return;
	if (rf->report.result == RFR_CHANGED)
		(void)near_fill(rf->px, rf->key, rf->report.entry);
	else if (rf->report.result == RFR_REDIS_ERROR && rf->stale_copy)
		near_drop(rf->px, rf->key);
}

static void
on_refresh_done(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	if (rf->cb != NULL)
		rf->cb(&rf->report, rf->cb_arg);
	else
		background_ended(rf);
	TAILQ_REMOVE(&rf->px->refresh_list, rf, link);
	rf->px->nrefreshes--;
	entry_unref(&rf->report.entry);
	entry_unref(&rf->base);
	entry_unref(&rf->marker);
	entry_unref(&rf->lock_e);
	if (rf->resp != NULL)
		upstream_response_free(&rf->resp);
	hl_free(&rf->headers);
	fetch_drop(&rf->sent);
	event_free(rf->renew_ev);
	event_free(rf->sibling_ev);
	event_free(rf->done_ev);
	free(rf->url);
	rf->magic = 0;
	free(rf);
}

/* Stops all work and reports from outside the current call stack. */
static void
refresh_end(struct refresh *rf)
{
	evtimer_del(rf->renew_ev);
	evtimer_del(rf->sibling_ev);
	cache_op_cancel(&rf->op);
	cache_op_cancel(&rf->renew_op);
	origin_cancel(&rf->fetch);
	peer_withdraw(rf->px, &rf->peer_entry);
	if (rf->claimed) {
		peer_unclaim(rf->px, rf->key);
		rf->claimed = 0;
	}
	if (rf->registered) {
		dict_del(rf->px->refreshes, rf->key);
		rf->registered = 0;
	}
	event_active(rf->done_ev, 0, 0);
}

/* ---- the lock's renewal, beside the fetch ---------------------------- */

static void
on_renewed(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->renew_op = NULL;
	if (r == FENCE_OK)
		STAT_INC(rf->px->stats, rf->route, lock_renewals);
	else if (r == FENCE_LOST)
		mark_lost(rf);
}

static void
on_renew_tick(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;
	const struct conf_route *rt = &rf->rt;

	assert(rf->magic == REFRESH_MAGIC);
	if (rf->step != RF_FETCH || rf->lost)
		return;
	if (rf->renew_op == NULL)
		rf->renew_op = lock_renew(rf->px->cache, rf->key, rf->token,
		    rt->lock_ttl_ms, on_renewed, rf);
	timer_arm(rf->renew_ev, rt->lock_ttl_ms / RENEW_DIVISOR);
}

static void
stop_renewing(struct refresh *rf)
{
	evtimer_del(rf->renew_ev);
	cache_op_cancel(&rf->renew_op);
}

/* ---- LOCK ----------------------------------------------------------- */

/* What a failure names: a result ("timeout", ...), or UPSTREAM_OK for an
 * upstream status ("503"). */
static enum upstream_result
result_named(const char *failure)
{
	enum upstream_result r;

	for (r = UPSTREAM_ERR_CONNECT; r <= UPSTREAM_ERR_PROTOCOL; r++)
		if (strcmp(upstream_result_name(r), failure) == 0)
			return r;
	return UPSTREAM_OK;
}

/* The lock script's answer, as the report says it, and what comes next:
 * the fetch, or the end (someone else's lock, entry, failure, backoff). */
static enum refresh_step
locked(struct refresh *rf)
{
	struct refresh_report *rep = &rf->report;

	switch (rf->lock_r) {
	case LOCK_ACQUIRED:
		STAT_INC(rf->px->stats, rf->route, locks_acquired);
		if (rf->waited[0] != '\0' && rf->lock_text[0] == '\0') {
			/* Its holder left the lock to expire: it died. */
			STAT_INC(rf->px->stats, rf->route, lock_takeovers);
			log_info("%s: took over a lock its holder left to expire",
			    rf->key);
		}
		return RF_FETCH;
	case LOCK_BUSY:
		STAT_INC(rf->px->stats, rf->route, lock_busy);
		snprintf(rep->holder, sizeof(rep->holder), "%s", rf->lock_text);
		rep->result = RFR_BUSY;
		break;
	case LOCK_FAILED:
		snprintf(rep->failure, sizeof(rep->failure), "%.*s",
		    (int)sizeof(rep->failure) - 1, rf->lock_text);
		rep->uerr = result_named(rf->lock_text);
		rep->result = RFR_FAILED;
		break;
	case LOCK_CHANGED:
		rep->result = RFR_CHANGED;
		break;
	case LOCK_BACKOFF:
		STAT_INC(rf->px->stats, rf->route, backoff_skips);
		snprintf(rep->failure, sizeof(rep->failure), "%.*s",
		    (int)sizeof(rep->failure) - 1, rf->lock_text);
		rep->result = RFR_BACKOFF;
		break;
	case LOCK_PASS:
		STAT_INC(rf->px->stats, rf->route, hit_for_miss);
		rep->result = RFR_PASS;
		break;
	case LOCK_ERROR:
		rep->result = RFR_REDIS_ERROR;
		break;
	}
	/* Its error response, the newer entry, or the last error: or NULL. */
	rep->entry = rf->lock_e;
	rf->lock_e = NULL;
	return RF_DONE;
}

/*
 * LOCK runs one script: the lock (SET NX PX with a random token), or the
 * entry if it changed from the generation the flight saw, or the failure
 * of the holder the flight waited for, or the backoff of a failing key.
 */
static enum refresh_step
refresh_lock(struct refresh *rf)
{
	struct proxy *px = rf->px;

	if (rf->op != NULL)
		return RF_PARK;
	if (rf->replied) {
		rf->replied = 0;
		return locked(rf);
	}
	if (px->draining) {	/* once a stop begins, nothing goes upstream */
		rf->report.result = RFR_STOPPING;
		return RF_DONE;
	}
	if (rf->report.mode == RF_DIRECT)
		return RF_CLAIM;
	/* Its flight may stream the response to the siblings' waiters too.
	 * Said before the lock is asked for: a sibling that finds the lock
	 * busy must see it. If the lock is lost, it only costs an asker a
	 * 204. */
	if (rf->stream != NULL && rf->cb != NULL)
		rf->peer_entry = peer_publish(px, rf->key);
	rf->op = lock_acquire(px->cache, rf->key, rf->token, rf->rt.lock_ttl_ms,
	    rf->seen_gen, rf->waited, on_refresh_lock, rf);
	if (rf->op == NULL) {
		rf->report.result = RFR_REDIS_ERROR;
		return RF_DONE;
	}
	return RF_PARK;
}

/*
 * CLAIM (DIRECT: Redis unavailable): the entry a sibling fetched under
 * the instance's claim, or the claim, or neither (fetch alone). While a
 * sibling still holds the claim, it is polled, as long as a holder is
 * waited for (proxy_hold.h).
 */
static enum refresh_step
refresh_claim(struct refresh *rf)
{
	struct proxy *px = rf->px;
	int64_t now = util_mono_us();

	if (evtimer_pending(rf->sibling_ev, NULL))
		return RF_PARK;
	if (px->draining) {
		rf->report.result = RFR_STOPPING;
		return RF_DONE;
	}
	if (!rf->claim)
		return RF_FETCH;
	if ((rf->report.entry = near_get(px, rf->key, util_now_ms(), 0)) !=
	    NULL) {
		STAT_INC(px->stats, rf->route, sibling_fills);
		rf->report.result = RFR_CHANGED;
		return RF_DONE;
	}
	switch (peer_claim(px, rf->key)) {
	case CLAIM_TAKEN:
		rf->claimed = 1;
		return RF_FETCH;
	case CLAIM_NONE:
		return RF_FETCH;
	case CLAIM_SIBLING:
		break;
	}
	if (rf->sibling_until_us == 0)
		rf->sibling_until_us = now + hold_budget_ms(&rf->rt,
		    origin_fetch_max_ms(px->conf, &rf->rt)) * 1000;
	else if (now >= rf->sibling_until_us)
		return RF_FETCH;	/* waited as for a holder: fetch alone */
	timer_arm(rf->sibling_ev, SIBLING_POLL_MS);
	return RF_PARK;
}

/* ---- FETCH ---------------------------------------------------------- */

/* The origin budget ranks a flight's miss by the clients that wait. */
static int
on_refresh_weight(void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	return rf->cb != NULL && rf->waiters != NULL ?
	    waitlist_count(rf->waiters) : 1;
}

/* The body as it arrives, for the flight (never a client directly). */
static int
on_refresh_data(const struct upstream_response *resp, struct evbuffer *chunk,
    void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	return rf->stream != NULL && rf->cb != NULL ?
	    rf->stream(resp, chunk, rf->cb_arg) : 0;
}

/* Its fetch is about to go, its origin slot granted: the token of a
 * claims key's requester must still verify (it may have expired while
 * the refresh waited for the lock or the slot). */
static int
on_refresh_may_send(void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->token_expired = !jwt_still_valid(rf->px, &rf->headers);
	return !rf->token_expired;
}

static int
start_fetch(struct refresh *rf)
{
	const struct conf *conf = rf->px->conf;
	const struct conf_route *rt = &rf->rt;
	struct origin_args oa = {
		.cls = rf->budget,
		.route = rf->route,
		.weight = on_refresh_weight,
		.weight_arg = rf,
		.may_send = rt->cache_authorized == CONF_AUTHZ_CLAIMS ?
		    on_refresh_may_send : NULL,
		.may_send_arg = rf,
		.pool = rt->upstream,
		.target = rf->url,
	};
	struct upstream_request ur = {
		.method = rf->sent.method,
		.headers = &rf->headers,
		.body = rf->sent.body,
		.body_len = rf->sent.body_len,
		.max_body_bytes = PASS_BODY_MAX,	/* larger: not stored */
		/* Only what has a key comes here: a GET, a HEAD or a POST query
		 * its route caches (a mutation is passed), which may go to a
		 * second server (RFC 9110 9.2.2). */
		.replayable = 1,
	};

	if (rf->stream != NULL) {
		/* The body flows to the flight as it comes; what is kept for
		 * the entry is bounded by what may be stored. */
		ur.on_data = on_refresh_data;
		ur.data_arg = rf;
		ur.keep_body = (size_t)conf->max_entry_bytes;
	}
	rf->fetch_start_us = util_mono_us();
	rf->fetch = origin_fetch(rf->px, &oa, &ur, on_refresh_fetched, rf);
	if (rf->fetch == NULL)
		return -1;
	if (rf->report.mode == RF_LOCKED)
		timer_arm(rf->renew_ev, rt->lock_ttl_ms / RENEW_DIVISOR);
	return 0;
}

static enum refresh_step
refresh_fetch(struct refresh *rf)
{
	if (rf->resp != NULL) {
		stop_renewing(rf);
		return RF_DECIDE;
	}
	if (rf->given_up != GIVEN_UP_NONE) {
		stop_renewing(rf);
		if (rf->given_up == GIVEN_UP_UNWANTED) {
			rf->report.result = RFR_UNWANTED;
		} else {	/* past the stop's deadline: no failure */
			rf->report.result = RFR_UPSTREAM_ERROR;
			rf->report.uerr = UPSTREAM_ERR_PROTOCOL;
		}
		return RF_RELEASE;
	}
	if (rf->fetch != NULL)
		return RF_PARK;
	if (rf->px->draining) {	/* locked as the stop began: let it go */
		rf->report.result = RFR_STOPPING;
		return RF_RELEASE;
	}
	if (start_fetch(rf) == -1) {
		if (rf->token_expired)	/* held back at once */
			return refresh_token_expired(rf);
		rf->report.result = RFR_UPSTREAM_ERROR;
		rf->report.uerr = UPSTREAM_ERR_PROTOCOL;
		return RF_RELEASE;
	}
	return RF_PARK;
}

/* ---- STORE and RELEASE ---------------------------------------------- */

/* Files the stored entry under one of its tags, for purges by tag. */
static void
tag_stored(const char *tag, void *arg)
{
	struct refresh *rf = arg;

	(void)cache_tag(rf->px->cache, rf->report.variant[0] != '\0' ?
	    rf->report.variant : rf->key, tag, expire_at(rf));
}

/* Stored: counted, filed under its tags, kept near while fresh. */
static void
stored(struct refresh *rf)
{
	struct refresh_report *rep = &rf->report;
	const char *body;
	size_t len;

	rep->stored = 1;
	STAT_INC(rf->px->stats, rf->route, stores);
	outcome_tags_dropped(rf->px->stats, rf->route, rf->key,
	    hdr_tags(&rep->entry->headers, tag_stored, rf));
	if (rf->sent.url_tag[0] != '\0')	/* a purge by URL */
		tag_stored(rf->sent.url_tag, rf);
	if (rf->rt.graphql && (body = coding_identity(rep->entry,
	    (size_t)rf->px->conf->max_entry_bytes, &len)) != NULL)
		(void)graphql_response_tags(body, len, tag_stored, rf);
	else if (rf->rt.graphql)	/* its objects: Type:id, decoded */
		log_warn("%s: stored compressed, not filed under its "
		    "objects (no room to decode it)", rf->key);
	if (entry_state(rep->entry, util_now_ms()) == ENTRY_FRESH)
		near_put(rf->px, rep->variant[0] != '\0' ? rep->variant :
		    rf->key, rep->entry);
}

static enum refresh_step
refresh_store(struct refresh *rf)
{
	if (rf->op != NULL)
		return RF_PARK;
	if (!rf->replied) {
		rf->op = cache_store(rf->px->cache, rf->key, rf->token,
		    rf->report.entry, expire_at(rf), rf->marker != NULL ?
		    rf->report.variant : NULL, rf->marker, rf->rt.max_variants,
		    on_refresh_stored, rf);
		return rf->op != NULL ? RF_PARK : RF_RELEASE;
	}
	rf->replied = 0;
	switch (rf->fence_r) {
	case FENCE_OK:		/* the script also deleted the lock */
		stored(rf);
		break;
	case FENCE_FULL:	/* the script also deleted the lock */
		outcome_variants_full(rf->px->stats, rf->route, rf->key,
		    rf->rt.max_variants);
		break;
	case FENCE_LOST:
		mark_lost(rf);
		break;
	case FENCE_ERROR:	/* maybe not stored: let the lock go */
		return RF_RELEASE;
	}
	return RF_DONE;
}

/* Redis keeps an entry while it may be served (stale, or on errors), and
 * one with validators a while longer, to be revalidated with a 304. */
static int64_t
expire_at(const struct refresh *rf)
{
	const struct cache_entry *e = rf->report.entry;
	int64_t at = MAX(e->stale_until_ms, e->fresh_until_ms + rf->sie_ms);

	if (hl_find(&e->headers, "ETag") != NULL ||
	    hl_find(&e->headers, "Last-Modified") != NULL)
		at = MAX(at, e->stored_ms + KEEP_VALIDATORS_MS);
	return at;
}

/* Lets the lock go, recording a failure (and the upstream's own error
 * response) or that the key's response is one user's. */
static struct cache_op *
release_op(struct refresh *rf)
{
	const struct conf_route *rt = &rf->rt;
	const struct refresh_report *rep = &rf->report;
	int failed = rep->failure[0] != '\0' && rep->result != RFR_ORIGIN_BUSY;
	struct release_args ra = {
		.failure = failed ? rep->failure : NULL,
		.error = failed && rep->result == RFR_FETCHED ? rep->entry : NULL,
		.backoff_base_ms = MIN(BACKOFF_BASE_MS, rt->error_backoff_ms),
		.backoff_max_ms = rt->error_backoff_ms,
		.backoff_after = rt->error_backoff_after,
		.hit_for_miss_ms = !failed && rep->result == RFR_FETCHED &&
		    !rep->shareable ? rt->hit_for_miss_ms : 0,
		.failed_ms = MAX(rt->lock_ttl_ms,
		    FAILED_KEEP_POLLS * rt->lock_poll_ms),
	};

	return lock_release(rf->px->cache, rf->key, rf->token, &ra,
	    on_refresh_released, rf);
}

static enum refresh_step
refresh_release(struct refresh *rf)
{
	if (rf->op != NULL)
		return RF_PARK;
	if (rf->replied) {
		rf->replied = 0;
		if (rf->fence_r == FENCE_LOST)
			mark_lost(rf);
		return RF_DONE;
	}
	if (rf->report.mode == RF_DIRECT || rf->lost)
		return RF_DONE;
	rf->op = release_op(rf);
	return rf->op != NULL ? RF_PARK : RF_DONE;
}

/* ---- the driver, and the callbacks that re-enter it ------------------ */

static void
refresh_run(struct refresh *rf)
{
	enum refresh_step next;

	for (;;) {
		assert(rf->magic == REFRESH_MAGIC);
		switch (rf->step) {
		case RF_LOCK:
			next = refresh_lock(rf);
			break;
		case RF_CLAIM:
			next = refresh_claim(rf);
			break;
		case RF_FETCH:
			next = refresh_fetch(rf);
			break;
		case RF_DECIDE:
			next = refresh_decide(rf);
			break;
		case RF_STORE:
			next = refresh_store(rf);
			break;
		case RF_RELEASE:
			next = refresh_release(rf);
			break;
		case RF_DONE:
			if (rf->report.result == RFR_FETCHED &&
			    !rf->report.stored && rf->report.not_stored == NULL &&
			    cache_is_full(rf->px->cache))
				rf->report.not_stored = "redis-full";
			refresh_end(rf);
			return;
		case RF_PARK:
		default:
			return;
		}
		if (next == RF_PARK)
			return;
		log_step("refresh", rf->id, step_names[rf->step],
		    step_names[next]);
		rf->step = next;
	}
}

static void
on_refresh_lock(enum lock_result r, struct cache_entry *e, const char *text,
    void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC && rf->step == RF_LOCK);
	rf->op = NULL;
	rf->replied = 1;
	rf->lock_r = r;
	rf->lock_e = e;
	snprintf(rf->lock_text, sizeof(rf->lock_text), "%s",
	    text != NULL ? text : "");
	refresh_run(rf);
}

static void
on_refresh_fetched(struct upstream_response *resp, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC && rf->step == RF_FETCH);
	rf->fetch = NULL;
	rf->resp = resp;
	refresh_run(rf);
}

static void
on_refresh_stored(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC && rf->step == RF_STORE);
	rf->op = NULL;
	rf->replied = 1;
	rf->fence_r = r;
	refresh_run(rf);
}

static void
on_refresh_released(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC && rf->step == RF_RELEASE);
	rf->op = NULL;
	rf->replied = 1;
	rf->fence_r = r;
	refresh_run(rf);
}

static void
on_sibling_poll(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC && rf->step == RF_CLAIM);
	refresh_run(rf);
}

/* The fetch revalidates base: its ETag and Last-Modified are sent. */
static void
revalidate(struct refresh *rf, struct cache_entry *base)
{
	const char *etag, *lm;

	rf->base = entry_ref(base);
	if ((etag = hl_find(&base->headers, "ETag")) != NULL)
		hl_add(&rf->headers, "If-None-Match", etag);
	if ((lm = hl_find(&base->headers, "Last-Modified")) != NULL)
		hl_add(&rf->headers, "If-Modified-Since", lm);
}

/* Its own copies of what it sends, its token and its events. 0 or -1. */
static int
refresh_prepare(struct refresh *rf, const struct refresh_args *a)
{
	struct proxy *px = rf->px;
	struct cache_entry *base = a->base;

	snprintf(rf->key, sizeof(rf->key), "%s", a->key);
	snprintf(rf->seen_gen, sizeof(rf->seen_gen), "%s", a->seen_gen);
	snprintf(rf->waited, sizeof(rf->waited), "%s",
	    a->waited != NULL ? a->waited : "");
	if ((rf->url = strdup(a->uri)) == NULL)	/* its target */
		return -1;
	hdr_copy(a->headers, &rf->headers, 0);
	if (fetch_keep_again(&rf->sent, a->fetch, base != NULL ? base->request :
	    NULL, base != NULL ? base->request_len : 0) == -1)
		return -1;
	/* A POST's validators mean nothing (RFC 9110 13.1: 412, not 304). */
	if (base != NULL && base->status == 200 && a->mode == RF_LOCKED &&
	    strcmp(rf->sent.method, "POST") != 0)
		revalidate(rf, base);
	if (util_random_token(rf->token) == -1)
		return -1;
	rf->renew_ev = evtimer_new(px->base, on_renew_tick, rf);
	rf->sibling_ev = evtimer_new(px->base, on_sibling_poll, rf);
	rf->done_ev = event_new(px->base, -1, 0, on_refresh_done, rf);
	return rf->renew_ev == NULL || rf->sibling_ev == NULL ||
	    rf->done_ev == NULL ? -1 : 0;
}

/*
 * It copies what it needs from a and keeps no pointer to its starter
 * (only cb's arg). a->base, if any, is revalidated: its ETag and
 * Last-Modified are sent (not with a POST: its refresh is unconditional).
 */
struct refresh *
refresh_start(struct proxy *px, const struct refresh_args *a,
    refresh_done_cb *cb, void *arg)
{
	struct cache_entry *base = a->base;
	struct refresh *rf;

	if (cb == NULL && maint_avoids(px, a->uri))
		return NULL;	/* maintenance: no background refresh */
	if ((rf = calloc(1, sizeof(*rf))) == NULL)
		return NULL;
	rf->magic = REFRESH_MAGIC;
	rf->id = ++px->machine_ids;
	rf->px = px;
	rf->report.mode = a->mode;
	rf->step = RF_LOCK;
	rf->route = a->route;
	rf->rt = *a->rt;
	rf->authorized = a->authorized;
	rf->report.fetch_ms = -1;
	rf->peer_entry = -1;
	rf->claim = a->claim && a->mode == RF_DIRECT;
	rf->stale_copy = a->stale_copy;
	rf->cb = cb;
	rf->cb_arg = arg;
	rf->stream = a->stream;
	rf->waiters = a->waiters;
	/* Its origin slot's rank: an operator's last, a flight's miss, else
	 * a refresh behind a stale (or, early, a fresh) entry. */
	rf->budget = a->lowest ? BUDGET_OPERATOR : cb != NULL ? BUDGET_MISS :
	    base != NULL && entry_state(base, util_now_ms()) == ENTRY_FRESH ?
	    BUDGET_EARLY : BUDGET_STALE;
	hl_init(&rf->headers);
	if (refresh_prepare(rf, a) == -1)
		goto fail;
	if (base != NULL && cb == NULL)	/* see proxy_hit.h */
		(void)near_refresh_asked(px, rf->key, 0);
	if (a->mode == RF_LOCKED && dict_get(px->refreshes, rf->key) == NULL &&
	    dict_set(px->refreshes, rf->key, rf) == 0)
		rf->registered = 1;
	TAILQ_INSERT_TAIL(&px->refresh_list, rf, link);
	px->nrefreshes++;
	log_debug("refresh %llu: %s, %s", (unsigned long long)rf->id, rf->key,
	    cb != NULL ? "a flight's" : "in the background");
	refresh_run(rf);
	return rf;
fail:
	if (rf->renew_ev != NULL)
		event_free(rf->renew_ev);
	if (rf->sibling_ev != NULL)
		event_free(rf->sibling_ev);
	if (rf->done_ev != NULL)
		event_free(rf->done_ev);
	hl_free(&rf->headers);
	fetch_drop(&rf->sent);
	entry_unref(&rf->base);
	free(rf->url);
	free(rf);
	return NULL;
}

/*
 * XFetch (Vattani, Chierichetti and Lowenstein, VLDB 2015): a hit on a
 * fresh entry is due for a refresh when now - delta * beta * ln(rand())
 * reaches fresh_until, where delta is how long the entry's fetch took.
 * One draw per hit.
 */
int
refresh_early_due(const struct conf_route *rt, const struct cache_entry *e)
{
	double late;

	if (!rt->early_refresh || e->fetch_ms == 0)
		return 0;
	late = -(double)e->fetch_ms * rt->early_refresh_beta *
	    log(util_random_unit());
	return (double)util_now_ms() + late >= (double)e->fresh_until_ms;
}

int
refresh_running(struct proxy *px, const char *key)
{
	return dict_get(px->refreshes, key) != NULL;
}

void
refresh_detach(struct refresh *rf)
{
	assert(rf->magic == REFRESH_MAGIC);
	rf->cb = NULL;
	rf->stream = NULL;
	peer_withdraw(rf->px, &rf->peer_entry);	/* no flight to ask now */
	if (rf->fetch != NULL)
		origin_resume(rf->fetch);	/* nobody holds it back now */
}

void
refresh_unwanted(struct refresh *rf)
{
	assert(rf->magic == REFRESH_MAGIC);
	if (rf->step != RF_FETCH || rf->fetch == NULL || origin_sent(rf->fetch))
		return;
	origin_cancel(&rf->fetch);
	STAT_INC(rf->px->stats, rf->route, shed_unwanted);
	log_debug("%s: nobody waits for its fetch: not sent", rf->key);
	rf->given_up = GIVEN_UP_UNWANTED;
	refresh_run(rf);
}

void
refresh_resume(struct refresh *rf)
{
	assert(rf->magic == REFRESH_MAGIC);
	if (rf->fetch != NULL)
		origin_resume(rf->fetch);
}

/* Releases finish asynchronously; the others' Redis replies are due
 * within their timeout. */
void
refresh_abandon_fetches(struct proxy *px)
{
	struct refresh *rf;

	TAILQ_FOREACH(rf, &px->refresh_list, link) {
		if (rf->step != RF_FETCH || rf->fetch == NULL)
			continue;
		origin_cancel(&rf->fetch);
		rf->given_up = GIVEN_UP_STOPPING;
		refresh_run(rf);
	}
}

void
refresh_remap(struct proxy *px, const struct conf *new)
{
	struct refresh *rf;

	TAILQ_FOREACH(rf, &px->refresh_list, link)
		rf->route = conf_route_index(new, rf->rt.prefix);
}

void
refresh_shutdown_all(struct proxy *px)
{
	struct refresh *rf;

	while ((rf = TAILQ_FIRST(&px->refresh_list)) != NULL) {
		rf->cb = NULL;
		if (rf->step != RF_DONE)
			refresh_end(rf);
		event_del(rf->done_ev);
		on_refresh_done(-1, 0, rf);
	}
}
