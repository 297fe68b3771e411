/* SPDX-License-Identifier: MIT */
/*
 * What an answer is called: the Cache-Status header, the text of an answer
 * Corral makes up, the counters and the access log's label. It reads
 * struct answer and proxy_stats.h's counters, and calls nothing else.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "cache/cache_entry.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_stats.h"

#define STATUS_LOG_MS	10000	/* a response's warning: said at most this
					 * often */

/* A warning a response may bring: said at most once every STATUS_LOG_MS,
 * with how many times it was due since it was said last. */
struct pace {
	int64_t		logged_ms;
	uint64_t	unsaid;
};

static void outcome_value_of(const struct answer *a, int fwd_status,
    char *out, size_t outlen);

static int64_t
seconds_stale(const struct cache_entry *e, int64_t now)
{
	int64_t late = (now - e->fresh_until_ms + 999) / 1000;

	return late > 0 ? late : 1;
}

/* Was the answer made because no origin slot came within queue_timeout
 * (proxy_budget.h)? Nothing was sent upstream then. */
static int
origin_busy(const struct answer *a)
{
	return a->uerr == UPSTREAM_NOT_SENT ||
	    strcmp(a->failure, FAILURE_ORIGIN_BUSY) == 0;
}

/* The rule that made the key, when not the URL alone (key=credential). */
static void
add_key_rule(const struct answer *a, char *out, size_t outlen)
{
	size_t len = strlen(out);

	if (a->key_rule != KEY_RULE_URL && len < outlen)
		snprintf(out + len, outlen - len, "; key=%s",
		    keyrule_name(a->key_rule));
}

void
outcome_value(const struct answer *a, int fwd_status, char *out, size_t outlen)
{
	outcome_value_of(a, fwd_status, out, outlen);
	add_key_rule(a, out, outlen);
}

/* The outcomes named by a detail alone (no entry, nothing forwarded of
 * theirs to tell), or NULL. */
static const char *
plain_detail(enum outcome o)
{
	switch (o) {
	case OUT_WAIT_TIMEOUT:
		return "lock-wait-timeout";
	case OUT_REJECTED:
		return "rejected";
	case OUT_GONE:
		return "client-gone";
	case OUT_UNAVAILABLE:
	case OUT_NONE:
		return "unavailable";
	default:
		return NULL;
	}
}

/* A stale entry served because the upstream failed (or, not forwarded,
 * because the key backs off or no origin slot came: nothing went). */
static void
value_stale_error(const struct answer *a, int64_t now, char *out,
    size_t outlen)
{
	int st = atoi(a->failure);
	char fs[32] = "";

	if (a->not_forwarded) {
		snprintf(out, outlen, "corral; hit; ttl=-%" PRId64 "; detail=%s",
		    seconds_stale(a->entry, now), origin_busy(a) ?
		    "origin-busy" : "stale-if-error");
		return;
	}
	if (st > 0)
		snprintf(fs, sizeof(fs), "fwd-status=%d; ", st);
	snprintf(out, outlen, "corral; fwd=stale; %sttl=-%" PRId64
	    "; detail=stale-if-error", fs, seconds_stale(a->entry, now));
}

/* Passed: why, when a rule says (hit-for-miss, a claims route's token
 * refused). */
static void
value_bypass(const struct answer *a, int fwd_status, char *out,
    size_t outlen)
{
	const char *why = a->hit_for_miss ? "hit-for-miss" : a->jwt_refused;

	snprintf(out, outlen, "corral; fwd=bypass; fwd-status=%d%s%s",
	    fwd_status, why != NULL ? "; detail=" : "", why != NULL ? why : "");
}

static void
outcome_value_of(const struct answer *a, int fwd_status, char *out,
    size_t outlen)
{
	const char *detail = a->outcome == OUT_REJECTED &&
	    a->jwt_refused != NULL ? a->jwt_refused : plain_detail(a->outcome);
	const struct cache_entry *e = a->entry;
	int64_t now = util_now_ms();

	if (detail != NULL)
		snprintf(out, outlen, "corral; detail=%s", detail);
	switch (a->outcome) {
	case OUT_HIT:
		snprintf(out, outlen, "corral; hit; ttl=%" PRId64,
		    (e->fresh_until_ms - now) / 1000);
		break;
	case OUT_STALE:
		snprintf(out, outlen, "corral; hit; ttl=-%" PRId64,
		    seconds_stale(e, now));
		break;
	case OUT_STORED:
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d; stored",
		    fwd_status);
		break;
	case OUT_FETCHED:
	case OUT_COLLAPSED:
		/* Not stored: detail says why. */
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d%s%s%s",
		    fwd_status, a->outcome == OUT_COLLAPSED ? "; collapsed" : "",
		    a->not_stored != NULL ? "; detail=" : "",
		    a->not_stored != NULL ? a->not_stored : "");
		break;
	case OUT_DEGRADED:	/* Redis down, or full (not_stored) */
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d; "
		    "detail=%s", fwd_status, a->not_stored != NULL ?
		    a->not_stored : "cache-unavailable");
		break;
	case OUT_BYPASS:
		value_bypass(a, fwd_status, out, outlen);
		break;
	case OUT_METHOD:
		snprintf(out, outlen, "corral; fwd=method; fwd-status=%d",
		    fwd_status);
		break;
	case OUT_UPSTREAM_ERROR:
		snprintf(out, outlen, "corral; fwd=%s; detail=%s",
		    a->pass_kind == OUT_METHOD ? "method" :
		    a->pass_kind == OUT_BYPASS ? "bypass" : "miss",
		    origin_busy(a) ? "origin-busy" : "upstream-error");
		break;
	case OUT_STALE_ERROR:
		value_stale_error(a, now, out, outlen);
		break;
	case OUT_BACKOFF:
		snprintf(out, outlen, "corral; %s", origin_busy(a) ?
		    "fwd=miss; detail=origin-busy" : "detail=error-backoff");
		break;
	default:	/* plain_detail()'s */
		break;
	}
}

