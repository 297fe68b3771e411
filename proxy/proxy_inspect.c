/* SPDX-License-Identifier: MIT */
/*
 * GET /entry?url=URL (read scope): what Redis holds for the key a request
 * for URL maps to (admin_url_key(), the same key a request gets, after
 * its route's key rules), read in one round trip (cache_inspect()):
 *
 *	{"url": ..., "key": ..., "route": "/" | null, "maintenance": "normal",
 *	 "stored": true, "status": 200, "state": "fresh" | "stale" | "expired",
 *	 "stored_at_ms": T, "fresh_until_ms": T, "stale_until_ms": T,
 *	 "redis_ttl_ms": N, "size": N, "vary": "Accept" | null,
 *	 "variants": ["id", ...], "tags": ["t", ...],
 *	 "lock": null | {"holder": "this process" | "another process",
 *	                 "holder_id": "8 hex digits", "age_ms": N,
 *	                 "expires_in_ms": N},
 *	 "backoff": null | {"failure": "503", "remaining_ms": N,
 *	                    "failures_in_a_row": N},
 *	 "hit_for_miss": null | {"remaining_ms": N}}
 *
 * Times are wall-clock ms since the epoch. The lock's token is never
 * shown: holder_id is a hash of it, enough to tell two holders apart.
 * age_ms counts from when the lock was taken or last renewed (a holder
 * renews every lock_ttl / 3).
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "common/uri.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_inspect.h"
#include "proxy/proxy_json.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_purge.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_vary.h"

#define FNV_OFFSET		2166136261u
#define FNV_PRIME		16777619u

/* What the inspection's callback needs, the request's own. */
struct entry_ask {
	struct proxy		*px;
	struct hreq *ev;
	char			*url;
	char			 key[CACHE_KEY_MAX + 1];
	struct conf_route	 rt;
	int			 routed;
};

static void
add_tag(const char *tag, void *arg)
{
	struct evbuffer *out = arg;

	if (evbuffer_get_length(out) > 0)
		evbuffer_add(out, ", ", 2);
	json_string(out, tag);
}

/* The stored entry's own fields. */
static void
entry_json(const struct cache_inspection *in, struct evbuffer *out)
{
	const struct cache_entry *e = in->entry;
	struct evbuffer *tags = evbuffer_new();
	const char *vary;
	int marker = vary_is_marker(e);

	evbuffer_add_printf(out, ", \"stored\": true, \"status\": %d, "
	    "\"state\": \"%s\", \"stored_at_ms\": %" PRId64 ", "
	    "\"fresh_until_ms\": %" PRId64 ", \"stale_until_ms\": %" PRId64
	    ", \"redis_ttl_ms\": %" PRId64 ", \"size\": %zu, \"vary\": ",
	    marker ? 0 : e->status,
	    entry_state_name(entry_state(e, util_now_ms())),
	    e->stored_ms, e->fresh_until_ms, e->stale_until_ms,
	    in->entry_pttl_ms, marker ? (size_t)0 : e->body_len);
	if (marker && (vary = hl_find(&e->headers, "Vary")) != NULL)
		json_string(out, vary);
	else
		evbuffer_add_printf(out, "null");
	evbuffer_add_printf(out, ", \"tags\": [");
	if (tags != NULL) {
		hdr_tags(&e->headers, add_tag, tags);
		evbuffer_add_buffer(out, tags);
		evbuffer_free(tags);
	}
	evbuffer_add(out, "]", 1);
}

/* The lock, the backoff and the hit-for-miss mark. */
static void
marks_json(const struct entry_ask *a, const struct cache_inspection *in,
    struct evbuffer *out)
{
	uint32_t h = FNV_OFFSET;
	int64_t age;

