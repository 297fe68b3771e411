/*
 * struct refresh: one fetch of a key for a flight (or for nobody: a
 * background refresh of a stale entry). It owns a lock token and a curl
 * handle and never points back at a client request, so a client that
 * leaves cannot break it. It reports once, after it has ended, through
 * the callback its starter gave. It asks cache/, upstream/, the near
 * caches, proxy_peer.c's table and proxy_vary.c; nothing above it by
 * name.
 *
 *	LOCK -> FETCH (renewing the lock) -> STORE (fenced by the token)
 *	                                  -> RELEASE (not storable, failed)
 *	     -> DONE
 *
 * LOCK runs one script: the lock (SET NX PX with a random token), or the
 * entry if it changed from the generation the flight saw, or the failure
 * of the holder the flight waited for, or the backoff of a failing key.
 * DIRECT refreshes (Redis unavailable) skip STORE and RELEASE, and LOCK
 * unless Redis could not lock the key: then LOCK takes the instance's
 * claim instead (proxy_peer.h). Its holder fetches, puts what it would
 * have stored in the near caches and lets the claim go as it ends; a
 * sibling's refresh meanwhile polls for that entry (answered
 * RFR_CHANGED), fetching itself if the claim goes with no entry left for
 * it, or after the route's wait for a holder (proxy_hold.h).
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
#include "cache/cache_graphql.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_control.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_hold.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_status.h"
#include "proxy/proxy_vary.h"
#include "proxy/proxy_waitlist.h"
#include "upstream/upstream.h"

#define REFRESH_MAGIC		0x52465348u	/* "RFSH" */
#define RENEW_DIVISOR		3	/* renew the lock every lock_ttl / 3 */
#define BACKOFF_BASE_MS		1000	/* first pause after a failed refresh */
#define KEEP_VALIDATORS_MS	60000	/* entries with validators: kept at least */
#define SIBLING_POLL_MS		20	/* a sibling's claim: let go yet? */
#define FAILED_KEEP_POLLS	4	/* a failure waits for its waiters' re-check */

enum refresh_step {
	RF_LOCK,
	RF_FETCH,
	RF_STORE,
	RF_RELEASE,
	RF_DONE,
};

struct refresh {
	uint32_t		 magic;
	struct proxy		*px;
	enum refresh_step	 step;
	int			 route;		/* for counters; -1 if reloaded away */
	struct conf_route	 rt;		/* its settings when it began */
	char			 key[FLOW_KEY_MAX + 1];
	char			*url;
	struct evkeyvalq	 headers;
	struct fetch_kept	 sent;		/* method, body, url tag */
	char			 token[UTIL_TOKEN_HEX + 1];
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	char			 waited[UTIL_TOKEN_HEX + 1];	/* its holder */
	struct cache_entry	*base;		/* revalidated by a 304, or NULL */
	int			 authorized;
	struct cache_op		*op;
	struct cache_op		*renew_op;
	struct origin_fetch	*fetch;		/* through the origin budget */
	struct event		*renew_ev;
	struct event		*done_ev;
	int			 registered;	/* in px->refreshes */
	int			 peer_entry;	/* in the siblings' table, or -1 */
	int			 claim;		/* DIRECT: under the instance's claim */
	int			 claimed;	/* ... and it holds the claim */
	struct event		*sibling_ev;	/* polls a sibling's claim */
	int64_t			 sibling_until_us;	/* ... as for a holder */
	int			 lost;		/* our token was replaced */
	int			 stale_copy;	/* refresh_args' */
	int64_t			 fetch_start_us;
	int64_t			 sie_ms;	/* stale-if-error of the entry */
	struct cache_entry	*marker;	/* stored at K when it varies */
	TAILQ_ENTRY(refresh)	 link;		/* in px->refresh_list */
	refresh_done_cb		*cb;
	void			*cb_arg;
	refresh_stream_cb	*stream;	/* with cb_arg */
	enum budget_class	 budget;	/* its rank for an origin slot */
	const struct waiters	*waiters;	/* a flight's: with cb */

	struct refresh_report	 rep;
};

static void refresh_run(struct refresh *rf);
static int64_t expire_at(const struct refresh *rf);

