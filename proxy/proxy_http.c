/* SPDX-License-Identifier: MIT */
/*
 * The listeners: the public port, whose requests enter through
 * proxy_req.c (req_recv(), or req_refused() for what the door refused),
 * the admin port, which never serves proxied traffic and keeps at most
 * admin_max_connections of its own (and ADMIN_OUTSIDE_MAX more, apart,
 * for peers outside admin_allow), and with workers > 1 the peer socket
 * its siblings ask. Each accepted connection is Corral's own
 * (proxy_conn.c), read through the door.
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
#include <event2/listener.h>
#include <event2/util.h>

#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_admin.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_http.h"
#include "proxy/proxy_linger.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_req.h"
#include "proxy/proxy_tls.h"
#include "upstream/upstream.h"

/* A response within max_upstream_headers always fits in a cache entry. */
_Static_assert(CONF_UPSTREAM_HEADERS_MAX <= ENTRY_MAX_HEADERS,
    "max_upstream_headers allows more lines than an entry holds");

#define ADMIN_METHODS	(HM_GET | HM_HEAD | HM_POST)
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
 * A listener's error callback is given the listener, not the proxy; there
 * is one proxy per process.
 */
static struct proxy *accept_proxy;

static void
listener_set(struct listener *l, int on)
{
	if (l->lev == NULL)
		return;
	if (on)
		evconnlistener_enable(l->lev);
	else
		evconnlistener_disable(l->lev);
}

static void
public_set(struct proxy *px, int on)
{
	for (int i = 0; i < px->npub; i++)
		listener_set(&px->pub[i], on);
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
	public_set(px, on);
	px->accept_listening = on;
}

static void
accept_limit(struct proxy *px)
{
	int full = px->nclients >= px->conf->max_connections;

	if (full == px->accept_paused)
		return;
	px->accept_paused = full;
	log_info("%d connections: %s accepting", px->nclients,
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
	listener_set(&px->admin, 1);
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
	listener_set(&px->admin, 0);
	tv = util_timeval(px->accept_delay_ms);
	evtimer_add(px->accept_ev, &tv);
}

/* ---- the public port ------------------------------------------------ */

static void
public_refused(struct proxy *px, struct hreq *r, int status,
    const char *reason)
{
	req_refused(px, r, status, reason);
}

static void
client_closed(struct proxy *px, struct conn *c)
{
	px->nclients--;
	if (!px->draining)
		accept_limit(px);
}

static const struct conn_kind public_kind = {
	.name = "public",
	.serve = req_recv,
	.refused = public_refused,
	.closed = client_closed,
};

static void
on_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	struct listener *l = arg;
	struct proxy *px = l->px;

	assert(px->magic == PROXY_MAGIC);
	px->accept_delay_ms = 0;
	px->nclients++;
	if (conn_new(px, &public_kind, fd, l->tls ? px->tls : NULL) == NULL)
		return;		/* closed: its count went with it */
	accept_limit(px);
}

/* ---- the admin port ------------------------------------------------- */

/* A refusal of a port that is no proxy's: its status and why, as text. */
static void
plain_refusal(struct hreq *r, int status, const char *reason)
{
	struct evbuffer *body = evbuffer_new();

	(void)hl_add(&r->out, "Content-Type", "text/plain");
	(void)hl_add(&r->out, "Connection", "close");
	if (body != NULL)
		evbuffer_add_printf(body, "%d %s: %s\n", status,
		    hreq_phrase(status), reason);
	hreq_reply(r, status, NULL, body);
	if (body != NULL)
		evbuffer_free(body);
}

static void
admin_refused_req(struct proxy *px, struct hreq *r, int status,
    const char *reason)
{
	plain_refusal(r, status, reason);
}

static void
admin_serve(struct proxy *px, struct hreq *r)
{
	if (!(r->method & ADMIN_METHODS)) {
		(void)hl_add(&r->out, "Allow", "GET, HEAD, POST");
		plain_refusal(r, 405, "the admin listener takes GET, HEAD "
		    "and POST");
		return;
	}
	admin_handle(px, r);
}

static void
admin_allowed_closed(struct proxy *px, struct conn *c)
{
	px->admin_conns--;
}

static void
admin_outside_closed(struct proxy *px, struct conn *c)
{
	px->admin_outside--;
}

static const struct conn_kind admin_allowed_kind = {
	.name = "admin",
	.own_host_rules = 1,	/* proxy_auth.c: 403 */
	.serve = admin_serve,
	.refused = admin_refused_req,
	.closed = admin_allowed_closed,
};

/* A peer outside admin_allow, which may ask /health only (proxy_auth.c). */
static const struct conn_kind admin_outside_kind = {
	.name = "admin",
	.own_host_rules = 1,
	.serve = admin_serve,
	.refused = admin_refused_req,
	.closed = admin_outside_closed,
};

