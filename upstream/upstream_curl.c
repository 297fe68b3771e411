/* SPDX-License-Identifier: MIT */
/*
 * upstream.h on libcurl's multi_socket interface, driven by libevent (after
 * curl's docs/examples/multi-event.c and hiperfifo.c).
 *
 * Ownership: struct upstream owns its multi handle, one timer, one event per
 * socket curl asks us to watch, and every fetch in flight (a TAILQ). A fetch
 * owns its easy handle, its request header list and the response it is
 * filling. When a transfer ends, the response is handed to the caller's
 * callback and the fetch is freed before that callback runs, so the callback
 * may start fetches, cancel other fetches or free the upstream.
 *
 * Re-entrancy: libcurl is only ever called from our own event callbacks or
 * from the API functions, never from inside a libcurl callback. User
 * callbacks run only from the event callbacks (never from upstream_fetch),
 * after curl_multi_socket_action has returned, and nothing is iterated
 * across them. upstream_free from inside a user callback is deferred until
 * the event callback that ran it unwinds.
 */

#include "upstream/upstream.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "common/log.h"
#include "common/prio.h"
#include "common/util.h"

#define UPSTREAM_MAGIC		0x55505354u	/* "UPST" */
#define FETCH_MAGIC		0x55464554u	/* "UFET" */
#define SOCK_MAGIC		0x5553434bu	/* "USCK" */

/* Idle connections the multi handle keeps open for reuse. */
#define MAX_CONNECTS		256
/*
 * A streamed body's first hand-over is at most this long; the rest of
 * what arrived follows once the callee's clients have been written to.
 * A read can bring 100 KiB or more, and writing that much to each of 100
 * waiting clients in turn puts the last one's first byte milliseconds
 * behind the first one's.
 */
#define FIRST_PIECE_MAX		(16 * 1024)
/* Bytes of one response's header block, status line excluded. */
#define MAX_HEADER_BYTES	(64 * 1024)
/* Digits of a Content-Length: 18 always fit in a curl_off_t. */
#define MAX_LENGTH_DIGITS	18

enum abort_reason {
	ABORT_NONE = 0,
	ABORT_TOO_BIG,		/* body over max_body_bytes */
	ABORT_HEADERS,		/* header block over MAX_HEADER_BYTES */
	ABORT_HEADER_LINES,	/* more header lines than max_headers */
	ABORT_FRAMING,		/* a length the next hop could read otherwise */
	ABORT_NO_MEMORY,	/* a header or body chunk could not be stored */
	ABORT_NO_SOCKET,	/* could not watch one of its sockets */
	ABORT_LISTENER,		/* its Unix socket is not listen_pid's */
};

/* An abstract Unix socket name, without its leading NUL. */
#define SOCKET_NAME_MAX	(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* A socket curl asked us to watch. */
struct sock {
	uint32_t		 magic;
	curl_socket_t		 fd;
	struct event		*ev;
	TAILQ_ENTRY(sock)	 entry;
};

struct upstream_fetch {
	uint32_t		 magic;
	struct upstream		*up;
	CURL			*easy;
	struct curl_slist	*req_headers;
	struct upstream_response *resp;		/* being filled */
	upstream_done_cb	*cb;
	void			*arg;
	int64_t			 start_us;
	size_t			 max_body;
	size_t			 header_bytes;	/* in the current block */
	int			 header_lines;	/* in the current block */
	int			 lengths;	/* Content-Length lines in it */
	int			 coded;		/* it has Transfer-Encoding */
	int			 headers_done;	/* final header block seen */
	int			 max_headers;	/* upstream's, when it started */
	int			 in_multi;
	int			 linked;
	/* Streaming: what arrived since the last hand-over, handed over from
	 * our event callbacks once libcurl has returned. */
	upstream_data_cb	*on_data;
	void			*data_arg;
	size_t			 keep_body;
	struct evbuffer		*pending;
	int			 head_due;	/* the head is still to hand over */
	int			 head_done;
	int			 streamed;	/* the callee streams the body */
	int			 paused;
	int			 ready;		/* in up->ready */
	int			 later;		/* in up->later */
	int			 body_handed;	/* some body was handed over */
	TAILQ_ENTRY(upstream_fetch) ready_entry;	/* ready or later */
	enum abort_reason	 abort;
	char			 framing[80];	/* what ABORT_FRAMING found */
	char			 socket_name[SOCKET_NAME_MAX + 1];	/* or "" */
	pid_t			 listen_pid;
	curl_socket_t		 new_socket;	/* to check, or CURL_SOCKET_BAD */
	char			 errbuf[CURL_ERROR_SIZE];
	TAILQ_ENTRY(upstream_fetch) entry;
};

struct upstream {
	uint32_t		 magic;
	struct event_base	*base;
	CURLM			*multi;
	struct event		*timer;		/* CURLMOPT_TIMERFUNCTION's */
	struct event		*reap;		/* fails ABORT_NO_SOCKET fetches */
	TAILQ_HEAD(, upstream_fetch) fetches;
	TAILQ_HEAD(, upstream_fetch) ready;	/* streamed data to hand over */
	TAILQ_HEAD(, upstream_fetch) later;	/* ... once clients are written */
	struct event		*later_ev;	/* moves later to ready */
	TAILQ_HEAD(, sock)	 socks;
	int			 active;
	int			 max_headers;	/* 0: no limit */
	struct upstream_counters counters;
	int			 busy;		/* inside one of our callbacks */
	int			 dying;		/* freed while busy */
};

