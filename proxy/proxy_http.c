/*
 * The listeners: the public port, which every request enters through
 * flow_recv(), and the admin port, which never serves proxied traffic.
 */

#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "cache/cache.h"
#include "cache/cache_l1.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_frame.h"
#include "proxy/proxy_log.h"
#include "upstream/upstream.h"

/* A response within max_upstream_headers always fits in a cache entry. */
_Static_assert(CONF_UPSTREAM_HEADERS_MAX <= ENTRY_MAX_HEADERS,
    "max_upstream_headers allows more lines than an entry holds");

#define SINGLE_WRITE_MAX	(4 * 1024 * 1024)	/* bytes one write(2) may take */
#define PUBLIC_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | \
			 EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | \
			 EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH)
#define ADMIN_METHODS	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST)
#define CONN_MAGIC	0x434f4e4eu	/* "CONN" */
#define CONN_KEY_MAX	32	/* a connection's address, as "%p" */
#define LISTEN_BACKLOG	1024
#define ACCEPT_DELAY_MIN_MS	10	/* first pause after accept() fails */
#define ACCEPT_DELAY_MAX_MS	1000
#define ACCEPT_LOG_MS		1000	/* at most one line this often */
#define REJECT_BODY_MAX		160

/*
 * What libevent reads in place of a request the door refused, so that its
 * answer goes out after those of the requests before it. No client can
 * send it: a field name with a space never passes proxy_frame.c.
 */
#define STAND_IN_MARK	"Corral rejected"
#define STAND_IN	"GET / HTTP/1.1\r\nHost: corral\r\n" \
			"Connection: close\r\n" STAND_IN_MARK ": 1\r\n\r\n"

/*
 * A client connection on the public port, from accept to close. libevent
 * reads it through a filtering bufferevent whose input filter is the door
 * (proxy_frame.c). Output is moved to the socket by on_pump(), which tells
 * libevent a write is done only once the socket has taken all of it:
 * libevent 2.1's filters neither start writing data added before EV_WRITE
 * is enabled nor keep what is left when libevent closes the socket.
 */
struct conn {
	uint32_t		 magic;
	struct proxy		*px;
	struct bufferevent	*bev;		/* the filter libevent reads */
	struct bufferevent	*sock;		/* under it: the socket */
	struct frame		*frame;
	struct event		*pump_ev;
	int			 status;	/* refused with this, or 0 */
	const char		*reason;
	char			 key[CONN_KEY_MAX];
};

/*
 * A listener's error callback is given the listener's evhttp, not the
 * proxy; there is one proxy per process.
 */
static struct proxy *accept_proxy;

/* bound is NULL once the listener is gone (a stop). */
static void
listener_set(struct evhttp_bound_socket *bound, int on)
{
	struct evconnlistener *lev;

	if (bound == NULL)
		return;
	lev = evhttp_bound_socket_get_listener(bound);
	if (on)
		evconnlistener_enable(lev);
	else
		evconnlistener_disable(lev);
}

/*
 * Accepting stops at max_connections (new clients wait in the kernel's
 * backlog until a connection closes) and for a while after accept() fails.
 */
static void
accept_update(struct proxy *px)
{
	int on = !px->accept_paused && !px->accept_failing;

	if (on == px->accept_listening)
		return;
	listener_set(px->http_bound, on);
	px->accept_listening = on;
}

static void
accept_limit(struct proxy *px)
{
	int full = dict_count(px->conns) >= (size_t)px->conf->max_connections;

	if (full == px->accept_paused)
		return;
	px->accept_paused = full;
	log_info("%d connections: %s accepting", (int)dict_count(px->conns),
	    full ? "stopped" : "resumed");
	accept_update(px);
}

static void
on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	px->accept_failing = 0;
	accept_update(px);
	listener_set(px->admin_bound, 1);
}

/*
 * accept() failed (EMFILE, ENFILE, ENOBUFS, ENOMEM): the socket stays
 * readable, so retrying at once spins. Pause 10 ms, doubling to 1 s until
 * a connection is accepted again, and say so at most once a second.
 */
