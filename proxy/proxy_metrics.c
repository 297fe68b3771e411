/* SPDX-License-Identifier: MIT */
/*
 * Metrics in the Prometheus text format, histograms in JSON, and a table
 * for terminals. Every per-route metric is one row of a table below; a
 * family is the run of rows that share a name.
 */

#include "proxy/proxy_metrics.h"
#include "proxy/proxy_prom.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/cache.h"
#include "common/dict.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_figures.h"
#include "upstream/upstream.h"

#define NO_FIELD	((size_t)-1)
#define FIELD(f)	offsetof(struct stats_counters, f)
#define MS_PER_S	1000.0
#define TABLE_ROUTE_MIN	6	/* width of the route column */
#define TABLE_ROUTE_MAX	24

/* One series of a per-route counter family: field (plus also) of each
 * scope, with label = value when label is set. */
struct counter_row {
	const char	*name;
	const char	*help;
	const char	*label;
	const char	*value;
	size_t		 field;
	size_t		 also;
};

static const struct counter_row counter_rows[] = {
	{ "corral_requests_total", "Requests answered, by how the cache "
	  "answered them.", "cache", "hit", FIELD(hits), NO_FIELD },
	{ "corral_requests_total", NULL, "cache", "stale",
	  FIELD(stale_hits), NO_FIELD },
	{ "corral_requests_total", NULL, "cache", "miss",
	  FIELD(misses), NO_FIELD },
	{ "corral_requests_total", NULL, "cache", "collapsed",
	  FIELD(collapsed), NO_FIELD },
	{ "corral_requests_total", NULL, "cache", "bypass",
	  FIELD(bypass), NO_FIELD },
	{ "corral_requests_total", NULL, "cache", "error",
	  FIELD(errors), FIELD(rejected) },

	{ "corral_upstream_requests_total", "Upstream fetches finished, by "
	  "status class, or timeout or error when no status came.", "code",
	  "2xx", FIELD(upstream_2xx), NO_FIELD },
	{ "corral_upstream_requests_total", NULL, "code", "3xx",
	  FIELD(upstream_3xx), NO_FIELD },
	{ "corral_upstream_requests_total", NULL, "code", "4xx",
	  FIELD(upstream_4xx), NO_FIELD },
	{ "corral_upstream_requests_total", NULL, "code", "5xx",
	  FIELD(upstream_5xx), NO_FIELD },
	{ "corral_upstream_requests_total", NULL, "code", "timeout",
	  FIELD(upstream_timeouts), NO_FIELD },
	{ "corral_upstream_requests_total", NULL, "code", "error",
	  FIELD(upstream_failures), NO_FIELD },

	{ "corral_cache_stores_total", "Entries written to Redis.", NULL, NULL,
	  FIELD(stores), NO_FIELD },
	{ "corral_tags_dropped_total", "Tags of stored responses not filed "
	  "for purges: past the 32nd, or longer than 128 bytes.", NULL, NULL,
	  FIELD(tags_dropped), NO_FIELD },
	{ "corral_variants_refused_total", "Responses not stored because their "
	  "key had max_variants variants already.", NULL, NULL,
	  FIELD(variants_refused), NO_FIELD },
	{ "corral_not_modified_total", "304 answers to conditional requests, "
	  "made from the cache.", NULL, NULL, FIELD(not_modified), NO_FIELD },
	{ "corral_coding_total", "Content-coding work: identity bodies "
	  "compressed on store (encoded), answers decoded for a client "
	  "(decoded), coded upstream bodies refused (refused), 406 answers "
	  "(not_acceptable).", "op", "encoded", FIELD(coding_encoded),
	  NO_FIELD },
	{ "corral_coding_total", NULL, "op", "decoded",
	  FIELD(coding_decoded), NO_FIELD },
	{ "corral_coding_total", NULL, "op", "refused",
	  FIELD(coding_refused), NO_FIELD },
	{ "corral_coding_total", NULL, "op", "not_acceptable",
	  FIELD(coding_406), NO_FIELD },
	{ "corral_coded_bytes_total", "Bytes of coded bodies stored (as "
	  "stored), and the same bodies as identity (identity).", "as",
	  "stored", FIELD(coded_stored_bytes), NO_FIELD },
	{ "corral_coded_bytes_total", NULL, "as", "identity",
	  FIELD(coded_plain_bytes), NO_FIELD },
	{ "corral_invalidations_total", "Entries dropped after a successful "
	  "unsafe request (POST, PUT, DELETE, PATCH).", NULL, NULL,
	  FIELD(invalidations), NO_FIELD },
	{ "corral_early_refresh_total", "Refreshes started before the entry "
	  "went stale.", NULL, NULL, FIELD(early_refreshes), NO_FIELD },
	{ "corral_revalidations_total", "Refreshes the upstream answered with "
	  "304 Not Modified.", NULL, NULL, FIELD(revalidated), NO_FIELD },
	{ "corral_stale_if_error_total", "Stale answers given because the "
	  "upstream failed (also counted as cache=stale).", NULL, NULL,
	  FIELD(stale_if_error), NO_FIELD },
	{ "corral_lock_acquired_total", "Refresh locks won.", NULL, NULL,
	  FIELD(locks_acquired), NO_FIELD },
	{ "corral_lock_busy_total", "Lock attempts that found the lock held "
	  "by another fetch.", NULL, NULL, FIELD(lock_busy), NO_FIELD },
	{ "corral_lock_renewed_total", "Lock expiry extensions during slow "
	  "fetches.", NULL, NULL, FIELD(lock_renewals), NO_FIELD },
	{ "corral_lock_lost_total", "Fetches whose lock was taken over "
	  "(their response was not stored).", NULL, NULL, FIELD(lock_lost),
	  NO_FIELD },
	{ "corral_lock_wait_timeouts_total", "Waits for another fetch that "
	  "reached lock_wait (answered stale or 504, never fetched).", NULL,
	  NULL, FIELD(lock_wait_timeouts), NO_FIELD },
	{ "corral_lock_takeovers_total", "Locks taken over from a holder that "
	  "ended without an entry or a failure (it died, mostly).", NULL, NULL,
	  FIELD(lock_takeovers), NO_FIELD },
	{ "corral_backoff_skips_total", "Fetches skipped while a key's "
	  "refreshes back off after upstream failures.", NULL, NULL,
	  FIELD(backoff_skips), NO_FIELD },
	{ "corral_hit_for_miss_total", "Lock attempts on a key remembered "
	  "fleet-wide as uncacheable: its requests went upstream in parallel.",
	  NULL, NULL, FIELD(hit_for_miss), NO_FIELD },
	{ "corral_peer_streams_total", "Asks of a sibling worker for the "
	  "response it fetches: streamed to this worker's waiters, or none "
	  "(they waited for the entry).", "result", "streamed",
	  FIELD(peer_streams), NO_FIELD },
	{ "corral_peer_streams_total", NULL, "result", "none",
	  FIELD(peer_fallbacks), NO_FIELD },
	{ "corral_sibling_fills_total", "Flights answered with the entry a "
	  "sibling worker fetched under the instance's claim, while Redis "
	  "could not lock the key.", NULL, NULL, FIELD(sibling_fills),
	  NO_FIELD },
	{ "corral_stream_laggards_total", "Streamed clients that fell behind "
	  "the others: detached (fed from the body kept, at their own pace) "
	  "or cut (no body kept).", "result", "detached",
	  FIELD(stream_detached), NO_FIELD },
	{ "corral_stream_laggards_total", NULL, "result", "cut",
	  FIELD(stream_cut_slow), NO_FIELD },

	{ "corral_origin_slots_granted_total", "Origin slots granted under "
	  "max_requests: every origin request takes one.", NULL, NULL,
	  FIELD(slot_grants), NO_FIELD },
	{ "corral_origin_slot_waits_total", "Origin requests that waited for a "
	  "slot before they went.", NULL, NULL, FIELD(slot_waits), NO_FIELD },
	{ "corral_origin_slots_local_total", "Origin slots taken from the "
	  "instance's local share while Redis was unavailable.", NULL, NULL,
	  FIELD(slot_local), NO_FIELD },
	{ "corral_origin_slot_leases_lost_total", "Slot leases that ran out "
	  "while their fetch still ran.", NULL, NULL, FIELD(slot_lost),
	  NO_FIELD },
	{ "corral_origin_sheds_total", "Requests that got no origin slot within "
	  "queue_timeout, by what they got: stale (an entry served), busy (503 "
	  "with Retry-After) or refresh (a background refresh dropped).",
	  "reason", "stale", FIELD(shed_stale), NO_FIELD },
	{ "corral_origin_sheds_total", NULL, "reason", "busy",
	  FIELD(shed_busy), NO_FIELD },
	{ "corral_origin_sheds_total", NULL, "reason", "refresh",
	  FIELD(shed_refresh), NO_FIELD },
	{ "corral_origin_sheds_total", NULL, "reason", "unwanted",
	  FIELD(shed_unwanted), NO_FIELD },
	{ "corral_clients_gone_total", "Requests whose client left before "
	  "their answer: a fetch of theirs not yet sent is dropped.", NULL,
	  NULL, FIELD(client_gone), NO_FIELD },

	{ "corral_key_rule_hits_total", "Hits on keys a key rule made, by "
	  "the rule.", "rule", "query-rules", FIELD(key_query_hits), NO_FIELD },
	{ "corral_key_rule_hits_total", NULL, "rule", "headers",
	  FIELD(key_headers_hits), NO_FIELD },
	{ "corral_key_rule_hits_total", NULL, "rule", "post",
	  FIELD(key_post_hits), NO_FIELD },
	{ "corral_key_rule_hits_total", NULL, "rule", "graphql",
	  FIELD(key_graphql_hits), NO_FIELD },
	{ "corral_key_rule_hits_total", NULL, "rule", "credential",
	  FIELD(key_credential_hits), NO_FIELD },
	{ "corral_key_rule_hits_total", NULL, "rule", "claims",
	  FIELD(key_claims_hits), NO_FIELD },
	{ "corral_key_rule_stores_total", "Entries stored for misses on keys a "
	  "key rule made, by the rule.", "rule", "query-rules",
	  FIELD(key_query_stores), NO_FIELD },
	{ "corral_key_rule_stores_total", NULL, "rule", "headers",
	  FIELD(key_headers_stores), NO_FIELD },
	{ "corral_key_rule_stores_total", NULL, "rule", "post",
	  FIELD(key_post_stores), NO_FIELD },
	{ "corral_key_rule_stores_total", NULL, "rule", "graphql",
	  FIELD(key_graphql_stores), NO_FIELD },
	{ "corral_key_rule_stores_total", NULL, "rule", "credential",
	  FIELD(key_credential_stores), NO_FIELD },
	{ "corral_key_rule_stores_total", NULL, "rule", "claims",
	  FIELD(key_claims_stores), NO_FIELD },
	{ "corral_post_passed_total", "POSTs on cache_post routes passed "
	  "uncached: mutations, long or unreadable bodies.", NULL, NULL,
	  FIELD(post_passed), NO_FIELD },

	{ "corral_jwt_verifications_total", "Tokens of requests on claims "
	  "routes, by what verifying them came to.", "result", "verified",
	  FIELD(jwt_verified), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "missing",
	  FIELD(jwt_missing), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "malformed",
	  FIELD(jwt_malformed), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "alg_refused",
	  FIELD(jwt_alg_refused), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "key_unknown",
	  FIELD(jwt_key_unknown), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "bad_signature",
	  FIELD(jwt_bad_signature), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "expired",
	  FIELD(jwt_expired), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "not_yet_valid",
	  FIELD(jwt_not_yet_valid), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "claims_refused",
	  FIELD(jwt_claims_refused), NO_FIELD },
	{ "corral_jwt_verifications_total", NULL, "result", "error",
	  FIELD(jwt_errors), NO_FIELD },
	{ "corral_jwt_refusals_total", "Requests on claims routes without a "
	  "valid token: answered 401 (jwt_reject) or passed uncached.",
	  "action", "rejected", FIELD(jwt_rejected), NO_FIELD },
	{ "corral_jwt_refusals_total", NULL, "action", "passed",
	  FIELD(jwt_passed), NO_FIELD },
	{ "corral_jwt_refreshes_expired_total", "Refreshes on claims routes "
	  "not sent: their requester's token expired before the send.", NULL,
	  NULL, FIELD(jwt_refresh_expired), NO_FIELD },
	{ "corral_jwt_key_loads_total", "Loads of jwt_keys_file (at start, "
	  "on SIGHUP, when it changes), by result.", "result", "ok",
	  FIELD(jwt_keys_reloads), NO_FIELD },
	{ "corral_jwt_key_loads_total", NULL, "result", "error",
	  FIELD(jwt_keys_reload_errors), NO_FIELD },
};