static void
mark_lost(struct refresh *rf)
{
	if (rf->lost)
		return;
	rf->lost = 1;
	STAT_INC(rf->px->stats, rf->route, lock_lost);
	log_warn("lock for %s was taken over; this fetch will not be stored",
	    rf->key);
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
	if (rf->rep.mode != RF_LOCKED)
		return;
	if (rf->rep.result == RFR_CHANGED)
		(void)near_fill(rf->px, rf->key, rf->rep.entry);
	else if (rf->rep.result == RFR_REDIS_ERROR && rf->stale_copy)
		near_drop(rf->px, rf->key);
}

static void
on_refresh_done(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	if (rf->cb != NULL)
		rf->cb(&rf->rep, rf->cb_arg);
	else
		background_ended(rf);
	TAILQ_REMOVE(&rf->px->refresh_list, rf, link);
	rf->px->nrefreshes--;
	entry_unref(&rf->rep.entry);
	entry_unref(&rf->base);
	entry_unref(&rf->marker);
	evhttp_clear_headers(&rf->headers);
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
	rf->step = RF_DONE;
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

static void
on_refresh_lock(enum lock_result r, struct cache_entry *e, const char *text,
    void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->op = NULL;
	switch (r) {
	case LOCK_ACQUIRED:
		STAT_INC(rf->px->stats, rf->route, locks_acquired);
		if (rf->waited[0] != '\0' && text == NULL) {	/* it died */
			STAT_INC(rf->px->stats, rf->route, lock_takeovers);
			log_info("%s: took over a lock its holder left to expire",
			    rf->key);
		}
		rf->step = RF_FETCH;
		break;
	case LOCK_BUSY:
		STAT_INC(rf->px->stats, rf->route, lock_busy);
		snprintf(rf->rep.holder, sizeof(rf->rep.holder), "%s", text);
		rf->rep.result = RFR_BUSY;
		rf->step = RF_DONE;
		break;
	case LOCK_FAILED:
		snprintf(rf->rep.failure, sizeof(rf->rep.failure), "%s", text);
		rf->rep.entry = e;	/* its error response, or NULL */
		rf->rep.uerr = result_named(text);
		rf->rep.result = RFR_FAILED;
		rf->step = RF_DONE;
		break;
	case LOCK_CHANGED:
		rf->rep.result = RFR_CHANGED;
		rf->rep.entry = e;
		rf->step = RF_DONE;
		break;
	case LOCK_BACKOFF:
		STAT_INC(rf->px->stats, rf->route, backoff_skips);
		snprintf(rf->rep.failure, sizeof(rf->rep.failure), "%s", text);
		rf->rep.entry = e;	/* the upstream's last error, or NULL */
		rf->rep.result = RFR_BACKOFF;
		rf->step = RF_DONE;
		break;
	case LOCK_PASS:
		STAT_INC(rf->px->stats, rf->route, hit_for_miss);
		rf->rep.result = RFR_PASS;
		rf->step = RF_DONE;
		break;
	case LOCK_ERROR:
		rf->rep.result = RFR_REDIS_ERROR;
		rf->step = RF_DONE;
		break;
	}
	refresh_run(rf);
}

/*
 * A response that varies is stored as a variant ("K\nID": the flight's
 * own key if it already is one, else K with the lead's variant) with a
 * marker at K naming what it varies on. 0 or -1.
 */
static int
refresh_vary(struct refresh *rf)
{
	char buf[VARY_SPEC_MAX], base[CACHE_KEY_MAX + 1], id[CACHE_VARIANT_MAX];
	int lines;
	const char *spec = hdr_join(&rf->rep.entry->headers, "Vary", buf,
	    sizeof(buf), &lines);
	struct cache_entry *m;
	struct vary_keying vk;

	vary_keying(rf->px->conf, &rf->rt, &vk);
	if (spec == NULL || lines < 0 || !vary_relevant(spec, &vk))
		return 0;
	snprintf(rf->rep.vary, sizeof(rf->rep.vary), "%s", spec);
	snprintf(base, sizeof(base), "%.*s", (int)strcspn(rf->key, "\n"),
	    rf->key);
	if (strchr(rf->key, '\n') != NULL) {
		snprintf(rf->rep.variant, sizeof(rf->rep.variant), "%s", rf->key);
	} else {
		vary_id(spec, &rf->headers, &vk, id);
		snprintf(rf->rep.variant, sizeof(rf->rep.variant), "%s\n%s", base, id);
	}
	vary_learn(rf->px, base, spec);
	if ((m = entry_new()) == NULL)
		return -1;
	snprintf(m->gen, sizeof(m->gen), "%s", rf->token);
	m->status = 200;
	m->stored_ms = rf->rep.entry->stored_ms;
	m->fresh_until_ms = rf->rep.entry->fresh_until_ms;
	m->stale_until_ms = rf->rep.entry->stale_until_ms;
	if (entry_add_header(m, "Vary", spec) == -1 ||
	    entry_add_header(m, VARY_MARKER, "1") == -1) {
		entry_unref(&m);
		return -1;
	}
	rf->marker = m;
	return 0;
}

/* No origin slot came within queue_timeout: the lock goes (with no
 * failure: the origin did not fail), and its waiters get what they have,
 * or 503. A background refresh is dropped: the next request tries. */
static void
refresh_unsent(struct refresh *rf)
{
	rf->rep.result = RFR_ORIGIN_BUSY;
	rf->rep.fetch_ms = -1;
	snprintf(rf->rep.failure, sizeof(rf->rep.failure), "%s",
	    FAILURE_ORIGIN_BUSY);
	if (rf->cb == NULL)
		STAT_INC(rf->px->stats, rf->route, shed_refresh);
	log_info("%s: no origin slot within queue_timeout", rf->key);
	rf->step = RF_RELEASE;
}

/* The origin budget ranks a flight's miss by the clients that wait. */
static int
on_refresh_weight(void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	return rf->cb != NULL && rf->waiters != NULL ?
	    waitlist_count(rf->waiters) : 1;
}

static void
on_refresh_fetched(struct upstream_response *resp, void *arg)
{
	struct refresh *rf = arg;
	struct proxy *px = rf->px;
	const struct conf_route *rt = &rf->rt;
	const char *why = "";
	struct freshness f;

	assert(rf->magic == REFRESH_MAGIC);
	rf->fetch = NULL;
	rf->rep.fetch_ms = (util_mono_us() - rf->fetch_start_us) / 1000;
	evtimer_del(rf->renew_ev);
	cache_op_cancel(&rf->renew_op);
	status_count_upstream(px->stats, rf->route, resp);

	if (resp->result == UPSTREAM_NOT_SENT) {
		refresh_unsent(rf);
		goto out;
	}
	if (resp->result != UPSTREAM_OK) {
		log_warn("upstream %s: %s (%s)", rf->url,
		    upstream_result_name(resp->result), resp->error);
		rf->rep.result = RFR_UPSTREAM_ERROR;
		rf->rep.uerr = resp->result;
		snprintf(rf->rep.failure, sizeof(rf->rep.failure), "%s",
		    upstream_result_name(resp->result));
		rf->step = RF_RELEASE;
		goto out;
	}
	if (resp->status == 304 && rf->base != NULL) {
		/* Still valid: the stored body with the 304's headers. */
		STAT_INC(px->stats, rf->route, revalidated);
		rf->rep.upstream_status = 304;
		rf->rep.entry = refresh_entry_revalidated(rf->base, resp, rf->token,
		    rf->rep.fetch_ms);
	} else {
		rf->rep.entry = refresh_entry(resp, rf->token, rf->rep.fetch_ms,
		    &rf->sent);
	}
	if (rf->rep.entry == NULL) {
		rf->rep.result = RFR_UPSTREAM_ERROR;
		rf->rep.uerr = UPSTREAM_ERR_PROTOCOL;
		snprintf(rf->rep.failure, sizeof(rf->rep.failure), "error");
		rf->step = RF_RELEASE;
		goto out;
	}
	rf->rep.result = RFR_FETCHED;
	rf->rep.partial = resp->body_partial;
	hdr_freshness(rf->rep.entry->status, &rf->rep.entry->headers, rf->authorized,
	    rt, rf->rep.entry->stored_ms, &f);
	/* What is stored is served to all; the rest only when it may go
	 * to another request (proxy_hdr.h). */
	rf->rep.shareable = f.storable ||
	    hdr_shareable(&rf->rep.entry->headers, rf->authorized, rt, &why);
	why = "";
	rf->rep.entry->fresh_until_ms = rf->rep.entry->stored_ms + f.ttl_ms;
	rf->rep.entry->stale_until_ms = rf->rep.entry->fresh_until_ms + f.swr_ms;
	rf->sie_ms = f.sie_ms;
	if (f.storable && refresh_vary(rf) == -1)
		why = "out-of-memory";
	else if (!f.storable)
		why = f.why;
	else if (rf->rep.partial ||
	    rf->rep.entry->body_len > (uint64_t)px->conf->max_entry_bytes)
		why = "too-large";
	else if (rf->lost)
		why = "lock-lost";
	else if (rt->graphql && graphql_errors((const char *)
	    rf->rep.entry->body, rf->rep.entry->body_len))
		why = "graphql-errors";	/* shared with the waiters, not kept */
	rf->rep.not_stored = why[0] != '\0' ? why : NULL;
	rf->step = rf->rep.mode == RF_LOCKED && why[0] == '\0' ? RF_STORE :
	    RF_RELEASE;
	if (rf->step == RF_RELEASE && resp->status >= 500)
		snprintf(rf->rep.failure, sizeof(rf->rep.failure), "%d", resp->status);
	if (rf->step == RF_RELEASE && why[0] != '\0')
		log_debug("%s not stored: %s", rf->key, why);
	/* Under the instance's claim: where the siblings look for it. */
	if (rf->claimed && why[0] == '\0' && rf->marker == NULL &&
	    entry_state(rf->rep.entry, util_now_ms()) == ENTRY_FRESH)
		near_put(px, rf->key, rf->rep.entry);
out:
	upstream_response_free(&resp);
	refresh_run(rf);
}

/* Files the stored entry under one of its tags, for purges by tag. */
static void
tag_stored(const char *tag, void *arg)
{
	struct refresh *rf = arg;

	(void)cache_tag(rf->px->cache, rf->rep.variant[0] != '\0' ?
	    rf->rep.variant : rf->key, tag, expire_at(rf));
}

static void
on_refresh_stored(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->op = NULL;
	switch (r) {
	case FENCE_OK:		/* the script also deleted the lock */
		rf->rep.stored = 1;
		STAT_INC(rf->px->stats, rf->route, stores);
		status_tags_dropped(rf->px->stats, rf->route, rf->key,
		    hdr_tags(&rf->rep.entry->headers, tag_stored, rf));
		if (rf->sent.url_tag[0] != '\0')	/* a purge by URL */
			tag_stored(rf->sent.url_tag, rf);
		if (entry_state(rf->rep.entry, util_now_ms()) == ENTRY_FRESH)
			near_put(rf->px, rf->rep.variant[0] != '\0' ?
			    rf->rep.variant : rf->key, rf->rep.entry);
		rf->step = RF_DONE;
		break;
	case FENCE_FULL:	/* the script also deleted the lock */
		status_variants_full(rf->px->stats, rf->route, rf->key,
		    rf->rt.max_variants);
		rf->step = RF_DONE;
		break;
	case FENCE_LOST:
		mark_lost(rf);
		rf->step = RF_DONE;
		break;
	case FENCE_ERROR:	/* maybe not stored: let the lock go */
		rf->step = RF_RELEASE;
		break;
	}
	refresh_run(rf);
}

static void
on_refresh_released(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->op = NULL;
	if (r == FENCE_LOST)
		mark_lost(rf);
	rf->step = RF_DONE;
	refresh_run(rf);
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

static int
refresh_fetch(struct refresh *rf)
{
	const struct conf *conf = rf->px->conf;
	const struct conf_route *rt = &rf->rt;
	struct origin_args oa = {
		.cls = rf->budget,
		.route = rf->route,
		.weight = on_refresh_weight,
		.weight_arg = rf,
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
	if (rf->rep.mode == RF_LOCKED)
		timer_arm(rf->renew_ev, rt->lock_ttl_ms / RENEW_DIVISOR);
	return 0;
}

/* Redis keeps an entry while it may be served (stale, or on errors), and
 * one with validators a while longer, to be revalidated with a 304. */
static int64_t
expire_at(const struct refresh *rf)
{
	const struct cache_entry *e = rf->rep.entry;
	int64_t at = MAX(e->stale_until_ms, e->fresh_until_ms + rf->sie_ms);

	if (evhttp_find_header(&e->headers, "ETag") != NULL ||
	    evhttp_find_header(&e->headers, "Last-Modified") != NULL)
		at = MAX(at, e->stored_ms + KEEP_VALIDATORS_MS);
	return at;
}

/* Lets the lock go, recording a failure (and the upstream's own error
 * response) or that the key's response is one user's. */
static struct cache_op *
refresh_release(struct refresh *rf)
{
	const struct conf_route *rt = &rf->rt;
	const struct refresh_report *rep = &rf->rep;
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

static void
on_sibling_poll(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC && rf->step == RF_LOCK);
	refresh_run(rf);
}

/*
 * DIRECT: the entry a sibling fetched under the instance's claim, or
 * the claim, or neither (fetch alone). The next step is set: 0, or -1
 * while a sibling still holds the claim (polled).
 */
static int
refresh_claim(struct refresh *rf)
{
	int64_t now = util_mono_us();

	rf->step = RF_FETCH;
	if (!rf->claim)
		return 0;
	if ((rf->rep.entry = near_get(rf->px, rf->key, util_now_ms(), 0)) !=
	    NULL) {
		STAT_INC(rf->px->stats, rf->route, sibling_fills);
		rf->rep.result = RFR_CHANGED;
		rf->step = RF_DONE;
		return 0;
	}
	switch (peer_claim(rf->px, rf->key)) {
	case CLAIM_TAKEN:
		rf->claimed = 1;
		return 0;
	case CLAIM_NONE:
		return 0;
	case CLAIM_SIBLING:
		break;
	}
	if (rf->sibling_until_us == 0)
		rf->sibling_until_us = now + hold_budget_ms(&rf->rt,
		    origin_fetch_max_ms(rf->px->conf, &rf->rt)) * 1000;
	else if (now >= rf->sibling_until_us)
		return 0;	/* waited as for a holder: fetch alone */
	rf->step = RF_LOCK;
	timer_arm(rf->sibling_ev, SIBLING_POLL_MS);
	return -1;
}

static void
refresh_run(struct refresh *rf)
{
	struct proxy *px = rf->px;
	const struct conf_route *rt = &rf->rt;

	assert(rf->magic == REFRESH_MAGIC);
	for (;;) {
		switch (rf->step) {
		case RF_LOCK:
			if (px->draining) {
				/* Once a stop begins, nothing new goes upstream. */
				rf->rep.result = RFR_STOPPING;
				rf->step = RF_DONE;
				continue;
			}
			if (rf->rep.mode == RF_DIRECT) {
				if (refresh_claim(rf) == -1)
					return;		/* a sibling's fetch */
				continue;
			}
			/*
			 * Its flight may stream the response to the siblings'
			 * waiters too. Said before the lock is asked for: a
			 * sibling that finds the lock busy must see it. If the
			 * lock is lost, it only costs an asker a 204.
			 */
			if (rf->stream != NULL && rf->cb != NULL)
				rf->peer_entry = peer_publish(px, rf->key);
			rf->op = lock_acquire(px->cache, rf->key, rf->token,
			    rt->lock_ttl_ms, rf->seen_gen, rf->waited,
			    on_refresh_lock, rf);
			if (rf->op == NULL) {
				rf->rep.result = RFR_REDIS_ERROR;
				rf->step = RF_DONE;
				continue;
			}
			return;
		case RF_FETCH:
			if (px->draining) {
				/* Locked as the stop began: let the lock go. */
				rf->rep.result = RFR_STOPPING;
				rf->step = RF_RELEASE;
				continue;
			}
			if (refresh_fetch(rf) == -1) {
				rf->rep.result = RFR_UPSTREAM_ERROR;
				rf->rep.uerr = UPSTREAM_ERR_PROTOCOL;
				rf->step = RF_RELEASE;
				continue;
			}
			return;
		case RF_STORE:
			rf->op = cache_store(px->cache, rf->key, rf->token,
			    rf->rep.entry, expire_at(rf),
			    rf->marker != NULL ? rf->rep.variant : NULL, rf->marker,
			    rf->rt.max_variants, on_refresh_stored, rf);
			if (rf->op == NULL) {
				rf->step = RF_RELEASE;
				continue;
			}
			return;
		case RF_RELEASE:
			if (rf->rep.mode == RF_DIRECT || rf->lost) {
				rf->step = RF_DONE;
				continue;
			}
			rf->op = refresh_release(rf);
			if (rf->op == NULL) {
				rf->step = RF_DONE;
				continue;
			}
			return;
		case RF_DONE:
			if (rf->rep.result == RFR_FETCHED && !rf->rep.stored &&
			    rf->rep.not_stored == NULL && cache_is_full(px->cache))
				rf->rep.not_stored = "redis-full";
			refresh_end(rf);
			return;
		}
	}
}

/* The fetch revalidates base: its ETag and Last-Modified are sent. */
static void
revalidate(struct refresh *rf, struct cache_entry *base)
{
	const char *etag, *lm;

	rf->base = entry_ref(base);
	if ((etag = evhttp_find_header(&base->headers, "ETag")) != NULL)
		evhttp_add_header(&rf->headers, "If-None-Match", etag);
	if ((lm = evhttp_find_header(&base->headers, "Last-Modified")) != NULL)
		evhttp_add_header(&rf->headers, "If-Modified-Since", lm);
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
	rf->px = px;
	rf->rep.mode = a->mode;
	rf->step = RF_LOCK;
	rf->route = a->route;
	rf->rt = *a->rt;
	rf->authorized = a->authorized;
	rf->rep.fetch_ms = -1;
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
	TAILQ_INIT(&rf->headers);
	snprintf(rf->key, sizeof(rf->key), "%s", a->key);
	snprintf(rf->seen_gen, sizeof(rf->seen_gen), "%s", a->seen_gen);
	snprintf(rf->waited, sizeof(rf->waited), "%s",
	    a->waited != NULL ? a->waited : "");
	if ((rf->url = strdup(a->uri)) == NULL)	/* its target */
		goto fail;
	hdr_copy(a->headers, &rf->headers, 0);
	if (fetch_keep_again(&rf->sent, a->fetch, base != NULL ? base->request :
	    NULL, base != NULL ? base->request_len : 0) == -1)
		goto fail;
	/* A POST's validators mean nothing (RFC 9110 13.1: 412, not 304). */
	if (base != NULL && base->status == 200 && a->mode == RF_LOCKED &&
	    strcmp(rf->sent.method, "POST") != 0)
		revalidate(rf, base);
	if (base != NULL && cb == NULL)	/* see proxy_hit.h */
		base->refresh_asked_ms = util_mono_us() / 1000;
	if (util_random_token(rf->token) == -1)
		goto fail;
	rf->renew_ev = evtimer_new(px->base, on_renew_tick, rf);
	rf->sibling_ev = evtimer_new(px->base, on_sibling_poll, rf);
	rf->done_ev = event_new(px->base, -1, 0, on_refresh_done, rf);
	if (rf->renew_ev == NULL || rf->sibling_ev == NULL ||
	    rf->done_ev == NULL)
		goto fail;
	if (a->mode == RF_LOCKED && dict_get(px->refreshes, rf->key) == NULL &&
	    dict_set(px->refreshes, rf->key, rf) == 0)
		rf->registered = 1;
	TAILQ_INSERT_TAIL(&px->refresh_list, rf, link);
	px->nrefreshes++;
	refresh_run(rf);
	return rf;
fail:
	if (rf->renew_ev != NULL)
		event_free(rf->renew_ev);
	if (rf->sibling_ev != NULL)
		event_free(rf->sibling_ev);
	if (rf->done_ev != NULL)
		event_free(rf->done_ev);
	evhttp_clear_headers(&rf->headers);
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
	evtimer_del(rf->renew_ev);
	cache_op_cancel(&rf->renew_op);
	STAT_INC(rf->px->stats, rf->route, shed_unwanted);
	log_debug("%s: nobody waits for its fetch: not sent", rf->key);
	rf->rep.result = RFR_UNWANTED;
	rf->step = RF_RELEASE;
	refresh_run(rf);
}

void
refresh_resume(struct refresh *rf)
{
	assert(rf->magic == REFRESH_MAGIC);
	if (rf->fetch != NULL)
		origin_resume(rf->fetch);
}

/* Releases finish asynchronously. */
void
refresh_abandon_all(struct proxy *px)
{
	struct refresh *rf;

	TAILQ_FOREACH(rf, &px->refresh_list, link) {
		if (rf->step != RF_FETCH)
			continue;	/* a Redis reply is due within its timeout */
		origin_cancel(&rf->fetch);
		evtimer_del(rf->renew_ev);
		cache_op_cancel(&rf->renew_op);
		rf->rep.result = RFR_UPSTREAM_ERROR;
		rf->rep.uerr = UPSTREAM_ERR_PROTOCOL;
		rf->step = RF_RELEASE;	/* no failure: no backoff */
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