static int curl_ready;	/* curl_global_init has run (single-threaded) */

static void	on_socket(evutil_socket_t, short, void *);
static void	destroy(struct upstream *);

static void
copy_text(char *dst, size_t dstlen, const char *src)
{
	size_t n = strlen(src);

	if (dstlen == 0)
		return;
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static long
clamp_ms(int64_t ms)
{
	if (ms <= 0)
		return 0;
	if (ms > LONG_MAX)
		return LONG_MAX;
	return (long)ms;
}

static int
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int
global_init(void)
{
	if (curl_ready)
		return 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	curl_ready = 1;
	return 0;
}

static struct upstream_fetch *
fetch_of(CURL *easy)
{
	struct upstream_fetch *f;
	char *p = NULL;

	if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p) != CURLE_OK ||
	    p == NULL)
		return NULL;
	f = (struct upstream_fetch *)(void *)p;
	assert(f->magic == FETCH_MAGIC);
	return f;
}

/* ---- responses -------------------------------------------------------- */

static struct upstream_response *
response_new(void)
{
	struct upstream_response *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	hl_init(&r->headers);
	if ((r->body = evbuffer_new()) == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

void
upstream_response_free(struct upstream_response **rp)
{
	struct upstream_response *r;

	if (rp == NULL || (r = *rp) == NULL)
		return;
	hl_free(&r->headers);
	if (r->body != NULL)
		evbuffer_free(r->body);
	free(r);
	*rp = NULL;
}

const char *
upstream_result_name(enum upstream_result r)
{
	switch (r) {
	case UPSTREAM_OK:
		return "ok";
	case UPSTREAM_ERR_CONNECT:
		return "connect";
	case UPSTREAM_ERR_TIMEOUT:
		return "timeout";
	case UPSTREAM_ERR_TOO_BIG:
		return "too_big";
	case UPSTREAM_ERR_PROTOCOL:
		return "protocol";
	case UPSTREAM_NOT_SENT:
		return "not_sent";
	}
	return "unknown";
}

/* ---- sockets and the timer (curl asks, libevent watches) -------------- */

static void
sock_free(struct upstream *up, struct sock **skp)
{
	struct sock *sk = *skp;

	if (sk == NULL)
		return;
	assert(sk->magic == SOCK_MAGIC);
	event_free(sk->ev);
	TAILQ_REMOVE(&up->socks, sk, entry);
	sk->magic = 0;
	free(sk);
	*skp = NULL;
}

static struct sock *
sock_new(struct upstream *up, curl_socket_t fd)
{
	struct sock *sk;

	if ((sk = calloc(1, sizeof(*sk))) == NULL)
		return NULL;
	sk->magic = SOCK_MAGIC;
	sk->fd = fd;
	if ((sk->ev = event_new(up->base, fd, 0, on_socket, up)) == NULL) {
		free(sk);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&up->socks, sk, entry);
	return sk;
}

/*
 * A socket we cannot watch stalls its transfer. Returning -1 would mark the
 * whole multi handle dead for good, so fail just this fetch, from the reap
 * event, outside libcurl.
 */
static void
fail_unwatched(struct upstream *up, CURL *easy)
{
	struct upstream_fetch *f = fetch_of(easy);

	log_warn("upstream: cannot watch a socket: out of memory");
	if (f == NULL)
		return;
	f->abort = ABORT_NO_SOCKET;
	event_active(up->reap, EV_TIMEOUT, 0);
}

/* CURLMOPT_SOCKETFUNCTION */
static int
on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *arg,
    void *sockp)
{
	struct upstream *up = arg;
	struct sock *sk = sockp;
	short kind;

	assert(up->magic == UPSTREAM_MAGIC);
	assert(sk == NULL || (sk->magic == SOCK_MAGIC && sk->fd == fd));

	if (what == CURL_POLL_REMOVE) {
		sock_free(up, &sk);
		return 0;
	}
	if (sk == NULL) {
		if ((sk = sock_new(up, fd)) == NULL) {
			fail_unwatched(up, easy);
			return 0;
		}
		if (curl_multi_assign(up->multi, fd, sk) != CURLM_OK) {
			sock_free(up, &sk);
			fail_unwatched(up, easy);
			return 0;
		}
	} else
		event_del(sk->ev);

	kind = EV_PERSIST;
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	event_assign(sk->ev, up->base, fd, kind, on_socket, up);
	/* Connecting and sending the request go before clients' events;
	 * the response is read at their pace (its streams' back-pressure
	 * runs in their callbacks). */
	PRIO_SET(sk->ev, (what & CURL_POLL_OUT) ? PRIO_BACKEND : PRIO_CLIENT);
	if (event_add(sk->ev, NULL) == -1)
		fail_unwatched(up, easy);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: never calls libcurl, only (dis)arms the timer. */
static int
on_curl_timer(CURLM *multi, long timeout_ms, void *arg)
{
	struct upstream *up = arg;
	struct timeval tv;

	assert(up->magic == UPSTREAM_MAGIC);
	(void)multi;
	if (timeout_ms < 0) {
		evtimer_del(up->timer);
		return 0;
	}
	tv = util_timeval(timeout_ms);
	if (evtimer_add(up->timer, &tv) == -1)
		log_error("upstream: cannot arm the curl timer");
	return 0;
}

/* ---- fetches ---------------------------------------------------------- */

/* Removes from the multi, unlinks and frees; no callback. */
static void
fetch_free(struct upstream_fetch **fp)
{
	struct upstream_fetch *f = *fp;

	if (f == NULL)
		return;
	assert(f->magic == FETCH_MAGIC);
	if (f->in_multi)
		curl_multi_remove_handle(f->up->multi, f->easy);
	if (f->easy != NULL)
		curl_easy_cleanup(f->easy);
	curl_slist_free_all(f->req_headers);
	upstream_response_free(&f->resp);
	if (f->ready)
		TAILQ_REMOVE(&f->up->ready, f, ready_entry);
	if (f->later)
		TAILQ_REMOVE(&f->up->later, f, ready_entry);
	if (f->pending != NULL)
		evbuffer_free(f->pending);
	if (f->linked) {
		TAILQ_REMOVE(&f->up->fetches, f, entry);
		f->up->active--;
	}
	f->magic = 0;
	free(f);
	*fp = NULL;
}

static enum upstream_result
classify(const struct upstream_fetch *f, CURLcode rc, char *err,
    size_t errlen)
{
	switch (f->abort) {
	case ABORT_NONE:
		break;
	case ABORT_TOO_BIG:
		snprintf(err, errlen, "response body exceeds %zu bytes",
		    f->max_body);
		return UPSTREAM_ERR_TOO_BIG;
	case ABORT_HEADERS:
		snprintf(err, errlen, "response headers exceed %d bytes",
		    MAX_HEADER_BYTES);
		return UPSTREAM_ERR_PROTOCOL;
	case ABORT_HEADER_LINES:
		snprintf(err, errlen, "response has more than %d header lines",
		    f->max_headers);
		return UPSTREAM_ERR_PROTOCOL;
	case ABORT_FRAMING:
		snprintf(err, errlen, "bad framing: %s", f->framing);
		return UPSTREAM_ERR_PROTOCOL;
	case ABORT_NO_MEMORY:
	case ABORT_NO_SOCKET:
		copy_text(err, errlen, "out of memory");
		return UPSTREAM_ERR_PROTOCOL;
	case ABORT_LISTENER:
		snprintf(err, errlen, "no process %d listening on @%s",
		    (int)f->listen_pid, f->socket_name);
		return UPSTREAM_ERR_CONNECT;
	}

	if (rc == CURLE_OK) {
		err[0] = '\0';
		return UPSTREAM_OK;
	}
	copy_text(err, errlen, f->errbuf[0] != '\0' ? f->errbuf :
	    curl_easy_strerror(rc));
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
		return UPSTREAM_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return UPSTREAM_ERR_TIMEOUT;
	case CURLE_FILESIZE_EXCEEDED:	/* Content-Length over the limit */
		snprintf(err, errlen, "response body exceeds %zu bytes",
		    f->max_body);
		return UPSTREAM_ERR_TOO_BIG;
	default:
		return UPSTREAM_ERR_PROTOCOL;
	}
}

/*
 * Ends a fetch: remove it from the multi, build the response, clean up the
 * handle, free the fetch and only then run the callback.
 */
static void
upstream_pause(struct upstream_fetch *f)
{
	if (!f->paused && curl_easy_pause(f->easy, CURLPAUSE_RECV) == CURLE_OK)
		f->paused = 1;
}

/* The first piece was handed over: the rest goes once the active events
 * queued meanwhile (the clients' writes) have run. */
static void
defer(struct upstream_fetch *f)
{
	TAILQ_INSERT_TAIL(&f->up->later, f, ready_entry);
	f->later = 1;
	event_active(f->up->later_ev, EV_TIMEOUT, 0);
}

/* Hands f's head to its on_data, once: whether it streams, whether it waits. */
static void
hand_head(struct upstream_fetch *f)
{
	long status = 0;
	int r;

	curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &status);
	f->resp->status = (int)status;
	f->head_due = 0;
	f->head_done = 1;
	r = f->on_data(f->resp, NULL, f->data_arg);
	f->streamed = (r & UPSTREAM_STREAM) != 0;
	if (r & UPSTREAM_PAUSE)
		upstream_pause(f);
}