/* A per-route histogram family. */
struct hist_family {
	const char	*name;
	const char	*help;
	size_t		 off;		/* in struct stats_scope */
};

static const struct hist_family hist_families[] = {
	{ "corral_upstream_duration_seconds", "Time each upstream fetch took.",
	  offsetof(struct stats_scope, upstream_duration) },
	{ "corral_lock_wait_seconds", "Time each cold-miss waiter waited for "
	  "another request's fetch.", offsetof(struct stats_scope, lock_wait) },
	{ "corral_origin_slot_wait_seconds", "Time each origin request waited "
	  "for its slot (max_requests).", offsetof(struct stats_scope,
	  slot_wait) },
	{ "corral_fill_wake_seconds", "Time from a fill notification's "
	  "receipt to the answer handed to the first request of the flight it "
	  "woke.", offsetof(struct stats_scope, fill_wake) },
	{ "corral_rush_seconds", "Time to hand one flight's answer to all its "
	  "requests (flights of two or more).", offsetof(struct stats_scope,
	  rush) },
};

static uint64_t
counter(const struct stats_counters *c, size_t field)
{
	const char *base = (const char *)c;
	uint64_t v;

	memcpy(&v, base + field, sizeof(v));
	return v;
}

static uint64_t
row_value(const struct counter_row *row, const struct stats_counters *c)
{
	uint64_t v = counter(c, row->field);

	if (row->also != NO_FIELD)
		v += counter(c, row->also);
	return v;
}

