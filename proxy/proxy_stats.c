/* SPDX-License-Identifier: MIT */
/*
 * Counters (proxy_stats.h): the JSON of a set, and sums over the workers.
 * Calls nothing.
 */

#include "proxy/proxy_stats.h"

#include <inttypes.h>

void
stats_counters_json(const struct stats_counters *sc, struct evbuffer *out)
{
	const char *sep = "";

	evbuffer_add(out, "{", 1);
#define STATS_JSON(name, doc) do {					\
	evbuffer_add_printf(out, "%s\"" #name "\": %" PRIu64, sep, sc->name);	\
	sep = ", ";							\
} while (0);
	STATS_FIELDS(STATS_JSON)
#undef STATS_JSON
	evbuffer_add(out, "}", 1);
}

static void
scope_add(struct stats_scope *dst, const struct stats_scope *src)
{
#define STATS_SUM(name, doc)	dst->c.name += src->c.name;
	STATS_FIELDS(STATS_SUM)
#undef STATS_SUM
	hist_merge(&dst->upstream_duration, &src->upstream_duration);
	hist_merge(&dst->lock_wait, &src->lock_wait);
	hist_merge(&dst->slot_wait, &src->slot_wait);
	hist_merge(&dst->fill_wake, &src->fill_wake);
	hist_merge(&dst->rush, &src->rush);
}

void
stats_add(struct stats *dst, const struct stats *src)
{
	scope_add(&dst->total, &src->total);
	for (int i = 0; i < CONF_ROUTES_MAX; i++)
		scope_add(&dst->route[i], &src->route[i]);
}
