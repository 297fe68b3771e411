/* SPDX-License-Identifier: MIT */
/*
 * The admin listener: GET / (the dashboard), GET /stats (JSON), GET
 * /stats.txt (a table for terminals), GET /metrics (Prometheus), GET
 * /health, and the control plane (proxy_control.h): POST /purge,
 * /refresh, /warm and /maintenance, GET /entry. proxy_auth.c admits each
 * request first.
 */

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/cache.h"
#include "common/dict.h"
#include "common/util.h"
#include "proxy/dashboard.h"
#include "proxy/proxy.h"
#include "proxy/proxy_admin.h"
#include "proxy/proxy_auth.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_control.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_figures.h"
#include "proxy/proxy_inspect.h"
#include "proxy/proxy_json.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_metrics.h"
#include "proxy/proxy_purge.h"
#include "upstream/upstream.h"

/* One scope: its counters, then its histograms, in one object. */
static void
scope_json(const struct stats_scope *sc, struct evbuffer *out)
{
	struct evbuffer *counters = evbuffer_new();
	size_t len;

	if (counters == NULL) {
		evbuffer_add(out, "{}", 2);
		return;
	}
	stats_counters_json(&sc->c, counters);
	len = evbuffer_get_length(counters);	/* "{...}": drop the '}' */
	evbuffer_remove_buffer(counters, out, len - 1);
	evbuffer_free(counters);
	evbuffer_add_printf(out, ", \"upstream_duration\": ");
	metrics_hist_json(&sc->upstream_duration, out);
	evbuffer_add_printf(out, ", \"lock_wait\": ");
	metrics_hist_json(&sc->lock_wait, out);
	evbuffer_add_printf(out, ", \"slot_wait\": ");
	metrics_hist_json(&sc->slot_wait, out);
	evbuffer_add_printf(out, ", \"fill_wake\": ");
	metrics_hist_json(&sc->fill_wake, out);
	evbuffer_add_printf(out, ", \"rush\": ");
	metrics_hist_json(&sc->rush, out);
	evbuffer_add(out, "}", 1);
}

/* "restart_pending": the keys whose change in the file waits for a
 * restart, as ["server.listen", "redis.prefix"]. */
static void
pending_json(const struct conf *c, struct evbuffer *out)
{
	const char *names[RESTART_KEYS_MAX];
	int n = conf_restart_pending(c, names);

	evbuffer_add_printf(out, "\"restart_pending\": [");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			evbuffer_add(out, ", ", 2);
		json_string(out, names[i]);
	}
	evbuffer_add_printf(out, "], ");
}

/* "ok redis=up mode=cluster 127.0.0.1:7000=up 127.0.0.1:7001=down ...",
 * with "redis=down (why)" when it is down, "redis=full (...)" while it
 * refuses writes at maxmemory in any worker; "changes=up", or the change
 * feeds that are down or past their max_lag, which make the first word
 * "degraded" (still 200: what the instance serves is served). */
static void
health(struct proxy *px, struct evbuffer *out)
{
	const struct cache_counters *cc = cache_counters(px->cache);
	struct evbuffer *feeds = evbuffer_new();
	const char *word = feeds != NULL && feeds_health(px, feeds) ?
	    "degraded" : "ok";

	if (cache_is_up(px->cache) && metrics_view(px)->fig.cache.full > 0)
		evbuffer_add_printf(out, "%s redis=full (writes refused at "
		    "maxmemory: nothing is stored)", word);
	else if (cache_is_up(px->cache))
		evbuffer_add_printf(out, "%s redis=up", word);
	else
		evbuffer_add_printf(out, "%s redis=down (%s)", word,
		    cache_down_reason(px->cache));
	evbuffer_add_printf(out, " mode=%s", cache_mode(px->cache));
	for (int i = 0; i < cc->nnodes; i++)
		evbuffer_add_printf(out, " %s=%s", cc->nodes[i].name,
		    cc->nodes[i].up ? "up" : "down");
	maint_health(px, out);
	if (feeds != NULL) {
		evbuffer_add_buffer(out, feeds);
		evbuffer_free(feeds);
	}
	evbuffer_add(out, "\n", 1);
}

/* The origin budget: its settings, this instance's slots and queue, and
 * the fleet's as Redis last said (-1: not known). */
static void
origin_budget_json(struct proxy *px, const struct budget_gauges *g,
    struct evbuffer *out)
{
	evbuffer_add_printf(out, ", \"origin_budget\": {\"upstream\": ");
	json_string(out, px->conf->upstream_authority);
	evbuffer_add_printf(out, ", \"max_requests\": %d, \"queue_timeout_ms\": %"
	    PRId64 ", \"local_share\": %" PRId64 ", \"slots_in_use\": %" PRId64
	    ", \"local_slots_in_use\": %" PRId64 ", \"queue_length\": %" PRId64
	    ", \"queue_oldest_ms\": %" PRId64
	    ", \"fleet_slots_in_use\": %" PRId64 ", \"fleet_queue_length\": %"
	    PRId64 ", \"instances\": %" PRId64 "}", px->conf->pools[0].max_requests,
	    px->conf->pools[0].queue_timeout_ms, g->share, g->held, g->local_held,
	    g->queued, g->oldest_ms, g->fleet_held, g->fleet_queued,
	    g->instances);
}