static const struct hist *
scope_hist(const struct stats_scope *s, size_t off)
{
	return (const struct hist *)(const void *)((const char *)s + off);
}

static void
hist_subtract(struct hist *h, const struct hist *part)
{
	for (int i = 0; i <= HIST_NBOUNDS; i++)
		h->bucket[i] -= part->bucket[i];
	h->count -= part->count;
	h->sum = h->sum > part->sum ? h->sum - part->sum : 0;
}

int
metrics_scopes(const struct proxy *px, const struct stats *st,
    struct stats_scope *unrouted, struct metrics_scope out[CONF_ROUTES_MAX + 1])
{
	int n = px->conf->nroutes;

	*unrouted = st->total;
	for (int i = 0; i < n; i++) {
		const struct stats_scope *r = &st->route[i];
#define STATS_LESS(name, doc)	unrouted->c.name -= r->c.name;
		STATS_FIELDS(STATS_LESS)
#undef STATS_LESS
		hist_subtract(&unrouted->upstream_duration, &r->upstream_duration);
		hist_subtract(&unrouted->lock_wait, &r->lock_wait);
		hist_subtract(&unrouted->slot_wait, &r->slot_wait);
		hist_subtract(&unrouted->fill_wake, &r->fill_wake);
		hist_subtract(&unrouted->rush, &r->rush);
		out[i].route = px->conf->routes[i].prefix;
		out[i].s = r;
	}
	out[n].route = METRICS_UNROUTED;
	out[n].s = unrouted;
	return n + 1;
}