/*
 * An admin connection over its cap gets a 503 written straight to its
 * socket and is closed, on the loop's next turn: what its client sent
 * by then is read and dropped first, so that the close does not reset
 * the answer. Neither port can starve the other, and idle connections
 * cannot take every descriptor, nor wait in the backlog unanswered.
 */
/* arg: the socket, shifted, and which cap it is over in the low bit. */
static void
on_turn_away(evutil_socket_t unused, short what, void *arg)
{
	uintptr_t v = (uintptr_t)arg;
	evutil_socket_t fd = (evutil_socket_t)(v >> 1);
	const char *body = (v & 1) ? ADMIN_OUTSIDE_BODY : ADMIN_FULL_BODY;
	char reply[ADMIN_REPLY_MAX];
	int n;

	while (recv(fd, reply, sizeof(reply), MSG_DONTWAIT) > 0)
		;
	n = snprintf(reply, sizeof(reply), "HTTP/1.1 503 Service Unavailable"
	    "\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
	    "Cache-Control: no-store\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	if (n > 0 && (size_t)n < sizeof(reply))
		(void)send(fd, reply, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	evutil_closesocket(fd);
}

static void
turn_away(struct proxy *px, evutil_socket_t fd, int outside)
{
	struct timeval now = { 0, 0 };
	void *arg = (void *)(((uintptr_t)fd << 1) | (outside != 0));

	if (event_base_once(px->base, -1, EV_TIMEOUT, on_turn_away, arg,
	    &now) == -1)
		on_turn_away(-1, EV_TIMEOUT, arg);
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

/* Is the peer at sa in admin_allow? */
static int
peer_allowed(const struct proxy *px, const struct sockaddr *sa)
{
	const struct conf *conf = px->conf;
	char addr[INET6_ADDRSTRLEN];
	const void *a;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	else
		return 0;
	return inet_ntop(sa->sa_family, a, addr, sizeof(addr)) != NULL &&
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
on_admin_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	struct listener *l = arg;
	struct proxy *px = l->px;
	const struct conf *conf = px->conf;
	struct tls *t = l->tls ? px->tls : NULL;

	assert(px->magic == PROXY_MAGIC);
	px->accept_delay_ms = 0;
	if (conf->nadmin_allow > 0 && !peer_allowed(px, sa)) {
		if (px->admin_outside >= ADMIN_OUTSIDE_MAX) {
			turn_away(px, fd, 1);
			admin_refused(px);
			return;
		}
		px->admin_outside++;
		(void)conn_new(px, &admin_outside_kind, fd, t);
		return;
	}
	if (px->admin_conns >= conf->admin_max_connections) {
		turn_away(px, fd, 0);
		admin_refused(px);
		return;
	}
	px->admin_conns++;
	(void)conn_new(px, &admin_allowed_kind, fd, t);
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
	const struct conf_listen *a = &conf->admin_listener[0];

	ls->npub = 0;
	ls->admin = -1;
	for (int i = 0; i < conf->nlisteners; i++) {
		ls->pub[i] = bind_one("listen", conf->listeners[i].host,
		    conf->listeners[i].port, err, errlen);
		if (ls->pub[i] == -1) {
			http_unbind(ls);
			return -1;
		}
		ls->npub++;
	}
	if ((ls->admin = bind_one("admin_listen", a->host, a->port, err,
	    errlen)) == -1) {
		http_unbind(ls);
		return -1;
	}
	return 0;
}

void
http_unbind(struct listen_socks *ls)
{
	for (int i = 0; i < ls->npub; i++)
		if (ls->pub[i] != -1)
			close(ls->pub[i]);
	if (ls->admin != -1)
		close(ls->admin);
	ls->npub = 0;
	ls->admin = -1;
}

/* This process's listener l on *fdp, a socket of http_bind()'s, which
 * the listener then owns (*fdp is -1) and closes when freed: a worker's
 * copy, or the only process's socket. */
static int
listen_fd(struct listener *l, int *fdp, evconnlistener_cb cb, char *err,
    size_t errlen)
{
	/* Backlog 0: the socket listens already. */
	l->lev = evconnlistener_new(l->px->base, cb, l, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_CLOSE_ON_EXEC, 0, *fdp);
	if (l->lev == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*fdp = -1;
	evconnlistener_set_error_cb(l->lev, on_accept_error);
	return 0;
}

static void
listener_close(struct listener *l)
{
	if (l->lev != NULL)
		evconnlistener_free(l->lev);
	l->lev = NULL;
}

/* ---- the peer socket: sibling workers ask for responses in flight --- */

/* Is the process at the other end of r's connection a sibling worker? */
static int
from_sibling(struct proxy *px, const struct hreq *r)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = hreq_fd(r);

	if (fd == -1 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred,
	    &len) == -1)
		return 0;
	for (int s = 0; s < px->nslots; s++)
		if (s != px->slot && px->slots[s].pid > 0 &&
		    px->slots[s].pid == cred.pid)
			return 1;
	return 0;
}

static void
on_peer_request(struct proxy *px, struct hreq *r)
{
	const char *key = hl_find(&r->in, PEER_KEY_HEADER);
	char flight_key[FLOW_KEY_MAX + 1], *p;

	assert(px->magic == PROXY_MAGIC);
	if (!from_sibling(px, r)) {
		log_warn("peer socket: a request from a process that is not a "
		    "sibling worker; closing");
		hreq_abort(r);
		return;
	}
	if (r->method != HM_GET || key == NULL ||
	    strlen(key) > FLOW_KEY_MAX || strchr(key, '\n') != NULL) {
		plain_refusal(r, r->method != HM_GET ? 405 : 400,
		    "not a sibling's request");
		return;
	}
	snprintf(flight_key, sizeof(flight_key), "%s", key);
	while ((p = strchr(flight_key, ' ')) != NULL)
		*p = '\n';
	req_peer_recv(px, r, flight_key);
}

static const struct conn_kind peer_kind = {
	.name = "peer",
	.no_body = 1,
	.serve = on_peer_request,
	.refused = admin_refused_req,
	.closed = client_closed,
};

/* A sibling's connection: read through the door and counted against
 * max_connections, as a client's. */
static void
on_peer_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	px->nclients++;
	if (conn_new(px, &peer_kind, fd, NULL) != NULL)
		accept_limit(px);
}

/* Workers > 1: the private socket siblings ask for responses in flight
 * (proxy_peer.c). Not fatal if it cannot be had: their waiters wait for
 * the fill as before. */
static int
peer_listen(struct proxy *px, char *err, size_t errlen)
{
	struct sockaddr_un sa;
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
	if ((px->peers = upstream_new(px->base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	px->peer_lev = evconnlistener_new_bind(px->base, on_peer_accept, px,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, PEER_BACKLOG,
	    (struct sockaddr *)&sa,
	    (int)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	if (px->peer_lev == NULL)
		/* Not fatal: its siblings' waiters wait as before. */
		log_warn("peer socket @%s: %s; responses in flight are not "
		    "shared with the other workers", name, strerror(errno));
	return 0;
}

static void
peer_close(struct proxy *px)
{
	if (px->peer_lev != NULL)
		evconnlistener_free(px->peer_lev);
	px->peer_lev = NULL;
	upstream_free(&px->peers);
	if (px->slots != NULL && px->nslots > 1)
		peer_forget(&px->slots[px->slot].peer);
}

/* The tls listeners' context, from tls_certificate and tls_key. */
static int
tls_start(struct proxy *px, char *err, size_t errlen)
{
	const struct conf *c = px->conf;
	int tls = c->admin_listener[0].tls;

	for (int i = 0; i < c->nlisteners; i++)
		tls |= c->listeners[i].tls;
	if (!tls)
		return 0;
	if ((px->tls = tls_new(c->tls_certificate, c->tls_key, err,
	    errlen)) == NULL)
		return -1;
	if (err[0] != '\0')
		log_warn("%s", err);	/* it expires soon */
	err[0] = '\0';
	return 0;
}

int
http_listen(struct proxy *px, char *err, size_t errlen)
{
	const struct conf *c = px->conf;

	if (tls_start(px, err, errlen) == -1)
		return -1;
	for (int i = 0; i < px->socks.npub; i++) {
		px->pub[i].px = px;
		px->pub[i].tls = c->listeners[i].tls;
		if (listen_fd(&px->pub[i], &px->socks.pub[i], on_accept, err,
		    errlen) == -1)
			return -1;
		px->npub++;
	}
	px->admin.px = px;
	px->admin.tls = c->admin_listener[0].tls;
	if (listen_fd(&px->admin, &px->socks.admin, on_admin_accept, err,
	    errlen) == -1)
		return -1;
	if ((px->accept_ev = evtimer_new(px->base, on_accept_retry, px)) ==
	    NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	accept_proxy = px;
	px->accept_listening = 1;
	return peer_listen(px, err, errlen);
}

void
http_stop_accepting(struct proxy *px)
{
	for (int i = 0; i < px->npub; i++)
		listener_close(&px->pub[i]);
}

void
http_close(struct proxy *px)
{
	peer_close(px);
	http_stop_accepting(px);
	listener_close(&px->admin);
	conn_close_all(px);
	tls_unref(&px->tls);
	if (px->accept_ev != NULL)
		event_free(px->accept_ev);
	px->accept_ev = NULL;
	accept_proxy = NULL;
}

void
http_reload(struct proxy *px, const struct conf *c)
{
	char err[512];

	if (px->tls == NULL)
		return;
	if (tls_reload(&px->tls, c->tls_certificate, c->tls_key, err,
	    sizeof(err)) == -1) {
		log_error("reload: %s; the running certificate goes on", err);
		return;
	}
	log_info("reload: TLS certificate %s loaded%s%s", c->tls_certificate,
	    err[0] != '\0' ? "; " : "", err);
}