/*
 * The piece of f's pending body to hand over now: all of it, or the first
 * FIRST_PIECE_MAX bytes alone of a streamed body's first, long piece when
 * not whole (the rest stays pending).
 */
static struct evbuffer *
next_piece(struct upstream_fetch *f, int whole, size_t n)
{
	struct evbuffer *piece;

	if (!f->streamed || f->body_handed || whole || n <= FIRST_PIECE_MAX)
		return f->pending;
	if ((piece = evbuffer_new()) == NULL)
		return f->pending;
	if (evbuffer_remove_buffer(f->pending, piece, FIRST_PIECE_MAX) !=
	    FIRST_PIECE_MAX) {
		/* Not split after all: it all goes now, in order. */
		evbuffer_prepend_buffer(f->pending, piece);
		evbuffer_free(piece);
		return f->pending;
	}
	return piece;
}

/* Keeps the first keep_body bytes of a streamed body in the response. */
static void
keep_piece(struct upstream_fetch *f, struct evbuffer *piece)
{
	struct upstream_response *resp = f->resp;
	size_t n = evbuffer_get_length(piece), held, room;

	held = evbuffer_get_length(resp->body);
	room = !f->streamed ? n : held < f->keep_body ? f->keep_body - held : 0;
	if (n <= room) {
		evbuffer_add_buffer_reference(resp->body, piece);
		return;
	}
	/* Past keep_body: the response keeps what fits, and says so. */
	resp->body_partial = 1;
	if (room > 0)
		evbuffer_add(resp->body, evbuffer_pullup(piece,
		    (ev_ssize_t)room), room);
}