double
metrics_hit_ratio(const struct stats_counters *c)
{
	uint64_t served = c->hits + c->stale_hits + c->collapsed;
	uint64_t all = served + c->misses;

	return all > 0 ? (double)served / (double)all : -1;
}

/* ---- Prometheus ---- */

static void
counter_families(struct evbuffer *out, const struct metrics_scope *scopes,
    int nscopes)
{
	size_t first = 0, end;

	while (first < ARRAY_LEN(counter_rows)) {
		const char *name = counter_rows[first].name;
		for (end = first; end < ARRAY_LEN(counter_rows) &&
		    strcmp(counter_rows[end].name, name) == 0; end++)
			;
		prom_family(out, name, "counter", counter_rows[first].help);
		for (int i = 0; i < nscopes; i++) {
			for (size_t r = first; r < end; r++) {
				const struct counter_row *row = &counter_rows[r];
				evbuffer_add_printf(out, "%s{route=", name);
				prom_label(out, scopes[i].route);
				if (row->label != NULL)
					evbuffer_add_printf(out, ",%s=\"%s\"",
					    row->label, row->value);
				evbuffer_add_printf(out, "} %" PRIu64 "\n",
				    row_value(row, &scopes[i].s->c));
			}
		}
		first = end;
	}
}

/* One histogram's series; route may be NULL (no labels). */
static void
hist_series(struct evbuffer *out, const char *name, const char *route,
    const struct hist *h)
{
	uint64_t cumulative = 0;

	for (int i = 0; i <= HIST_NBOUNDS; i++) {
		cumulative += h->bucket[i];
		evbuffer_add_printf(out, "%s_bucket{", name);
		if (route != NULL) {
			evbuffer_add(out, "route=", 6);
			prom_label(out, route);
			evbuffer_add(out, ",", 1);
		}
		if (i < HIST_NBOUNDS)
			evbuffer_add_printf(out, "le=\"%g\"} %" PRIu64 "\n",
			    hist_bounds[i], cumulative);
		else
			evbuffer_add_printf(out, "le=\"+Inf\"} %" PRIu64 "\n",
			    cumulative);
	}
	evbuffer_add_printf(out, "%s_sum", name);
	if (route != NULL) {
		evbuffer_add(out, "{route=", 7);
		prom_label(out, route);
		evbuffer_add(out, "}", 1);
	}
	evbuffer_add_printf(out, " %.15g\n%s_count", h->sum, name);
	if (route != NULL) {
		evbuffer_add(out, "{route=", 7);
		prom_label(out, route);
		evbuffer_add(out, "}", 1);
	}
	evbuffer_add_printf(out, " %" PRIu64 "\n", h->count);
}

static void
gauge(struct evbuffer *out, const char *name, const char *help, double v)
{
	prom_family(out, name, "gauge", help);
	evbuffer_add_printf(out, "%s %.15g\n", name, v);
}

/* One series per Redis node: its up state, or (slots) how many it owns. */
static void
node_gauge(struct evbuffer *out, const struct cache_counters *cc,
    const char *name, const char *help, int slots)
{
	prom_family(out, name, "gauge", help);
	for (int i = 0; i < cc->nnodes; i++) {
		evbuffer_add_printf(out, "%s{node=", name);
		prom_label(out, cc->nodes[i].name);
		evbuffer_add_printf(out, "} %d\n", slots ? cc->nodes[i].slots :
		    cc->nodes[i].up);
	}
}

static void
redis_counter(struct evbuffer *out, const char *name, const char *help,
    uint64_t v)
{
	prom_family(out, name, "counter", help);
	evbuffer_add_printf(out, "%s %" PRIu64 "\n", name, v);
}

const struct metrics_view *
metrics_view(struct proxy *px)
{
	static struct metrics_view v;	/* large: off the stack */

	proxy_figures(px, &v.fig);
	v.nscopes = metrics_scopes(px, v.fig.stats, &v.unrouted, v.scopes);
	return &v;
}

