/* SPDX-License-Identifier: MIT */
/*
 * A client connection (proxy_conn.h), from accept to close:
 *
 *	READ -(a request read whole)-> SERVE -(its reply given)-> FLUSH
 *	FLUSH -(all sent, kept alive)-> READ, the next request
 *	SERVE -(a reply that ends it)-> CLOSING -(all sent)-> closed
 *	any -(the socket breaks)-> DEAD: a request in service finishes
 *	                            alone, then the connection is freed
 *
 * A plain socket is read with read(2) into one buffer the connection keeps
 * and written with writev(2) straight from a reply's pieces (its head, and
 * a stored body by reference), or the head and then the body's file by
 * sendfile(2) (proxy_conn_send.c); only what the kernel does not take
 * waits, in an evbuffer, for EV_WRITE. So a reply the socket takes whole
 * costs no allocation. A TLS connection reads and writes through its OpenSSL
 * bufferevent. The door (proxy_frame.c) reads the bytes; nothing else
 * parses them. Replies are written by proxy_conn_reply.c.
 *
 * client_timeout counts the client's own silence: while a request is read
 * (its head must come whole within it, its body only keep moving) or the
 * connection idles between requests, and while a reply's bytes wait for
 * the client to take them. While its request is served nothing is read
 * and no clock runs: the wait is Corral's.
 */

#include "proxy/proxy_conn.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn_int.h"
#include "proxy/proxy_frame.h"
#include "proxy/proxy_linger.h"
#include "proxy/proxy_tls.h"
#include "common/hlist.h"


/* event_free() and evbuffer_free() of what may not have been made. */
#define EVENT_FREE(e)	do { if ((e) != NULL) event_free(e); } while (0)

static void conn_free(struct conn *c);
static void on_next(evutil_socket_t fd, short what, void *arg);

/* ---- writing -------------------------------------------------------- */

size_t
conn_backlog(const struct conn *c)
{
	if (c->st == CS_DEAD)
		return 0;
	if (c->bev != NULL)
		return evbuffer_get_length(bufferevent_get_output(c->bev));
	return evbuffer_get_length(c->wbuf);
}

/*
 * Nothing left to send: a stream's writer hears it (deferred: it may
 * queue more), and a reply given ends its exchange on the next turn of
 * the loop (its request stays valid until then).
 */
static void
progress(struct conn *c)
{
	if (conn_backlog(c) > 0)
		return;
	if (c->written != NULL)
		event_active(c->written_ev, EV_TIMEOUT, 0);
	if (c->replied)
		event_active(c->next_ev, EV_TIMEOUT, 0);
}

/* The socket is closed now; what was queued is dropped (references
 * given back). */
static void
shut_socket(struct conn *c)
{
	if (c->bev != NULL) {
		bufferevent_free(c->bev);	/* closes fd */
		c->bev = NULL;
	} else if (c->fd != -1) {
		if (c->rev != NULL)
			event_del(c->rev);
		if (c->wev != NULL)
			event_del(c->wev);
		close(c->fd);
	}
	c->fd = -1;
	if (c->wbuf != NULL)
		evbuffer_drain(c->wbuf, evbuffer_get_length(c->wbuf));
	if (c->timer != NULL)
		evtimer_del(c->timer);
}

/* The socket broke, or the client took nothing for client_timeout: it is
 * closed; a request in service finishes alone (its answer goes nowhere). */
static void
broken(struct conn *c, const char *why)
{
	if (c->st == CS_DEAD)
		return;
	log_debug("connection from %s: %s", c->client, why);
	shut_socket(c);
	c->st = CS_DEAD;
	/* A stream's writer waiting for the socket hears that it is gone. */
	if (c->written != NULL)
		event_active(c->written_ev, EV_TIMEOUT, 0);
	if (!c->busy)
		event_active(c->next_ev, EV_TIMEOUT, 0);
}