static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct proxy *px = accept_proxy;
	int err = EVUTIL_SOCKET_ERROR();
	int64_t now = util_now_ms();
	struct timeval tv;

	assert(px != NULL && px->magic == PROXY_MAGIC);
	px->accept_failures++;
	px->accept_delay_ms = px->accept_delay_ms == 0 ? ACCEPT_DELAY_MIN_MS :
	    px->accept_delay_ms * 2;
	if (px->accept_delay_ms > ACCEPT_DELAY_MAX_MS)
		px->accept_delay_ms = ACCEPT_DELAY_MAX_MS;
	if (now - px->accept_logged_ms >= ACCEPT_LOG_MS) {
		log_warn("accept: %s (%d failure%s since the last report); "
		    "pausing %d ms", evutil_socket_error_to_string(err),
		    px->accept_failures, px->accept_failures == 1 ? "" : "s",
		    px->accept_delay_ms);
		px->accept_failures = 0;
		px->accept_logged_ms = now;
	}
	/* Descriptors are the process's: both listeners pause. */
	px->accept_failing = 1;
	accept_update(px);
	listener_set(px->admin_bound, 0);
	tv = util_timeval(px->accept_delay_ms);
	evtimer_add(px->accept_ev, &tv);
}

/* Moves what libevent wrote to the socket; once the socket has sent all
 * of it, libevent's write is done. */
static void
on_pump(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *out, *wire;
	evutil_socket_t sock;
	int wrote = 0;

	assert(c->magic == CONN_MAGIC);
	if (bufferevent_getfd(c->bev) == -1 ||
	    (sock = bufferevent_getfd(c->sock)) == -1)
		return;		/* libevent is closing it */
	out = bufferevent_get_output(c->bev);
	wire = bufferevent_get_output(c->sock);
	if (evbuffer_get_length(out) > 0) {
		wrote = 1;
		/*
		 * Nothing queued before it: write at once, as most replies fit
		 * the socket's buffer. Only what the kernel does not take waits
		 * for EV_WRITE; an error is left for the socket's own write to
		 * find and report.
		 */
		while (evbuffer_get_length(wire) == 0 &&
		    evbuffer_get_length(out) > 0 &&
		    evbuffer_write(out, sock) > 0)
			;	/* one writev takes 128 pieces at most */
		evbuffer_add_buffer(wire, out);
	}
	if (!(bufferevent_get_enabled(c->bev) & EV_WRITE))
		return;
	if (evbuffer_get_length(wire) == 0 && !wrote)
		bufferevent_trigger(c->bev, EV_WRITE, 0);
	else if (evbuffer_get_length(wire) == 0)
		event_active(c->pump_ev, EV_TIMEOUT, 0);
	else	/* still sending: restart the write timeout */
		bufferevent_enable(c->bev, EV_WRITE);
}

/* On both buffers: bytes libevent wrote, and bytes the socket sent. */
static void
on_moved(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct conn *c = arg;

	if (info->n_added > 0 || info->n_deleted > 0)
		event_active(c->pump_ev, EV_TIMEOUT, 0);
}

/* Output is moved by on_pump() alone. */
static enum bufferevent_filter_result
filter_out(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
    enum bufferevent_flush_mode mode, void *arg)
{
	return BEV_NEED_MORE;
}

static void
emit_to(void *arg, const char *p, size_t n)
{
	evbuffer_add(arg, p, n);
}

/*
 * The door: the client's bytes go through proxy_frame.c to libevent.
 * BEV_OK restarts the client timeout: a head must come whole within it,
 * a body only keep moving.
 */
static enum bufferevent_filter_result
filter_in(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
    enum bufferevent_flush_mode mode, void *arg)
{
	struct conn *c = arg;
	size_t before = evbuffer_get_length(dst);
	int fed = evbuffer_get_length(src) > 0;
	int body = frame_in_body(c->frame);
	struct evbuffer_iovec v;

