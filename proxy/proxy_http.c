/*
 * The listeners: the public port, which every request enters through
 * flow_recv(), and the admin port, which never serves proxied traffic.
 */

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <event2/http.h>

#include "cache/cache.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_log.h"
#include "upstream/upstream.h"

#define PUBLIC_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | \
			 EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | \
			 EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH)
#define ADMIN_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST)
#define CONN_KEY_MAX	32	/* a connection's address, as "%p" */

static void
conn_key(const struct evhttp_connection *evcon, char out[CONN_KEY_MAX])
{
	snprintf(out, CONN_KEY_MAX, "%p", (const void *)evcon);
}

static void
on_conn_close(struct evhttp_connection *evcon, void *arg)
{
	struct proxy *px = arg;
	char key[CONN_KEY_MAX];

	assert(px->magic == PROXY_MAGIC);
	conn_key(evcon, key);
	dict_del(px->conns, key);
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
}

static void
on_request(struct evhttp_request *ev, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	conn_track(px, ev);
	flow_recv(px, ev);
}

static struct evhttp *
listen_on(struct event_base *base, const struct conf *conf, const char *host,
    int port, int methods, void (*cb)(struct evhttp_request *, void *),
    void *arg, struct evhttp_bound_socket **bound, char *err, size_t errlen)
{
	struct evhttp *http;
	struct timeval tv = {
		.tv_sec = conf->client_timeout_ms / 1000,
		.tv_usec = (conf->client_timeout_ms % 1000) * 1000,
	};

	if ((http = evhttp_new(base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	evhttp_set_allowed_methods(http, (ev_uint16_t)methods);
	/* Ours to enforce, with a 431: see request_problem(). */
	evhttp_set_max_headers_size(http, conf->max_header_bytes * HEADER_SLACK);
	evhttp_set_max_body_size(http, conf->max_body_bytes);
	evhttp_set_timeout_tv(http, &tv);
	evhttp_set_default_content_type(http, NULL);
	evhttp_set_gencb(http, cb, arg);
	if ((*bound = evhttp_bind_socket_with_handle(http, host,
	    (ev_uint16_t)port)) == NULL) {
		snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port,
		    strerror(errno));
		evhttp_free(http);
		return NULL;
	}
	return http;
}

int
proxy_start(struct proxy *px, struct event_base *base, const struct conf *conf,
    char *err, size_t errlen)
{
	memset(px, 0, sizeof(*px));
	px->magic = PROXY_MAGIC;
	px->base = base;
	px->conf = conf;
	px->started_ms = util_now_ms();
	if ((px->flights = dict_new()) == NULL ||
	    (px->refreshes = dict_new()) == NULL ||
	    (px->vary = dict_new()) == NULL ||
	    (px->conns = dict_new()) == NULL ||
	    (px->upstream = upstream_new(base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
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
	if (px->drain_ev != NULL)
		event_free(px->drain_ev);
	px->drain_ev = NULL;
	access_log_close(&px->access_log);
}
