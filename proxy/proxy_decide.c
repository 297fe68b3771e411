/* SPDX-License-Identifier: MIT */
/*
 * DECIDE, the refresh protocol's table (proxy_refresh_int.h): what the
 * response a refresh fetched becomes. Not sent (no origin slot, or a
 * claims token that expired before the send): released with no failure.
 * Failed, or a 5xx: released with the failure, which
 * starts the key's backoff. A 304 revalidates the entry it had; any other
 * response becomes an entry, stored if its route and headers let it be
 * kept, the lock is still ours and it is whole, else released (one user's:
 * hit-for-miss). Calls proxy_hdr.c, proxy_vary.c, proxy_response.c and
 * the near caches.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <event2/http.h>

#include "cache/cache_entry.h"
#include "cache/cache_graphql.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_refresh_int.h"
#include "proxy/proxy_response.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_vary.h"
#include "upstream/upstream.h"

/*
 * A response that varies is stored as a variant ("K\nID": the flight's
 * own key if it already is one, else K with the lead's variant) with a
 * marker at K naming what it varies on. 0 or -1.
 */
static int
refresh_vary(struct refresh *rf)
{
	char buf[VARY_SPEC_MAX], base[CACHE_KEY_MAX + 1], id[CACHE_VARIANT_MAX];
	struct refresh_report *rep = &rf->report;
	int lines;
	const char *spec = hdr_join(&rep->entry->headers, "Vary", buf,
	    sizeof(buf), &lines);
	struct cache_entry *m;
	struct vary_keying vk;

	vary_keying(rf->px->conf, &rf->rt, &vk);
	if (spec == NULL || lines < 0 || !vary_relevant(spec, &vk))
		return 0;
	snprintf(rep->vary, sizeof(rep->vary), "%s", spec);
	snprintf(base, sizeof(base), "%.*s", (int)strcspn(rf->key, "\n"),
	    rf->key);
	if (strchr(rf->key, '\n') != NULL) {
		snprintf(rep->variant, sizeof(rep->variant), "%s", rf->key);
	} else {
		if (vary_id(spec, &rf->headers, &vk, id) == -1)
			return -1;
		snprintf(rep->variant, sizeof(rep->variant), "%s\n%s", base, id);
	}
	vary_learn(rf->px, base, spec);
	if ((m = entry_new()) == NULL)
		return -1;
	snprintf(m->gen, sizeof(m->gen), "%s", rf->token);
	m->status = 200;
	m->stored_ms = rep->entry->stored_ms;
	m->fresh_until_ms = rep->entry->fresh_until_ms;
	m->stale_until_ms = rep->entry->stale_until_ms;
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
static enum refresh_step
decide_unsent(struct refresh *rf)
{
	rf->report.result = RFR_ORIGIN_BUSY;
	rf->report.fetch_ms = -1;
	snprintf(rf->report.failure, sizeof(rf->report.failure), "%s",
	    FAILURE_ORIGIN_BUSY);
	if (rf->cb == NULL)
		STAT_INC(rf->px->stats, rf->route, shed_refresh);
	log_info("%s: no origin slot within queue_timeout", rf->key);
	return RF_RELEASE;
}

enum refresh_step
refresh_token_expired(struct refresh *rf)
{
	rf->report.result = RFR_UPSTREAM_ERROR;
	rf->report.uerr = UPSTREAM_ERR_PROTOCOL;
	rf->report.fetch_ms = -1;
	STAT_INC(rf->px->stats, rf->route, jwt_refresh_expired);
	log_info("%s: not fetched: its requester's token expired before the "
	    "send", rf->key);
	return RF_RELEASE;
}

/* The upstream failed (or its answer could not be kept): released with
 * the failure, which starts or extends the key's backoff. */
static enum refresh_step
decide_failed(struct refresh *rf, enum upstream_result r, const char *name)
{
	rf->report.result = RFR_UPSTREAM_ERROR;
	rf->report.uerr = r;
	snprintf(rf->report.failure, sizeof(rf->report.failure), "%s", name);
	return RF_RELEASE;
}

/* Why the response rf fetched is not stored ("" when it is), with the
 * freshness f its route gives it. */
static const char *
not_stored(struct refresh *rf, const struct freshness *f)
{
	const struct refresh_report *rep = &rf->report;

	if (f->storable && refresh_vary(rf) == -1)
		return "out-of-memory";
	if (!f->storable)
		return f->why;
	if (rep->partial ||
	    rep->entry->body_len > (uint64_t)rf->px->conf->max_entry_bytes)
		return "too-large";
	if (rf->lost)
		return "lock-lost";
	if (rf->rt.graphql && graphql_errors((const char *)rep->entry->body,
	    rep->entry->body_len))
		return "graphql-errors";	/* shared with waiters, not kept */
	return "";
}

/* A response, as an entry: the store if it may be kept and the lock is
 * ours, else the release (with its 5xx as the failure). */
static enum refresh_step
decide_entry(struct refresh *rf)
{
	struct refresh_report *rep = &rf->report;
	const char *why;
	struct freshness f;

	rep->result = RFR_FETCHED;
	rep->partial = rf->resp->body_partial;
	hdr_freshness(rep->entry->status, &rep->entry->headers, rf->authorized,
	    &rf->rt, rep->entry->stored_ms, &f);
	/* What is stored is served to all; the rest only when it may go
	 * to another request (proxy_hdr.h). */
	rep->shareable = f.storable ||
	    hdr_shareable(&rep->entry->headers, rf->authorized, &rf->rt, &why);
	rep->entry->fresh_until_ms = rep->entry->stored_ms + f.ttl_ms;
	rep->entry->stale_until_ms = rep->entry->fresh_until_ms + f.swr_ms;
	rf->sie_ms = f.sie_ms;
	why = not_stored(rf, &f);
	rep->not_stored = why[0] != '\0' ? why : NULL;
	if (why[0] == '\0' && rep->mode == RF_LOCKED) {
		if (coding_of(rep->entry) != CODING_IDENTITY) {
			STAT_ADD(rf->px->stats, rf->route, coded_stored_bytes,
			    rep->entry->body_len);
			STAT_ADD(rf->px->stats, rf->route, coded_plain_bytes,
			    rep->plain_len);
		}
		return RF_STORE;
	}
	if (rf->resp->status >= 500)
		snprintf(rep->failure, sizeof(rep->failure), "%d",
		    rf->resp->status);
	if (why[0] != '\0')
		log_debug("%s not stored: %s", rf->key, why);
	/* Under the instance's claim: where the siblings look for it. */
	if (rf->claimed && why[0] == '\0' && rf->marker == NULL &&
	    entry_state(rep->entry, util_now_ms()) == ENTRY_FRESH)
		near_put(rf->px, rf->key, rep->entry);
	return RF_RELEASE;
}

/* A coded body is checked whole, an identity one worth it compressed
 * (proxy_coding.h); a coded body that does not decode is a failure of the
 * upstream's: 502, and not stored. A body cut short is DECIDE's. */
static enum refresh_step
decide_coding(struct refresh *rf)
{
	struct refresh_report *rep = &rf->report;
	const char *why = "";
	enum coding made = CODING_IDENTITY;

	rep->plain_len = rep->entry->body_len;
	if (!rf->resp->body_partial && rep->upstream_status != 304)
		why = coding_store(rep->entry, &rf->rt,
		    (size_t)rf->px->conf->max_entry_bytes, &made,
		    &rep->plain_len);
	STAT_ADD(rf->px->stats, rf->route, coding_encoded,
	    made != CODING_IDENTITY);
	if (strcmp(why, "bad-encoding") != 0)
		return decide_entry(rf);
	STAT_INC(rf->px->stats, rf->route, coding_refused);
	log_warn("upstream %s: its %s body does not decode whole within "
	    "max_entry_bytes: not stored", rf->url,
	    codec_name(coding_of(rep->entry)));
	entry_unref(&rep->entry);
	return decide_failed(rf, UPSTREAM_ERR_PROTOCOL, why);
}

/* DECIDE: what the response the fetch brought is, and what comes next. */
enum refresh_step
refresh_decide(struct refresh *rf)
{
	struct upstream_response *resp = rf->resp;
	struct refresh_report *rep = &rf->report;
	enum refresh_step next;

	rep->fetch_ms = (util_mono_us() - rf->fetch_start_us) / 1000;
	outcome_count_upstream(rf->px->stats, rf->route, resp);
	if (resp->result == UPSTREAM_NOT_SENT) {
		next = rf->token_expired ? refresh_token_expired(rf) :
		    decide_unsent(rf);
	} else if (resp->result != UPSTREAM_OK) {
		log_warn("upstream %s: %s (%s)", rf->url,
		    upstream_result_name(resp->result), resp->error);
		next = decide_failed(rf, resp->result,
		    upstream_result_name(resp->result));
	} else {
		if (resp->status == 304 && rf->base != NULL) {
			/* Still valid: the stored body with the 304's headers. */
			STAT_INC(rf->px->stats, rf->route, revalidated);
			rep->upstream_status = 304;
			rep->entry = response_revalidated(rf->base, resp,
			    rf->token, rep->fetch_ms);
		} else {
			rep->entry = response_entry(resp, rf->token,
			    rep->fetch_ms, &rf->sent);
		}
		next = rep->entry == NULL ? decide_failed(rf,
		    UPSTREAM_ERR_PROTOCOL, "error") : decide_coding(rf);
	}
	upstream_response_free(&rf->resp);
	return next;
}