/* The admin listener's own figures, its jobs, the maintenance modes. */
static void
admin_json(struct proxy *px, const struct proxy_figures *fig,
    struct evbuffer *out)
{
	evbuffer_add_printf(out, "\"admin\": {\"connections\": %" PRId64
	    ", \"outside\": %" PRId64 ", \"refused\": %" PRIu64
	    ", \"tokens\": %d}, ", fig->admin_connections, fig->admin_outside,
	    fig->admin_refused, px->conf->nadmin_tokens);
	evbuffer_add_printf(out, "\"control\": {\"jobs\": %d}, "
	    "\"maintenance\": ", control_jobs(px));
	maint_json(px, out);
	evbuffer_add_printf(out, ", ");
}

/* "redis": its state, the commands' figures, the nodes commands go to. */
static void
redis_json(struct proxy *px, const struct proxy_figures *fig,
    struct evbuffer *out)
{
	const struct cache_counters *cc = &fig->cache;

	evbuffer_add_printf(out, "\"redis\": {\"up\": %s, \"full\": %s, "
	    "\"oom\": %" PRIu64 ", \"down_reason\": ",
	    fig->redis_up == fig->workers ? "true" : "false",
	    cc->full > 0 ? "true" : "false", cc->oom);
	json_string(out, fig->redis_down);
	evbuffer_add_printf(out, ", \"commands\": %" PRIu64
	    ", \"errors\": %" PRIu64 ", \"timeouts\": %" PRIu64
	    ", \"connects\": %" PRIu64 ", \"disconnects\": %" PRIu64
	    ", \"auth_failures\": %" PRIu64
	    ", \"fills_received\": %" PRIu64 ", \"purges_received\": %" PRIu64
	    ", \"command_duration\": ", cc->commands,
	    cc->errors, cc->timeouts, cc->connects, cc->disconnects,
	    cc->auth_failures, cc->fills_received, cc->purges_received);
	metrics_hist_json(&cc->command_duration, out);
	evbuffer_add_printf(out, ", \"fill_delay\": ");
	metrics_hist_json(&cc->fill_delay, out);
	evbuffer_add_printf(out, ", \"mode\": \"%s\", \"moved\": %" PRIu64
	    ", \"ask\": %" PRIu64 ", \"map_refreshes\": %" PRIu64
	    ", \"replica_reads\": %" PRIu64 ", \"nodes\": [",
	    cache_mode(px->cache), cc->moved, cc->ask, cc->map_refreshes,
	    cc->replica_reads);
	for (int i = 0; i < cc->nnodes; i++) {
		evbuffer_add_printf(out, "%s{\"address\": ", i > 0 ? ", " : "");
		json_string(out, cc->nodes[i].name);
		evbuffer_add_printf(out, ", \"up\": %s, \"slots\": %d}",
		    cc->nodes[i].up ? "true" : "false", cc->nodes[i].slots);
	}
	evbuffer_add_printf(out, "]}");
}

/* "tls": the tls listeners' handshakes and certificate (null: no TLS). */
static void
tls_json(const struct proxy_figures *fig, struct evbuffer *out)
{
	if (fig->tls_not_after == 0) {
		evbuffer_add_printf(out, ", \"tls\": null");
		return;
	}
	evbuffer_add_printf(out, ", \"tls\": {\"handshakes\": %" PRIu64
	    ", \"resumed\": %" PRIu64 ", \"certificate_not_after\": %" PRId64
	    ", \"failures\": {", fig->tls.handshakes, fig->tls.resumed,
	    fig->tls_not_after);
	for (int i = 1; i < TLS_FAIL_MAX; i++)
		evbuffer_add_printf(out, "%s\"%s\": %" PRIu64, i > 1 ? ", " : "",
		    tls_fail_name((enum tls_fail)i), fig->tls.failed[i]);
	evbuffer_add_printf(out, "}}");
}

/* "total", "routes" and "unrouted": the counters of each scope. */
static void
counters_json(const struct proxy_figures *fig, const struct metrics_view *v,
    struct evbuffer *out)
{
	const struct metrics_scope *scopes = v->scopes;
	int n = v->nscopes;

	evbuffer_add_printf(out, "\"total\": ");
	scope_json(&fig->stats->total, out);
	evbuffer_add_printf(out, ", \"routes\": {");
	for (int i = 0; i < n - 1; i++) {	/* the last is unrouted */
		if (i > 0)
			evbuffer_add(out, ", ", 2);
		json_string(out, scopes[i].route);
		evbuffer_add(out, ": ", 2);
		scope_json(scopes[i].s, out);
	}
	evbuffer_add_printf(out, "}, \"unrouted\": ");
	scope_json(scopes[n - 1].s, out);
}