/*
 * Streaming: hands f's head (once) and what arrived of its body to its
 * on_data, keeping the first keep_body bytes in the response; all of it
 * when whole, else the first piece of a streamed body alone (see
 * FIRST_PIECE_MAX). From our event callbacks only, after libcurl has
 * returned.
 */
static void
hand_over(struct upstream_fetch *f, int whole)
{
	struct evbuffer *piece;
	size_t n;

	if (f->ready) {
		TAILQ_REMOVE(&f->up->ready, f, ready_entry);
		f->ready = 0;
	}
	if (f->later) {
		TAILQ_REMOVE(&f->up->later, f, ready_entry);
		f->later = 0;
	}
	if (f->head_due)
		hand_head(f);
	if ((n = evbuffer_get_length(f->pending)) == 0)
		return;
	piece = next_piece(f, whole, n);
	f->body_handed = 1;
	keep_piece(f, piece);
	if (f->on_data(f->resp, piece, f->data_arg) & UPSTREAM_PAUSE)
		upstream_pause(f);
	evbuffer_free(piece);
	if (piece != f->pending) {
		defer(f);
		return;
	}
	if ((f->pending = evbuffer_new()) == NULL)
		f->abort = ABORT_NO_MEMORY;	/* seen when it ends */
}

/* Every streaming fetch's news, one fetch at a time: a callback may
 * cancel others, which leave the ready list as they are freed. */
static void
hand_over_all(struct upstream *up)
{
	struct upstream_fetch *f;

	while (!up->dying && (f = TAILQ_FIRST(&up->ready)) != NULL)
		hand_over(f, 0);
}

static void
finish(struct upstream_fetch *f, CURLcode rc)
{
	struct upstream_response *resp = f->resp;
	upstream_done_cb *cb = f->cb;
	void *arg = f->arg;
	long status = 0;

	assert(f->magic == FETCH_MAGIC && f->in_multi);
	/* What streamed in last goes before the end (on_data may not
	 * cancel the fetch). */
	if (f->on_data != NULL && rc == CURLE_OK && f->abort == ABORT_NONE &&
	    (f->head_due || evbuffer_get_length(f->pending) > 0))
		hand_over(f, 1);
	curl_multi_remove_handle(f->up->multi, f->easy);
	f->in_multi = 0;

	resp->result = classify(f, rc, resp->error, sizeof(resp->error));
	if (f->abort == ABORT_HEADER_LINES)
		f->up->counters.too_many_headers++;
	else if (f->abort == ABORT_FRAMING)
		f->up->counters.bad_framing++;
	if (resp->result == UPSTREAM_OK) {
		curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &status);
		resp->status = (int)status;
	} else {
		resp->status = 0;
		hl_free(&resp->headers);
		evbuffer_drain(resp->body, evbuffer_get_length(resp->body));
	}
	resp->elapsed_ms = (util_mono_us() - f->start_us) / 1000;

	f->resp = NULL;
	fetch_free(&f);
	cb(resp, arg);
}

/* Ends every transfer curl reports done; safe against any callback. */
static void
drain(struct upstream *up)
{
	CURLMsg *msg;
	int left;

	while (!up->dying &&
	    (msg = curl_multi_info_read(up->multi, &left)) != NULL) {
		struct upstream_fetch *f;

		if (msg->msg != CURLMSG_DONE)
			continue;
		if ((f = fetch_of(msg->easy_handle)) == NULL)
			continue;
		finish(f, msg->data.result);
	}
}

/* The end of every event callback: a deferred upstream_free happens here. */
static void
unbusy(struct upstream *up)
{
	assert(up->busy > 0);
	if (--up->busy == 0 && up->dying)
		destroy(up);
}