/* The process: its build, when it started and what it has in progress. */
static void
process_metrics(struct evbuffer *out, const struct proxy *px,
    const struct proxy_figures *fig)
{
	const char *names[RESTART_KEYS_MAX];

	prom_family(out, "corral_build_info", "gauge",
	    "Always 1; the version is a label.");
	evbuffer_add_printf(out, "corral_build_info{version=");
	prom_label(out, CORRAL_VERSION);
	evbuffer_add_printf(out, "} 1\n");
	gauge(out, "corral_start_time_seconds", "When this process started, "
	    "in seconds since the epoch.", (double)px->started_ms / MS_PER_S);
	gauge(out, "corral_workers", "Worker processes serving requests.",
	    fig->workers);
	gauge(out, "corral_restart_pending", "Configuration keys changed in "
	    "the file that keep their running values until a restart.",
	    conf_restart_pending(px->conf, names));
	gauge(out, "corral_connections", "Client connections open on the "
	    "public listener.", (double)fig->connections);
	gauge(out, "corral_admin_connections", "Connections open on the admin "
	    "listener.", (double)fig->admin_connections);
	redis_counter(out, "corral_admin_connections_refused_total", "Admin "
	    "connections turned away with a 503 at admin_max_connections.",
	    fig->admin_refused);
	gauge(out, "corral_requests_in_progress", "Client requests not yet "
	    "answered.", (double)fig->requests);
	gauge(out, "corral_flights", "Keys the workers are looking up, "
	    "waiting for or fetching.", (double)fig->flights);
	gauge(out, "corral_refreshes_in_progress", "Fetches for the cache "
	    "in progress (with their lock).", (double)fig->refreshes);
	gauge(out, "corral_upstream_requests_in_progress", "Upstream "
	    "fetches in progress.", (double)fig->upstream_fetches);
	gauge(out, "corral_decoded_bytes_queued", "Bytes of bodies decoded "
	    "for clients, queued and not sent yet.",
	    (double)fig->decoded_bytes);
	gauge(out, "corral_decoded_bytes_kept", "Bytes of bodies decoded "
	    "once and kept with their entries for every client that takes "
	    "only identity.", (double)fig->decoded_kept);
	gauge(out, "corral_decoding", "Bodies being decoded as their "
	    "clients take them (no copy decoded can be kept).",
	    (double)fig->decoding);
}

/* The near caches: each worker's own, and the one they share. */
static void
near_cache_metrics(struct evbuffer *out, const struct proxy_figures *fig)
{
	gauge(out, "corral_near_cache_bytes", "Bytes of entries held in the "
	    "workers' memory (l1_max_bytes each).", (double)fig->l1_bytes);
	gauge(out, "corral_near_cache_entries", "Entries held in the "
	    "workers' memory.", (double)fig->l1_entries);
	redis_counter(out, "corral_near_cache_rejected_total", "New entries "
	    "the near cache did not let in: asked for no more often than the "
	    "entry they would have pushed out.", fig->l1_rejected);
	gauge(out, "corral_body_files", "Large bodies the workers keep in "
	    "sealed memory files, to send to plain sockets with sendfile.",
	    (double)fig->body_files);
	gauge(out, "corral_body_file_bytes", "Bytes of those files (at most "
	    "l1_max_bytes a worker).", (double)fig->body_file_bytes);
	gauge(out, "corral_shared_cache_bytes", "Bytes of the near cache the "
	    "workers share (l2_max_bytes) in use.", (double)fig->l2.bytes);
	gauge(out, "corral_shared_cache_entries", "Entries held in the near "
	    "cache the workers share.", (double)fig->l2.entries);
	redis_counter(out, "corral_shared_cache_hits_total", "Lookups the "
	    "shared near cache answered.", fig->l2.hits);
	redis_counter(out, "corral_shared_cache_misses_total", "Lookups the "
	    "shared near cache could not answer.", fig->l2.misses);
	redis_counter(out, "corral_shared_cache_stores_total", "Entries "
	    "written to the shared near cache.", fig->l2.stores);
	redis_counter(out, "corral_shared_cache_evictions_total", "Entries "
	    "the shared near cache pushed out for room.", fig->l2.evictions);
	redis_counter(out, "corral_shared_cache_resets_total", "Times the "
	    "shared near cache was emptied because a worker died while "
	    "changing it.", fig->l2.resets);
	redis_counter(out, "corral_shared_cache_lock_busy_total", "Lookups, "
	    "writes and drops that did without the shared near cache because "
	    "another worker held its lock too long.", fig->l2.lock_busy);
}

/* The per-route families: the counters, then the histograms. */
static void
route_metrics(struct evbuffer *out, const struct metrics_scope *scopes,
    int nscopes)
{
	counter_families(out, scopes, nscopes);
	for (size_t f = 0; f < ARRAY_LEN(hist_families); f++) {
		prom_family(out, hist_families[f].name, "histogram",
		    hist_families[f].help);
		for (int i = 0; i < nscopes; i++)
			hist_series(out, hist_families[f].name, scopes[i].route,
			    scope_hist(scopes[i].s, hist_families[f].off));
	}
}

