/* SPDX-License-Identifier: MIT */
/*
 * The figures the admin listener reports: each worker copies its gauges to
 * its slot in shared memory, and the listener sums every slot. Reads the
 * near caches', Redis's and the upstream's own counters; calls nothing of
 * the request flow.
 */

#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/cache_l1.h"
#include "cache/cache_l2.h"
#include "common/dict.h"
#include "proxy/proxy.h"
#include "proxy/proxy_bodyfile.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_figures.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_unzip.h"
#include "upstream/upstream.h"

/* Adds src's handshakes into dst. */
static void
tls_counters_add(struct tls_counters *dst, const struct tls_counters *src)
{
	dst->handshakes += src->handshakes;
	dst->resumed += src->resumed;
	for (int i = 0; i < TLS_FAIL_MAX; i++)
		dst->failed[i] += src->failed[i];
}

/* Copies this worker's gauges to its slot for the other workers to see. */
void
proxy_publish(struct proxy *px)
{
	struct worker_slot *ws = &px->slots[px->slot];

	ws->cache = *cache_counters(px->cache);
	ws->upstream = *upstream_counters(px->upstream);
	ws->redis_up = cache_is_up(px->cache);
	snprintf(ws->redis_down, sizeof(ws->redis_down), "%s",
	    cache_down_reason(px->cache));
	ws->connections = px->nclients;
	ws->admin_connections = px->admin_conns + px->admin_outside;
	ws->admin_outside = px->admin_outside;
	ws->requests = px->nrequests - px->npeers;	/* clients' */
	ws->flights = (int64_t)dict_count(px->flights);
	ws->refreshes = px->nrefreshes;
	ws->upstream_fetches = upstream_active(px->upstream);
	ws->decoded_bytes = (int64_t)coding_queued();
	ws->decoded_kept = (int64_t)coding_kept();
	ws->decoding = (int64_t)unzip_live();
	ws->l1_bytes = l1_counters(px->l1)->bytes;
	ws->l1_entries = l1_counters(px->l1)->entries;
	ws->l1_rejected = l1_counters(px->l1)->rejected;
	ws->body_files = bodyfile_counters()->files;
	ws->body_file_bytes = bodyfile_counters()->bytes;
	budget_publish(px->budget, &ws->budget.g);
	pool_publish(px, &ws->pools);
	tls_counters(&ws->tls);
	ws->tls_not_after = px->tls != NULL ? tls_not_after(px->tls) : 0;
}

void
proxy_figures(struct proxy *px, struct proxy_figures *f)
{
	static struct stats sum;

	memset(f, 0, sizeof(*f));
	f->workers = px->nslots;
	f->budget.fleet_held = f->budget.fleet_queued = -1;
	f->budget.instances = 0;	/* budget_gauges_add() says why */
	if (px->nslots > 1)
		memset(&sum, 0, sizeof(sum));
	proxy_publish(px);	/* its own, live */
	for (int i = 0; i < px->nslots; i++) {
		const struct worker_slot *ws = &px->slots[i];

		if (px->nslots > 1)
			stats_add(&sum, &ws->stats);
		cache_counters_add(&f->cache, &ws->cache);
		upstream_counters_add(&f->upstream, &ws->upstream);
		f->redis_up += ws->redis_up;
		/* Another worker may be rewriting it: bounded, never past it. */
		if (!ws->redis_up && f->redis_down[0] == '\0')
			snprintf(f->redis_down, sizeof(f->redis_down), "%.*s",
			    (int)sizeof(ws->redis_down) - 1, ws->redis_down);
		f->connections += ws->connections;
		f->admin_connections += ws->admin_connections;
		f->admin_outside += ws->admin_outside;
		f->admin_refused += ws->admin_refused;
		f->requests += ws->requests;
		f->flights += ws->flights;
		f->refreshes += ws->refreshes;
		f->upstream_fetches += ws->upstream_fetches;
		f->decoded_bytes += ws->decoded_bytes;
		f->decoded_kept += ws->decoded_kept;
		f->decoding += ws->decoding;
		f->l1_bytes += ws->l1_bytes;
		f->l1_entries += ws->l1_entries;
		f->l1_rejected += ws->l1_rejected;
		f->body_files += ws->body_files;
		f->body_file_bytes += ws->body_file_bytes;
		budget_gauges_add(&f->budget, &ws->budget.g);
		pool_rows_add(&f->pools, &ws->pools);
		tls_counters_add(&f->tls, &ws->tls);
		if (ws->tls_not_after > 0 && (f->tls_not_after == 0 ||
		    ws->tls_not_after < f->tls_not_after))
			f->tls_not_after = ws->tls_not_after;
	}
	l2_counters(px->l2, &f->l2);
	f->stats = px->nslots > 1 ? &sum : px->stats;
}