static void
want_write(struct conn *c)
{
	struct timeval tv = util_timeval(c->px->conf->client_timeout_ms);

	event_add(c->wev, &tv);
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	int n;

	assert(c->magic == CONN_MAGIC);
	if (what & EV_TIMEOUT) {
		broken(c, "the client took nothing for client_timeout");
		return;
	}
	while (evbuffer_get_length(c->wbuf) > 0) {
		if ((n = evbuffer_write(c->wbuf, c->fd)) > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			break;
		broken(c, n == 0 ? "closed" : strerror(errno));
		return;
	}
	if (evbuffer_get_length(c->wbuf) > 0) {
		want_write(c);		/* progress: the clock starts again */
		return;
	}
	event_del(c->wev);
	progress(c);
}

/* What the socket did not take (the first skip bytes went) queued. */
static void
queue_rest(struct conn *c, struct send *s, size_t skip)
{
	if (c->bev != NULL) {
		send_queue(bufferevent_get_output(c->bev), s, skip, 1);
		return;
	}
	send_queue(c->wbuf, s, skip, 0);
	if (evbuffer_get_length(c->wbuf) > 0)
		want_write(c);
}

void
conn_send(struct conn *c, struct send *s)
{
	struct iovec v[IOV_SEND_MAX];
	ssize_t w = 0;
	int k;

	if (c->st == CS_DEAD) {
		if (s->buf != NULL)
			evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
		if (s->ref != NULL)
			s->release(s->ref, s->ref_len, s->arg);
		return;
	}
	if (c->bev == NULL && evbuffer_get_length(c->wbuf) == 0 &&
	    s->has_file && s->buf == NULL) {
		w = send_file(c->fd, s);
	} else if (c->bev == NULL && evbuffer_get_length(c->wbuf) == 0) {
		k = send_gather(s, v);
		do
			w = writev(c->fd, v, k);
		while (w == -1 && errno == EINTR);
	}
	if (w == -1 && errno != EAGAIN && errno != EWOULDBLOCK) {
		broken(c, strerror(errno));
		conn_send(c, s);	/* dropped */
		return;
	}
	queue_rest(c, s, w > 0 ? (size_t)w : 0);
	progress(c);
}

/* ---- the request's life -------------------------------------------- */

static enum hmethod
method_of(const char *m)
{
	static const struct {
		const char	*name;
		enum hmethod	 bit;
	} known[] = {
		{ "GET", HM_GET }, { "HEAD", HM_HEAD }, { "POST", HM_POST },
		{ "PUT", HM_PUT }, { "DELETE", HM_DELETE },
		{ "OPTIONS", HM_OPTIONS }, { "PATCH", HM_PATCH },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(m, known[i].name) == 0)
			return known[i].bit;
	return HM_OTHER;
}

/* The request before the next: its memory kept for it. */
static void
request_reset(struct conn *c)
{
	struct hreq *r = &c->req;

	hl_clear(&r->in);
	hl_clear(&r->out);
	evbuffer_drain(r->body, evbuffer_get_length(r->body));
	arena_reset(&c->scratch);
	r->method = HM_OTHER;
	r->method_name = "-";
	r->target = "";
	r->path = "";
	r->query = NULL;
	memset(&r->uri, 0, sizeof(r->uri));
	r->minor = 1;
	r->status = 0;
	c->replied = c->streaming = c->chunked = 0;
	c->continue_due = c->refused = 0;
	c->written = NULL;
	c->framing = FRAME_BODY_NONE;
}

static void
on_door_head(void *arg, const struct frame_head *h)
{
	struct conn *c = arg;
	struct hreq *r = &c->req;
	const struct uri *u = &r->uri;

	r->method_name = h->method;
	r->method = method_of(h->method);
	r->target = h->target;
	r->minor = h->minor;
	if (uri_split(h->target, strlen(h->target), &r->uri) == -1)
		memset(&r->uri, 0, sizeof(r->uri));	/* the door checked it */
	r->path = u->path != NULL ? arena_strndup(&c->scratch, u->path,
	    u->path_len) : "";
	r->query = u->query != NULL ? arena_strndup(&c->scratch, u->query,
	    u->query_len) : NULL;
	if (r->path == NULL)
		r->path = "";
	for (size_t i = 0; i < h->nfields; i++)
		(void)hl_add_ref(&r->in, h->fields[i].name, h->fields[i].value);
	c->framing = h->body;
	c->continue_due = h->expect_continue && (h->body ==
	    FRAME_BODY_CHUNKED || (h->body == FRAME_BODY_LENGTH &&
	    h->length > 0));
}

static void
on_door_body(void *arg, const char *p, size_t n)
{
	struct conn *c = arg;

	(void)evbuffer_add(c->req.body, p, n);
}

/* A request read whole: a body's length said as a Content-Length (a
 * chunked one's known only now), and the door stops here. */
static int
on_door_end(void *arg)
{
	struct conn *c = arg;

	c->continue_due = 0;
	if (c->framing != FRAME_BODY_NONE) {
		snprintf(c->length_text, sizeof(c->length_text), "%zu",
		    evbuffer_get_length(c->req.body));
		(void)hl_add_ref(&c->req.in, "Content-Length", c->length_text);
	}
	return 1;
}

static const struct frame_ops door_ops = {
	.head = on_door_head,
	.body = on_door_body,
	.end = on_door_end,
};

static void
reading(struct conn *c, int on)
{
	if (c->st == CS_DEAD)
		return;
	if (c->bev != NULL) {
		if (on)
			bufferevent_enable(c->bev, EV_READ);
		else
			bufferevent_disable(c->bev, EV_READ);
	} else if (on) {
		event_add(c->rev, NULL);
	} else {
		event_del(c->rev);
	}
}

/* The client's clock, from now: a head whole, or a body moving. */
static void
read_clock(struct conn *c)
{
	timer_arm(c->timer, c->px->conf->client_timeout_ms);
}

/* Does the request's Connection name token? */
static int
connection_says(const struct hlist *in, const char *token)
{
	const struct hfield *f;

	HL_FOREACH(f, in)
		if (strcasecmp(f->key, "Connection") == 0 &&
		    util_list_has_token(f->value, token))
			return 1;
	return 0;
}

/*
 * A request read whole goes to its handler; nothing more is read until
 * it is answered. A plain socket's read event stays on meanwhile, and is
 * turned off only if the client sends before its answer (on_readable()):
 * a client that waits for each answer costs no epoll_ctl() a request.
 */
static void
serve(struct conn *c)
{
	struct hreq *r = &c->req;

	c->st = CS_SERVE;
	c->busy = 1;
	if (c->bev != NULL)
		reading(c, 0);
	evtimer_del(c->timer);
	c->keep = r->minor >= 1 ? !connection_says(&r->in, "close") :
	    connection_says(&r->in, "keep-alive");
	c->kind->serve(c->px, r);
}

/* The door refused what the client sent: its refusal, then the close. */
static void
serve_refusal(struct conn *c)
{
	c->st = CS_SERVE;
	c->busy = 1;
	c->refused = 1;
	c->keep = 0;
	reading(c, 0);
	evtimer_del(c->timer);
	c->kind->refused(c->px, &c->req, frame_status(c->frame),
	    frame_reason(c->frame));
}

/* The client waits for a 100 before it sends its body (RFC 9110 10.1.1). */
static void
send_continue(struct conn *c)
{
	static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct iovec v = { (void *)(uintptr_t)line, sizeof(line) - 1 };
	struct send s = { .pre = &v, .npre = 1 };

	conn_send(c, &s);
}

/* Feeds what was read to the door, up to a request read whole. */
static void
read_input(struct conn *c)
{
	enum frame_result fr;
	size_t used;
	int body;

	frame_set_limits(c->frame, (size_t)c->px->conf->max_header_bytes,
	    c->kind->no_body ? 0 : (uint64_t)c->px->conf->max_body_bytes);
	while (c->st == CS_READ && c->in_off < c->in_len) {
		body = frame_in_body(c->frame);
		fr = frame_feed(c->frame, c->in + c->in_off, c->in_len -
		    c->in_off, &used, &door_ops, c);
		c->in_off += used;
		if (fr == FRAME_REJECT) {
			serve_refusal(c);
			break;
		}
		if (fr == FRAME_PAUSE) {
			serve(c);
			break;
		}
		if (body || frame_in_body(c->frame))
			read_clock(c);
	}
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	if (c->continue_due && c->st == CS_READ &&
	    frame_body_bytes(c->frame) == 0) {
		c->continue_due = 0;
		send_continue(c);
	}
}

/* The client closed its side (or the socket failed) while reading. */
static void
read_ended(struct conn *c, const char *why)
{
	if (!frame_idle(c->frame))
		log_debug("connection from %s: %s in the middle of a request",
		    c->client, why);
	broken(c, why);
}

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	assert(c->magic == CONN_MAGIC);
	if (c->st != CS_READ) {		/* pipelined, or gone: read later */
		reading(c, 0);
		return;
	}
	if (c->in_off > 0) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	do
		n = read(fd, c->in + c->in_len, CONN_IN_SIZE - c->in_len);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		read_ended(c, n == 0 ? "closed" : strerror(errno));
		return;
	}
	c->in_len += (size_t)n;
	read_input(c);
}