int
outcome_error_code(const struct answer *a)
{
	int st;

	switch (a->outcome) {
	case OUT_REJECTED:
		return a->reject_code;
	case OUT_UPSTREAM_ERROR:
		if (origin_busy(a))
			return HTTP_SERVUNAVAIL;
		return a->uerr == UPSTREAM_ERR_TIMEOUT ?
		    HTTP_GATEWAY_TIMEOUT : HTTP_BAD_GATEWAY;
	case OUT_WAIT_TIMEOUT:
		return HTTP_GATEWAY_TIMEOUT;
	case OUT_GONE:
		return HTTP_CLIENT_GONE;
	case OUT_BACKOFF:
		if (origin_busy(a))
			return HTTP_SERVUNAVAIL;
		if (strcmp(a->failure, "timeout") == 0)
			return HTTP_GATEWAY_TIMEOUT;
		st = atoi(a->failure);
		return st >= 500 && st <= 599 ? st : HTTP_BAD_GATEWAY;
	default:
		return HTTP_SERVUNAVAIL;
	}
}

int
outcome_code(const struct answer *a)
{
	return a->entry != NULL ? a->entry->status : outcome_error_code(a);
}

const char *
outcome_error_text(const struct answer *a, int code)
{
	switch (a->outcome) {
	case OUT_REJECTED:
		if (code == HTTP_UNAUTHORIZED)
			return "unauthorized: a valid Bearer token is needed";
		return code == HTTP_MISDIRECTED ?
		    "misdirected request: this host is not served here" :
		    "bad request";
	case OUT_UPSTREAM_ERROR:
	case OUT_BACKOFF:
		if (origin_busy(a))
			return "origin busy: no origin slot within queue_timeout";
		if (a->outcome == OUT_BACKOFF)
			return "upstream failing; retrying after a backoff";
		return code == HTTP_GATEWAY_TIMEOUT ? "upstream timed out" :
		    "upstream unavailable";
	case OUT_WAIT_TIMEOUT:
		return "timed out waiting for another request's fetch";
	default:
		return "service unavailable";
	}
}

/* Hits and stores by the rule that made the key. */
static void
count_rule(struct stats *st, int r, const struct answer *a)
{
	int hit = a->outcome == OUT_HIT || a->outcome == OUT_STALE ||
	    a->outcome == OUT_STALE_ERROR;
	int stored = a->outcome == OUT_STORED;

	switch (a->key_rule) {
	case KEY_RULE_URL:
		break;
	case KEY_RULE_QUERY:
		STAT_ADD(st, r, key_query_hits, hit);
		STAT_ADD(st, r, key_query_stores, stored);
		break;
	case KEY_RULE_HEADERS:
		STAT_ADD(st, r, key_headers_hits, hit);
		STAT_ADD(st, r, key_headers_stores, stored);
		break;
	case KEY_RULE_POST:
		STAT_ADD(st, r, key_post_hits, hit);
		STAT_ADD(st, r, key_post_stores, stored);
		break;
	case KEY_RULE_GRAPHQL:
		STAT_ADD(st, r, key_graphql_hits, hit);
		STAT_ADD(st, r, key_graphql_stores, stored);
		break;
	case KEY_RULE_CREDENTIAL:
		STAT_ADD(st, r, key_credential_hits, hit);
		STAT_ADD(st, r, key_credential_stores, stored);
		break;
	case KEY_RULE_CLAIMS:
		STAT_ADD(st, r, key_claims_hits, hit);
		STAT_ADD(st, r, key_claims_stores, stored);
		break;
	}
}