	assert(c->magic == CONN_MAGIC);
	while (c->status == 0 && evbuffer_peek(src, -1, NULL, &v, 1) > 0) {
		if (frame_feed(c->frame, v.iov_base, v.iov_len, emit_to,
		    dst) == FRAME_REJECT) {
			c->status = frame_status(c->frame);
			c->reason = frame_reason(c->frame);
			evbuffer_add(dst, STAND_IN, sizeof(STAND_IN) - 1);
		}
		evbuffer_drain(src, v.iov_len);
	}
	evbuffer_drain(src, evbuffer_get_length(src));	/* after a refusal */
	body |= frame_in_body(c->frame);
	return evbuffer_get_length(dst) > before || (fed && body) ? BEV_OK :
	    BEV_NEED_MORE;
}

/* The filter is being freed: the connection is closed. */
static void
conn_free(void *arg)
{
	struct conn *c = arg;
	struct proxy *px = c->px;

	assert(c->magic == CONN_MAGIC);
	evbuffer_remove_cb(bufferevent_get_output(c->bev), on_moved, c);
	evbuffer_remove_cb(bufferevent_get_output(c->sock), on_moved, c);
	event_free(c->pump_ev);
	frame_free(&c->frame);
	if (px->conns != NULL) {	/* NULL: freed when the loop is */
		dict_del(px->conns, c->key);
		accept_limit(px);
	}
	c->magic = 0;
	free(c);
}

