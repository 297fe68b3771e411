/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_STATS_H
#define PROXY_PROXY_STATS_H

/*
 * Counters, per route and in total. Every counter is one row of
 * STATS_FIELDS, so the struct, the JSON and corral-metrics(7) stay in step.
 */

#include <stdint.h>

#include <event2/buffer.h>

#include "common/hist.h"
#include "conf/conf.h"

#define STATS_FIELDS(X)							\
	X(requests,		"requests received")			\
	X(hits,			"served fresh from the cache")		\
	X(near_hits,		"of those, from the process's memory")	\
	X(stale_hits,		"served stale while one refresh runs")	\
	X(stale_if_error,	"served stale because the upstream failed")	\
	X(misses,		"answered by a fetch run for this request")	\
	X(collapsed,		"answered by another request's fetch")	\
	X(bypass,		"not cacheable: proxied uncached")	\
	X(errors,		"answered with a 5xx made by corral")	\
	X(rejected,		"malformed or over-limit requests (4xx)")	\
	X(upstream_fetches,	"requests sent to the upstream")	\
	X(upstream_errors,	"upstream fetches that failed or gave 5xx")	\
	X(upstream_2xx,		"upstream responses 200-299")		\
	X(upstream_3xx,		"upstream responses 300-399")		\
	X(upstream_4xx,		"upstream responses 400-499")		\
	X(upstream_5xx,		"upstream responses 500-599")		\
	X(upstream_timeouts,	"upstream fetches that timed out")	\
	X(upstream_failures,	"upstream fetches that failed otherwise")	\
	X(upstream_retries,	"failed before any response: sent to another server")	\
	X(stores,		"entries written to Redis")		\
	X(tags_dropped,		"tags of stored responses not filed: past the 32nd, or too long")	\
	X(variants_refused,	"responses not stored: their key had max_variants variants")	\
	X(early_refreshes,	"refreshes started before expiry (XFetch)")	\
	X(revalidated,		"refreshes the upstream answered 304")	\
	X(not_modified,		"304s answered to clients from the cache")	\
	X(coding_encoded,	"identity bodies compressed as they were stored (store_encoding)")	\
	X(coding_decoded,	"answers decoded for a client that does not take the stored coding")	\
	X(coding_refused,	"coded bodies from the upstream not stored: corrupt, cut short or past max_entry_bytes decoded")	\
	X(coding_406,		"requests that accept no coding Corral has, not even identity: 406")	\
	X(coded_stored_bytes,	"bytes of coded bodies stored (gzip, br, zstd)")	\
	X(coded_plain_bytes,	"the same bodies' bytes as identity")	\
	X(invalidations,	"entries dropped after a successful unsafe request")	\
	X(write_tag_purges,	"tags a successful write's answer purged (purge_header, GraphQL mutations)")	\
	X(locks_acquired,	"refresh locks won")			\
	X(lock_busy,		"lock attempts that found it held")	\
	X(backoff_skips,	"fetches skipped: the key's refreshes back off")	\
	X(hit_for_miss,		"lock attempts on a key remembered as uncacheable")	\
	X(lock_renewals,	"lock PX renewals during slow fetches")	\
	X(lock_lost,		"fetches whose lock token was replaced, or a purge fenced")	\
	X(waiters,		"requests that waited for another's fetch")	\
	X(lock_wait_ms,		"total ms those requests waited")	\
	X(lock_wait_timeouts,	"waits that reached lock_wait: answered without a fetch")	\
	X(lock_takeovers,	"locks taken over from a holder that ended without an entry")	\
	X(peer_streams,		"responses streamed from a sibling worker's fetch")	\
	X(peer_fallbacks,	"asks of a sibling worker that got no stream")	\
	X(sibling_fills,	"answers from a sibling's fetch while Redis could not lock the key")	\
	X(stream_detached,	"streamed clients that fell behind the others: fed from the body kept")	\
	X(stream_cut_slow,	"streamed clients that fell behind with no body kept: cut")	\
	X(slot_grants,		"origin slots granted (max_requests)")	\
	X(slot_waits,		"of those, after waiting for one")	\
	X(slot_local,		"of those, from the local share (Redis down)")	\
	X(slot_lost,		"slot leases that ran out during their fetch")	\
	X(shed_stale,		"no origin slot within queue_timeout: stale served")	\
	X(shed_busy,		"no origin slot within queue_timeout: 503")	\
	X(shed_refresh,		"refreshes dropped: no origin slot within queue_timeout")	\
	X(shed_unwanted,	"fetches dropped unsent: every client waiting for them left")	\
	X(client_gone,		"requests whose client left before their answer")	\
	X(key_query_hits,	"hits on keys made by key_query or key_ignore_query")	\
	X(key_query_stores,	"entries stored for misses on those keys")	\
	X(key_headers_hits,	"hits on keys holding key_headers values")	\
	X(key_headers_stores,	"entries stored for misses on those keys")	\
	X(key_post_hits,	"hits on cached POSTs keyed on their body")	\
	X(key_post_stores,	"entries stored for misses on those keys")	\
	X(key_graphql_hits,	"hits on cached GraphQL queries")	\
	X(key_graphql_stores,	"entries stored for misses on those keys")	\
	X(key_credential_hits,	"hits on per-credential keys")		\
	X(key_credential_stores, "entries stored for misses on those keys")	\
	X(post_passed,		"POSTs on cache_post routes passed: mutations, long or unreadable bodies") \
	X(key_claims_hits,	"hits on claims keys")			\
	X(key_claims_stores,	"entries stored for misses on those keys")	\
	X(jwt_verified,		"claims routes: tokens verified")	\
	X(jwt_missing,		"claims routes: requests without a Bearer token")	\
	X(jwt_malformed,	"claims routes: tokens not a JWS, too large, or two Authorization fields")	\
	X(jwt_alg_refused,	"claims routes: alg none, unsupported, or not the key's")	\
	X(jwt_key_unknown,	"claims routes: no key for the token's kid or alg, or no kid where several keys fit")	\
	X(jwt_bad_signature,	"claims routes: signatures that do not verify")	\
	X(jwt_expired,		"claims routes: tokens past exp and the leeway")	\
	X(jwt_not_yet_valid,	"claims routes: tokens before nbf or iat, less the leeway")	\
	X(jwt_claims_refused,	"claims routes: tokens without exp, or of another issuer or audience")	\
	X(jwt_errors,		"claims routes: verifications that failed for want of memory")	\
	X(jwt_rejected,		"claims routes: requests without a valid token answered 401 (jwt_reject)")	\
	X(jwt_passed,		"claims routes: requests without a valid token passed uncached")	\
	X(jwt_refresh_expired,	"claims routes: refreshes not sent: their token expired before the send")	\
	X(jwt_keys_reloads,	"jwt_keys_file loads that succeeded (start, SIGHUP, a change)")	\
	X(jwt_keys_reload_errors, "jwt_keys_file loads that failed (the keys before stay)")