/* ---- TLS: the OpenSSL bufferevent ----------------------------------- */

static void
on_tls_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	assert(c->magic == CONN_MAGIC);
	while (c->st == CS_READ && evbuffer_get_length(in) > 0) {
		if (c->in_off > 0) {
			memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		c->in_len += (size_t)evbuffer_remove(in, c->in + c->in_len,
		    CONN_IN_SIZE - c->in_len);
		read_input(c);
	}
}

static void
on_tls_written(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	assert(c->magic == CONN_MAGIC);
	progress(c);
}

static void
on_tls_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	assert(c->magic == CONN_MAGIC);
	if (what & BEV_EVENT_CONNECTED) {
		c->handshaken = 1;
		return;
	}
	if (!c->handshaken && tls_handshake(bev) != TLS_HANDSHAKE_DONE) {
		log_debug("TLS from %s: %s (%s)", c->client,
		    tls_fail_name(tls_failed(bev, what)), tls_fail_detail(bev));
		broken(c, "TLS handshake failed");
		return;
	}
	if (what & BEV_EVENT_TIMEOUT)
		broken(c, "the client took nothing for client_timeout");
	else if (what & BEV_EVENT_EOF)
		read_ended(c, "closed");
	else
		broken(c, "TLS error");
}

/* ---- between requests, and the end ---------------------------------- */

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	/* Its clock runs while it reads only: Corral's own waits are not
	 * the client's silence. */
	assert(c->magic == CONN_MAGIC && c->st == CS_READ);
	if (c->bev != NULL && !c->handshaken)	/* counted as a timeout */
		(void)tls_failed(c->bev, BEV_EVENT_TIMEOUT | BEV_EVENT_READING);
	read_ended(c, "no whole request within client_timeout");
}

