/* SPDX-License-Identifier: MIT */
/*
 * stampede: the benchmark's load client for bursts, where Python threads are
 * too noisy for millisecond figures.
 *
 *   stampede [-n N] [-j THREADS] [-H HOST] [-h HEADER] [-T MS] [-b BYTES]
 *            [-l] [-d] TARGETS PATH
 *	Opens N connections (connection i goes to TARGETS[i % count], a comma
 *	separated list of host:port), spread over THREADS client threads
 *	(default 1). When every connection is open, a pthread barrier releases
 *	the threads; each sends a GET of PATH on all of its connections, then
 *	reads the responses as they come (epoll), timing each request from its
 *	send to its last byte (latency) and to the arrival of its first body
 *	byte (ttfb). Prints one JSON object: count, failures, statuses,
 *	latency and ttfb percentiles in microseconds (p50, p99, max, min), how
 *	far apart the requests were sent (send_spread_us), when the first was
 *	sent (start_mono: CLOCK_MONOTONIC, s, which every process on the
 *	machine shares), when the last response arrived (last_done_at, wall
 *	clock, s), the smallest and largest body, a tally of HEADER's values,
 *	and with -l every request's latency, ttfb, first response byte
 *	(head_us), body length and wall-clock completion. With -d, request i
 *	asks for PATH<i> instead: N distinct keys at once.
 *
 *   stampede -w KEYS [-c CONNS] [-H HOST] [-T MS] [-a CODINGS] TARGET PREFIX
 *	Walk mode, to warm a cache: GETs PREFIX0 .. PREFIX<KEYS-1> over CONNS
 *	keep-alive connections (a thread each) and prints count, failures,
 *	statuses, elapsed_ms.
 *
 *	With -a, every request says Accept-Encoding: CODINGS (the body is
 *	counted as it comes, coded or not).
 *
 * Why not a thread per request: on a 2-core machine, waking 200 blocked
 * threads costs the client itself ~10 ms per burst, more than the figures
 * being measured. One thread sends 200 requests in about a millisecond and
 * reads 200 ready sockets in less.
 *
 * Bodies are counted, not kept: only a response's head is buffered, a
 * chunked body is decoded as it streams through a read buffer, and the
 * body of a response with a Content-Length is discarded in the kernel
 * (recv with MSG_TRUNC, tcp(7)), so 200 large bodies cost the client
 * neither memory nor copies.
 *
 * A request fails when it cannot connect, send or read a whole response
 * within -T milliseconds (default 30000), when its status is not 200, or,
 * with -b, when its body is not BYTES long.
 * The exit status is 0 when the client ran (even if requests failed), 2 on
 * bad usage or when the client itself could not run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_TARGETS		16
#define MAX_CONNS		4096
#define MAX_THREADS		64
#define MAX_HEAD_BYTES		(64 << 10)
#define HEAD_BUF_START		4096
#define READ_BUF_BYTES		(256 << 10)
#define CHUNK_LINE_MAX		256	/* a chunk-size or trailer line */
#define REQUEST_MAX		2048
#define HEADER_VALUE_MAX	128
#define THREAD_STACK_BYTES	(256 << 10)
#define EPOLL_BATCH		256
#define DEFAULT_TIMEOUT_MS	30000
#define DEFAULT_CONNS		200
#define DEFAULT_WALK_CONNS	8

enum outcome { OK, FAIL_CONNECT, FAIL_SEND, FAIL_READ, FAIL_TIMEOUT,
    FAIL_PARSE, FAIL_STATUS, FAIL_BODY, OUTCOME_COUNT };

static const char *outcome_names[OUTCOME_COUNT] = { "ok", "connect", "send",
    "read", "timeout", "parse", "status", "body" };

struct target {
	struct sockaddr_storage	 addr;
	socklen_t		 addrlen;
};

struct options {
	struct target	 targets[MAX_TARGETS];
	int		 ntargets;
	const char	*path;		/* or the prefix in walk mode */
	const char	*host;		/* Host header; default the first target */
	const char	*tally_header;
	const char	*accept;	/* -a: Accept-Encoding, or NULL */
	int		 conns;
	int		 threads;
	int		 timeout_ms;
	int		 list;
	long long	 body_bytes;	/* -b: the body every response must have */
	long		 walk_keys;	/* 0: stampede mode */
	int		 distinct;	/* -d: request i asks for PATH<i> */
	char		 default_host[256];
};