/* evhttp's bufferevent callback: a connection was just accepted. */
static struct bufferevent *
on_accept(struct event_base *base, void *arg)
{
	struct proxy *px = arg;
	struct conn *c;

	assert(px->magic == PROXY_MAGIC);
	px->accept_delay_ms = 0;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		goto fail;
	c->magic = CONN_MAGIC;
	c->px = px;
	if ((c->frame = frame_new((size_t)px->conf->max_header_bytes,
	    (uint64_t)px->conf->max_body_bytes)) == NULL ||
	    (c->pump_ev = event_new(base, -1, 0, on_pump, c)) == NULL ||
	    (c->sock = bufferevent_socket_new(base, -1,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		goto fail;
	/* libevent writes 16 KiB a loop iteration by default: a 100 KiB hit
	 * would take seven. Let the kernel take what it can at once. */
	bufferevent_set_max_single_write(c->sock, SINGLE_WRITE_MAX);
	c->bev = bufferevent_filter_new(c->sock, filter_in, filter_out,
	    BEV_OPT_CLOSE_ON_FREE, conn_free, c);
	if (c->bev == NULL)
		goto fail;
	snprintf(c->key, sizeof(c->key), "%p", (void *)c->bev);
	if (evbuffer_add_cb(bufferevent_get_output(c->bev), on_moved,
	    c) == NULL || evbuffer_add_cb(bufferevent_get_output(c->sock),
	    on_moved, c) == NULL || dict_set(px->conns, c->key, c) == -1) {
		bufferevent_free(c->bev);	/* frees c */
		return NULL;
	}
	accept_limit(px);
	return c->bev;
fail:
	/* libevent then makes a bufferevent of its own, which cannot be
	 * filtered: out of memory, it is unlikely to get far. */
	log_error("out of memory for a new connection");
	if (c != NULL) {
		if (c->sock != NULL)
			bufferevent_free(c->sock);
		if (c->pump_ev != NULL)
			event_free(c->pump_ev);
		frame_free(&c->frame);
		free(c);
	}
	return NULL;
}

static const char *
reject_phrase(int status)
{
	switch (status) {
	case 413:	return "Content Too Large";
	case 414:	return "URI Too Long";
	case 431:	return "Request Header Fields Too Large";
	case 501:	return "Not Implemented";
	case 503:	return "Service Unavailable";
	case 505:	return "HTTP Version Not Supported";
	default:	return "Bad Request";
	}
}

/* Answers the stand-in of a refused request, and closes. */
static void
reject(struct proxy *px, struct conn *c, struct evhttp_request *ev)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(ev);
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	struct evbuffer *body;
	char *addr = NULL;
	ev_uint16_t port = 0;
	/* Its method and target were never parsed: "-". */
	struct access_record r = {
		.method = "-", .proto_major = 1, .proto_minor = 1,
		.status = c->status, .cache = "error",
		.upstream_ms = -1, .lock_wait_ms = -1, .total_ms = 0,
	};

	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &addr, &port);
	r.client = addr != NULL ? addr : "-";
	log_info("rejected a request from %s: %d %s", r.client, c->status,
	    c->reason);
	STAT_INC(px->stats, -1, requests);
	STAT_INC(px->stats, -1, rejected);
	evhttp_add_header(out, "Content-Type", "text/plain");
	evhttp_add_header(out, "Cache-Status", "corral; detail=rejected");
	evhttp_add_header(out, "Connection", "close");
	if ((body = evbuffer_new()) != NULL)
		evbuffer_add_printf(body, "%d %s: %.*s\n", c->status,
		    reject_phrase(c->status), REJECT_BODY_MAX, c->reason);
	r.bytes = body != NULL ? evbuffer_get_length(body) : 0;
	evhttp_send_reply(ev, c->status, reject_phrase(c->status), body);
	if (body != NULL)
		evbuffer_free(body);
	access_log_write(px, &r);
}

static void
on_request(struct evhttp_request *ev, void *arg)
{
	struct proxy *px = arg;
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	struct conn *c = NULL;
	char key[CONN_KEY_MAX];

	assert(px->magic == PROXY_MAGIC);
	if (evcon != NULL) {
		snprintf(key, sizeof(key), "%p",
		    (void *)evhttp_connection_get_bufferevent(evcon));
		c = dict_get(px->conns, key);
	}
	if (c != NULL && c->status != 0 && evhttp_find_header(
	    evhttp_request_get_input_headers(ev), STAND_IN_MARK) != NULL) {
		reject(px, c, ev);
		return;
	}
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
	int rc, one = 1;

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
	/*
	 * No Nagle: a response's last partial segment must not wait for the
	 * client's delayed ACK of the one before (40 ms and more on a
	 * keep-alive connection). Accepted sockets inherit it on Linux.
	 */
	if (setsockopt(evconnlistener_get_fd(lev), IPPROTO_TCP, TCP_NODELAY,
	    &one, sizeof(one)) == -1)
		log_warn("listen on %s:%d: TCP_NODELAY: %s", host, port,
		    strerror(errno));
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
	ws->requests = px->nrequests - px->npeers;	/* clients' */
	ws->flights = (int64_t)dict_count(px->flights);
	ws->refreshes = px->nrefreshes;
	ws->upstream_fetches = upstream_active(px->upstream);
	ws->l1_bytes = l1_counters(px->l1)->bytes;
	ws->l1_entries = l1_counters(px->l1)->entries;
	ws->l1_rejected = l1_counters(px->l1)->rejected;
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
		f->l1_rejected += ws->l1_rejected;
	}
	l2_counters(px->l2, &f->l2);
	f->stats = px->nslots > 1 ? &sum : px->stats;
}

/*
 * http's connections are read through the door and written by the pump,
 * and count against max_connections: the public listener's, and the
 * siblings' on the peer socket, whose streams must leave as soon as they
 * are queued (a socket bufferevent would wait for the loop's next turn,
 * behind every client written meanwhile).
 */
void
http_connections(struct evhttp *http, struct proxy *px)
{
	evhttp_set_bevcb(http, on_accept, px);
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
	if ((px->accept_ev = evtimer_new(base, on_accept_retry, px)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	accept_proxy = px;
	px->accept_listening = 1;
	http_connections(px->http, px);
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(
	    px->http_bound), on_accept_error);
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(
	    px->admin_bound), on_accept_error);
	if ((px->cache = cache_new(base, conf, flow_on_fill, px)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	cache_on_purge(px->cache, flow_on_purge);
	if (peer_listen(px, err, errlen) == -1)
		goto fail;
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
	peer_close(px);
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
	if (px->accept_ev != NULL)
		event_free(px->accept_ev);
	px->accept_ev = NULL;
	accept_proxy = NULL;
	access_log_close(&px->access_log);
}