static void
on_socket(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *up = arg;
	int flags = 0, running;
	CURLMcode mc;

	assert(up->magic == UPSTREAM_MAGIC);
	if (what & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	up->busy++;
	if ((mc = curl_multi_socket_action(up->multi, fd, flags, &running)) !=
	    CURLM_OK)
		log_error("upstream: curl_multi_socket_action: %s",
		    curl_multi_strerror(mc));
	hand_over_all(up);
	drain(up);
	unbusy(up);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *up = arg;
	int running;
	CURLMcode mc;

	assert(up->magic == UPSTREAM_MAGIC);
	(void)fd;
	(void)what;
	up->busy++;
	if ((mc = curl_multi_socket_action(up->multi, CURL_SOCKET_TIMEOUT, 0,
	    &running)) != CURLM_OK)
		log_error("upstream: curl_multi_socket_action: %s",
		    curl_multi_strerror(mc));
	hand_over_all(up);
	drain(up);
	unbusy(up);
}

static void
on_later(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *up = arg;
	struct upstream_fetch *f;

	assert(up->magic == UPSTREAM_MAGIC);
	up->busy++;
	while ((f = TAILQ_FIRST(&up->later)) != NULL) {
		TAILQ_REMOVE(&up->later, f, ready_entry);
		f->later = 0;
		TAILQ_INSERT_TAIL(&up->ready, f, ready_entry);
		f->ready = 1;
	}
	hand_over_all(up);
	drain(up);
	unbusy(up);
}

static void
on_reap(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *up = arg;
	struct upstream_fetch *f;

	assert(up->magic == UPSTREAM_MAGIC);
	(void)fd;
	(void)what;
	up->busy++;
	/* Rescan from the head: each callback may change the list. */
	while (!up->dying) {
		TAILQ_FOREACH(f, &up->fetches, entry)
			if (f->abort == ABORT_NO_SOCKET)
				break;
		if (f == NULL)
			break;
		finish(f, CURLE_OUT_OF_MEMORY);
	}
	unbusy(up);
}

/* CURLOPT_SOCKOPTFUNCTION of a fetch over an abstract Unix socket: the
 * socket of a new connection, checked once its answer begins. */
static int
on_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	struct upstream_fetch *f = arg;

	assert(f->magic == FETCH_MAGIC);
	if (purpose == CURLSOCKTYPE_IPCXN)
		f->new_socket = fd;
	return CURL_SOCKOPT_OK;
}

/*
 * Is the process listening on f's Unix socket the one the caller named?
 * The kernel says who (SO_PEERCRED), so that nobody else who took the
 * name can answer. Asked of a new connection before any of its answer is
 * used; a connection reused was asked when it was new.
 */
static int
listener_ok(struct upstream_fetch *f)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	curl_socket_t fd = f->new_socket;

	if (f->listen_pid == 0 || fd == CURL_SOCKET_BAD)
		return 1;
	f->new_socket = CURL_SOCKET_BAD;	/* asked once */
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
	    cred.pid == f->listen_pid;
}

/* ---- libcurl's data callbacks ----------------------------------------- */

/* Stores one "Name: value" line; -1 only when out of memory. */
static int
add_header_line(struct hlist *headers, const char *line, size_t len)
{
	const char *colon, *v;
	size_t nlen, vlen;
	char *buf;
	int rc;

	if ((colon = memchr(line, ':', len)) == NULL)
		return 0;			/* not a header: ignored */
	nlen = (size_t)(colon - line);
	while (nlen > 0 && is_space(line[nlen - 1]))
		nlen--;
	v = colon + 1;
	vlen = len - (size_t)(v - line);
	while (vlen > 0 && is_space(*v)) {
		v++;
		vlen--;
	}
	if (nlen == 0 || memchr(line, '\r', len) != NULL ||
	    memchr(line, '\n', len) != NULL || memchr(line, '\0', len) != NULL)
		return 0;			/* malformed: ignored */

	if ((buf = malloc(nlen + 1 + vlen + 1)) == NULL)
		return -1;
	memcpy(buf, line, nlen);
	buf[nlen] = '\0';
	memcpy(buf + nlen + 1, v, vlen);
	buf[nlen + 1 + vlen] = '\0';
	rc = hl_add(headers, buf, buf + nlen + 1);
	free(buf);
	return rc;
}

