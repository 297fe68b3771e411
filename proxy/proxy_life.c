/*
 * Graceful stop and configuration reload.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"

#define DRAIN_CHECK_MS	20	/* how often a stop looks for idleness */
#define DRAIN_GRACE_MS	1000	/* after abandoning: time for lock releases */

static void
on_drain_check(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;
	struct timeval tv = { 0, DRAIN_CHECK_MS * 1000 };
	int64_t now = util_mono_us();

	assert(px->magic == PROXY_MAGIC);
	if (px->nrequests == 0 && px->nrefreshes == 0) {
		log_info("stop: nothing left in progress");
		event_base_loopexit(px->base, NULL);
		return;
	}
	if (!px->abandoned && now >= px->drain_deadline_us) {
		log_warn("stop: shutdown_timeout reached with %d request%s and "
		    "%d refresh%s in progress; releasing their locks",
		    px->nrequests, px->nrequests == 1 ? "" : "s",
		    px->nrefreshes, px->nrefreshes == 1 ? "" : "es");
		flow_abandon(px);
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
conf_reload_file(const char *path)
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
	if ((new = conf_reload_file(path)) == NULL)
		return -1;
	keep_fixed(new, old);
	flow_remap_routes(px, old, new);
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
