/*
 * The listeners: the public port, which every request enters through
 * proxy_req.c (req_recv(), or req_refused() for what the door refused),
 * the admin port, which never serves proxied traffic and keeps at most
 * admin_max_connections of its own (and ADMIN_OUTSIDE_MAX more, apart,
 * for peers outside admin_allow), and with workers > 1 the peer socket
 * its siblings ask. Each connection is read through the door
 * (proxy_frame.c; an admin connection through none) and written by the
 * pump.
 */

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "cache/cache_entry.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_admin.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_frame.h"
#include "proxy/proxy_http.h"
#include "proxy/proxy_linger.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_req.h"
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
#define PEER_BACKLOG		1024
#define ADMIN_LOG_MS		1000	/* admin refusals: one line this often */
#define ADMIN_FULL_BODY	"too many admin connections (admin_max_connections)\n"
/* Connections a worker keeps for peers outside admin_allow (load
 * balancers' /health probes), apart from admin_max_connections: however
 * many such peers open, the allowed ones still get in. */
#define ADMIN_OUTSIDE_MAX	8
#define ADMIN_OUTSIDE_BODY	"too many admin connections from outside " \
				"admin_allow\n"
#define ADMIN_REPLY_MAX	256

/*
 * What libevent reads in place of a request the door refused, so that its
 * answer goes out after those of the requests before it. No client can
 * send it: a field name with a space never passes proxy_frame.c.
 */
#define STAND_IN_MARK	"Corral rejected"
#define STAND_IN	"GET / HTTP/1.1\r\nHost: corral\r\n" \
			"Connection: close\r\n" STAND_IN_MARK ": 1\r\n\r\n"

/*
 * A client connection on the public or admin port, from accept to close.
 * libevent reads it through a filtering bufferevent whose input filter is
 * the door (proxy_frame.c; the admin port has none, its bytes pass). Output is moved to the socket by on_pump(), which tells
 * libevent a write is done only once the socket has taken all of it:
 * libevent 2.1's filters neither start writing data added before EV_WRITE
 * is enabled nor keep what is left when libevent closes the socket.
 */
/* Where an admin connection counts. */
enum admit {
	ADMIT_NONE,		/* a public one */
	ADMIT_REFUSED,		/* an admin one over its cap: told, closing */
	ADMIT_PENDING,		/* accepted; its peer is read once libevent
				 * has given it its socket */
	ADMIT_ALLOWED,		/* in admin_conns */
	ADMIT_OUTSIDE		/* in admin_outside: a peer outside
				 * admin_allow, which may ask /health only */
};

