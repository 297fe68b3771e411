/*
 * The admin listener: GET /stats (JSON counters per route and in total)
 * and GET /health.
 */

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "cache/cache.h"
#include "common/dict.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "upstream/upstream.h"

static void
json_string(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			evbuffer_add_printf(out, "\\%c", ch);
		else if (ch < 0x20)
			evbuffer_add_printf(out, "\\u%04x", ch);
		else
			evbuffer_add(out, s, 1);
	}
	evbuffer_add(out, "\"", 1);
}

static void
stats_json(const struct proxy *px, struct evbuffer *out)
{
	const struct cache_counters *cc = cache_counters(px->cache);

	evbuffer_add_printf(out, "{\"version\": \"%s\", \"uptime_s\": %" PRId64
	    ", ", CORRAL_VERSION, (util_now_ms() - px->started_ms) / 1000);
	evbuffer_add_printf(out, "\"redis\": {\"up\": %s, \"commands\": %" PRIu64
	    ", \"errors\": %" PRIu64 ", \"timeouts\": %" PRIu64
	    ", \"connects\": %" PRIu64 ", \"disconnects\": %" PRIu64
	    ", \"fills_received\": %" PRIu64 "}, ",
	    cache_is_up(px->cache) ? "true" : "false", cc->commands,
	    cc->errors, cc->timeouts, cc->connects, cc->disconnects,
	    cc->fills_received);
	evbuffer_add_printf(out, "\"in_progress\": {\"requests\": %d, "
	    "\"flights\": %zu, \"refreshes\": %d, \"upstream_fetches\": %d}, ",
	    px->nrequests, dict_count(px->flights), px->nrefreshes,
	    upstream_active(px->upstream));
	evbuffer_add_printf(out, "\"total\": ");
	stats_counters_json(&px->stats.total.c, out);
	evbuffer_add_printf(out, ", \"routes\": {");
	for (int i = 0; i < px->conf->nroutes; i++) {
		if (i > 0)
			evbuffer_add(out, ", ", 2);
		json_string(out, px->conf->routes[i].prefix);
		evbuffer_add(out, ": ", 2);
		stats_counters_json(&px->stats.route[i].c, out);
	}
	evbuffer_add_printf(out, "}}\n");
}

void
admin_handle(struct evhttp_request *ev, void *arg)
{
	struct proxy *px = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(ev));
	struct evkeyvalq *headers = evhttp_request_get_output_headers(ev);
	struct evbuffer *out;

	assert(px->magic == PROXY_MAGIC);
	if ((out = evbuffer_new()) == NULL) {
		evhttp_send_error(ev, HTTP_SERVUNAVAIL, NULL);
		return;
	}
	if (path != NULL && strcmp(path, "/stats") == 0) {
		evhttp_add_header(headers, "Content-Type", "application/json");
		evhttp_add_header(headers, "Cache-Control", "no-store");
		stats_json(px, out);
		evhttp_send_reply(ev, HTTP_OK, NULL, out);
	} else if (path != NULL && strcmp(path, "/health") == 0) {
		evhttp_add_header(headers, "Content-Type", "text/plain");
		evbuffer_add_printf(out, "ok redis=%s\n",
		    cache_is_up(px->cache) ? "up" : "down");
		evhttp_send_reply(ev, HTTP_OK, NULL, out);
	} else {
		evhttp_add_header(headers, "Content-Type", "text/plain");
		evbuffer_add_printf(out, "not found: try /stats or /health\n");
		evhttp_send_reply(ev, HTTP_NOTFOUND, NULL, out);
	}
	evbuffer_free(out);
}
