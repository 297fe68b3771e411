/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_PURGE_H
#define PROXY_PROXY_PURGE_H

/*
 * Every stored response of one target, dropped (or, soft, made stale) at
 * once in this process and fleet-wide: the URL's own key and, on a route
 * whose keys add parts to the URL (per-credential, a cached POST's body,
 * key_headers), every key filed under the URL's tag as it was stored
 * (cache_keyrule.h). For a purge by URL and for a write through the proxy
 * (RFC 9111 4.4: a successful unsafe request invalidates its target).
 */

#include <stdint.h>


#include "cache/cache_key.h"

struct hreq;

struct conf_route;
struct proxy;
struct target_purge;

/* purged: the keys whose entries went (or became stale); ok: every key
 * was reached (0: Redis failed part-way, or was down). */
typedef void target_purged_cb(int64_t purged, int ok, void *arg);

/* Starts the purge of key (tagged: with its tag's keys); cb runs once,
 * later, unless the purge is detached first. NULL when it cannot start
 * (Redis is down, too many purges run, no memory): then *why says which
 * and cb never runs. */
struct target_purge *purge_target(struct proxy *px, const char *key,
	    int tagged, int soft, target_purged_cb *cb, void *arg,
	    const char **why);
/* Its starter is gone: the purge goes on and tells nobody. Sets *tp to
 * NULL. */
void	purge_target_detach(struct target_purge **tp);

/* POST /purge?url=URL, ?prefix=PREFIX or ?tag=TAG on the admin listener. */
void	admin_purge(struct proxy *px, struct hreq *ev);
/* "http://Host:80/a?b" -> the cache key of that URL, as a request's (and
 * with rtp, its route or NULL; with tagged, whether its route's keys add
 * parts): 0, or the status to answer with (400 for a URL that is not an
 * absolute http(s) one, 503 on no memory). */
int	admin_url_key(const struct proxy *px, const char *url,
	    char key[CACHE_KEY_MAX + 1], const struct conf_route **rtp,
	    int *tagged);
/* "http://Host:80/a" or "/a" -> the start of the keys it names. */
void	admin_prefix_key(const struct proxy *px, const char *prefix,
	    char out[CACHE_KEY_MAX + 1]);

#endif