struct conn {
	uint32_t		 magic;
	struct proxy		*px;
	struct bufferevent	*bev;		/* the filter libevent reads */
	struct bufferevent	*sock;		/* under it: the socket */
	struct frame		*frame;		/* NULL: an admin connection */
	struct event		*pump_ev;
	int			 admin;
	enum admit		 admit;
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

/*
 * An admin connection over its cap gets a 503 written straight to its
 * socket (it has sent nothing libevent read), and is closed as if the
 * client had left: libevent frees it.
 */
static void
turn_away(struct conn *c, const char *body)
{
	evutil_socket_t sock = bufferevent_getfd(c->sock);
	char reply[ADMIN_REPLY_MAX];
	int n;

	c->admit = ADMIT_REFUSED;
	n = snprintf(reply, sizeof(reply), "HTTP/1.1 503 Service Unavailable"
	    "\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
	    "Cache-Control: no-store\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	if (sock != -1 && n > 0 && (size_t)n < sizeof(reply))
		(void)send(sock, reply, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF,
	    BEV_TRIG_DEFER_CALLBACKS);
}

/* One more admin connection turned away: counted, and said at most once
 * every ADMIN_LOG_MS. */
static void
admin_refused(struct proxy *px)
{
	int64_t now = util_now_ms();

	px->slots[px->slot].admin_refused++;
	px->admin_unlogged++;
	if (now - px->admin_logged_ms < ADMIN_LOG_MS)
		return;
	log_warn("admin: %d connections open (admin_max_connections %d), %d "
	    "from outside admin_allow (at most %d); turned away %d new one%s "
	    "since the last report", px->admin_conns,
	    px->conf->admin_max_connections, px->admin_outside,
	    ADMIN_OUTSIDE_MAX, px->admin_unlogged,
	    px->admin_unlogged == 1 ? "" : "s");
	px->admin_unlogged = 0;
	px->admin_logged_ms = now;
}

/* Is the connection's peer in admin_allow? */
static int
peer_allowed(const struct conn *c)
{
	const struct conf *conf = c->px->conf;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[INET6_ADDRSTRLEN];
	const void *a;

	if (getpeername(bufferevent_getfd(c->sock), (struct sockaddr *)&ss,
	    &len) == -1)
		return 0;
	if (ss.ss_family == AF_INET)
		a = &((const struct sockaddr_in *)&ss)->sin_addr;
	else if (ss.ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)&ss)->sin6_addr;
	else
		return 0;
	return inet_ntop(ss.ss_family, a, addr, sizeof(addr)) != NULL &&
	    conf_cidrs_match(conf->admin_allow, conf->nadmin_allow, addr);
}

/*
 * An admin connection counts against the cap of its peer's kind, or is
 * turned away over it: admin_max_connections for the peers admin_allow
 * lets in (all, when it is empty), ADMIN_OUTSIDE_MAX for the others,
 * which may only ask /health (proxy_auth.c). So peers outside admin_allow,
 * however many connections they hold, never lock the operators out.
 */
static void
admit(struct conn *c)
{
	struct proxy *px = c->px;
	const struct conf *conf = px->conf;

	assert(c->admit == ADMIT_PENDING);
	if (conf->nadmin_allow > 0 && !peer_allowed(c)) {
		if (px->admin_outside >= ADMIN_OUTSIDE_MAX) {
			turn_away(c, ADMIN_OUTSIDE_BODY);
			admin_refused(px);
			return;
		}
		px->admin_outside++;
		c->admit = ADMIT_OUTSIDE;
		return;
	}
	if (px->admin_conns >= conf->admin_max_connections) {
		turn_away(c, ADMIN_FULL_BODY);
		admin_refused(px);
		return;
	}
	px->admin_conns++;
	c->admit = ADMIT_ALLOWED;
}

/*
 * Is a reply being written? libevent reads no request meanwhile (it
 * keeps the read enabled only to notice a close).
 *
 * client_timeout counts the client's own silence: while a request is
 * read or the connection idles, the bytes it does not send; while a
 * reply is written, the bytes queued for it that it does not take.
 * libevent would also time the read it keeps on during a reply, and the
 * write while nothing is queued: Corral's own waits (an origin that
 * pauses mid-body, a stream paused for its fastest client) would close
 * the connection. So during a reply the read is off (a client that
 * leaves is noticed as its write fails), and the write is on only while
 * something is queued for the socket.
 */
static int
replying(struct conn *c)
{
	bufferevent_data_cb readcb;

	bufferevent_getcb(c->bev, &readcb, NULL, NULL, NULL);
	return readcb == NULL;
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
	if (c->admit == ADMIT_PENDING)
		admit(c);
	if (c->admit == ADMIT_REFUSED)
		return;
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
	if (replying(c))
		bufferevent_disable(c->bev, EV_READ);
	if (!(bufferevent_get_enabled(c->bev) & EV_WRITE))
		return;
	if (evbuffer_get_length(wire) == 0 && !wrote) {
		/* All sent: the client owes nothing until more is queued
		 * (libevent enables the write with it). Before the callback,
		 * which may queue. */
		bufferevent_disable(c->bev, EV_WRITE);
		bufferevent_trigger(c->bev, EV_WRITE, 0);
	} else if (evbuffer_get_length(wire) == 0)
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
	int body;
	struct evbuffer_iovec v;

	assert(c->magic == CONN_MAGIC);
	if (c->frame == NULL) {		/* the admin port: no door */
		if (c->admit == ADMIT_REFUSED)
			evbuffer_drain(src, evbuffer_get_length(src));
		else
			evbuffer_add_buffer(dst, src);
		return evbuffer_get_length(dst) > before ? BEV_OK :
		    BEV_NEED_MORE;
	}
	body = frame_in_body(c->frame);
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
	if (c->admit == ADMIT_ALLOWED)
		px->admin_conns--;
	else if (c->admit == ADMIT_OUTSIDE)
		px->admin_outside--;
	else if (!c->admin && px->conns != NULL) {	/* NULL: being freed */
		dict_del(px->conns, c->key);
		accept_limit(px);
	}
	/* Refused at the door: the client may still be sending. */
	if (c->status != 0 && c->sock != NULL)
		linger_start(px->lingers, bufferevent_getfd(c->sock));
	c->magic = 0;
	free(c);
}

/* A connection just accepted, read through its filter: the door, or for
 * an admin connection none. NULL when out of memory. */
static struct conn *
conn_new(struct proxy *px, struct event_base *base, int admin)
{
	struct conn *c;

	px->accept_delay_ms = 0;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		goto fail;
	c->magic = CONN_MAGIC;
	c->px = px;
	c->admin = admin;
	if ((!admin && (c->frame = frame_new((size_t)px->conf->max_header_bytes,
	    (uint64_t)px->conf->max_body_bytes)) == NULL) ||
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
	    on_moved, c) == NULL ||
	    (!admin && dict_set(px->conns, c->key, c) == -1)) {
		bufferevent_free(c->bev);	/* frees c */
		return NULL;
	}
	return c;
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

/* evhttp's bufferevent callback: a connection was just accepted on the
 * public port or the peer socket. */
static struct bufferevent *
on_accept(struct event_base *base, void *arg)
{
	struct proxy *px = arg;
	struct conn *c;

	assert(px->magic == PROXY_MAGIC);
	if ((c = conn_new(px, base, 0)) == NULL)
		return NULL;
	accept_limit(px);
	return c->bev;
}

/*
 * The same on the admin port, whose connections have caps of their own
 * (admin(), at once after this: libevent gives the connection its socket,
 * and so its peer, only once this returns), so that neither port can
 * starve the other: past its cap a connection is answered 503 and closed
 * at once, so that idle ones cannot take every descriptor, nor wait in
 * the backlog unanswered.
 */
static struct bufferevent *
on_admin_accept(struct event_base *base, void *arg)
{
	struct proxy *px = arg;
	struct conn *c;

	assert(px->magic == PROXY_MAGIC);
	if ((c = conn_new(px, base, 1)) == NULL)
		return NULL;
	c->admit = ADMIT_PENDING;
	event_active(c->pump_ev, EV_TIMEOUT, 0);
	return c->bev;
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
		req_refused(px, ev, c->status, c->reason);
		return;
	}
	req_recv(px, ev);
}

