/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_METRICS_H
#define PROXY_PROXY_METRICS_H

/*
 * The figures of struct stats and the cache's counters, as the admin
 * listener shows them: Prometheus text (GET /metrics), a JSON histogram
 * (part of GET /stats) and a plain table for terminals (GET /stats.txt,
 * which corral -s prints). docs/operations.md lists every metric.
 */

#include "common/hist.h"
#include "proxy/proxy.h"
#include "proxy/proxy_stats.h"

#define METRICS_UNROUTED	"(none)"	/* route label: no route matched */
#define METRICS_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

struct evbuffer;
struct proxy;

/* One set of figures and the route label they go by. */
struct metrics_scope {
	const char		*route;		/* prefix, or METRICS_UNROUTED */
	const struct stats_scope *s;
};

/* Each route's figures, then those of requests that matched no route (the
 * total less every route), which are kept in *unrouted. Returns how many
 * it wrote to out, at most CONF_ROUTES_MAX + 1. */
int	metrics_scopes(const struct proxy *px, const struct stats *st,
	    struct stats_scope *unrouted,
	    struct metrics_scope out[CONF_ROUTES_MAX + 1]);

/* What the admin listener shows, gathered once per request. */
struct metrics_view {
	struct proxy_figures	 fig;		/* summed over the workers */
	struct stats_scope	 unrouted;
	struct metrics_scope	 scopes[CONF_ROUTES_MAX + 1];
	int			 nscopes;	/* the last is unrouted */
};

/* The figures as of now (in storage the next call reuses). */
const struct metrics_view *metrics_view(struct proxy *px);

/* Requests answered without an upstream fetch of their own (hit, stale,
 * collapsed) out of every cacheable one answered (those and miss); 0..1,
 * or -1 when there were none. */
double	metrics_hit_ratio(const struct stats_counters *c);

/* Appends the Prometheus text exposition (format 0.0.4). */
void	metrics_prometheus(struct proxy *px, struct evbuffer *out);
/* Appends {"count", "sum_s", "p50_s", "p90_s", "p99_s", "buckets"}:
 * buckets maps each upper bound in seconds (and "+Inf") to the number of
 * observations in that bucket alone (not cumulative). */
void	metrics_hist_json(const struct hist *h, struct evbuffer *out);
/* Appends a table for a terminal: one row per route, then totals. */
void	metrics_table(struct proxy *px, struct evbuffer *out);

#endif
