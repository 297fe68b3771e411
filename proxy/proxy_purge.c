/* SPDX-License-Identifier: MIT */
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
 * its path only: its host is the upstream's, whatever it says. A URL's
 * query is read by the route's key rules (key_ignore_query, key_query), and
 * on a route whose keys add parts to the URL (key_headers, cache_post,
 * per-credential) every key of that URL goes too: each is filed under the
 * URL's tag (cache_keyrule.h) as it is stored.
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

#include "cache/cache.h"
#include "cache/cache_key.h"
#include "cache/cache_keyrule.h"
#include "common/hlist.h"
#include "common/uri.h"
#include "common/log.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_json.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_purge.h"

#define PURGE_PREFIX_MAX	CACHE_KEY_MAX
#define PURGE_RETRY_AFTER	"1"	/* s, when too many purges run */
#define NEED_WHAT		"need url=URL, prefix=PREFIX or tag=TAG"

static void
reply_purged(struct hreq *ev, int64_t n)
{
	struct evbuffer *out = evbuffer_new();

	if (out != NULL)
		evbuffer_add_printf(out, "{\"purged\": %" PRId64 "}\n", n);
	json_send(ev, HTTP_OK, out);
}

/* A target's purge: its own key, then the keys filed under its tag. */
struct target_purge {
	struct proxy		*px;
	int			 soft;
	int64_t			 purged;
	char			 tag[KEYRULE_TAG_MAX + 1];	/* or "" */
	target_purged_cb	*cb;		/* NULL once detached */
	void			*arg;
};

static void
target_end(struct target_purge *tp, int64_t n, int ok)
{
	if (tp->cb != NULL)
		tp->cb(n, ok, tp->arg);
	free(tp);
}

static void
on_target_tag_purged(int64_t n, int ok, void *arg)
{
	struct target_purge *tp = arg;

	target_end(tp, tp->purged + n, ok);
}

static void
on_target_key_purged(enum fence_result r, void *arg)
{
	struct target_purge *tp = arg;

	tp->purged = r == FENCE_OK ? 1 : 0;
	if (r == FENCE_ERROR || tp->tag[0] == '\0' ||
	    cache_purge_tag(tp->px->cache, tp->tag, tp->soft,
	    on_target_tag_purged, tp) != PURGE_STARTED)
		target_end(tp, tp->purged, r != FENCE_ERROR &&
		    tp->tag[0] == '\0');
}

struct target_purge *
purge_target(struct proxy *px, const char *key, int tagged, int soft,
    target_purged_cb *cb, void *arg, const char **why)
{
	struct target_purge *tp = calloc(1, sizeof(*tp));

	if (tp == NULL) {
		*why = "out of memory";
		return NULL;
	}
	tp->px = px;
	tp->soft = soft;
	tp->cb = cb;
	tp->arg = arg;
	if (tagged && keyrule_url_tag(key, tp->tag) == -1) {
		*why = "out of memory";
		free(tp);
		return NULL;
	}
	near_drop(px, key);	/* the others hear by broadcast */
	if ((soft ? cache_soften : cache_invalidate)(px->cache, key,
	    on_target_key_purged, tp) == NULL) {
		*why = "redis unavailable";
		free(tp);
		return NULL;
	}
	return tp;
}

void
purge_target_detach(struct target_purge **tp)
{
	if (*tp != NULL)
		(*tp)->cb = NULL;
	*tp = NULL;
}

static void on_many_purged(int64_t n, int ok, void *arg);

/* Purges key (of a route whose keys add parts when tagged) for ev. */
static void
purge_url(struct proxy *px, struct hreq *ev, const char *key,
    int tagged, int soft)
{
	const char *why;

	if (purge_target(px, key, tagged, soft, on_many_purged, ev,
	    &why) == NULL) {
		json_error(ev, HTTP_SERVUNAVAIL, why);
		return;
	}
	log_info("purge %s%s", key, tagged ? " and its keys' parts" : "");
}

/* A purge of many keys: how many went, and whether it reached them all
 * (a retry finishes one that did not). */
static void
on_many_purged(int64_t n, int ok, void *arg)
{
	struct hreq *ev = arg;
	struct evbuffer *out;

	if (ok) {
		reply_purged(ev, n);
		return;
	}
	if ((out = evbuffer_new()) != NULL)
		evbuffer_add_printf(out, "{\"error\": \"redis unavailable: "
		    "purge incomplete, retry it\", \"purged\": %" PRId64 "}\n",
		    n);
	json_send(ev, HTTP_SERVUNAVAIL, out);
}

