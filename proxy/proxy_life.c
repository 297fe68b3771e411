/* SPDX-License-Identifier: MIT */
/*
 * A worker's proxy from start to stop: it is set up (its registries, the
 * near cache, Redis, the upstream, the listeners), drained, reloaded and
 * stopped here. What spans every request, flight and refresh (a stop past
 * its deadline, a reload's new routes, shutdown) is asked of each machine
 * here, from the top.
 */

#include <assert.h>
#include <stddef.h>
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
#include "proxy/proxy_control.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_figures.h"
#include "proxy/proxy_flight.h"
#include "proxy/proxy_http.h"
#include "proxy/proxy_linger.h"
#include "proxy/proxy_log.h"
#include "proxy/proxy_jwt.h"
#include "proxy/proxy_maint.h"
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
	refresh_abandon_fetches(px);
	flight_abandon_waiting(px);
	req_abandon_passes(px);
}

/*
 * Ends everything in progress: every waiting client gets a 503, every
 * refresh gives up its fetch (its lock expires after lock_ttl).
 */
static void
shutdown_all(struct proxy *px)
{
	control_shutdown(px);
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
	    ((budget_pending(px) == 0 && feeds_pending(px) == 0) ||
	    px->abandoned)) {
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
	http_stop_accepting(px);
	feeds_drain(px);	/* another instance leads at once */
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

/*
 * The keys a reload cannot change: the listeners are bound, Redis is
 * connected, the logs and near caches opened when a process starts. A
 * reload keeps their running values, and so does a worker the master
 * starts again after one died: an instance never runs two of them. Each
 * that the file changed is pending (restart_pending) until a restart.
 */
enum restart_key {
	RK_LISTEN, RK_ADMIN_LISTEN, RK_WORKERS, RK_L1_MAX_BYTES,
	RK_L2_MAX_BYTES, RK_ACCESS_LOG, RK_ERROR_LOG, RK_LOG_FORMAT, RK_PID_FILE,
	RK_REDIS_MODE, RK_REDIS_ADDRESS, RK_REDIS_MASTER_NAME,
	RK_REDIS_DB, RK_REDIS_PREFIX, RK_REDIS_TIMEOUT,
	RK_COUNT
};

_Static_assert(RK_COUNT <= RESTART_KEYS_MAX, "restart_pending names them all");
_Static_assert(RK_COUNT <= 32, "restart_pending is 32 bits");

/* In the order of enum restart_key: conf_restart_keys names them. */
_Static_assert(RK_COUNT == CONF_RESTART_KEYS, "one name for each");

/* How a field of struct conf is compared. */
enum field_kind { FK_STRING, FK_NUMBER, FK_ADDRESSES, FK_LISTENS };

/* One field of a restart-only key (a key may be stored in several). */
struct restart_field {
	enum restart_key	 key;
	enum field_kind		 kind;
	size_t			 off;
	size_t			 size;
};

#define RF(k, kind, m)	{ k, kind, offsetof(struct conf, m), \
			  sizeof(((struct conf *)0)->m) }

static const struct restart_field restart_fields[] = {
	RF(RK_LISTEN, FK_STRING, listen_host),
	RF(RK_LISTEN, FK_NUMBER, listen_port),
	RF(RK_LISTEN, FK_NUMBER, nlisteners),
	RF(RK_LISTEN, FK_LISTENS, listeners),
	RF(RK_ADMIN_LISTEN, FK_STRING, admin_host),
	RF(RK_ADMIN_LISTEN, FK_NUMBER, admin_port),
	RF(RK_ADMIN_LISTEN, FK_LISTENS, admin_listener),
	RF(RK_WORKERS, FK_NUMBER, workers),
	RF(RK_L1_MAX_BYTES, FK_NUMBER, l1_max_bytes),
	RF(RK_L2_MAX_BYTES, FK_NUMBER, l2_max_bytes),
	RF(RK_ACCESS_LOG, FK_STRING, access_log),
	RF(RK_ERROR_LOG, FK_STRING, error_log),
	RF(RK_LOG_FORMAT, FK_NUMBER, log_format),
	RF(RK_PID_FILE, FK_STRING, pid_file),
	RF(RK_REDIS_MODE, FK_NUMBER, redis_mode),
	RF(RK_REDIS_ADDRESS, FK_STRING, redis_host),
	RF(RK_REDIS_ADDRESS, FK_NUMBER, redis_port),
	RF(RK_REDIS_ADDRESS, FK_STRING, redis_unix),
	RF(RK_REDIS_ADDRESS, FK_NUMBER, redis_naddrs),
	RF(RK_REDIS_ADDRESS, FK_ADDRESSES, redis_addrs),
	RF(RK_REDIS_MASTER_NAME, FK_STRING, redis_master_name),
	RF(RK_REDIS_DB, FK_NUMBER, redis_db),
	RF(RK_REDIS_PREFIX, FK_STRING, redis_prefix),
	RF(RK_REDIS_TIMEOUT, FK_NUMBER, redis_timeout_ms),
};