/* Whether line is the header name: ..., ignoring case. */
static int
line_names(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/* 1*DIGIT, without sign, space or list (RFC 9110 8.6), that fits. */
static int
valid_length(const char *v, size_t len)
{
	size_t digits = 0;

	while (len > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	while (digits < len && isdigit((unsigned char)v[digits]))
		digits++;
	return digits > 0 && digits == len && digits <= MAX_LENGTH_DIGITS;
}

/*
 * RFC 9112 6.3: a response whose length the next hop could read another
 * way (two Content-Lengths, one with Transfer-Encoding, one that is not a
 * number) is refused whole rather than repaired. curl has already taken
 * what it could from the line; refusing it here aborts the transfer
 * before any of the body is used. 0 or -1 with f->framing set.
 */
static int
check_framing(struct upstream_fetch *f, const char *line, size_t len)
{
	const char *what = NULL;
	size_t n = sizeof("Content-Length:") - 1;

	if (line_names(line, len, "Content-Length")) {
		if (++f->lengths > 1)
			what = "two Content-Length lines";
		else if (!valid_length(line + n, len - n))
			what = "Content-Length is not a number";
	} else if (line_names(line, len, "Transfer-Encoding"))
		f->coded = 1;
	if (what == NULL && f->coded && f->lengths > 0)
		what = "Transfer-Encoding with Content-Length";
	if (what == NULL)
		return 0;
	copy_text(f->framing, sizeof(f->framing), what);
	return -1;
}

/* A new status line: forget an interim (1xx) response's head. */
static enum abort_reason
head_begins(struct upstream_fetch *f)
{
	if (!listener_ok(f))
		return ABORT_LISTENER;
	hl_free(&f->resp->headers);
	f->header_bytes = 0;
	f->header_lines = f->lengths = f->coded = 0;
	f->headers_done = 0;
	return ABORT_NONE;
}

/* The end of a header block; only a 1xx one is followed by more. */
static void
head_ends(struct upstream_fetch *f)
{
	long code = 0;

	curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200)
		f->headers_done = 1;
	else if (code != 100 && code != 101 && f->on_data != NULL) {
		f->resp->status = (int)code;	/* an interim head */
		(void)f->on_data(f->resp, NULL, f->data_arg);
		f->resp->status = 0;
	}
}

/* One field line of the head, its line end cut; why it ends the fetch. */
static enum abort_reason
head_line(struct upstream_fetch *f, const char *data, size_t len)
{
	/* A cache entry holds so many; a longer response is an error, not a
	 * response served and silently never stored. */
	if (f->max_headers > 0 && ++f->header_lines > f->max_headers)
		return ABORT_HEADER_LINES;
	if (data[0] == ' ' || data[0] == '\t') {
		/* obs-fold: RFC 9112 5.2 lets a proxy reject it or unfold
		 * it; a line dropped would change the header it continues. */
		copy_text(f->framing, sizeof(f->framing),
		    "obs-fold (a header line starts with whitespace)");
		return ABORT_FRAMING;
	}
	if (check_framing(f, data, len) == -1)
		return ABORT_FRAMING;
	if (add_header_line(&f->resp->headers, data, len) == -1)
		return ABORT_NO_MEMORY;
	return ABORT_NONE;
}

/* CURLOPT_HEADERFUNCTION: curl passes one whole header line per call. */
static size_t
on_header(char *data, size_t size, size_t n, void *arg)
{
	struct upstream_fetch *f = arg;
	size_t total = size * n, len = total;

	assert(f->magic == FETCH_MAGIC);
	f->resp->received = 1;
	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		if ((f->abort = head_begins(f)) != ABORT_NONE)
			return 0;
		return total;
	}
	if (f->headers_done)
		return total;			/* trailers: not merged */
	f->header_bytes += len;
	if (f->header_bytes > MAX_HEADER_BYTES) {
		f->abort = ABORT_HEADERS;
		return 0;
	}
	while (len > 0 && is_space(data[len - 1]))
		len--;
	if (len == 0)
		head_ends(f);
	else if ((f->abort = head_line(f, data, len)) != ABORT_NONE)
		return 0;
	return total;
}

/* CURLOPT_WRITEFUNCTION */
static size_t
on_body(char *data, size_t size, size_t n, void *arg)
{
	struct upstream_fetch *f = arg;
	size_t len = size * n;

	assert(f->magic == FETCH_MAGIC);
	if (f->on_data != NULL) {
		/* Handed over once libcurl returns (hand_over()). A body
		 * kept whole has max_body_bytes as its bound. */
		if (!f->streamed && f->max_body > 0 &&
		    len > f->max_body - f->resp->body_bytes) {
			f->abort = ABORT_TOO_BIG;
			return 0;
		}
		if (evbuffer_add(f->pending, data, len) == -1) {
			f->abort = ABORT_NO_MEMORY;
			return 0;
		}
		f->resp->body_bytes += len;
		if (!f->head_done)
			f->head_due = 1;
		if (!f->ready && !f->later) {
			TAILQ_INSERT_TAIL(&f->up->ready, f, ready_entry);
			f->ready = 1;
		}
		return len;
	}
	if (f->max_body > 0 &&
	    len > f->max_body - evbuffer_get_length(f->resp->body)) {
		f->abort = ABORT_TOO_BIG;
		return 0;
	}
	if (evbuffer_add(f->resp->body, data, len) == -1) {
		f->abort = ABORT_NO_MEMORY;
		return 0;
	}
	return len;
}

/* ---- starting a fetch ------------------------------------------------- */

static int
header_is(const char *name, const char *want)
{
	return strcasecmp(name, want) == 0;
}

static int
append_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *l;

	if ((l = curl_slist_append(*list, line)) == NULL)
		return -1;
	*list = l;
	return 0;
}

/*
 * The caller's headers as given, nothing more: curl would add an Accept
 * header and, with a body, a form Content-Type; an empty "Name:" line stops
 * it. "Expect:" stops 100-continue (the whole body is already here).
 */
static int
build_headers(struct upstream_fetch *f, const struct upstream_request *req)
{
	const struct hfield *kv;
	int has_accept = 0, has_type = 0;
	char *line;

	if (req->headers != NULL) {
		HL_FOREACH(kv, req->headers) {
			if (kv->key[0] == '\0' || strpbrk(kv->key, ":\r\n") ||
			    strpbrk(kv->value, "\r\n")) {
				log_warn("upstream: malformed request header "
				    "not sent");
				continue;
			}
			if (header_is(kv->key, "Expect"))
				continue;
			has_accept |= header_is(kv->key, "Accept");
			has_type |= header_is(kv->key, "Content-Type");
			/* "Name;" is how curl sends an empty value. */
			if (kv->value[0] == '\0') {
				if (asprintf(&line, "%s;", kv->key) == -1)
					return -1;
			} else if (asprintf(&line, "%s: %s", kv->key,
			    kv->value) == -1)
				return -1;
			if (append_header(&f->req_headers, line) == -1) {
				free(line);
				return -1;
			}
			free(line);
		}
	}
	if (!has_accept && append_header(&f->req_headers, "Accept:") == -1)
		return -1;
	if (!has_type && append_header(&f->req_headers, "Content-Type:") == -1)
		return -1;
	if (append_header(&f->req_headers, "Expect:") == -1)
		return -1;
	return 0;
}