/* Redis commands: sent, failed, timed, and the notifications heard. */
static void
redis_command_metrics(struct evbuffer *out, const struct proxy_figures *fig)
{
	const struct cache_counters *cc = &fig->cache;

	gauge(out, "corral_redis_up", "1 while the Redis command connection "
	    "of every worker is up.", fig->redis_up == fig->workers ? 1 : 0);
	redis_counter(out, "corral_redis_commands_total", "Redis commands "
	    "sent.", cc->commands);
	redis_counter(out, "corral_redis_errors_total", "Redis commands that "
	    "failed: error replies, timeouts, disconnects.", cc->errors);
	redis_counter(out, "corral_redis_timeouts_total", "Redis commands "
	    "with no reply within [redis] timeout (also errors).",
	    cc->timeouts);
	redis_counter(out, "corral_redis_connects_total", "Redis "
	    "connections made.", cc->connects);
	redis_counter(out, "corral_redis_disconnects_total", "Redis "
	    "connections lost.", cc->disconnects);
	redis_counter(out, "corral_redis_auth_failures_total", "Redis "
	    "connections refused for their password (AUTH failed, or NOAUTH).",
	    cc->auth_failures);
	gauge(out, "corral_redis_full", "1 while Redis refuses writes at "
	    "maxmemory in any worker (nothing is stored).", cc->full > 0);
	redis_counter(out, "corral_redis_oom_total", "Writes Redis refused "
	    "at maxmemory (OOM; also errors).", cc->oom);
	redis_counter(out, "corral_redis_fill_notifications_total",
	    "\"filled\" notifications received from the fleet.",
	    cc->fills_received);
	prom_family(out, "corral_redis_command_duration_seconds", "histogram",
	    "Time from sending a Redis command to reading its reply.");
	hist_series(out, "corral_redis_command_duration_seconds", NULL,
	    &cc->command_duration);
	prom_family(out, "corral_redis_fill_delay_seconds", "histogram",
	    "Time from Redis publishing a fill notification to its receipt.");
	hist_series(out, "corral_redis_fill_delay_seconds", NULL,
	    &cc->fill_delay);
	redis_counter(out, "corral_redis_purge_notifications_total",
	    "Invalidations and purges heard from the fleet.",
	    cc->purges_received);
	gauge(out, "corral_tag_set_members_max", "Keys in the largest tag "
	    "set a store met in the last minute or two.", cc->tag_set_largest);
	redis_counter(out, "corral_tag_members_pruned_total", "Keys dropped "
	    "from tag sets because their entries were gone.",
	    cc->tag_members_pruned);
}

/* The Redis deployment: cluster redirects, slot maps, mode and nodes. */
static void
redis_topology_metrics(struct evbuffer *out, struct proxy *px,
    const struct cache_counters *cc)
{
	prom_family(out, "corral_redis_redirects_total", "counter", "Cluster "
	    "redirects followed: MOVED (the slot moved) or ASK (migrating).");
	evbuffer_add_printf(out, "corral_redis_redirects_total{kind=\"moved\"} %"
	    PRIu64 "\ncorral_redis_redirects_total{kind=\"ask\"} %" PRIu64 "\n",
	    cc->moved, cc->ask);
	redis_counter(out, "corral_redis_map_refreshes_total", "Slot maps "
	    "read (cluster) or primaries looked up (sentinel).",
	    cc->map_refreshes);
	redis_counter(out, "corral_redis_replica_reads_total", "Reads sent "
	    "to a replica while the slot's primary was unreachable (cluster).",
	    cc->replica_reads);
	prom_family(out, "corral_redis_mode", "gauge", "Always 1; the [redis] mode "
	    "is a label.");
	evbuffer_add_printf(out, "corral_redis_mode{mode=\"%s\"} 1\n",
	    cache_mode(px->cache));
	node_gauge(out, cc, "corral_redis_node_up", "1 while every worker's "
	    "command connection to this node is up (nodes that own slots).", 0);
	node_gauge(out, cc, "corral_redis_node_slots", "Hash slots the node "
	    "owns, as a worker last saw the map.", 1);
}

static void
upstream_rejected_metrics(struct evbuffer *out,
    const struct proxy_figures *fig)
{
	prom_family(out, "corral_upstream_rejected_total", "counter", "Upstream "
	    "responses refused (502): too many header lines, or bad framing.");
	evbuffer_add_printf(out, "corral_upstream_rejected_total"
	    "{reason=\"headers\"} %" PRIu64 "\n", fig->upstream.too_many_headers);
	evbuffer_add_printf(out, "corral_upstream_rejected_total"
	    "{reason=\"framing\"} %" PRIu64 "\n", fig->upstream.bad_framing);
}

/* One gauge of the origin budget, labelled with the upstream (and, when
 * scoped, scope="instance" and "fleet"); a figure not known (-1) has no
 * series. */
static void
budget_gauge(struct evbuffer *out, const struct proxy *px, const char *name,
    const char *help, int scoped, int64_t instance, int64_t fleet)
{
	prom_family(out, name, "gauge", help);
	for (int i = 0; i < 1 + scoped; i++) {
		int64_t v = i == 0 ? instance : fleet;

		if (v < 0)
			continue;
		evbuffer_add_printf(out, "%s{upstream=", name);
		prom_label(out, px->conf->upstream_authority);
		if (scoped)
			evbuffer_add_printf(out, ",scope=\"%s\"",
			    i == 0 ? "instance" : "fleet");
		evbuffer_add_printf(out, "} %" PRId64 "\n", v);
	}
}

/* The origin budget: its setting, slots in use and the queue, this
 * instance's and the fleet's as Redis counted them at the last hello. */
