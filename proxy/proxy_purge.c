/*
 * POST /purge on the admin listener: drops cached entries from Redis and,
 * through a pub/sub broadcast, from every Corral's memory.
 *
 *	POST /purge?url=http://app.example/users/1?page=2   one URL (all its
 *	                                                     variants)
 *	POST /purge?prefix=app.example/users/                every key starting
 *	                                                     so (SCAN)
 *	POST /purge?prefix=/users/                           the same, on routes
 *	                                                     keyed on the upstream
 *	POST /purge?tag=T[&soft=0]                           every key stored
 *	                                                     with tag T
 *
 * A purge of many keys answers with the number of keys whose entries went
 * (or, soft, became stale): 200 once it reached them all, else 503 with
 * the number so far (a retry finishes it); 503 with Retry-After when too
 * many purges run already.
 *
 * A URL or a prefix on a route keyed on the upstream (not key_host) names
 * its path only: its host is the upstream's, whatever it says.
 */

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cache/cache.h"
#include "cache/cache_key.h"
#include "common/log.h"
#include "proxy/proxy.h"
#include "proxy/proxy_near.h"

#define PURGE_PREFIX_MAX	CACHE_KEY_MAX
#define PURGE_RETRY_AFTER	"1"	/* s, when too many purges run */
#define NEED_WHAT		"need url=URL, prefix=PREFIX or tag=TAG"

static void
send_json(struct evhttp_request *ev, int code, struct evbuffer *out)
{
	evhttp_add_header(evhttp_request_get_output_headers(ev), "Content-Type",
	    "application/json");
	evhttp_send_reply(ev, code, NULL, out);
	if (out != NULL)
		evbuffer_free(out);
}

static void
json_error(struct evhttp_request *ev, int code, const char *msg)
{
	struct evbuffer *out = evbuffer_new();

	if (out != NULL)
		evbuffer_add_printf(out, "{\"error\": \"%s\"}\n", msg);
	send_json(ev, code, out);
}

static void
reply_purged(struct evhttp_request *ev, int64_t n)
{
	struct evbuffer *out = evbuffer_new();

	if (out != NULL)
		evbuffer_add_printf(out, "{\"purged\": %" PRId64 "}\n", n);
	send_json(ev, HTTP_OK, out);
}

static void
on_url_purged(enum fence_result r, void *arg)
{
	struct evhttp_request *ev = arg;

	if (r == FENCE_ERROR)
		json_error(ev, HTTP_SERVUNAVAIL, "redis unavailable");
	else
		reply_purged(ev, r == FENCE_OK ? 1 : 0);
}

/* A purge of many keys: how many went, and whether it reached them all
 * (a retry finishes one that did not). */
static void
on_many_purged(int64_t n, int ok, void *arg)
{
	struct evhttp_request *ev = arg;
	struct evbuffer *out;

	if (ok) {
		reply_purged(ev, n);
		return;
	}
	if ((out = evbuffer_new()) != NULL)
		evbuffer_add_printf(out, "{\"error\": \"redis unavailable: "
		    "purge incomplete, retry it\", \"purged\": %" PRId64 "}\n",
		    n);
	send_json(ev, HTTP_SERVUNAVAIL, out);
}

/* A purge that could not start: Redis is down, or too many run. */
static void
purge_refused(struct evhttp_request *ev, enum purge_start r)
{
	if (r == PURGE_BUSY) {
		evhttp_add_header(evhttp_request_get_output_headers(ev),
		    "Retry-After", PURGE_RETRY_AFTER);
		json_error(ev, HTTP_SERVUNAVAIL, "too many purges running");
	} else {
		json_error(ev, HTTP_SERVUNAVAIL, "redis unavailable");
	}
}

/* "http://Host:80/a?b" -> the cache key of that URL: 0, or the status to
 * answer with (400 for a URL that is not absolute, 503 on no memory). */
static int
url_key(const struct proxy *px, const char *url, char key[CACHE_KEY_MAX + 1])
{
	struct evhttp_uri *u = evhttp_uri_parse(url);
	const char *host, *path;
	const struct conf_route *rt;
	char hostport[CONF_HOST_MAX + 8];
	int rc = 0;

	if (u == NULL || (host = evhttp_uri_get_host(u)) == NULL) {
		if (u != NULL)
			evhttp_uri_free(u);
		return HTTP_BADREQUEST;
	}
	if (evhttp_uri_get_port(u) > 0)
		snprintf(hostport, sizeof(hostport), "%s:%d", host,
		    evhttp_uri_get_port(u));
	else
		snprintf(hostport, sizeof(hostport), "%s", host);
	path = evhttp_uri_get_path(u);
	if (path == NULL || *path == '\0')
		path = "/";
	rt = conf_route_match(px->conf, path);
	if (rt == NULL || !rt->key_host)	/* keyed on the upstream */
		snprintf(hostport, sizeof(hostport), "%s",
		    px->conf->upstream_authority);
	if (cache_key_for(hostport, path, evhttp_uri_get_query(u),
	    rt != NULL && rt->sort_query, key) == -1)
		rc = HTTP_SERVUNAVAIL;
	evhttp_uri_free(u);
	return rc;
}