#undef RF

/* Do a and b hold the same value in field f? Strings compare up to their
 * NUL: what lies past it is left from a longer default. */
static int
same_field(const struct restart_field *f, const struct conf *a,
    const struct conf *b)
{
	const char *pa = (const char *)a + f->off, *pb = (const char *)b + f->off;
	const struct conf_hostport *ha, *hb;
	const struct conf_listen *la, *lb;

	switch (f->kind) {
	case FK_LISTENS:
		la = (const struct conf_listen *)(const void *)pa;
		lb = (const struct conf_listen *)(const void *)pb;
		for (size_t i = 0; i < f->size / sizeof(*la); i++)
			if (strcmp(la[i].host, lb[i].host) != 0 ||
			    la[i].port != lb[i].port || la[i].tls != lb[i].tls)
				return 0;
		return 1;
	case FK_STRING:
		return strcmp(pa, pb) == 0;
	case FK_NUMBER:
		return memcmp(pa, pb, f->size) == 0;
	case FK_ADDRESSES:
		ha = (const struct conf_hostport *)(const void *)pa;
		hb = (const struct conf_hostport *)(const void *)pb;
		for (int i = 0; i < CONF_REDIS_ADDRS_MAX; i++)
			if (strcmp(ha[i].host, hb[i].host) != 0 ||
			    ha[i].port != hb[i].port)
				return 0;
		return 1;
	}
	return 0;
}

/*
 * new was just read from the file: every restart-only key takes its value
 * in running, and new->restart_pending names those the file changed. The
 * change is logged unless quiet (a worker: its master said so).
 */
