/*
 * The listeners: the public port, which every request enters through
 * flow_recv(), and the admin port, which never serves proxied traffic.
 */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <event2/http.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "cache/cache.h"
#include "cache/cache_l1.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_log.h"
#include "upstream/upstream.h"

/* A response within max_upstream_headers always fits in a cache entry. */
_Static_assert(CONF_UPSTREAM_HEADERS_MAX <= ENTRY_MAX_HEADERS,
    "max_upstream_headers allows more lines than an entry holds");

#define PUBLIC_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | \
			 EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | \
			 EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH)
#define ADMIN_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST)
#define CONN_KEY_MAX	32	/* a connection's address, as "%p" */
#define LISTEN_BACKLOG	1024

static void
conn_key(const struct evhttp_connection *evcon, char out[CONN_KEY_MAX])
{
	snprintf(out, CONN_KEY_MAX, "%p", (const void *)evcon);
}

/*
 * max_connections: at the limit the public listener stops accepting (new
 * clients wait in the kernel's backlog) until a connection closes.
 */
static void
accept_pause(struct proxy *px, int pause)
{
	struct evconnlistener *lev;

	if (px->http_bound == NULL || pause == px->accept_paused)
		return;
	lev = evhttp_bound_socket_get_listener(px->http_bound);
	if (pause)
		evconnlistener_disable(lev);
	else
		evconnlistener_enable(lev);
	px->accept_paused = pause;
	log_info("%d connections: %s accepting", (int)dict_count(px->conns),
	    pause ? "stopped" : "resumed");
}

static void
on_conn_close(struct evhttp_connection *evcon, void *arg)
{
	struct proxy *px = arg;
	char key[CONN_KEY_MAX];

	assert(px->magic == PROXY_MAGIC);
	conn_key(evcon, key);
	dict_del(px->conns, key);
	if (px->accept_paused &&
	    dict_count(px->conns) < (size_t)px->conf->max_connections)
		accept_pause(px, 0);
}

/*
 * Counts a client connection in px->conns from its first request until
 * libevent closes it. evhttp in libevent 2.1 reports no new connection,
 * but it calls a connection's close callback whenever it frees one.
 */
static void
conn_track(struct proxy *px, struct evhttp_request *ev)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	char key[CONN_KEY_MAX];

	if (evcon == NULL)
		return;
	conn_key(evcon, key);
	if (dict_get(px->conns, key) != NULL)
		return;
	if (dict_set(px->conns, key, evcon) == 0)
		evhttp_connection_set_closecb(evcon, on_conn_close, px);
	if (dict_count(px->conns) >= (size_t)px->conf->max_connections)
		accept_pause(px, 1);
}

static void
on_request(struct evhttp_request *ev, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	conn_track(px, ev);
	flow_recv(px, ev);
}

/*
 * Binds host:port with SO_REUSEPORT, so that every worker has its own
 * listening socket on the same port and the kernel spreads connections.
 */
static struct evhttp_bound_socket *
bind_shared(struct event_base *base, struct evhttp *http, const char *host,
    int port, char *err, size_t errlen)
{
	struct evutil_addrinfo hints, *ai = NULL;
	struct evconnlistener *lev;
	struct evhttp_bound_socket *bound;
	char service[8];
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(service, sizeof(service), "%d", port);
	if ((rc = evutil_getaddrinfo(host, service, &hints, &ai)) != 0) {
		snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
		    evutil_gai_strerror(rc));
		return NULL;
	}
	lev = evconnlistener_new_bind(base, NULL, NULL, LEV_OPT_REUSEABLE |
	    LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_CLOSE_ON_EXEC, LISTEN_BACKLOG, ai->ai_addr,
	    (int)ai->ai_addrlen);
	evutil_freeaddrinfo(ai);
	if (lev == NULL) {
		snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
		    strerror(errno));
		return NULL;
	}
	if ((bound = evhttp_bind_listener(http, lev)) == NULL) {
		evconnlistener_free(lev);
		snprintf(err, errlen, "cannot listen on %s:%d", host, port);
	}
	return bound;
}

/* Copies this worker's gauges to its slot for the other workers to see. */
static void
publish(struct proxy *px)
{
	struct worker_slot *ws = &px->slots[px->slot];

	ws->cache = *cache_counters(px->cache);
	ws->upstream = *upstream_counters(px->upstream);
	ws->redis_up = cache_is_up(px->cache);
	snprintf(ws->redis_down, sizeof(ws->redis_down), "%s",
	    cache_down_reason(px->cache));
	ws->connections = (int64_t)dict_count(px->conns);
	ws->requests = px->nrequests;
	ws->flights = (int64_t)dict_count(px->flights);
	ws->refreshes = px->nrefreshes;
	ws->upstream_fetches = upstream_active(px->upstream);
	ws->l1_bytes = l1_counters(px->l1)->bytes;
	ws->l1_entries = l1_counters(px->l1)->entries;
}

