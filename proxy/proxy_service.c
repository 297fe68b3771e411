/* SPDX-License-Identifier: MIT */
/*
 * What Corral tells a service manager (proxy_service.h): readiness,
 * reloads, the stop and a watchdog, through common/notify.c. Reads the
 * proxy's figures; calls nothing of the request flow.
 */

#include "proxy/proxy_service.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/notify.h"
#include "common/util.h"
#include "proxy/proxy_figures.h"

#define SERVICE_MAGIC	0x53525643u	/* "SRVC" */

struct service {
	uint32_t		 magic;
	struct proxy		*px;		/* NULL in the master */
	struct worker_slot	*slots;
	int			 nslots;
	int			 slot;		/* px's */
	int			 reports;	/* to the manager */
	int			 ready_sent;
	int			 stopping;
	int			 stalled;	/* a worker's loop has stopped */
	int64_t			 started_us;
	int64_t			 redis_wait_us;	/* [redis] timeout */
	int64_t			 watchdog_ms;	/* 0: none */
	char			 listen[CONF_HOST_MAX + 8];
	struct event		*tick;
};

/* The manager drops a message it cannot read; a failed write is logged
 * once, and Corral goes on. */
static void
sent(int rc, const char *what)
{
	static int warned;

	if (rc == -1 && !warned) {
		warned = 1;
		log_warn("NOTIFY_SOCKET: cannot send %s: %s", what,
		    strerror(errno));
	}
}

/* "listening on HOST:PORT, redis up, 2/2 workers ready, 1234 requests,
 * 97% from the cache" */
static void
summary(struct service *s, char *out, size_t outlen)
{
	static struct proxy_figures f;	/* large: off the stack */
	uint64_t requests = 0, cached = 0, answered = 0;
	int ready = 0, up = 0;

	if (s->px != NULL)
		proxy_figures(s->px, &f);	/* copies its gauges to its slot */
	for (int i = 0; i < s->nslots; i++) {
		const struct worker_slot *ws = &s->slots[i];
		const struct stats_counters *c = &ws->stats.total.c;

		ready += ws->ready;
		up += ws->redis_up;
		requests += c->requests;
		cached += c->hits + c->stale_hits + c->collapsed;
		answered += c->hits + c->stale_hits + c->collapsed + c->misses;
	}
	snprintf(out, outlen, "listening on %s, redis %s, %d/%d workers ready, "
	    "%" PRIu64 " requests, %" PRIu64 "%% from the cache", s->listen,
	    up == s->nslots ? "up" : up == 0 ? "down" : "partly down", ready,
	    s->nslots, requests, answered > 0 ? cached * 100 / answered : 0);
}

static void
schedule(struct service *s)
{
	struct timeval tv;
	int64_t ms = SERVICE_CHECK_MS;

	if (!s->reports && s->slots[s->slot].ready) {
		ms = SERVICE_HEARTBEAT_MS;
	} else if (s->ready_sent) {
		ms = SERVICE_STATUS_MS;
		if (s->watchdog_ms > 0 && s->watchdog_ms / 2 < ms)
			ms = s->watchdog_ms / 2 > 0 ? s->watchdog_ms / 2 : 1;
	}
	tv = util_timeval(ms);
	evtimer_add(s->tick, &tv);
}

/* This worker is ready once Redis is up, or after [redis] timeout. */
static void
check_own(struct service *s)
{
	struct worker_slot *ws = &s->slots[s->slot];
	static struct proxy_figures f;	/* large: off the stack */
	int up;

	if (s->px == NULL || ws->ready)
		return;
	up = cache_is_up(s->px->cache);
	if (!up && util_mono_us() - s->started_us < s->redis_wait_us)
		return;
	proxy_figures(s->px, &f);	/* its slot shows Redis up first */
	ws->ready = 1;
	if (!up)
		log_warn("ready without Redis (no answer within [redis] "
		    "timeout): serving uncached until it answers");
}

static int
all_ready(const struct service *s)
{
	for (int i = 0; i < s->nslots; i++)
		if (!s->slots[i].ready)
			return 0;
	return 1;
}

/* Is every ready worker's loop still running? Says so in the log when
 * that changes. */