/* An RFC 9110 token: a method goes into the request line verbatim. */
static int
is_token(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) &&
		    strchr("!#$%&'*+-.^_`|~", *s) == NULL)
			return 0;
	return 1;
}

/* RFC 9110 9.2.2; an unknown method is taken as not idempotent. */
static int
idempotent(const char *m)
{
	static const char *const safe[] = {
		"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE",
	};

	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (strcmp(m, safe[i]) == 0)
			return 1;
	return 0;
}

/* HEAD never sends a body; any other method sends one if given. */
static int
set_method(CURL *e, const struct upstream_request *req)
{
	const char *m = req->method != NULL ? req->method : "GET";
	int bad = 0;

	if (!is_token(m)) {
		log_warn("upstream: invalid method");
		return -1;
	}
	if (strcmp(m, "HEAD") == 0)
		return curl_easy_setopt(e, CURLOPT_NOBODY, 1L) != CURLE_OK ?
		    -1 : 0;
	if (strcmp(m, "GET") == 0 && req->body == NULL)
		return curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) != CURLE_OK ?
		    -1 : 0;
	/*
	 * curl resends a request whose reused connection died before any
	 * response byte came back ("Connection died, retrying a fresh
	 * connect"), up to five times. The upstream may have acted on it all
	 * the same, so one that is not idempotent goes out on a connection of
	 * its own, which curl never retries: at most once, else a 502.
	 */
	if (!idempotent(m))
		bad |= curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L) !=
		    CURLE_OK;
	if (strcmp(m, "POST") != 0)
		bad |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m) !=
		    CURLE_OK;
	if (strcmp(m, "POST") == 0 || req->body != NULL) {
		/* COPYPOSTFIELDS copies; the size must be set first. */
		bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)req->body_len) != CURLE_OK;
		bad |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS,
		    req->body != NULL ? req->body : "") != CURLE_OK;
	}
	return bad ? -1 : 0;
}

static int
configure(struct upstream_fetch *f, const struct upstream_request *req)
{
	CURL *e = f->easy;
	int bad = 0;
	int head = req->method != NULL && strcmp(req->method, "HEAD") == 0;

	bad |= curl_easy_setopt(e, CURLOPT_URL, req->url) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PRIVATE, f) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->errbuf) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
	/* A proxy passes bodies and paths through untouched. */
	bad |= curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L) !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, f->req_headers) !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) !=
	    CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HEADERDATA, f) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
	/* libcurl's default too: no Nagle stall on the upstream side. */
	bad |= curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, f) != CURLE_OK;
	if (req->connect_timeout_ms > 0)
		bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
		    clamp_ms(req->connect_timeout_ms)) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
	    clamp_ms(req->timeout_ms)) != CURLE_OK;
	/* Fails early on a Content-Length over the limit; on_body enforces
	 * it for every body. HEAD's Content-Length describes no body. */
	if (req->max_body_bytes > 0 && !head && req->on_data == NULL)
		bad |= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
		    (curl_off_t)req->max_body_bytes) != CURLE_OK;
	if (req->abstract_socket != NULL) {
		bad |= curl_easy_setopt(e, CURLOPT_ABSTRACT_UNIX_SOCKET,
		    f->socket_name) != CURLE_OK;
		bad |= curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION,
		    on_sockopt) != CURLE_OK;
		bad |= curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, f) != CURLE_OK;
	}
	if (set_method(e, req) == -1)
		bad = 1;
	return bad ? -1 : 0;
}

struct upstream_fetch *
upstream_fetch(struct upstream *up, const struct upstream_request *req,
    upstream_done_cb *cb, void *arg)
{
	struct upstream_fetch *f = NULL;

	assert(up != NULL && up->magic == UPSTREAM_MAGIC && !up->dying);
	assert(req != NULL && req->url != NULL && cb != NULL);
	assert(req->body != NULL || req->body_len == 0);

	if ((f = calloc(1, sizeof(*f))) == NULL)
		goto fail;
	f->magic = FETCH_MAGIC;
	f->up = up;
	f->cb = cb;
	f->arg = arg;
	f->max_body = req->max_body_bytes;
	f->max_headers = up->max_headers;
	f->on_data = req->on_data;
	f->data_arg = req->data_arg;
	f->keep_body = req->keep_body;
	f->new_socket = CURL_SOCKET_BAD;
	if (req->abstract_socket != NULL) {
		if (strlen(req->abstract_socket) > SOCKET_NAME_MAX)
			goto fail;
		copy_text(f->socket_name, sizeof(f->socket_name),
		    req->abstract_socket);
		f->listen_pid = req->listen_pid;
	}
	if (f->on_data != NULL && (f->pending = evbuffer_new()) == NULL)
		goto fail;
	f->start_us = util_mono_us();
	if ((f->resp = response_new()) == NULL)
		goto fail;
	if ((f->easy = curl_easy_init()) == NULL)
		goto fail;
	if (build_headers(f, req) == -1 || configure(f, req) == -1)
		goto fail;

	TAILQ_INSERT_TAIL(&up->fetches, f, entry);
	f->linked = 1;
	up->active++;
	/* Arms the timer at 0 ms: the transfer starts from the loop, so the
	 * callback never runs before upstream_fetch returns. */
	if (curl_multi_add_handle(up->multi, f->easy) != CURLM_OK)
		goto fail;
	f->in_multi = 1;
	return f;

fail:
	log_warn("upstream: cannot start a fetch of %s", req->url);
	fetch_free(&f);
	return NULL;
}

