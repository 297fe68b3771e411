/*
 * A worker's proxy from start to stop: it is set up (its registries, the
 * near cache, Redis, the upstream, the listeners), drained, reloaded and
 * stopped here. What spans every request, flight and refresh (a stop past
 * its deadline, a reload's new routes, shutdown) is asked of each machine
 * here, from the top.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "cache/cache.h"
#include "cache/cache_l1.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_flight.h"
#include "proxy/proxy_log.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_req.h"
#include "proxy/proxy_vary.h"
#include "upstream/upstream.h"

#define DRAIN_CHECK_MS	20	/* how often a stop looks for idleness */
#define DRAIN_GRACE_MS	1000	/* after abandoning: time for lock releases */

/*
 * Past the stop deadline: every fetch that holds a lock gives it up and
 * releases the lock (so the fleet does not wait out lock_ttl), and every
 * client still waiting gets a 503. Releases finish asynchronously.
 */
static void
abandon_all(struct proxy *px)
{
	px->abandoned = 1;
	refresh_abandon_all(px);
	flight_abandon_all(px);
	req_abandon_all(px);
}

/*
 * Ends everything in progress: every waiting client gets a 503, every
 * refresh gives up its fetch (its lock expires after lock_ttl).
 */
static void
shutdown_all(struct proxy *px)
{
	flight_shutdown_all(px);
	req_shutdown_all(px);
	refresh_shutdown_all(px);
}

static void
on_drain_check(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;
	struct timeval tv = { 0, DRAIN_CHECK_MS * 1000 };
	int64_t now = util_mono_us();

	assert(px->magic == PROXY_MAGIC);
	if (px->nrequests == 0 && px->nrefreshes == 0 &&
	    (budget_pending(px) == 0 || px->abandoned)) {
		log_info("stop: nothing left in progress");
		event_base_loopexit(px->base, NULL);
		return;
	}
	if (!px->abandoned && now >= px->drain_deadline_us) {
		log_warn("stop: shutdown_timeout reached with %d request%s and "
		    "%d refresh%s in progress; releasing their locks",
		    px->nrequests, px->nrequests == 1 ? "" : "s",
		    px->nrefreshes, px->nrefreshes == 1 ? "" : "es");
		abandon_all(px);
		px->drain_deadline_us = now + (px->conf->redis_timeout_ms +
		    DRAIN_GRACE_MS) * 1000;
	} else if (px->abandoned && now >= px->drain_deadline_us) {
		log_warn("stop: giving up on %d refresh%s", px->nrefreshes,
		    px->nrefreshes == 1 ? "" : "es");
		event_base_loopexit(px->base, NULL);
		return;
	}
	evtimer_add(px->drain_ev, &tv);
}

void
proxy_drain(struct proxy *px)
{
	assert(px->magic == PROXY_MAGIC);
	if (px->draining) {
		log_info("stop: second signal, exiting now");
		event_base_loopexit(px->base, NULL);
		return;
	}
	px->draining = 1;
	if (px->http_bound != NULL) {
		evhttp_del_accept_socket(px->http, px->http_bound);
		px->http_bound = NULL;
	}
	px->drain_deadline_us = util_mono_us() +
	    px->conf->shutdown_timeout_ms * 1000;
	if (px->drain_ev == NULL &&
	    (px->drain_ev = evtimer_new(px->base, on_drain_check, px)) == NULL) {
		event_base_loopexit(px->base, NULL);
		return;
	}
	log_info("stop: no longer accepting; finishing %d request%s and %d "
	    "refresh%s", px->nrequests, px->nrequests == 1 ? "" : "s",
	    px->nrefreshes, px->nrefreshes == 1 ? "" : "es");
	on_drain_check(-1, 0, px);
}

/* Settings a reload cannot change: keeps the running ones, and says so. */
static void
keep_fixed(struct conf *new, const struct conf *old)
{
#define KEEP_STR(field, what) do {					\
	if (strcmp(new->field, old->field) != 0) {			\
		log_warn("reload: %s changed; it needs a restart", what);	\
		memcpy(new->field, old->field, sizeof(new->field));	\
	}								\
} while (0)
#define KEEP_NUM(field, what) do {					\
	if (new->field != old->field) {					\
		log_warn("reload: %s changed; it needs a restart", what);	\
		new->field = old->field;				\
	}								\
} while (0)
	KEEP_STR(listen_host, "listen");
	KEEP_NUM(listen_port, "listen");
	KEEP_STR(admin_host, "admin_listen");
	KEEP_NUM(admin_port, "admin_listen");
	KEEP_STR(redis_host, "[redis] address");
	KEEP_NUM(redis_port, "[redis] address");
	KEEP_STR(redis_unix, "[redis] address");
	KEEP_STR(redis_password, "[redis] password");
	KEEP_NUM(redis_db, "[redis] db");
	KEEP_STR(redis_prefix, "[redis] prefix");
	KEEP_NUM(redis_timeout_ms, "[redis] timeout");
	KEEP_STR(access_log, "access_log");
	KEEP_STR(error_log, "error_log");
	KEEP_NUM(log_format, "log_format");
	KEEP_NUM(l1_max_bytes, "l1_max_bytes");
	KEEP_NUM(l2_max_bytes, "l2_max_bytes");