static void
stats_json(struct proxy *px, struct evbuffer *out)
{
	const struct metrics_view *v = metrics_view(px);
	const struct proxy_figures *fig = &v->fig;
	const struct cache_counters *cc = &fig->cache;

	evbuffer_add_printf(out, "{\"version\": \"%s\", \"uptime_s\": %" PRId64
	    ", \"workers\": %d, \"connections\": %" PRId64 ", "
	    "\"near_cache\": {\"bytes\": %" PRId64 ", \"entries\": %" PRId64
	    ", \"rejected\": %" PRIu64 ", \"body_files\": %" PRId64
	    ", \"body_file_bytes\": %" PRId64 "}, ", CORRAL_VERSION,
	    (util_now_ms() - px->started_ms) / 1000, fig->workers,
	    fig->connections, fig->l1_bytes, fig->l1_entries,
	    fig->l1_rejected, fig->body_files, fig->body_file_bytes);
	pending_json(px->conf, out);
	admin_json(px, fig, out);
	evbuffer_add_printf(out, "\"shared_cache\": {\"max_bytes\": %" PRId64
	    ", \"bytes\": %" PRId64 ", \"entries\": %" PRId64
	    ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
	    ", \"stores\": %" PRIu64 ", \"evictions\": %" PRIu64
	    ", \"drops\": %" PRIu64 ", \"resets\": %" PRIu64
	    ", \"lock_busy\": %" PRIu64 "}, ",
	    fig->l2.max_bytes, fig->l2.bytes, fig->l2.entries, fig->l2.hits,
	    fig->l2.misses, fig->l2.stores, fig->l2.evictions, fig->l2.drops,
	    fig->l2.resets, fig->l2.lock_busy);
	redis_json(px, fig, out);
	evbuffer_add_printf(out, ", \"upstream\": {\"too_many_headers\": %"
	    PRIu64 ", \"bad_framing\": %" PRIu64 "}", fig->upstream.too_many_headers,
	    fig->upstream.bad_framing);
	evbuffer_add_printf(out, ", \"tags\": {\"largest_set\": %" PRId64
	    ", \"pruned\": %" PRIu64 "}", cc->tag_set_largest,
	    cc->tag_members_pruned);
	origin_budget_json(px, &fig->budget, out);
	pool_stats_json(&fig->pools, out);
	feeds_json(px, out);
	tls_json(fig, out);
	evbuffer_add_printf(out, ", \"in_progress\": {\"requests\": %" PRId64
	    ", \"flights\": %" PRId64 ", \"refreshes\": %" PRId64
	    ", \"upstream_fetches\": %" PRId64 ", \"decoded_bytes\": %" PRId64
	    ", \"decoded_kept_bytes\": %" PRId64 ", \"decoding\": %" PRId64
	    "}, ", fig->requests, fig->flights, fig->refreshes,
	    fig->upstream_fetches, fig->decoded_bytes, fig->decoded_kept,
	    fig->decoding);
	counters_json(fig, v, out);
	evbuffer_add_printf(out, "}\n");
}

void
admin_handle(struct proxy *px, struct hreq *ev)
{
	const char *path = ev->path;
	struct evbuffer *out;

	assert(px->magic == PROXY_MAGIC);
	if ((out = evbuffer_new()) == NULL) {
		hreq_reply(ev, HTTP_SERVUNAVAIL, NULL, NULL);
		return;
	}
	if (!auth_admit(px, ev, path)) {
		evbuffer_free(out);
		return;		/* answered */
	}
	if (strcmp(path, "/stats") == 0) {
		stats_json(px, out);
		json_reply(ev, HTTP_OK, "application/json", out);
	} else if (strcmp(path, "/metrics") == 0) {
		metrics_prometheus(px, out);
		json_reply(ev, HTTP_OK, METRICS_CONTENT_TYPE, out);
	} else if (strcmp(path, "/stats.txt") == 0) {
		metrics_table(px, out);
		json_reply(ev, HTTP_OK, "text/plain; charset=utf-8", out);
	} else if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0) {
		evbuffer_add_reference(out, dashboard_html, dashboard_html_len,
		    NULL, NULL);
		json_reply(ev, HTTP_OK, "text/html; charset=utf-8", out);
	} else if (strcmp(path, "/purge") == 0) {
		admin_purge(px, ev);	/* it replies, maybe later */
	} else if (strcmp(path, "/refresh") == 0) {
		admin_refresh(px, ev);	/* the same */
	} else if (strcmp(path, "/warm") == 0) {
		admin_warm(px, ev);
	} else if (strcmp(path, "/entry") == 0) {
		admin_inspect(px, ev);
	} else if (strcmp(path, "/maintenance") == 0) {
		admin_maintenance(px, ev);
	} else if (strcmp(path, "/health") == 0) {
		health(px, out);
		json_reply(ev, HTTP_OK, "text/plain", out);
	} else {
		evbuffer_add_printf(out, "not found: try / (dashboard), /stats, "
		    "/stats.txt, /metrics, /health, /entry?url=, /maintenance "
		    "or POST /purge, /refresh, /warm, /maintenance\n");
		json_reply(ev, HTTP_NOTFOUND, "text/plain", out);
	}
	evbuffer_free(out);
}