static void
budget_metrics(struct evbuffer *out, const struct proxy *px,
    const struct budget_gauges *g)
{
	budget_gauge(out, px, "corral_origin_max_requests", "Origin requests "
	    "allowed at once across the fleet ([upstream] max_requests; 0: no "
	    "limit).", 0, px->conf->pools[0].max_requests, -1);
	budget_gauge(out, px, "corral_origin_slots_in_use", "Origin slots "
	    "held: by this instance's fetches, or by the fleet's as Redis counted "
	    "them at the last hello.", 1, g->held, g->fleet_held);
	budget_gauge(out, px, "corral_origin_queue_length", "Requests waiting "
	    "for an origin slot: this instance's, or the fleet's as Redis "
	    "counted them at the last hello.", 1, g->queued, g->fleet_queued);
	prom_family(out, "corral_origin_queue_oldest_seconds", "gauge", "How long "
	    "the request waiting longest here for an origin slot has waited "
	    "(0: none waits).");
	evbuffer_add_printf(out, "corral_origin_queue_oldest_seconds{upstream=");
	prom_label(out, px->conf->upstream_authority);
	evbuffer_add_printf(out, "} %" PRId64 ".%03" PRId64 "\n",
	    g->oldest_ms / 1000, g->oldest_ms % 1000);
	budget_gauge(out, px, "corral_origin_local_share", "Origin requests "
	    "this instance allows itself while Redis is unavailable.", 0,
	    g->share, -1);
	budget_gauge(out, px, "corral_origin_fleet_instances", "Instances "
	    "alive, as Redis last said: the fewest any worker counts (the "
	    "local share divides by it).", 0, g->instances, -1);
}

/* The tls listeners' handshakes and certificate; none without TLS. */
static void
tls_metrics(struct evbuffer *out, const struct proxy_figures *fig)
{
	if (fig->tls_not_after == 0)
		return;
	redis_counter(out, "corral_tls_handshakes_total", "TLS handshakes "
	    "finished on the tls listeners.", fig->tls.handshakes);
	redis_counter(out, "corral_tls_resumed_total", "Of those, resumed "
	    "from a session ticket.", fig->tls.resumed);
	prom_family(out, "corral_tls_handshake_failures_total", "counter",
	    "TLS handshakes that failed, by why.");
	for (int i = 1; i < TLS_FAIL_MAX; i++)
		evbuffer_add_printf(out, "corral_tls_handshake_failures_total"
		    "{reason=\"%s\"} %" PRIu64 "\n",
		    tls_fail_name((enum tls_fail)i), fig->tls.failed[i]);
	gauge(out, "corral_tls_certificate_expiry_timestamp_seconds", "When "
	    "the tls listeners' certificate expires, in seconds since the "
	    "epoch.", (double)fig->tls_not_after);
}

void
metrics_prometheus(struct proxy *px, struct evbuffer *out)
{
	const struct metrics_view *v = metrics_view(px);

	process_metrics(out, px, &v->fig);
	near_cache_metrics(out, &v->fig);
	route_metrics(out, v->scopes, v->nscopes);
	redis_command_metrics(out, &v->fig);
	redis_topology_metrics(out, px, &v->fig.cache);
	upstream_rejected_metrics(out, &v->fig);
	budget_metrics(out, px, &v->fig.budget);
	pool_metrics(&v->fig.pools, out);
	feeds_prometheus(px, out);
	tls_metrics(out, &v->fig);
}

/* ---- JSON ---- */

void
metrics_hist_json(const struct hist *h, struct evbuffer *out)
{
	evbuffer_add_printf(out, "{\"count\": %" PRIu64 ", \"sum_s\": %.9g, "
	    "\"p50_s\": %.6g, \"p90_s\": %.6g, \"p99_s\": %.6g, \"buckets\": {",
	    h->count, h->sum, hist_quantile(h, 0.5), hist_quantile(h, 0.9),
	    hist_quantile(h, 0.99));
	for (int i = 0; i < HIST_NBOUNDS; i++)
		evbuffer_add_printf(out, "\"%g\": %" PRIu64 ", ", hist_bounds[i],
		    h->bucket[i]);
	evbuffer_add_printf(out, "\"+Inf\": %" PRIu64 "}}",
	    h->bucket[HIST_NBOUNDS]);
}

/* ---- the table ---- */

static void
ratio_cell(struct evbuffer *out, double r)
{
	if (r < 0)
		evbuffer_add_printf(out, " %6s", "-");
	else
		evbuffer_add_printf(out, " %5.1f%%", r * 100);
}

/* Quantile q of h in ms, to its bucket's resolution (hist_round()):
 * "400" for (0.3, 0.4] s, "0.4" for (0.3, 0.4] ms. */
static void
quantile_ms(const struct hist *h, double q, char *out, size_t outlen)
{
	double step, v = hist_round(hist_quantile(h, q), &step) * MS_PER_S;
	int decimals = 0;

	for (step *= MS_PER_S; step < 1 - 1e-9 && decimals < 6; step *= 10)
		decimals++;
	snprintf(out, outlen, "%.*f", decimals, v);
}

static void
ms_cell(struct evbuffer *out, const struct hist *h, double q)
{
	char ms[32];

	if (h->count == 0) {
		evbuffer_add_printf(out, " %8s", "-");
		return;
	}
	quantile_ms(h, q, ms, sizeof(ms));
	evbuffer_add_printf(out, " %8s", ms);
}