#undef KEEP_STR
#undef KEEP_NUM
}

/* Per-route figures follow their route's prefix across a reload. */
static void
remap_stats(struct stats *st, const struct conf *old, const struct conf *new)
{
	static struct stats_scope moved[CONF_ROUTES_MAX];

	memset(moved, 0, sizeof(moved));
	for (int i = 0; i < new->nroutes; i++)
		for (int j = 0; j < old->nroutes; j++)
			if (strcmp(new->routes[i].prefix, old->routes[j].prefix) == 0)
				moved[i] = st->route[j];
	memcpy(st->route, moved, sizeof(moved));
}

struct conf *
proxy_conf_load(const char *path)
{
	struct conf *new;
	char *errs = NULL, *line, *save;
	size_t errlen;
	FILE *mem;
	int nerr;

	if ((new = calloc(1, sizeof(*new))) == NULL ||
	    (mem = open_memstream(&errs, &errlen)) == NULL) {
		free(new);
		log_error("reload: out of memory; keeping the running configuration");
		return NULL;
	}
	nerr = conf_load(new, path, mem);
	fclose(mem);
	if (nerr != 0) {
		for (line = strtok_r(errs, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save))
			log_error("reload: %s", line);
		log_error("reload: %d error%s; keeping the running configuration",
		    nerr, nerr == 1 ? "" : "s");
		free(errs);
		free(new);
		return NULL;
	}
	free(errs);
	return new;
}

int
proxy_reload(struct proxy *px, struct conf **confp, const char *path)
{
	struct conf *old = *confp, *new;

	assert(px->magic == PROXY_MAGIC);
	if ((new = proxy_conf_load(path)) == NULL)
		return -1;
	keep_fixed(new, old);
	/* Work in progress keeps the settings it began with, but counts
	 * under the route of the same prefix, if any. */
	req_remap(px, old, new);
	flight_remap(px, new);
	refresh_remap(px, new);
	remap_stats(px->stats, old, new);
	px->conf = new;
	if (px->http != NULL)
		http_limits(px->http, new);
	if (px->upstream != NULL)
		upstream_set_max_headers(px->upstream, new->max_upstream_headers);
	log_set_level(new->log_level);
	*confp = new;
	free(old);
	log_info("reload: %s loaded, %d route%s", path, new->nroutes,
	    new->nroutes == 1 ? "" : "s");
	return 0;
}

static void
on_publish(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	proxy_publish(px);
}

int
proxy_start(struct proxy *px, struct event_base *base, const struct conf *conf,
    struct worker_slot *slots, int nslots, int slot, struct l2 *l2, char *err,
    size_t errlen)
{
	struct timeval tv = { 0, PUBLISH_MS * 1000 };

	memset(px, 0, sizeof(*px));
	px->l2 = l2;
	px->magic = PROXY_MAGIC;
	px->base = base;
	px->conf = conf;
	px->slots = slots;
	px->nslots = nslots;
	px->slot = slot;
	px->stats = &slots[slot].stats;
	px->started_ms = util_now_ms();
	TAILQ_INIT(&px->reqs);
	TAILQ_INIT(&px->flight_list);
	TAILQ_INIT(&px->refresh_list);
	if ((px->flights = dict_new()) == NULL ||
	    (px->refreshes = dict_new()) == NULL ||
	    (px->vary = dict_new()) == NULL ||
	    (px->conns = dict_new()) == NULL ||
	    (px->l1 = l1_new(conf->l1_max_bytes)) == NULL ||
	    (px->upstream = upstream_new(base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	upstream_set_max_headers(px->upstream, conf->max_upstream_headers);
	if (access_log_open(conf->access_log, &px->access_log, err, errlen) == -1)
		goto fail;
	if (http_listen(px, err, errlen) == -1)
		goto fail;
	if ((px->cache = cache_new(base, conf, flight_on_fill, px)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	cache_on_purge(px->cache, near_on_purge);
	if (budget_new(px) == -1) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (nslots > 1) {
		px->publish_ev = event_new(base, -1, EV_PERSIST, on_publish, px);
		if (px->publish_ev == NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		evtimer_add(px->publish_ev, &tv);
	}
	log_info("corral %s listening on %s:%d (admin %s:%d), upstream %s, "
	    "%d route%s", CORRAL_VERSION, conf->listen_host, conf->listen_port,
	    conf->admin_host, conf->admin_port, conf->upstream_url,
	    conf->nroutes, conf->nroutes == 1 ? "" : "s");
	return 0;
fail:
	proxy_stop(px);
	return -1;
}

void
proxy_stop(struct proxy *px)
{
	assert(px->magic == PROXY_MAGIC);
	if (px->publish_ev != NULL)
		event_free(px->publish_ev);
	px->publish_ev = NULL;
	shutdown_all(px);
	budget_free(px);
	http_close(px);
	upstream_free(&px->upstream);
	cache_free(&px->cache);
	dict_free(&px->flights);
	dict_free(&px->refreshes);
	vary_free(px);
	dict_free(&px->conns);		/* after evhttp_free: it closes them */
	l1_free(&px->l1);
	if (px->drain_ev != NULL)
		event_free(px->drain_ev);
	px->drain_ev = NULL;
	access_log_close(&px->access_log);
}