/*
 * One listening socket on host:port, made before any worker exists (the
 * master's, or the only process's). No SO_REUSEPORT: a second instance
 * on the address fails with EADDRINUSE, as a second nginx does, and the
 * workers share this one socket, which each inherits across fork().
 * SO_REUSEADDR lets a restart bind while old connections linger in
 * TIME_WAIT. what ("listen") names the key in the error.
 */
static int
bind_one(const char *what, const char *host, int port, char *err,
    size_t errlen)
{
	struct evutil_addrinfo hints, *ai = NULL;
	char shown[CONF_HOST_MAX + 16], service[8];
	int fd = -1, rc, one = 1;

	snprintf(shown, sizeof(shown), strchr(host, ':') != NULL ? "[%s]:%d" :
	    "%s:%d", host, port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(service, sizeof(service), "%d", port);
	if ((rc = evutil_getaddrinfo(host, service, &hints, &ai)) != 0) {
		snprintf(err, errlen, "%s %s: %s", what, shown,
		    evutil_gai_strerror(rc));
		return -1;
	}
	if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, ai->ai_addr, (socklen_t)ai->ai_addrlen) == -1 ||
	    listen(fd, LISTEN_BACKLOG) == -1) {
		snprintf(err, errlen, "%s %s: %s", what, shown, strerror(errno));
		if (fd != -1)
			close(fd);
		evutil_freeaddrinfo(ai);
		return -1;
	}
	evutil_freeaddrinfo(ai);
	/*
	 * No Nagle: a response's last partial segment must not wait for the
	 * client's delayed ACK of the one before (40 ms and more on a
	 * keep-alive connection). Accepted sockets inherit it on Linux.
	 */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		log_warn("%s %s: TCP_NODELAY: %s", what, shown, strerror(errno));
	return fd;
}