/*
 * "http://Host:80/a" or "Host:80/a" -> "host/a", as keys begin; a path
 * ("/a") is one of the upstream's: "upstream-host/a". As for a URL, the
 * route of the path decides: keyed on the upstream (not key_host), the
 * host named is the upstream's, whatever it says.
 */
static void
prefix_key(const struct proxy *px, const char *prefix,
    char out[PURGE_PREFIX_MAX + 1])
{
	const char *p = prefix, *slash;
	const struct conf_route *rt;
	size_t hl;

	if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	else if (strncasecmp(p, "https://", 8) == 0)
		p += 8;
	slash = strchr(p, '/');
	rt = slash != NULL ? conf_route_match(px->conf, slash) : NULL;
	if (slash != NULL && (slash == p || rt == NULL || !rt->key_host)) {
		snprintf(out, PURGE_PREFIX_MAX + 1, "%s%s",
		    px->conf->upstream_authority, slash);
		return;
	}
	hl = slash != NULL ? (size_t)(slash - p) : strlen(p);
	if (hl >= 3 && strncmp(p + hl - 3, ":80", 3) == 0 && slash != NULL)
		snprintf(out, PURGE_PREFIX_MAX + 1, "%.*s%s", (int)(hl - 3),
		    p, slash);
	else
		snprintf(out, PURGE_PREFIX_MAX + 1, "%s", p);
	for (size_t i = 0; i < hl && out[i] != '\0'; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
}

void
admin_purge(struct proxy *px, struct evhttp_request *ev)
{
	const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(ev));
	struct evkeyvalq params;
	const char *url, *prefix, *tag, *soft_arg;
	char key[CACHE_KEY_MAX + 1];
	enum purge_start r;
	int rc, soft;

	assert(px->magic == PROXY_MAGIC);
	if (evhttp_request_get_command(ev) != EVHTTP_REQ_POST) {
		json_error(ev, HTTP_BADMETHOD, "use POST /purge?url=URL, "
		    "?prefix=PREFIX or ?tag=TAG");
		return;
	}
	TAILQ_INIT(&params);
	if (query == NULL || evhttp_parse_query_str(query, &params) == -1) {
		json_error(ev, HTTP_BADREQUEST, NEED_WHAT);
		evhttp_clear_headers(&params);
		return;
	}
	url = evhttp_find_header(&params, "url");
	prefix = evhttp_find_header(&params, "prefix");
	tag = evhttp_find_header(&params, "tag");
	/* soft: mark stale, refreshed once on the next request. The
	 * default for tags, which may name many popular entries. */
	soft_arg = evhttp_find_header(&params, "soft");
	soft = soft_arg != NULL ? strcmp(soft_arg, "0") != 0 : tag != NULL;
	if (url != NULL) {
		if ((rc = url_key(px, url, key)) != 0) {
			json_error(ev, rc, rc == HTTP_BADREQUEST ?
			    "url must be absolute, like http://host/path" :
			    "out of memory");
		} else {
			near_drop(px, key);	/* the others hear by broadcast */
			if ((soft ? cache_soften : cache_invalidate)(px->cache,
			    key, on_url_purged, ev) == NULL)
				json_error(ev, HTTP_SERVUNAVAIL,
				    "redis unavailable");
			else
				log_info("purge %s", key);
		}
	} else if (prefix != NULL && *prefix != '\0') {
		prefix_key(px, prefix, key);
		near_drop_prefix(px, key);	/* the others hear by broadcast */
		if ((r = cache_purge_prefix(px->cache, key, soft,
		    on_many_purged, ev)) != PURGE_STARTED)
			purge_refused(ev, r);
		else
			log_info("purge prefix %s%s", key, soft ? " (soft)" : "");
	} else if (tag != NULL && *tag != '\0') {
		if (strlen(tag) > CACHE_TAG_MAX)
			json_error(ev, HTTP_BADREQUEST, "tag too long");
		else if ((r = cache_purge_tag(px->cache, tag, soft,
		    on_many_purged, ev)) != PURGE_STARTED)
			purge_refused(ev, r);
		else
			log_info("purge tag %s%s", tag, soft ? " (soft)" : "");
	} else {
		json_error(ev, HTTP_BADREQUEST, NEED_WHAT);
	}
	evhttp_clear_headers(&params);
}