/* A purge that could not start: Redis is down, or too many run. */
static void
purge_refused(struct hreq *ev, enum purge_start r)
{
	if (r == PURGE_BUSY) {
		hl_add(&ev->out,
		    "Retry-After", PURGE_RETRY_AFTER);
		json_error(ev, HTTP_SERVUNAVAIL, "too many purges running");
	} else {
		json_error(ev, HTTP_SERVUNAVAIL, "redis unavailable");
	}
}

/* "http://Host:80/a?b" -> the cache key of that URL (*rtp: its route, and
 * *tagged: its route's keys add parts, so per-credential and POST entries
 * are filed under a tag of the URL; either may be NULL): 0, or the status
 * to answer with (400 for a URL that is not absolute, 503 on no memory). */
int
admin_url_key(const struct proxy *px, const char *url,
    char key[CACHE_KEY_MAX + 1], const struct conf_route **rtp, int *tagged)
{
	const struct conf_route *rt;
	char hostport[CONF_HOST_MAX + 8], *path, *query = NULL;
	struct uri u;
	int rc = 0;

	/* An http(s) URL only: the path a request for it would have. */
	if (uri_split(url, strlen(url), &u) == -1 || u.scheme == NULL ||
	    u.host == NULL || u.host_len == 0 || u.host_len > CONF_HOST_MAX ||
	    ((u.scheme_len != 4 || strncasecmp(u.scheme, "http", 4) != 0) &&
	    (u.scheme_len != 5 || strncasecmp(u.scheme, "https", 5) != 0)))
		return HTTP_BADREQUEST;
	snprintf(hostport, sizeof(hostport), u.port > 0 ? "%.*s:%d" : "%.*s",
	    (int)u.host_len, u.host, u.port);
	if ((path = strndup(u.path_len > 0 ? u.path : "/", u.path_len > 0 ?
	    u.path_len : 1)) == NULL || (u.query != NULL &&
	    (query = strndup(u.query, u.query_len)) == NULL)) {
		free(path);
		return HTTP_SERVUNAVAIL;
	}
	if (strpbrk(path, ".%") != NULL)
		hdr_normalize_path(path);	/* as a request's (forward.c) */
	rt = conf_route_match(px->conf, path);
	if (rtp != NULL)
		*rtp = rt;
	if (rt == NULL || !rt->key_host)	/* keyed on the upstream */
		snprintf(hostport, sizeof(hostport), "%s",
		    px->conf->upstream_authority);
	if (tagged != NULL)
		*tagged = key_has_parts(rt);
	if (key_of_url(rt, hostport, path, query, key) == -1)
		rc = HTTP_SERVUNAVAIL;
	free(path);
	free(query);
	return rc;
}

/*
 * "http://Host:80/a" or "Host:80/a" -> "host/a", as keys begin; a path
 * ("/a") is one of the upstream's: "upstream-host/a". As for a URL, the
 * route of the path decides: keyed on the upstream (not key_host), the
 * host named is the upstream's, whatever it says.
 */
void
admin_prefix_key(const struct proxy *px, const char *prefix,
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
admin_purge(struct proxy *px, struct hreq *ev)
{
	const char *query = ev->query;
	struct hlist params;
	const char *url, *prefix, *tag, *soft_arg;
	char key[CACHE_KEY_MAX + 1];
	enum purge_start r;
	int rc, soft, tagged;

	assert(px->magic == PROXY_MAGIC);
	if (ev->method != HM_POST) {
		json_error(ev, HTTP_BADMETHOD, "use POST /purge?url=URL, "
		    "?prefix=PREFIX or ?tag=TAG");
		return;
	}
	hl_init(&params);
	if (query == NULL || uri_query_parse(query, strlen(query), &params) == -1) {
		json_error(ev, HTTP_BADREQUEST, NEED_WHAT);
		hl_free(&params);
		return;
	}
	url = hl_find(&params, "url");
	prefix = hl_find(&params, "prefix");
	tag = hl_find(&params, "tag");
	/* soft: mark stale, refreshed once on the next request. The
	 * default for tags, which may name many popular entries. */
	soft_arg = hl_find(&params, "soft");
	soft = soft_arg != NULL ? strcmp(soft_arg, "0") != 0 : tag != NULL;
	if (url != NULL) {
		if ((rc = admin_url_key(px, url, key, NULL, &tagged)) != 0)
			json_error(ev, rc, rc == HTTP_BADREQUEST ?
			    "url must be absolute, like http://host/path" :
			    "out of memory");
		else
			purge_url(px, ev, key, tagged, soft);
	} else if (prefix != NULL && *prefix != '\0') {
		admin_prefix_key(px, prefix, key);
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
	hl_free(&params);
}