static void
table_row(struct evbuffer *out, int width, const char *route,
    const struct stats_scope *s)
{
	const struct stats_counters *c = &s->c;

	evbuffer_add_printf(out, "%-*.*s %9" PRIu64, width, width, route,
	    c->requests);
	ratio_cell(out, metrics_hit_ratio(c));
	evbuffer_add_printf(out, " %8" PRIu64 " %7" PRIu64 " %7" PRIu64
	    " %9" PRIu64 " %7" PRIu64 " %6" PRIu64 " %9" PRIu64 " %7" PRIu64,
	    c->hits, c->stale_hits, c->misses, c->collapsed, c->bypass,
	    c->errors + c->rejected, c->upstream_fetches, c->upstream_errors);
	ms_cell(out, &s->upstream_duration, 0.5);
	ms_cell(out, &s->upstream_duration, 0.99);
	ms_cell(out, &s->lock_wait, 0.99);
	evbuffer_add(out, "\n", 1);
}

/* up_s as "3d04h", "2h05m" or "4m07s". */
static void
uptime_text(int64_t up_s, char *out, size_t outlen)
{
	if (up_s >= 86400)
		snprintf(out, outlen, "%" PRId64 "d%02" PRId64 "h",
		    up_s / 86400, up_s % 86400 / 3600);
	else if (up_s >= 3600)
		snprintf(out, outlen, "%" PRId64 "h%02" PRId64 "m",
		    up_s / 3600, up_s % 3600 / 60);
	else
		snprintf(out, outlen, "%" PRId64 "m%02" PRId64 "s",
		    up_s / 60, up_s % 60);
}

/* The table's lines above the routes: the instance, Redis, a restart
 * pending, the origin budget. */
static void
table_head(struct proxy *px, const struct proxy_figures *fig,
    struct evbuffer *out)
{
	const struct cache_counters *cc = &fig->cache;
	char dur[48], ms[32];

	uptime_text((util_now_ms() - px->started_ms) / 1000, dur, sizeof(dur));
	evbuffer_add_printf(out, "corral %s, up %s, %d worker%s, %" PRId64
	    " connection%s, %" PRId64 " request%s in progress, %" PRId64
	    " upstream fetch%s\n", CORRAL_VERSION, dur, fig->workers,
	    fig->workers == 1 ? "" : "s", fig->connections,
	    fig->connections == 1 ? "" : "s", fig->requests,
	    fig->requests == 1 ? "" : "s", fig->upstream_fetches,
	    fig->upstream_fetches == 1 ? "" : "es");
	quantile_ms(&cc->command_duration, 0.99, ms, sizeof(ms));
	evbuffer_add_printf(out, "redis %s: %" PRIu64 " commands, %" PRIu64
	    " errors, %" PRIu64 " timeouts, p99 %s ms\n",
	    fig->redis_up == fig->workers ? "up" : "DOWN", cc->commands, cc->errors,
	    cc->timeouts, ms);
	if (fig->redis_down[0] != '\0')
		evbuffer_add_printf(out, "redis down: %s\n", fig->redis_down);
	if (px->conf->restart_pending != 0) {
		char list[RESTART_TEXT_MAX];

		conf_restart_pending_text(px->conf, list, sizeof(list));
		evbuffer_add_printf(out, "restart pending: %s\n", list);
	}
	quantile_ms(&fig->stats->total.slot_wait, 0.99, ms, sizeof(ms));
	if (px->conf->pools[0].max_requests > 0)
		evbuffer_add_printf(out, "origin budget %d: %" PRId64 " slots in "
		    "use here, %" PRId64 " waiting, wait p99 %s ms, %" PRIu64
		    " shed\n", px->conf->pools[0].max_requests, fig->budget.held,
		    fig->budget.queued, ms, fig->stats->total.c.shed_busy +
		    fig->stats->total.c.shed_stale +
		    fig->stats->total.c.shed_refresh);
}

void
metrics_table(struct proxy *px, struct evbuffer *out)
{
	const struct metrics_view *v = metrics_view(px);
	const struct proxy_figures *fig = &v->fig;
	const struct metrics_scope *scopes = v->scopes;
	int n = v->nscopes, width = TABLE_ROUTE_MIN;

	for (int i = 0; i < n; i++) {
		int len = (int)strlen(scopes[i].route);
		if (len > width)
			width = len < TABLE_ROUTE_MAX ? len : TABLE_ROUTE_MAX;
	}
	table_head(px, fig, out);
	evbuffer_add(out, "\n", 1);
	evbuffer_add_printf(out, "%-*s %9s %6s %8s %7s %7s %9s %7s %6s %9s %7s"
	    " %8s %8s %8s\n", width, "route", "requests", "hit%", "hit",
	    "stale", "miss", "collapsed", "bypass", "error", "upstream",
	    "up-err", "up-p50ms", "up-p99ms", "wait-p99");
	for (int i = 0; i < n; i++)
		table_row(out, width, scopes[i].route, scopes[i].s);
	table_row(out, width, "total", &fig->stats->total);
	evbuffer_add_printf(out, "\nhit%%: (hit + stale + collapsed) / (those "
	    "+ miss). Times in ms, to their histogram bucket's resolution; "
	    "wait: cold-miss waiters.\n");
}