int
http_bind(const struct conf *conf, struct listen_socks *ls, char *err,
    size_t errlen)
{
	ls->pub = bind_one("listen", conf->listen_host, conf->listen_port,
	    err, errlen);
	if (ls->pub == -1)
		return -1;
	ls->admin = bind_one("admin_listen", conf->admin_host,
	    conf->admin_port, err, errlen);
	if (ls->admin == -1) {
		close(ls->pub);
		ls->pub = -1;
		return -1;
	}
	return 0;
}

void
http_unbind(struct listen_socks *ls)
{
	if (ls->pub != -1)
		close(ls->pub);
	if (ls->admin != -1)
		close(ls->admin);
	ls->pub = ls->admin = -1;
}

/* This process's listener on *fdp, a socket of http_bind()'s, which the
 * listener then owns (*fdp is -1) and closes when freed: a worker's copy,
 * or the only process's socket. */
static struct evhttp_bound_socket *
listen_fd(struct event_base *base, struct evhttp *http, int *fdp, char *err,
    size_t errlen)
{
	struct evconnlistener *lev;
	struct evhttp_bound_socket *bound = NULL;

	/* Backlog 0: the socket listens already. */
	lev = evconnlistener_new(base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_CLOSE_ON_EXEC, 0, *fdp);
	if (lev != NULL)
		*fdp = -1;
	if (lev == NULL || (bound = evhttp_bind_listener(http, lev)) == NULL) {
		if (lev != NULL)
			evconnlistener_free(lev);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return bound;
}

/*
 * http's connections are read through the door and written by the pump,
 * and count against max_connections: the public listener's, and the
 * siblings' on the peer socket, whose streams must leave as soon as they
 * are queued (a socket bufferevent would wait for the loop's next turn,
 * behind every client written meanwhile).
 */
static void
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
listen_on(struct event_base *base, const struct conf *conf, int *fdp,
    int methods, void (*cb)(struct evhttp_request *, void *),
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
	if ((*bound = listen_fd(base, http, fdp, err, errlen)) == NULL) {
		evhttp_free(http);
		return NULL;
	}
	return http;
}

/* ---- the peer socket: sibling workers ask for responses in flight --- */

/* Is the process at the other end of ev's connection a sibling worker? */
static int
from_sibling(struct proxy *px, struct evhttp_request *ev)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	evutil_socket_t fd;

	if (evcon == NULL ||
	    (fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon))) ==
	    -1 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		return 0;
	for (int s = 0; s < px->nslots; s++)
		if (s != px->slot && px->slots[s].pid > 0 &&
		    px->slots[s].pid == cred.pid)
			return 1;
	return 0;
}