void
outcome_count(struct stats *st, int r, const struct answer *a, int64_t waited_us)
{
	uint64_t waited_ms = (uint64_t)waited_us / 1000;

	count_rule(st, r, a);

	switch (a->outcome) {
	case OUT_HIT:
		STAT_INC(st, r, hits);
		break;
	case OUT_STALE:
		STAT_INC(st, r, stale_hits);
		break;
	case OUT_STALE_ERROR:
		STAT_INC(st, r, stale_hits);
		if (origin_busy(a))
			STAT_INC(st, r, shed_stale);
		else
			STAT_INC(st, r, stale_if_error);
		break;
	case OUT_REJECTED:
		STAT_INC(st, r, rejected);
		break;
	case OUT_STORED:
	case OUT_FETCHED:
	case OUT_DEGRADED:
		STAT_INC(st, r, misses);
		break;
	case OUT_COLLAPSED:
	case OUT_WAIT_TIMEOUT:
		if (a->outcome == OUT_COLLAPSED)
			STAT_INC(st, r, collapsed);
		else
			STAT_INC(st, r, errors);
		STAT_INC(st, r, waiters);
		STAT_ADD(st, r, lock_wait_ms, waited_ms);
		STAT_OBSERVE(st, r, lock_wait, waited_us / 1e6);
		break;
	case OUT_BYPASS:
	case OUT_METHOD:
		STAT_INC(st, r, bypass);
		break;
	case OUT_UPSTREAM_ERROR:
	case OUT_BACKOFF:
	case OUT_UNAVAILABLE:
	case OUT_NONE:
		STAT_INC(st, r, errors);
		if (origin_busy(a))
			STAT_INC(st, r, shed_busy);
		break;
	case OUT_GONE:
		STAT_INC(st, r, client_gone);
		break;
	}
}

void
outcome_count_upstream(struct stats *st, int route,
    const struct upstream_response *resp)
{
	if (resp->result == UPSTREAM_NOT_SENT)
		return;		/* the origin never saw it */
	STAT_OBSERVE(st, route, upstream_duration, resp->elapsed_ms / 1000.0);
	if (resp->result == UPSTREAM_ERR_TIMEOUT) {
		STAT_INC(st, route, upstream_timeouts);
		STAT_INC(st, route, upstream_errors);
	} else if (resp->result != UPSTREAM_OK) {
		STAT_INC(st, route, upstream_failures);
		STAT_INC(st, route, upstream_errors);
	} else if (resp->status >= 500) {
		STAT_INC(st, route, upstream_5xx);
		STAT_INC(st, route, upstream_errors);
	} else if (resp->status >= 400) {
		STAT_INC(st, route, upstream_4xx);
	} else if (resp->status >= 300) {
		STAT_INC(st, route, upstream_3xx);
	} else {
		STAT_INC(st, route, upstream_2xx);
	}
}

const char *
outcome_method(enum hmethod cmd)
{
	switch (cmd) {
	case HM_GET:		return "GET";
	case HM_HEAD:		return "HEAD";
	case HM_POST:		return "POST";
	case HM_PUT:		return "PUT";
	case HM_DELETE:		return "DELETE";
	case HM_OPTIONS:	return "OPTIONS";
	case HM_PATCH:		return "PATCH";
	case HM_OTHER:		break;
	}
	return "-";
}

const char *
outcome_label(enum outcome o)
{
	switch (o) {
	case OUT_HIT:
		return "hit";
	case OUT_STALE:
	case OUT_STALE_ERROR:
		return "stale";
	case OUT_STORED:
	case OUT_FETCHED:
	case OUT_DEGRADED:
		return "miss";
	case OUT_COLLAPSED:
		return "collapsed";
	case OUT_BYPASS:
	case OUT_METHOD:
		return "bypass";
	case OUT_GONE:
		return "gone";
	case OUT_UPSTREAM_ERROR:
	case OUT_BACKOFF:
	case OUT_WAIT_TIMEOUT:
	case OUT_REJECTED:
	case OUT_UNAVAILABLE:
	case OUT_NONE:
		break;
	}
	return "error";
}

int
outcome_waited(enum outcome o)
{
	return o == OUT_COLLAPSED || o == OUT_WAIT_TIMEOUT;
}

/* n more are due: 1 when the warning is to be said now, with *since of
 * them since it was said last (n among them). */
static int
pace_due(struct pace *p, uint64_t n, uint64_t *since)
{
	int64_t now = util_now_ms();

	p->unsaid += n;
	if (p->logged_ms != 0 && now - p->logged_ms < STATUS_LOG_MS)
		return 0;
	*since = p->unsaid;
	p->logged_ms = now;
	p->unsaid = 0;
	return 1;
}

void
outcome_tags_dropped(struct stats *st, int route, const char *key, int n)
{
	static struct pace pace;
	uint64_t since;

	if (n <= 0)
		return;
	STAT_ADD(st, route, tags_dropped, (uint64_t)n);
	if (!pace_due(&pace, (uint64_t)n, &since))
		return;
	log_warn("%s: %d tag%s not filed for purges (a response is filed "
	    "under its first %d tags of at most %d bytes; %" PRIu64 " not "
	    "filed since the last report)", key, n, n == 1 ? "" : "s",
	    HDR_TAGS_MAX, HDR_TAG_MAX, since);
}

void
outcome_variants_full(struct stats *st, int route, const char *key, int max)
{
	static struct pace pace;
	uint64_t since;

	STAT_INC(st, route, variants_refused);
	if (!pace_due(&pace, 1, &since))
		return;
	log_warn("%s: a variant not stored: the key has max_variants (%d) "
	    "variants already (%" PRIu64 " not stored since the last report)",
	    key, max, since);
}