void
upstream_resume(struct upstream_fetch *f)
{
	struct timeval now = { 0, 0 };

	assert(f->magic == FETCH_MAGIC);
	if (!f->paused)
		return;
	f->paused = 0;
	/* libcurl may hand over what it held back at once: from the timer's
	 * callback, never from inside this call. */
	curl_easy_pause(f->easy, CURLPAUSE_CONT);
	evtimer_add(f->up->timer, &now);
}

void
upstream_cancel(struct upstream_fetch **fp)
{
	if (fp == NULL || *fp == NULL)
		return;
	assert((*fp)->magic == FETCH_MAGIC);
	fetch_free(fp);
}

int
upstream_received(const struct upstream_fetch *f)
{
	return f->resp != NULL && f->resp->received;
}

int
upstream_active(const struct upstream *up)
{
	assert(up->magic == UPSTREAM_MAGIC);
	return up->active;
}

void
upstream_set_max_headers(struct upstream *up, int n)
{
	assert(up->magic == UPSTREAM_MAGIC && n >= 0);
	up->max_headers = n;
}

const struct upstream_counters *
upstream_counters(const struct upstream *up)
{
	assert(up->magic == UPSTREAM_MAGIC);
	return &up->counters;
}

void
upstream_counters_add(struct upstream_counters *dst,
    const struct upstream_counters *src)
{
	dst->too_many_headers += src->too_many_headers;
	dst->bad_framing += src->bad_framing;
}

/* ---- the upstream ----------------------------------------------------- */

static void
destroy(struct upstream *up)
{
	struct sock *sk;

	assert(TAILQ_EMPTY(&up->fetches) && up->busy == 0);
	/* May report CURL_POLL_REMOVE for cached connections. */
	if (up->multi != NULL)
		curl_multi_cleanup(up->multi);
	while ((sk = TAILQ_FIRST(&up->socks)) != NULL)
		sock_free(up, &sk);
	if (up->timer != NULL)
		event_free(up->timer);
	if (up->reap != NULL)
		event_free(up->reap);
	if (up->later_ev != NULL)
		event_free(up->later_ev);
	up->magic = 0;
	free(up);
}

struct upstream *
upstream_new(struct event_base *base)
{
	struct upstream *up;
	CURLM *m;
	int bad = 0;

	if (global_init() == -1) {
		log_error("upstream: curl_global_init failed");
		return NULL;
	}
	if ((up = calloc(1, sizeof(*up))) == NULL)
		return NULL;
	up->magic = UPSTREAM_MAGIC;
	up->base = base;
	TAILQ_INIT(&up->fetches);
	TAILQ_INIT(&up->ready);
	TAILQ_INIT(&up->later);
	TAILQ_INIT(&up->socks);
	if ((up->timer = evtimer_new(base, on_timer, up)) == NULL)
		goto fail;
	PRIO_SET(up->timer, PRIO_BACKEND);
	if ((up->reap = event_new(base, -1, 0, on_reap, up)) == NULL)
		goto fail;
	if ((up->later_ev = event_new(base, -1, 0, on_later, up)) == NULL)
		goto fail;
	if ((up->multi = m = curl_multi_init()) == NULL)
		goto fail;
	bad |= curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_curl_socket) !=
	    CURLM_OK;
	bad |= curl_multi_setopt(m, CURLMOPT_SOCKETDATA, up) != CURLM_OK;
	bad |= curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_curl_timer) !=
	    CURLM_OK;
	bad |= curl_multi_setopt(m, CURLMOPT_TIMERDATA, up) != CURLM_OK;
	bad |= curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)MAX_CONNECTS) !=
	    CURLM_OK;
	if (bad)
		goto fail;
	return up;

fail:
	log_error("upstream: cannot set up libcurl");
	destroy(up);
	return NULL;
}

void
upstream_free(struct upstream **upp)
{
	struct upstream *up;
	struct upstream_fetch *f;

	if (upp == NULL || (up = *upp) == NULL)
		return;
	assert(up->magic == UPSTREAM_MAGIC && !up->dying);
	*upp = NULL;
	while ((f = TAILQ_FIRST(&up->fetches)) != NULL)
		fetch_free(&f);
	if (up->busy > 0) {
		up->dying = 1;		/* the running callback frees it */
		return;
	}
	destroy(up);
}