static void
on_peer_request(struct evhttp_request *ev, void *arg)
{
	struct proxy *px = arg;
	const char *key = evhttp_find_header(evhttp_request_get_input_headers(ev),
	    PEER_KEY_HEADER);
	char flight_key[FLOW_KEY_MAX + 1], *p;

	assert(px->magic == PROXY_MAGIC);
	if (!from_sibling(px, ev)) {
		log_warn("peer socket: a request from a process that is not a "
		    "sibling worker; closing");
		evhttp_connection_free(evhttp_request_get_connection(ev));
		return;
	}
	if (key == NULL || strlen(key) > FLOW_KEY_MAX ||
	    strchr(key, '\n') != NULL) {
		evhttp_send_error(ev, HTTP_BADREQUEST, NULL);
		return;
	}
	snprintf(flight_key, sizeof(flight_key), "%s", key);
	while ((p = strchr(flight_key, ' ')) != NULL)
		*p = '\n';
	req_peer_recv(px, ev, flight_key);
}

/* Workers > 1: the private socket siblings ask for responses in flight
 * (proxy_peer.c). Not fatal if it cannot be had: their waiters wait for
 * the fill as before. */
static int
peer_listen(struct proxy *px, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct evconnlistener *lev;
	char name[PEER_NAME_MAX];
	size_t n;

	if (px->nslots < 2)
		return 0;
	peer_forget(&px->slots[px->slot].peer);
	px->master_pid = getppid();
	peer_socket_name(px, px->slot, getpid(), name);
	n = strlen(name);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, n);	/* abstract: sun_path[0] is 0 */
	if ((px->peers = upstream_new(px->base)) == NULL ||
	    (px->peer = evhttp_new(px->base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	evhttp_set_allowed_methods(px->peer, EVHTTP_REQ_GET);
	http_limits(px->peer, px->conf);
	evhttp_set_max_body_size(px->peer, 0);	/* a peer GET has none */
	evhttp_set_default_content_type(px->peer, NULL);
	evhttp_set_gencb(px->peer, on_peer_request, px);
	http_connections(px->peer, px);
	lev = evconnlistener_new_bind(px->base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, PEER_BACKLOG,
	    (struct sockaddr *)&sa,
	    (int)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	if (lev == NULL || evhttp_bind_listener(px->peer, lev) == NULL) {
		/* Not fatal: its siblings' waiters wait as before. */
		log_warn("peer socket @%s: %s; responses in flight are not "
		    "shared with the other workers", name, strerror(errno));
		if (lev != NULL)
			evconnlistener_free(lev);
		evhttp_free(px->peer);
		px->peer = NULL;
	}
	return 0;
}

static void
peer_close(struct proxy *px)
{
	if (px->peer != NULL)
		evhttp_free(px->peer);
	px->peer = NULL;
	upstream_free(&px->peers);
	if (px->slots != NULL && px->nslots > 1)
		peer_forget(&px->slots[px->slot].peer);
}

int
http_listen(struct proxy *px, char *err, size_t errlen)
{
	const struct conf *conf = px->conf;
	struct event_base *base = px->base;

	px->http = listen_on(base, conf, &px->socks.pub, PUBLIC_METHODS,
	    on_request, px, &px->http_bound, err, errlen);
	if (px->http == NULL)
		return -1;
	px->admin = listen_on(base, conf, &px->socks.admin, ADMIN_METHODS,
	    admin_handle, px, &px->admin_bound, err, errlen);
	if (px->admin == NULL)
		return -1;
	if ((px->accept_ev = evtimer_new(base, on_accept_retry, px)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	accept_proxy = px;
	px->accept_listening = 1;
	http_connections(px->http, px);
	evhttp_set_bevcb(px->admin, on_admin_accept, px);
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(
	    px->http_bound), on_accept_error);
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(
	    px->admin_bound), on_accept_error);
	return peer_listen(px, err, errlen);
}

void
http_close(struct proxy *px)
{
	peer_close(px);
	if (px->http != NULL)
		evhttp_free(px->http);
	if (px->admin != NULL)
		evhttp_free(px->admin);
	px->http = px->admin = NULL;
	http_unbind(&px->socks);	/* those no listener took */
	if (px->accept_ev != NULL)
		event_free(px->accept_ev);
	px->accept_ev = NULL;
	accept_proxy = NULL;
}