static int
workers_alive(struct service *s)
{
	int64_t now = util_mono_us(), idle_ms, limit_ms;

	/* Half the interval leaves the manager time to hear the last ping;
	 * three heartbeats leave a busy worker time to beat. */
	limit_ms = s->watchdog_ms / 2;
	if (limit_ms < 3 * SERVICE_HEARTBEAT_MS)
		limit_ms = 3 * SERVICE_HEARTBEAT_MS;
	for (int i = 0; i < s->nslots; i++) {
		const struct worker_slot *ws = &s->slots[i];

		if (ws->pid <= 0 || !ws->ready)
			continue;	/* starting, or to be restarted */
		idle_ms = (now - ws->heartbeat_us) / 1000;
		if (idle_ms <= limit_ms)
			continue;
		if (!s->stalled)
			log_error("worker %d (pid %d) has not run its loop for "
			    "%" PRId64 " ms: no more WATCHDOG=1", i,
			    (int)ws->pid, idle_ms);
		s->stalled = 1;
		return 0;
	}
	if (s->stalled)
		log_info("every worker runs again: WATCHDOG=1 again");
	s->stalled = 0;
	return 1;
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct service *s = arg;
	char status[NOTIFY_MSG_MAX / 2];

	assert(s->magic == SERVICE_MAGIC);
	check_own(s);
	if (s->px != NULL)
		s->slots[s->slot].heartbeat_us = util_mono_us();
	if (!s->reports) {
		schedule(s);
		return;
	}
	summary(s, status, sizeof(status));
	if (s->stopping) {
		/* Only the watchdog, while requests finish. */
	} else if (!s->ready_sent && all_ready(s)) {
		s->ready_sent = 1;
		sent(notify_send("READY=1\nSTATUS=%s", status), "READY=1");
		log_info("ready: %s", status);
	} else if (s->ready_sent) {
		sent(notify_send("STATUS=%s", status), "STATUS");
	}
	if (s->watchdog_ms > 0 && (s->px != NULL || workers_alive(s)))
		sent(notify_send("WATCHDOG=1"), "WATCHDOG=1");
	schedule(s);
}

struct service *
service_new(struct event_base *base, struct proxy *px,
    struct worker_slot *slots, int nslots, int slot, int reports,
    const struct conf *conf)
{
	struct service *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->magic = SERVICE_MAGIC;
	s->px = px;
	s->slots = slots;
	s->nslots = nslots;
	s->slot = slot;
	s->reports = reports;
	s->started_us = util_mono_us();
	s->redis_wait_us = conf->redis_timeout_ms * 1000;
	s->watchdog_ms = reports ? notify_watchdog_ms() : 0;
	snprintf(s->listen, sizeof(s->listen), strchr(conf->listen_host, ':') ?
	    "[%s]:%d" : "%s:%d", conf->listen_host, conf->listen_port);
	if ((s->tick = evtimer_new(base, on_tick, s)) == NULL) {
		free(s);
		return NULL;
	}
	if (px != NULL) {
		slots[slot].ready = 0;
		slots[slot].heartbeat_us = s->started_us;
	}
	schedule(s);
	return s;
}

void
service_reloading(struct service *s)
{
	if (s == NULL)
		return;
	assert(s->magic == SERVICE_MAGIC);
	if (s->reports)
		sent(notify_send("RELOADING=1\nMONOTONIC_USEC=%" PRId64
		    "\nSTATUS=reloading", util_mono_us()), "RELOADING=1");
}

void
service_reloaded(struct service *s)
{
	char status[NOTIFY_MSG_MAX / 2];

	if (s == NULL)
		return;
	assert(s->magic == SERVICE_MAGIC);
	if (!s->reports || !s->ready_sent)
		return;		/* READY=1 comes when every worker is */
	summary(s, status, sizeof(status));
	sent(notify_send("READY=1\nSTATUS=%s", status), "READY=1");
}

void
service_stopping(struct service *s, int64_t stop_ms)
{
	if (s == NULL)
		return;
	assert(s->magic == SERVICE_MAGIC);
	s->stopping = 1;
	if (s->reports)
		sent(notify_send("STOPPING=1\nEXTEND_TIMEOUT_USEC=%" PRId64
		    "\nSTATUS=stopping", (stop_ms + SERVICE_STOP_SLACK_MS) *
		    1000), "STOPPING=1");
}

void
service_free(struct service **sp)
{
	struct service *s = *sp;

	if (s == NULL)
		return;
	assert(s->magic == SERVICE_MAGIC);
	event_free(s->tick);
	s->magic = 0;
	free(s);
	*sp = NULL;
}