enum framing { FRAME_UNKNOWN, FRAME_LENGTH, FRAME_CHUNKED, FRAME_EOF,
    FRAME_NONE };

/* Where a chunked body is: RFC 9112 section 7.1. */
enum chunk_state { CHUNK_SIZE, CHUNK_DATA, CHUNK_DATA_END, CHUNK_TRAILER };

/* One response being read: its head, what the head said, and how much of
 * the body has gone by. */
struct response {
	char		*buf;		/* the head, until it is complete */
	size_t		 len, cap;
	size_t		 head_len;	/* 0 until the head is complete */
	uint64_t	 body_len;	/* FRAME_LENGTH: announced */
	uint64_t	 body_seen;	/* body bytes so far (chunked: decoded) */
	enum framing	 framing;
	enum chunk_state chunk;
	uint64_t	 chunk_left;	/* CHUNK_DATA */
	char		 line[CHUNK_LINE_MAX];
	size_t		 line_len;
	int		 status;
	int		 keep_alive;
	char		 tally[HEADER_VALUE_MAX];
};

enum parse { PARSE_MORE, PARSE_DONE, PARSE_BAD };

/* One request of a stampede. */
struct request {
	int		 fd;
	int		 target;
	enum outcome	 outcome;
	int		 done;
	int		 status;
	int64_t		 sent_ns;	/* monotonic */
	int64_t		 head_ns;	/* monotonic: first byte of the response */
	int64_t		 body_ns;	/* monotonic: first body byte */
	int64_t		 latency_us;
	double		 done_at;	/* wall clock, seconds */
	struct response	 resp;
};