/* Closed when its last reply is out: lingering (proxy_linger.h) when the
 * client may still be sending (a refusal, bytes unread). */
static void
conn_close(struct conn *c)
{
	int unread = c->in_off < c->in_len || !frame_idle(c->frame) ||
	    c->refused;

	if (c->bev != NULL)
		tls_close_notify(c->bev);
	else if (unread && c->fd != -1)
		linger_start(c->px->lingers, c->fd);
	shut_socket(c);
	conn_free(c);
}

/* The exchange is over (its reply all sent), on the loop's next turn:
 * the next request, the close, or, its socket gone, the end. */
static void
on_next(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	assert(c->magic == CONN_MAGIC);
	if (c->busy || conn_backlog(c) > 0)
		return;
	if (c->st == CS_DEAD) {
		conn_free(c);
		return;
	}
	if (c->st == CS_CLOSING) {
		conn_close(c);
		return;
	}
	if (c->st != CS_FLUSH)
		return;
	request_reset(c);
	c->st = CS_READ;
	read_clock(c);
	reading(c, 1);
	read_input(c);
}

/* A stream's writer: the socket took everything queued. */
static void
on_written(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	void (*cb)(void *) = c->written;

	assert(c->magic == CONN_MAGIC);
	if (cb != NULL && conn_backlog(c) == 0) {
		c->written = NULL;
		cb(c->written_arg);
	}
}

void
conn_replied(struct conn *c, int keep)
{
	c->replied = 1;
	c->busy = 0;
	if (c->st != CS_DEAD)
		c->st = keep && c->keep && !c->refused &&
		    !c->px->draining ? CS_FLUSH : CS_CLOSING;
	progress(c);
	if (c->st == CS_DEAD)
		event_active(c->next_ev, EV_TIMEOUT, 0);
}

void
conn_abort(struct conn *c)
{
	shut_socket(c);
	c->st = CS_DEAD;
	c->replied = 1;
	c->busy = 0;
	event_active(c->next_ev, EV_TIMEOUT, 0);
}