static void
keep_running(struct conf *new, const struct conf *running, int quiet)
{
	char list[RESTART_TEXT_MAX];
	uint32_t changed = 0;

	for (size_t i = 0; i < ARRAY_LEN(restart_fields); i++)
		if (!same_field(&restart_fields[i], new, running))
			changed |= 1u << restart_fields[i].key;
	for (size_t i = 0; i < ARRAY_LEN(restart_fields); i++) {
		const struct restart_field *f = &restart_fields[i];
		if (changed & (1u << f->key))
			memcpy((char *)new + f->off,
			    (const char *)running + f->off, f->size);
	}
	new->restart_pending = changed;
	if (quiet || changed == 0)
		return;
	conf_restart_pending_text(new, list, sizeof(list));
	log_warn("reload: restart pending: %s (changed in the file; the "
	    "running values stay until a restart)", list);
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
proxy_conf_load(const char *path, const struct conf *running, int quiet)
{
	struct conf *new;
	char *errs = NULL, *line, *save, warning[CONF_PATH_MAX + 256];
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
	if (nerr == 0)
		nerr = feeds_check(new, mem);
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
	for (int i = 0; !quiet && conf_warning(new, i, warning,
	    sizeof(warning)) == 0; i++)
		log_warn("reload: %s", warning);
	keep_running(new, running, quiet);
	return new;
}

int
proxy_reload(struct proxy *px, struct conf **confp, const char *path)
{
	struct conf *old = *confp, *new;

	assert(px->magic == PROXY_MAGIC);
	if ((new = proxy_conf_load(path, old, px->nslots > 1)) == NULL)
		return -1;
	/* Work in progress keeps the settings it began with, but counts
	 * under the route of the same prefix, if any. */
	req_remap(px, old, new);
	flight_remap(px, new);
	refresh_remap(px, new);
	remap_stats(px->stats, old, new);
	px->conf = new;
	if (pools_reload(px, new) == -1)
		log_error("reload: out of memory; some upstream pools keep "
		    "their old servers");
	if (px->upstream != NULL)
		upstream_set_max_headers(px->upstream, new->max_upstream_headers);
	http_reload(px, new);
	jwt_reload(px);
	log_set_level(new->log_level);
	if (px->cache != NULL)	/* password files were read again */
		cache_credentials(px->cache, new);
	feeds_reload(px, new);
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

/* Its tables, the connections' lingering, the near cache, the upstream:
 * -1 when out of memory. */
static int
make_parts(struct proxy *px)
{
	TAILQ_INIT(&px->reqs);
	TAILQ_INIT(&px->req_pool);
	TAILQ_INIT(&px->flight_list);
	TAILQ_INIT(&px->refresh_list);
	TAILQ_INIT(&px->pools);
	TAILQ_INIT(&px->conn_list);
	if ((px->flights = dict_new()) == NULL ||
	    (px->refreshes = dict_new()) == NULL ||
	    (px->vary = dict_new()) == NULL ||
	    (px->lingers = linger_new(px->base)) == NULL ||
	    (px->l1 = l1_new(px->conf->l1_max_bytes)) == NULL ||
	    (px->upstream = upstream_new(px->base)) == NULL)
		return -1;
	upstream_set_max_headers(px->upstream, px->conf->max_upstream_headers);
	return 0;
}

/* With several workers, this one's gauges copied to its slot now and
 * then for its siblings to read. */
static int
publish_start(struct proxy *px)
{
	struct timeval tv = { 0, PUBLISH_MS * 1000 };

	if (px->nslots < 2)
		return 0;
	px->publish_ev = event_new(px->base, -1, EV_PERSIST, on_publish, px);
	if (px->publish_ev == NULL)
		return -1;
	evtimer_add(px->publish_ev, &tv);
	return 0;
}

int
proxy_start(struct proxy *px, struct event_base *base, const struct conf *conf,
    const struct listen_socks *socks, struct worker_slot *slots, int nslots,
    int slot, struct l2 *l2, char *err, size_t errlen)
{
	memset(px, 0, sizeof(*px));
	px->socks = *socks;
	px->l2 = l2;
	px->magic = PROXY_MAGIC;
	px->base = base;
	px->conf = conf;
	px->slots = slots;
	px->nslots = nslots;
	px->slot = slot;
	px->stats = &slots[slot].stats;
	px->started_ms = util_now_ms();
	if (make_parts(px) == -1)
		goto no_memory;
	if (access_log_open(conf->access_log, &px->access_log, err, errlen) == -1)
		goto fail;
	if (http_listen(px, err, errlen) == -1)
		goto fail;
	if ((px->cache = cache_new(base, conf, flight_on_fill, px)) == NULL)
		goto no_memory;
	cache_on_purge(px->cache, near_on_purge);
	if (pools_start(px) == -1 || control_new(px) == -1 ||
	    maint_new(px) == -1 || publish_start(px) == -1 ||
	    feeds_start(px) == -1)
		goto no_memory;
	if (jwt_start(px, err, errlen) == -1)
		goto fail;
	log_info("corral %s listening on %s:%d (admin %s:%d), upstream %s%s, "
	    "%d pool%s, %d route%s", CORRAL_VERSION, conf->listen_host,
	    conf->listen_port, conf->admin_host, conf->admin_port,
	    conf->upstream_url, conf->pools[0].nservers > 1 ? " and more" : "",
	    conf->npools, conf->npools == 1 ? "" : "s", conf->nroutes,
	    conf->nroutes == 1 ? "" : "s");
	return 0;
no_memory:
	snprintf(err, errlen, "out of memory");
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
	feeds_stop(px);
	pools_stop(px);
	http_close(px);
	upstream_free(&px->upstream);
	maint_free(px);
	jwt_stop(px);
	cache_free(&px->cache);
	dict_free(&px->flights);
	dict_free(&px->refreshes);
	vary_free(px);
	linger_free(&px->lingers);	/* after http_close: it may leave some */
	l1_free(&px->l1);
	if (px->drain_ev != NULL)
		event_free(px->drain_ev);
	px->drain_ev = NULL;
	access_log_close(&px->access_log);
}