struct worker {
	const struct options	*opt;
	pthread_barrier_t	*barrier;
	int			 index;
	struct request		*reqs;		/* stampede: the whole array */
	/* walk mode */
	long			 walk_count, walk_failures;
	long			 walk_status[6];	/* 1xx..5xx, other */
};

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double
wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
parse_target(const char *text, struct target *t)
{
	char host[256], *colon;
	struct addrinfo hints, *res;
	size_t n = strlen(text);

	if (n == 0 || n >= sizeof(host))
		return -1;
	memcpy(host, text, n + 1);
	if ((colon = strrchr(host, ':')) == NULL)
		return -1;
	*colon = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -1;
	memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
	t->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* A blocking connection with send/receive timeouts, or -1. */
static int
connect_to(const struct target *t, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int fd, one = 1;

	if ((fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)&t->addr, t->addrlen) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
send_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = send(fd, p, len, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void
format_request(char *buf, size_t size, const char *path, long key,
    const struct options *opt, int keep_alive)
{
	char target[REQUEST_MAX / 2], accept[REQUEST_MAX / 4] = "";

	if (key >= 0)
		snprintf(target, sizeof(target), "%s%ld", path, key);
	else
		snprintf(target, sizeof(target), "%s", path);
	if (opt->accept != NULL)
		snprintf(accept, sizeof(accept), "Accept-Encoding: %s\r\n",
		    opt->accept);
	snprintf(buf, size, "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: corral-bench-stampede\r\n%s%s\r\n", target, opt->host,
	    accept, keep_alive ? "" : "Connection: close\r\n");
}

/* -- responses ----------------------------------------------------------- */

/* The value of header NAME in the head [p, end), or NULL; sets *vlen. */
static const char *
header_value(const char *p, const char *end, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *eol, *v;

	while (p < end && (eol = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if ((size_t)(eol - p) > nlen && p[nlen] == ':' &&
		    strncasecmp(p, name, nlen) == 0) {
			v = p + nlen + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(eol - v);
			while (*vlen > 0 && (v[*vlen - 1] == '\r' ||
			    v[*vlen - 1] == ' '))
				(*vlen)--;
			return v;
		}
		p = eol + 1;
	}
	return NULL;
}

static void
response_reset(struct response *r)
{
	r->len = 0;
	r->head_len = 0;
	r->body_len = 0;
	r->body_seen = 0;
	r->framing = FRAME_UNKNOWN;
	r->chunk = CHUNK_SIZE;
	r->chunk_left = 0;
	r->line_len = 0;
	r->status = 0;
	r->keep_alive = 1;
	r->tally[0] = '\0';
}

/* Reads what the head [r->buf, r->buf + r->head_len) says. */
static enum parse
parse_head(struct response *r, const char *tally_header)
{
	const char *v, *end = r->buf + r->head_len;
	size_t vlen;

	r->buf[r->len] = '\0';
	if (sscanf(r->buf, "HTTP/%*d.%*d %d", &r->status) != 1)
		return PARSE_BAD;
	if ((v = header_value(r->buf, end, "Connection", &vlen)) != NULL &&
	    vlen == 5 && strncasecmp(v, "close", 5) == 0)
		r->keep_alive = 0;
	if (tally_header != NULL &&
	    (v = header_value(r->buf, end, tally_header, &vlen)) != NULL) {
		if (vlen >= sizeof(r->tally))
			vlen = sizeof(r->tally) - 1;
		memcpy(r->tally, v, vlen);
		r->tally[vlen] = '\0';
	}
	/* HEAD is never sent, so every other response has a body. */
	if (r->status == 204 || r->status == 304 || r->status / 100 == 1)
		r->framing = FRAME_NONE;
	else if ((v = header_value(r->buf, end, "Transfer-Encoding",
	    &vlen)) != NULL && vlen >= 7 &&
	    strncasecmp(v + vlen - 7, "chunked", 7) == 0)
		r->framing = FRAME_CHUNKED;
	else if ((v = header_value(r->buf, end, "Content-Length",
	    &vlen)) != NULL) {
		r->framing = FRAME_LENGTH;
		r->body_len = strtoull(v, NULL, 10);
	} else
		r->framing = FRAME_EOF;
	return PARSE_DONE;
}

/*
 * Adds the head's part of [p, p + n) to r->buf; *used: how many of the n
 * bytes that was. PARSE_DONE once the head is complete and read.
 */
static enum parse
head_feed(struct response *r, const char *p, size_t n, size_t *used,
    const char *tally_header)
{
	size_t take = n, from = r->len > 3 ? r->len - 3 : 0, cap;
	const char *he;
	char *nb;

	*used = 0;
	if (r->len + take > MAX_HEAD_BYTES)
		take = MAX_HEAD_BYTES - r->len;
	if (r->len + take + 1 > r->cap) {
		for (cap = r->cap ? r->cap : HEAD_BUF_START;
		    cap < r->len + take + 1; cap *= 2)
			;
		if ((nb = realloc(r->buf, cap)) == NULL)
			return PARSE_BAD;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, take);
	r->len += take;
	if ((he = memmem(r->buf + from, r->len - from, "\r\n\r\n", 4)) == NULL) {
		*used = take;
		return r->len >= MAX_HEAD_BYTES ? PARSE_BAD : PARSE_MORE;
	}
	r->head_len = (size_t)(he - r->buf) + 4;
	*used = take - (r->len - r->head_len);	/* the rest is body */
	r->len = r->head_len;
	return parse_head(r, tally_header);
}

/*
 * Takes one line of a chunked body's framing into r->line; *used as in
 * head_feed. PARSE_DONE when the line is complete (without its CRLF).
 */
static enum parse
line_feed(struct response *r, const char *p, size_t n, size_t *used)
{
	const char *eol = memchr(p, '\n', n);
	size_t take = eol != NULL ? (size_t)(eol - p) + 1 : n;

	*used = take;
	if (r->line_len + take >= sizeof(r->line))
		return PARSE_BAD;
	memcpy(r->line + r->line_len, p, take);
	r->line_len += take;
	if (eol == NULL)
		return PARSE_MORE;
	r->line_len--;				/* the LF */
	if (r->line_len > 0 && r->line[r->line_len - 1] == '\r')
		r->line_len--;
	r->line[r->line_len] = '\0';
	return PARSE_DONE;
}

/* Decodes [p, p + n) of a chunked body; *used as in head_feed. */
static enum parse
chunked_feed(struct response *r, const char *p, size_t n, size_t *used)
{
	size_t off = 0, k;
	uint64_t take;
	char *endnum;
	enum parse lp;

	while (off < n) {
		if (r->chunk == CHUNK_DATA) {
			take = r->chunk_left < n - off ? r->chunk_left : n - off;
			r->body_seen += take;
			r->chunk_left -= take;
			off += (size_t)take;
			if (r->chunk_left == 0)
				r->chunk = CHUNK_DATA_END;
			continue;
		}
		lp = line_feed(r, p + off, n - off, &k);
		off += k;
		if (lp != PARSE_DONE) {
			*used = off;
			return lp;
		}
		r->line_len = 0;
		switch (r->chunk) {
		case CHUNK_SIZE:
			r->chunk_left = strtoull(r->line, &endnum, 16);
			if (endnum == r->line)
				return PARSE_BAD;
			r->chunk = r->chunk_left > 0 ? CHUNK_DATA :
			    CHUNK_TRAILER;
			break;
		case CHUNK_DATA_END:
			if (r->line[0] != '\0')
				return PARSE_BAD;
			r->chunk = CHUNK_SIZE;
			break;
		case CHUNK_TRAILER:
			if (r->line[0] == '\0') {	/* the last, empty line */
				*used = off;
				return PARSE_DONE;
			}
			break;
		case CHUNK_DATA:
			break;
		}
	}
	*used = off;
	return PARSE_MORE;
}

/*
 * Feeds n bytes read from the connection to the response. PARSE_DONE once
 * it is complete (bytes after it are ignored: no request is pipelined).
 */
static enum parse
response_feed(struct response *r, const char *p, size_t n,
    const char *tally_header)
{
	size_t used;
	uint64_t left;
	enum parse hp;

	if (r->head_len == 0) {
		if ((hp = head_feed(r, p, n, &used, tally_header)) != PARSE_DONE)
			return hp;
		p += used;
		n -= used;
	}
	switch (r->framing) {
	case FRAME_NONE:
		return PARSE_DONE;
	case FRAME_LENGTH:
		left = r->body_len - r->body_seen;
		r->body_seen += n < left ? n : left;
		return r->body_seen == r->body_len ? PARSE_DONE : PARSE_MORE;
	case FRAME_CHUNKED:
		return chunked_feed(r, p, n, &used);
	case FRAME_EOF:
		r->body_seen += n;
		return PARSE_MORE;
	case FRAME_UNKNOWN:
		break;
	}
	return PARSE_BAD;
}

/* The peer closed: is the response complete? */
static enum parse
response_eof(struct response *r)
{
	if (r->head_len > 0 && r->framing == FRAME_EOF) {
		r->keep_alive = 0;
		return PARSE_DONE;
	}
	return PARSE_BAD;
}

/*
 * Reads from fd for r into buf. Once the head is read, the body of a
 * response with a Content-Length is only counted: the kernel discards it
 * (MSG_TRUNC) instead of copying it, and no byte past it is taken.
 */
static ssize_t
response_recv(int fd, const struct response *r, char *buf, size_t size)
{
	uint64_t left;

	if (r->head_len > 0 && r->framing == FRAME_LENGTH &&
	    (left = r->body_len - r->body_seen) > 0) {
		if (left < size)
			size = (size_t)left;
		return recv(fd, buf, size, MSG_TRUNC);
	}
	return recv(fd, buf, size, 0);
}

/* A client thread's read buffer; without one the client cannot run. */
static char *
read_buffer(void)
{
	char *buf;

	if ((buf = malloc(READ_BUF_BYTES)) == NULL) {
		fprintf(stderr, "stampede: out of memory\n");
		exit(2);
	}
	return buf;
}

/* -- stampede mode --------------------------------------------------------- */

/* Is q's response whole (whatever its status or body)? */
static int
complete(const struct request *q)
{
	return q->outcome == OK || q->outcome == FAIL_STATUS ||
	    q->outcome == FAIL_BODY;
}

static void
finish(struct request *q, enum outcome outcome)
{
	q->done = 1;
	q->outcome = outcome;
	q->latency_us = (mono_ns() - q->sent_ns) / 1000;
	q->done_at = wall_s();
	q->status = q->resp.status;
	if (q->fd != -1) {
		close(q->fd);	/* also leaves the epoll set */
		q->fd = -1;
	}
}

/*
 * Reads once from q's socket into buf (epoll is level-triggered, so a
 * socket that has more is seen again, after the others that are ready);
 * finishes q when its response is complete.
 */
static void
on_readable(const struct options *opt, struct request *q, char *buf,
    size_t size)
{
	struct response *r = &q->resp;
	enum parse p;
	int64_t now;
	ssize_t n;

	do
		n = response_recv(q->fd, r, buf, size);
	while (n == -1 && errno == EINTR);
	if (n == -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			finish(q, FAIL_READ);
		return;
	}
	now = mono_ns();
	if (n > 0 && q->head_ns == 0)
		q->head_ns = now;
	p = n == 0 ? response_eof(r) :
	    response_feed(r, buf, (size_t)n, opt->tally_header);
	if (q->body_ns == 0 && r->head_len > 0 &&
	    (r->body_seen > 0 || p == PARSE_DONE))
		q->body_ns = now;
	if (p == PARSE_DONE) {
		if (r->status != 200)
			finish(q, FAIL_STATUS);
		else if (opt->body_bytes >= 0 &&
		    r->body_seen != (uint64_t)opt->body_bytes)
			finish(q, FAIL_BODY);
		else
			finish(q, OK);
	} else if (p == PARSE_BAD)
		finish(q, n == 0 ? FAIL_READ : FAIL_PARSE);
}

static void *
stampede_thread(void *arg)
{
	struct worker *w = arg;
	const struct options *opt = w->opt;
	struct epoll_event ev, events[EPOLL_BATCH];
	char req[REQUEST_MAX], *buf;
	size_t reqlen;
	int64_t deadline;
	int i, k, ep, pending = 0;

	format_request(req, sizeof(req), opt->path, -1, opt, 0);
	reqlen = strlen(req);
	buf = read_buffer();
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (i = w->index; i < opt->conns; i += opt->threads) {
		struct request *q = &w->reqs[i];

		q->target = i % opt->ntargets;
		q->fd = connect_to(&opt->targets[q->target], opt->timeout_ms);
		if (q->fd != -1)
			fcntl(q->fd, F_SETFL, fcntl(q->fd, F_GETFL) | O_NONBLOCK);
	}
	pthread_barrier_wait(w->barrier);

	for (i = w->index; i < opt->conns; i += opt->threads) {
		struct request *q = &w->reqs[i];

		q->sent_ns = mono_ns();
		if (q->fd == -1 || ep == -1) {
			finish(q, FAIL_CONNECT);
			continue;
		}
		if (opt->distinct) {
			format_request(req, sizeof(req), opt->path, i, opt, 0);
			reqlen = strlen(req);
		}
		/* A request this small fits an empty socket buffer whole. */
		if (send(q->fd, req, reqlen, MSG_NOSIGNAL) != (ssize_t)reqlen) {
			finish(q, FAIL_SEND);
			continue;
		}
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = q;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, q->fd, &ev) == -1) {
			finish(q, FAIL_READ);
			continue;
		}
		pending++;
	}

	deadline = mono_ns() + (int64_t)opt->timeout_ms * 1000000;
	while (pending > 0) {
		int64_t left = (deadline - mono_ns()) / 1000000;
		int n;

		if (left <= 0)
			break;
		n = epoll_wait(ep, events, EPOLL_BATCH, (int)left);
		if (n == -1 && errno != EINTR)
			break;
		for (k = 0; k < n; k++) {
			struct request *q = events[k].data.ptr;

			if (q->done)
				continue;
			on_readable(opt, q, buf, READ_BUF_BYTES);
			if (q->done)
				pending--;
		}
	}
	for (i = w->index; i < opt->conns; i += opt->threads)
		if (!w->reqs[i].done)
			finish(&w->reqs[i], FAIL_TIMEOUT);
	if (ep != -1)
		close(ep);
	free(buf);
	return NULL;
}

/* -- walk mode ----------------------------------------------------------- */

/*
 * Reads one response on a blocking socket, through buf: PARSE_DONE or
 * PARSE_BAD.
 */
static enum parse
read_blocking(int fd, struct response *r, char *buf, size_t size,
    int *timed_out)
{
	enum parse p;
	ssize_t n;

	response_reset(r);
	*timed_out = 0;
	for (;;) {
		n = response_recv(fd, r, buf, size);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			*timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
			return PARSE_BAD;
		}
		p = n == 0 ? response_eof(r) :
		    response_feed(r, buf, (size_t)n, NULL);
		if (p != PARSE_MORE)
			return p;
	}
}

static void *
walk_thread(void *arg)
{
	struct worker *w = arg;
	const struct options *opt = w->opt;
	struct response r = { 0 };
	char req[REQUEST_MAX], *buf;
	enum parse p;
	int fd = -1, tries, timed_out = 0;
	long key;

	buf = read_buffer();
	for (key = w->index; key < opt->walk_keys; key += opt->conns) {
		format_request(req, sizeof(req), opt->path, key, opt, 1);
		p = PARSE_BAD;
		/* A reused connection the server closed is retried once. */
		for (tries = 0; tries < 2; tries++) {
			int reused = fd != -1;

			if (fd == -1 && (fd = connect_to(&opt->targets[0],
			    opt->timeout_ms)) == -1)
				break;
			if (send_all(fd, req, strlen(req)) == 0)
				p = read_blocking(fd, &r, buf,
				    READ_BUF_BYTES, &timed_out);
			else
				p = PARSE_BAD;
			if (p != PARSE_DONE || !r.keep_alive) {
				close(fd);
				fd = -1;
			}
			if (p == PARSE_DONE || !reused || timed_out)
				break;
		}
		w->walk_count++;
		if (p != PARSE_DONE || r.status != 200)
			w->walk_failures++;
		if (p == PARSE_DONE)
			w->walk_status[r.status >= 100 && r.status < 600 ?
			    r.status / 100 - 1 : 5]++;
	}
	if (fd != -1)
		close(fd);
	free(r.buf);
	free(buf);
	return NULL;
}

/* -- driver and output ------------------------------------------------------ */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted values. */
static int64_t
percentile(const int64_t *sorted, int n, double p)
{
	long rank;

	if (n == 0)
		return 0;
	rank = (long)(p / 100.0 * n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static void
print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static int
spawn(pthread_t *tids, struct worker *workers, int n, void *(*fn)(void *))
{
	pthread_attr_t attr;
	int i;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
	for (i = 0; i < n; i++) {
		if (pthread_create(&tids[i], &attr, fn, &workers[i]) != 0) {
			fprintf(stderr, "stampede: cannot start thread %d\n", i);
			exit(2);
		}
	}
	pthread_attr_destroy(&attr);
	return 0;
}

/* Microseconds from a request's send to t (monotonic ns), or -1. */
static long long
since_sent_us(const struct request *q, int64_t t)
{
	return t != 0 ? (long long)((t - q->sent_ns) / 1000) : -1;
}

/* What the requests of a stampede add up to. */
struct summary {
	int64_t		*lat;		/* of the complete requests, sorted */
	int64_t		*ttfb;		/* of those with a body, sorted */
	int		 nlat, nttfb;
	int		 failures;
	int		 fail_by[OUTCOME_COUNT];
	uint64_t	 body_min, body_max;
	double		 last_done;	/* wall clock, seconds */
	int64_t		 first_sent, last_sent;	/* monotonic */
};

static void
summarize(const struct request *reqs, int n, struct summary *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->first_sent = INT64_MAX;
	s->body_min = UINT64_MAX;
	s->lat = calloc((size_t)n, sizeof(*s->lat));
	s->ttfb = calloc((size_t)n, sizeof(*s->ttfb));
	if (s->lat == NULL || s->ttfb == NULL) {
		fprintf(stderr, "stampede: out of memory\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {
		const struct request *q = &reqs[i];

		s->fail_by[q->outcome]++;
		if (q->outcome != OK)
			s->failures++;
		if (complete(q)) {
			s->lat[s->nlat++] = q->latency_us;
			if (q->body_ns != 0)
				s->ttfb[s->nttfb++] = since_sent_us(q, q->body_ns);
			if (q->done_at > s->last_done)
				s->last_done = q->done_at;
			if (q->resp.body_seen < s->body_min)
				s->body_min = q->resp.body_seen;
			if (q->resp.body_seen > s->body_max)
				s->body_max = q->resp.body_seen;
		}
		if (q->sent_ns < s->first_sent)
			s->first_sent = q->sent_ns;
		if (q->sent_ns > s->last_sent)
			s->last_sent = q->sent_ns;
	}
	qsort(s->lat, (size_t)s->nlat, sizeof(*s->lat), cmp_i64);
	qsort(s->ttfb, (size_t)s->nttfb, sizeof(*s->ttfb), cmp_i64);
	if (s->nlat == 0)
		s->body_min = 0;
}

/* Whether b answered like a: the same status, or (by_value) the same
 * value of the tallied header. */
static int
alike(const struct request *a, const struct request *b, int by_value)
{
	if (by_value)
		return b->status != 0 && strcmp(b->resp.tally, a->resp.tally) == 0;
	return b->status == a->status;
}

/* How many requests from i on answered like request i, or 0 when one
 * before i did (they were counted there). */
static int
count_alike(const struct request *reqs, int n, int i, int by_value)
{
	int k, count = 0;

	for (k = 0; k < i; k++)
		if (alike(&reqs[i], &reqs[k], by_value))
			return 0;
	for (k = i; k < n; k++)
		count += alike(&reqs[i], &reqs[k], by_value);
	return count;
}

/* The answered requests by status, or (by_value) by the tallied header's
 * value, in the order each first appears. */
static void
print_tally(const struct request *reqs, int n, int by_value)
{
	int i, j, count;

	for (i = 0, j = 0; i < n; i++) {
		if (reqs[i].status == 0 ||
		    (count = count_alike(reqs, n, i, by_value)) == 0)
			continue;
		printf("%s", j++ ? ", " : "");
		if (by_value)
			print_json_string(reqs[i].resp.tally);
		else
			printf("\"%d\"", reqs[i].status);
		printf(": %d", count);
	}
}

static void
print_latencies(const struct summary *s)
{
	printf(", \"p50_us\": %lld, \"p99_us\": %lld, \"max_us\": %lld, "
	    "\"min_us\": %lld, \"send_spread_us\": %lld, \"last_done_at\": %.6f",
	    (long long)percentile(s->lat, s->nlat, 50),
	    (long long)percentile(s->lat, s->nlat, 99),
	    (long long)(s->nlat ? s->lat[s->nlat - 1] : 0),
	    (long long)(s->nlat ? s->lat[0] : 0),
	    (long long)((s->last_sent - s->first_sent) / 1000), s->last_done);
	printf(", \"ttfb_p50_us\": %lld, \"ttfb_p99_us\": %lld, "
	    "\"ttfb_max_us\": %lld, \"ttfb_min_us\": %lld, "
	    "\"start_mono\": %.6f, \"body_bytes_min\": %llu, "
	    "\"body_bytes_max\": %llu",
	    (long long)percentile(s->ttfb, s->nttfb, 50),
	    (long long)percentile(s->ttfb, s->nttfb, 99),
	    (long long)(s->nttfb ? s->ttfb[s->nttfb - 1] : 0),
	    (long long)(s->nttfb ? s->ttfb[0] : 0),
	    (double)s->first_sent / 1e9, (unsigned long long)s->body_min,
	    (unsigned long long)s->body_max);
}

/* -l: every request, its send time from the first send. */
static void
print_requests(const struct request *reqs, int n, int64_t first_sent)
{
	int i;

	printf(", \"requests\": [");
	for (i = 0; i < n; i++)
		printf("%s{\"target\": %d, \"status\": %d, \"outcome\": "
		    "\"%s\", \"latency_us\": %lld, \"ttfb_us\": %lld, "
		    "\"head_us\": %lld, \"body_bytes\": %llu, "
		    "\"sent_us\": %lld, \"done_at\": %.6f}",
		    i ? ", " : "", reqs[i].target, reqs[i].status,
		    outcome_names[reqs[i].outcome],
		    (long long)reqs[i].latency_us,
		    since_sent_us(&reqs[i], reqs[i].body_ns),
		    since_sent_us(&reqs[i], reqs[i].head_ns),
		    (unsigned long long)reqs[i].resp.body_seen,
		    (long long)((reqs[i].sent_ns - first_sent) / 1000),
		    reqs[i].done_at);
	printf("]");
}

static void
print_stampede(const struct options *opt, const struct request *reqs)
{
	struct summary s;
	int i, j, n = opt->conns;

	summarize(reqs, n, &s);
	printf("{\"count\": %d, \"failures\": %d, \"failed_by\": {", n,
	    s.failures);
	for (i = 1, j = 0; i < OUTCOME_COUNT; i++)
		if (s.fail_by[i] > 0)
			printf("%s\"%s\": %d", j++ ? ", " : "", outcome_names[i],
			    s.fail_by[i]);
	printf("}, \"statuses\": {");
	print_tally(reqs, n, 0);
	printf("}");
	print_latencies(&s);
	if (opt->tally_header != NULL) {
		printf(", \"tally\": {");
		print_tally(reqs, n, 1);
		printf("}");
	}
	if (opt->list)
		print_requests(reqs, n, s.first_sent);
	printf("}\n");
	free(s.lat);
	free(s.ttfb);
}

static int
run_stampede(const struct options *opt)
{
	pthread_barrier_t barrier;
	pthread_t tids[MAX_THREADS];
	struct worker workers[MAX_THREADS];
	struct request *reqs;
	int i;

	if ((reqs = calloc((size_t)opt->conns, sizeof(*reqs))) == NULL) {
		fprintf(stderr, "stampede: out of memory\n");
		return 2;
	}
	for (i = 0; i < opt->conns; i++)
		reqs[i].fd = -1;
	pthread_barrier_init(&barrier, NULL, (unsigned)opt->threads);
	memset(workers, 0, sizeof(workers));
	for (i = 0; i < opt->threads; i++) {
		workers[i].opt = opt;
		workers[i].barrier = &barrier;
		workers[i].index = i;
		workers[i].reqs = reqs;
	}
	spawn(tids, workers, opt->threads, stampede_thread);
	for (i = 0; i < opt->threads; i++)
		pthread_join(tids[i], NULL);
	pthread_barrier_destroy(&barrier);
	print_stampede(opt, reqs);
	for (i = 0; i < opt->conns; i++)
		free(reqs[i].resp.buf);
	free(reqs);
	return 0;
}

static int
run_walk(const struct options *opt)
{
	pthread_t *tids;
	struct worker *workers;
	long count = 0, failures = 0, by[6] = { 0 };
	int64_t start;
	int i, k, n = opt->conns;

	tids = calloc((size_t)n, sizeof(*tids));
	workers = calloc((size_t)n, sizeof(*workers));
	if (tids == NULL || workers == NULL) {
		fprintf(stderr, "stampede: out of memory\n");
		return 2;
	}
	for (i = 0; i < n; i++) {
		workers[i].opt = opt;
		workers[i].index = i;
	}
	start = mono_ns();
	spawn(tids, workers, n, walk_thread);
	for (i = 0; i < n; i++) {
		pthread_join(tids[i], NULL);
		count += workers[i].walk_count;
		failures += workers[i].walk_failures;
		for (k = 0; k < 6; k++)
			by[k] += workers[i].walk_status[k];
	}
	printf("{\"count\": %ld, \"failures\": %ld, \"elapsed_ms\": %lld, "
	    "\"statuses\": {\"1xx\": %ld, \"2xx\": %ld, \"3xx\": %ld, "
	    "\"4xx\": %ld, \"5xx\": %ld, \"other\": %ld}}\n", count, failures,
	    (long long)((mono_ns() - start) / 1000000), by[0], by[1], by[2],
	    by[3], by[4], by[5]);
	free(tids);
	free(workers);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: stampede [-n N] [-j THREADS] [-H HOST] [-h HEADER] [-T MS]\n"
	    "                [-b BYTES] [-l] [-d] HOST:PORT[,HOST:PORT...] PATH\n"
	    "       stampede -w KEYS [-c CONNS] [-H HOST] [-T MS] [-a CODINGS] HOST:PORT\n"
	    "                PREFIX\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static struct options opt;
	char *list, *tok, *save;
	int c;

	opt.conns = -1;
	opt.threads = 1;
	opt.timeout_ms = DEFAULT_TIMEOUT_MS;
	opt.body_bytes = -1;
	while ((c = getopt(argc, argv, "n:c:j:H:h:T:b:ldw:a:")) != -1) {
		switch (c) {
		case 'n':
		case 'c':
			opt.conns = atoi(optarg);
			break;
		case 'j':
			opt.threads = atoi(optarg);
			break;
		case 'H':
			opt.host = optarg;
			break;
		case 'h':
			opt.tally_header = optarg;
			break;
		case 'T':
			opt.timeout_ms = atoi(optarg);
			break;
		case 'b':
			opt.body_bytes = atoll(optarg);
			break;
		case 'l':
			opt.list = 1;
			break;
		case 'd':
			opt.distinct = 1;
			break;
		case 'w':
			opt.walk_keys = atol(optarg);
			break;
		case 'a':
			opt.accept = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (opt.conns < 0)
		opt.conns = opt.walk_keys > 0 ? DEFAULT_WALK_CONNS : DEFAULT_CONNS;
	if (opt.conns < 1 || opt.conns > MAX_CONNS || opt.timeout_ms < 1 ||
	    opt.walk_keys < 0 || opt.body_bytes < -1 || opt.threads < 1 ||
	    opt.threads > MAX_THREADS)
		usage();
	if (opt.threads > opt.conns)
		opt.threads = opt.conns;
	if ((list = strdup(argv[optind])) == NULL)
		return 2;
	for (tok = strtok_r(list, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if (opt.ntargets == MAX_TARGETS ||
		    parse_target(tok, &opt.targets[opt.ntargets]) == -1) {
			fprintf(stderr, "stampede: bad target %s\n", tok);
			return 2;
		}
		if (opt.ntargets++ == 0)
			snprintf(opt.default_host, sizeof(opt.default_host),
			    "%s", tok);
	}
	free(list);
	if (opt.ntargets == 0)
		usage();
	if (opt.host == NULL)
		opt.host = opt.default_host;
	opt.path = argv[optind + 1];
	return opt.walk_keys > 0 ? run_walk(&opt) : run_stampede(&opt);
}