	evbuffer_add_printf(out, ", \"lock\": ");
	if (in->lock_token[0] != '\0') {
		for (const char *p = in->lock_token; *p != '\0'; p++)
			h = (h ^ (unsigned char)*p) * FNV_PRIME;
		age = a->routed ? a->rt.lock_ttl_ms - in->lock_pttl_ms : -1;
		evbuffer_add_printf(out, "{\"holder\": \"%s\", \"holder_id\": "
		    "\"%08x\", \"age_ms\": %" PRId64 ", \"expires_in_ms\": %"
		    PRId64 "}", refresh_running(a->px, a->key) ?
		    "this process" : "another process", (unsigned)h,
		    age > 0 ? age : 0, in->lock_pttl_ms);
	} else {
		evbuffer_add_printf(out, "null");
	}
	evbuffer_add_printf(out, ", \"backoff\": ");
	if (in->backoff[0] != '\0') {
		evbuffer_add_printf(out, "{\"failure\": ");
		json_string(out, in->backoff);
		evbuffer_add_printf(out, ", \"remaining_ms\": %" PRId64
		    ", \"failures_in_a_row\": %" PRId64 "}",
		    in->backoff_pttl_ms, in->failures);
	} else {
		evbuffer_add_printf(out, "null");
	}
	if (in->hfm_pttl_ms > 0)
		evbuffer_add_printf(out, ", \"hit_for_miss\": {\"remaining_ms\": %"
		    PRId64 "}", in->hfm_pttl_ms);
	else
		evbuffer_add_printf(out, ", \"hit_for_miss\": null");
}

static void
on_inspected(enum cache_result r, struct cache_inspection *in, void *arg)
{
	struct entry_ask *a = arg;
	struct evbuffer *out;

	assert(a->px->magic == PROXY_MAGIC);
	if (r != CACHE_FOUND || (out = evbuffer_new()) == NULL) {
		json_error(a->ev, HTTP_SERVUNAVAIL, "redis unavailable");
		goto done;
	}
	evbuffer_add_printf(out, "{\"url\": ");
	json_string(out, a->url);
	evbuffer_add_printf(out, ", \"key\": ");
	json_string(out, a->key);
	evbuffer_add_printf(out, ", \"route\": ");
	if (a->routed)
		json_string(out, a->rt.prefix);
	else
		evbuffer_add_printf(out, "null");
	evbuffer_add_printf(out, ", \"maintenance\": \"%s\"",
	    maint_avoids(a->px, a->key + strcspn(a->key, "/")) ? "avoid" :
	    "normal");
	if (in->entry != NULL)
		entry_json(in, out);
	else
		evbuffer_add_printf(out, ", \"stored\": false, \"status\": null"
		    ", \"state\": null, \"tags\": []");
	evbuffer_add_printf(out, ", \"variants\": [");
	for (int i = 0; i < in->nvariants && i < CACHE_INSPECT_VARIANTS; i++) {
		if (i > 0)
			evbuffer_add(out, ", ", 2);
		json_string(out, in->variants[i]);
	}
	evbuffer_add_printf(out, "], \"variants_total\": %d", in->nvariants);
	marks_json(a, in, out);
	evbuffer_add_printf(out, "}\n");
	json_send(a->ev, HTTP_OK, out);
done:
	free(a->url);
	free(a);
}

void
admin_inspect(struct proxy *px, struct hreq *ev)
{
	const char *query = ev->query;
	const struct conf_route *rt = NULL;
	struct hlist params;
	struct entry_ask *a = NULL;
	const char *url;
	int rc;

	assert(px->magic == PROXY_MAGIC);
	hl_init(&params);
	if (query != NULL)
		(void)uri_query_parse(query, strlen(query), &params);
	if ((url = hl_find(&params, "url")) == NULL) {
		json_error(ev, HTTP_BADREQUEST, "need url=URL");
		goto done;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->url = strdup(url)) == NULL) {
		json_error(ev, HTTP_SERVUNAVAIL, "out of memory");
		goto fail;
	}
	if ((rc = admin_url_key(px, url, a->key, &rt, NULL)) != 0) {
		json_error(ev, rc, rc == HTTP_BADREQUEST ? "url must be "
		    "absolute, like http://host/path" : "out of memory");
		goto fail;
	}
	a->px = px;
	a->ev = ev;
	a->routed = rt != NULL;
	if (rt != NULL)
		a->rt = *rt;
	if (cache_inspect(px->cache, a->key, on_inspected, a) == NULL) {
		json_error(ev, HTTP_SERVUNAVAIL, "redis unavailable");
		goto fail;
	}
	goto done;
fail:
	if (a != NULL)
		free(a->url);
	free(a);
done:
	hl_free(&params);
}