struct stats_counters {
#define STATS_MEMBER(name, doc)	uint64_t name;
	STATS_FIELDS(STATS_MEMBER)
#undef STATS_MEMBER
};

/* The figures of one route, or of everything. */
struct stats_scope {
	struct stats_counters	c;
	struct hist		upstream_duration;	/* each upstream fetch */
	struct hist		lock_wait;		/* each waiter's wait */
	struct hist		slot_wait;		/* each origin slot's wait */
	struct hist		fill_wake;		/* a fill's receipt to its
							 * flight's first answer */
	struct hist		rush;			/* a flight's answer handed
							 * to all its waiters */
};

struct stats {
	struct stats_scope	total;
	struct stats_scope	route[CONF_ROUTES_MAX];
};

/* Adds n to a counter in the total and, when route >= 0, in that route. */
#define STAT_ADD(st, ri, field, n) do {				\
	(st)->total.c.field += (n);					\
	if ((ri) >= 0)							\
		(st)->route[(ri)].c.field += (n);			\
} while (0)
#define STAT_INC(st, ri, field)	STAT_ADD(st, ri, field, 1)

/* Records seconds in a histogram of the total and of the route: the same
 * value in both (seconds is read once: it may read a clock), so that the
 * route's never falls in another bucket than the total's. */
#define STAT_OBSERVE(st, ri, h, seconds) do {				\
	double stat_s_ = (seconds);					\
									\
	hist_observe(&(st)->total.h, stat_s_);				\
	if ((ri) >= 0)							\
		hist_observe(&(st)->route[(ri)].h, stat_s_);		\
} while (0)

/* Adds every counter and histogram of src into dst. */
void	stats_add(struct stats *dst, const struct stats *src);

/* Appends {"name": value, ...} for one set of counters. */
void	stats_counters_json(const struct stats_counters *sc, struct evbuffer *out);

#endif
