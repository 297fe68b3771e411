/* SPDX-License-Identifier: MIT */
/*
 * The upstream servers' figures (proxy_pool.h), summed over the workers,
 * as /stats shows them ("upstreams") and as Prometheus families labelled
 * with pool and server. Reads the figures only.
 */

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/proxy_pool.h"

/* s between double quotes, with '"' and '\' escaped (a URL has no
 * control characters, nor a pool name). */
static void
quoted(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, "\"", 1);
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			evbuffer_add(out, "\\", 1);
		if ((unsigned char)*s >= 0x20)
			evbuffer_add(out, s, 1);
	}
	evbuffer_add(out, "\"", 1);
}

void
pool_stats_json(const struct pool_row *sum, struct evbuffer *out)
{
	evbuffer_add_printf(out, ", \"upstreams\": [");
	for (int i = 0; i < sum->n; i++) {
		const struct pool_figures *f = &sum->s[i];

		evbuffer_add_printf(out, "%s{\"pool\": ", i > 0 ? ", " : "");
		quoted(out, f->pool);
		evbuffer_add_printf(out, ", \"server\": ");
		quoted(out, f->server);
		evbuffer_add_printf(out, ", \"state\": \"%s\", \"why\": ",
		    pool_state_name(f->state));
		quoted(out, f->why);
		evbuffer_add_printf(out, ", \"workers_down\": %d, \"weight\": %d"
		    ", \"in_flight\": %" PRId64 ", \"requests\": %" PRIu64
		    ", \"failures\": %" PRIu64 ", \"retries\": %" PRIu64
		    ", \"health_ok\": %" PRIu64 ", \"health_failed\": %" PRIu64
		    ", \"taken_out\": %" PRIu64 "}", f->workers_down, f->weight,
		    f->in_flight, f->requests, f->failures, f->retries,
		    f->health_ok, f->health_failed, f->taken_out);
	}
	evbuffer_add_printf(out, "], \"upstreams_left_out\": %d", sum->left_out);
}

/* One family: a value of each server. */
struct family {
	const char	*name;
	const char	*type;
	const char	*help;
	size_t		 off;		/* in struct pool_figures */
	int		 is_int64;	/* int64_t, else uint64_t */
};

static const struct family families[] = {
	{ "corral_upstream_server_in_flight", "gauge",
	  "Requests in flight to the server.",
	  offsetof(struct pool_figures, in_flight), 1 },
	{ "corral_upstream_server_requests_total", "counter",
	  "Requests sent to the server (each try).",
	  offsetof(struct pool_figures, requests), 0 },
	{ "corral_upstream_server_failures_total", "counter",
	  "Requests to the server that failed: connect, timeout, reset, 5xx.",
	  offsetof(struct pool_figures, failures), 0 },
	{ "corral_upstream_server_retries_total", "counter",
	  "Requests that failed on the server before any response and were "
	  "sent to another.", offsetof(struct pool_figures, retries), 0 },
	{ "corral_upstream_server_taken_out_total", "counter",
	  "Times the server was taken out (max_fails, or a failed health "
	  "check).", offsetof(struct pool_figures, taken_out), 0 },
};

static void
labels(struct evbuffer *out, const struct pool_figures *f)
{
	evbuffer_add_printf(out, "{pool=");
	quoted(out, f->pool[0] != '\0' ? f->pool : POOL_DEFAULT_NAME);
	evbuffer_add_printf(out, ",server=");
	quoted(out, f->server);
}

void
pool_metrics(const struct pool_row *sum, struct evbuffer *out)
{
	evbuffer_add_printf(out, "# HELP corral_upstream_server_up 1 while the "
	    "server takes requests in every worker, 0 while it is out of any "
	    "(or draining).\n# TYPE corral_upstream_server_up gauge\n");
	for (int i = 0; i < sum->n; i++) {
		evbuffer_add_printf(out, "corral_upstream_server_up");
		labels(out, &sum->s[i]);
		evbuffer_add_printf(out, "} %d\n", sum->s[i].state == POOL_UP);
	}
	for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
		const struct family *fa = &families[k];

		evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n",
		    fa->name, fa->help, fa->name, fa->type);
		for (int i = 0; i < sum->n; i++) {
			const char *base = (const char *)&sum->s[i];

			evbuffer_add_printf(out, "%s", fa->name);
			labels(out, &sum->s[i]);
			if (fa->is_int64)
				evbuffer_add_printf(out, "} %" PRId64 "\n",
				    *(const int64_t *)(const void *)(base +
				    fa->off));
			else
				evbuffer_add_printf(out, "} %" PRIu64 "\n",
				    *(const uint64_t *)(const void *)(base +
				    fa->off));
		}
	}
	evbuffer_add_printf(out, "# HELP corral_upstream_health_checks_total "
	    "Active health checks of the server, by result.\n"
	    "# TYPE corral_upstream_health_checks_total counter\n");
	for (int i = 0; i < sum->n; i++) {
		evbuffer_add_printf(out, "corral_upstream_health_checks_total");
		labels(out, &sum->s[i]);
		evbuffer_add_printf(out, ",result=\"ok\"} %" PRIu64 "\n",
		    sum->s[i].health_ok);
		evbuffer_add_printf(out, "corral_upstream_health_checks_total");
		labels(out, &sum->s[i]);
		evbuffer_add_printf(out, ",result=\"failed\"} %" PRIu64 "\n",
		    sum->s[i].health_failed);
	}
}
