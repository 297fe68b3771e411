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