static void
on_publish(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	publish(px);
}

void
proxy_figures(struct proxy *px, struct proxy_figures *f)
{
	static struct stats sum;

	memset(f, 0, sizeof(*f));
	f->workers = px->nslots;
	if (px->nslots > 1)
		memset(&sum, 0, sizeof(sum));
	publish(px);	/* its own, live */
	for (int i = 0; i < px->nslots; i++) {
		const struct worker_slot *ws = &px->slots[i];

		if (px->nslots > 1)
			stats_add(&sum, &ws->stats);
		cache_counters_add(&f->cache, &ws->cache);
		upstream_counters_add(&f->upstream, &ws->upstream);
		f->redis_up += ws->redis_up;
		/* Another worker may be rewriting it: bounded, never past it. */
		if (!ws->redis_up && f->redis_down[0] == '\0')
			snprintf(f->redis_down, sizeof(f->redis_down), "%.*s",
			    (int)sizeof(ws->redis_down) - 1, ws->redis_down);
		f->connections += ws->connections;
		f->requests += ws->requests;
		f->flights += ws->flights;
		f->refreshes += ws->refreshes;
		f->upstream_fetches += ws->upstream_fetches;
		f->l1_bytes += ws->l1_bytes;
		f->l1_entries += ws->l1_entries;
	}
	f->stats = px->nslots > 1 ? &sum : px->stats;
}

void
http_limits(struct evhttp *http, const struct conf *conf)
{
	struct timeval tv = util_timeval(conf->client_timeout_ms);

	/* Ours to enforce, with a 431: see request_problem(). */
	evhttp_set_max_headers_size(http, conf->max_header_bytes * HEADER_SLACK);
	evhttp_set_max_body_size(http, conf->max_body_bytes);
	evhttp_set_timeout_tv(http, &tv);
}

static struct evhttp *
listen_on(struct event_base *base, const struct conf *conf, const char *host,
    int port, int methods, void (*cb)(struct evhttp_request *, void *),
    void *arg, struct evhttp_bound_socket **bound, char *err, size_t errlen)
{
	struct evhttp *http;

	if ((http = evhttp_new(base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	evhttp_set_allowed_methods(http, (ev_uint16_t)methods);
	http_limits(http, conf);
	evhttp_set_default_content_type(http, NULL);
	evhttp_set_gencb(http, cb, arg);
	if ((*bound = bind_shared(base, http, host, port, err, errlen)) == NULL) {
		evhttp_free(http);
		return NULL;
	}
	return http;
}

int
proxy_start(struct proxy *px, struct event_base *base, const struct conf *conf,
    struct worker_slot *slots, int nslots, int slot, char *err, size_t errlen)
{
	struct timeval tv = { 0, PUBLISH_MS * 1000 };

	memset(px, 0, sizeof(*px));
	px->magic = PROXY_MAGIC;
	px->base = base;
	px->conf = conf;
	px->slots = slots;
	px->nslots = nslots;
	px->slot = slot;
	px->stats = &slots[slot].stats;
	px->started_ms = util_now_ms();
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
	px->http = listen_on(base, conf, conf->listen_host, conf->listen_port,
	    PUBLIC_METHODS, on_request, px, &px->http_bound, err, errlen);
	if (px->http == NULL)
		goto fail;
	px->admin = listen_on(base, conf, conf->admin_host, conf->admin_port,
	    ADMIN_METHODS, admin_handle, px, &px->admin_bound, err, errlen);
	if (px->admin == NULL)
		goto fail;
	if ((px->cache = cache_new(base, conf, flow_on_fill, px)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	cache_on_purge(px->cache, flow_on_purge);
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
	flow_shutdown(px);
	if (px->http != NULL)
		evhttp_free(px->http);
	if (px->admin != NULL)
		evhttp_free(px->admin);
	px->http = px->admin = NULL;
	upstream_free(&px->upstream);
	cache_free(&px->cache);
	dict_free(&px->flights);
	dict_free(&px->refreshes);
	flow_free_vary(px);
	dict_free(&px->conns);		/* after evhttp_free: it closes them */
	l1_free(&px->l1);
	if (px->drain_ev != NULL)
		event_free(px->drain_ev);
	px->drain_ev = NULL;
	access_log_close(&px->access_log);
}