static void
conn_free(struct conn *c)
{
	struct proxy *px = c->px;

	assert(c->magic == CONN_MAGIC && !c->busy);
	shut_socket(c);
	TAILQ_REMOVE(&px->conn_list, c, link);
	px->nconn--;
	if (c->kind->closed != NULL)
		c->kind->closed(px, c);
	EVENT_FREE(c->rev);
	EVENT_FREE(c->wev);
	EVENT_FREE(c->timer);
	EVENT_FREE(c->next_ev);
	EVENT_FREE(c->written_ev);
	frame_free(&c->frame);
	if (c->wbuf != NULL)
		evbuffer_free(c->wbuf);
	if (c->req.body != NULL)
		evbuffer_free(c->req.body);
	hl_free(&c->req.in);
	hl_free(&c->req.out);
	arena_free(&c->scratch);
	free(c->in);
	c->magic = 0;
	free(c);
}

/* The peer's address as text ("-" for a Unix socket's). */
static void
peer_text(int fd, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const void *a = NULL;

	snprintf(out, outlen, "-");
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == -1)
		return;
	if (ss.ss_family == AF_INET)
		a = &((const struct sockaddr_in *)&ss)->sin_addr;
	else if (ss.ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)&ss)->sin6_addr;
	if (a == NULL || inet_ntop(ss.ss_family, a, out, (socklen_t)outlen) ==
	    NULL)
		snprintf(out, outlen, "-");
}

/* Its events and buffers: -1 when out of memory. */
static int
conn_parts(struct conn *c, struct tls *t)
{
	struct event_base *base = c->px->base;

	c->timer = evtimer_new(base, on_timeout, c);
	c->next_ev = event_new(base, -1, 0, on_next, c);
	c->written_ev = event_new(base, -1, 0, on_written, c);
	c->rev = event_new(base, c->fd, EV_READ | EV_PERSIST, on_readable, c);
	c->wev = event_new(base, c->fd, EV_WRITE | EV_PERSIST, on_writable, c);
	c->wbuf = evbuffer_new();
	c->req.body = evbuffer_new();
	c->in = malloc(CONN_IN_SIZE);
	c->frame = frame_new((size_t)c->px->conf->max_header_bytes,
	    (uint64_t)c->px->conf->max_body_bytes);
	if (c->timer == NULL || c->next_ev == NULL || c->written_ev == NULL ||
	    c->rev == NULL || c->wev == NULL || c->wbuf == NULL ||
	    c->req.body == NULL || c->in == NULL || c->frame == NULL)
		return -1;
	frame_set_host_rules(c->frame, !c->kind->own_host_rules);
	if (t == NULL)
		return 0;
	if ((c->bev = tls_accept(t, base, c->fd, 0)) == NULL)
		return -1;
	c->tls = 1;
	bufferevent_setcb(c->bev, on_tls_read, on_tls_written, on_tls_event, c);
	return 0;
}

struct conn *
conn_new(struct proxy *px, const struct conn_kind *kind, int fd,
    struct tls *t)
{
	struct timeval tv = util_timeval(px->conf->client_timeout_ms);
	struct conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		if (kind->closed != NULL)
			kind->closed(px, NULL);
		return NULL;
	}
	c->magic = CONN_MAGIC;
	c->px = px;
	c->kind = kind;
	c->fd = fd;
	c->req.conn = c;
	hl_init(&c->req.in);
	hl_init(&c->req.out);
	TAILQ_INSERT_TAIL(&px->conn_list, c, link);
	px->nconn++;
	(void)evutil_make_socket_nonblocking(fd);
	peer_text(fd, c->client, sizeof(c->client));
	if (conn_parts(c, t) == -1) {
		log_error("out of memory for a connection from %s", c->client);
		conn_free(c);
		return NULL;
	}
	if (c->bev != NULL)
		bufferevent_set_timeouts(c->bev, NULL, &tv);
	request_reset(c);
	c->st = CS_READ;
	read_clock(c);
	reading(c, 1);
	return c;
}

void
conn_close_all(struct proxy *px)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&px->conn_list)) != NULL) {
		c->busy = 0;
		conn_free(c);
	}
}

int
conn_count(const struct proxy *px)
{
	return px->nconn;
}
