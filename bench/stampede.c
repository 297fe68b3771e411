/*
 * stampede: the benchmark's load client for bursts, where Python threads are
 * too noisy for millisecond figures.
 *
 *   stampede [-n N] [-j THREADS] [-H HOST] [-h HEADER] [-T MS] [-l]
 *            TARGETS PATH
 *	Opens N connections (connection i goes to TARGETS[i % count], a comma
 *	separated list of host:port), spread over THREADS client threads
 *	(default 1). When every connection is open, a pthread barrier releases
 *	the threads; each sends a GET of PATH on all of its connections, then
 *	reads the responses as they come (epoll), timing each request from its
 *	send to its last byte. Prints one JSON object: count, failures,
 *	statuses, latency percentiles in microseconds (p50, p99, max, min), how
 *	far apart the requests were sent (send_spread_us), when the last
 *	response arrived (last_done_at, wall clock, s), a tally of HEADER's
 *	values, and with -l every request's latency and wall-clock completion.
 *
 *   stampede -w KEYS [-c CONNS] [-H HOST] [-T MS] TARGET PREFIX
 *	Walk mode, to warm a cache: GETs PREFIX0 .. PREFIX<KEYS-1> over CONNS
 *	keep-alive connections (a thread each) and prints count, failures,
 *	statuses, elapsed_ms.
 *
 * Why not a thread per request: on a 2-core machine, waking 200 blocked
 * threads costs the client itself ~10 ms per burst, more than the figures
 * being measured. One thread sends 200 requests in about a millisecond and
 * reads 200 ready sockets in less.
 *
 * A request fails when it cannot connect, send or read a whole response
 * within -T milliseconds (default 30000), or when its status is not 200.
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
#define MAX_RESPONSE_BYTES	(4 << 20)
#define READ_CHUNK		16384
#define REQUEST_MAX		2048
#define HEADER_VALUE_MAX	128
#define THREAD_STACK_BYTES	(256 << 10)
#define EPOLL_BATCH		256
#define DEFAULT_TIMEOUT_MS	30000
#define DEFAULT_CONNS		200
#define DEFAULT_WALK_CONNS	8

enum outcome { OK, FAIL_CONNECT, FAIL_SEND, FAIL_READ, FAIL_TIMEOUT,
    FAIL_PARSE, FAIL_STATUS, OUTCOME_COUNT };

static const char *outcome_names[OUTCOME_COUNT] = { "ok", "connect", "send",
    "read", "timeout", "parse", "status" };

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
	int		 conns;
	int		 threads;
	int		 timeout_ms;
	int		 list;
	long		 walk_keys;	/* 0: stampede mode */
	char		 default_host[256];
};

enum framing { FRAME_UNKNOWN, FRAME_LENGTH, FRAME_CHUNKED, FRAME_EOF,
    FRAME_NONE };

/* One response being read: a growing buffer and what its head said. */
struct response {
	char		*buf;
	size_t		 len, cap;
	size_t		 head_len;	/* 0 until the head is complete */
	size_t		 body_len;	/* FRAME_LENGTH */
	enum framing	 framing;
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
    const char *host, int keep_alive)
{
	char target[REQUEST_MAX / 2];

	if (key >= 0)
		snprintf(target, sizeof(target), "%s%ld", path, key);
	else
		snprintf(target, sizeof(target), "%s", path);
	snprintf(buf, size, "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: corral-bench-stampede\r\n%s\r\n", target, host,
	    keep_alive ? "" : "Connection: close\r\n");
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

/*
 * Where a chunked body starting at p ends (bytes from p), 0 if incomplete,
 * -1 if malformed. Trailers are not expected.
 */
static long
chunked_length(const char *p, size_t len)
{
	size_t off = 0;
	const char *eol;
	char *endnum;
	unsigned long size;

	for (;;) {
		if ((eol = memchr(p + off, '\n', len - off)) == NULL)
			return 0;
		size = strtoul(p + off, &endnum, 16);
		if (endnum == p + off)
			return -1;
		off = (size_t)(eol - p) + 1;
		if (size == 0) {
			if (len - off < 2)
				return 0;
			return p[off] == '\r' && p[off + 1] == '\n' ?
			    (long)(off + 2) : -1;
		}
		if (len - off < size + 2)
			return 0;
		off += size + 2;
	}
}

static void
response_reset(struct response *r)
{
	r->len = 0;
	r->head_len = 0;
	r->body_len = 0;
	r->framing = FRAME_UNKNOWN;
	r->status = 0;
	r->keep_alive = 1;
	r->tally[0] = '\0';
}

/* Room for READ_CHUNK more bytes (and a NUL); -1 past the size limit. */
static int
response_room(struct response *r)
{
	size_t cap;
	char *nb;

	if (r->cap - r->len > READ_CHUNK)
		return 0;
	cap = r->cap ? r->cap * 2 : 2 * READ_CHUNK;
	if (cap > MAX_RESPONSE_BYTES || (nb = realloc(r->buf, cap)) == NULL)
		return -1;
	r->buf = nb;
	r->cap = cap;
	return 0;
}

static enum parse
parse_head(struct response *r, const char *tally_header)
{
	const char *v, *end, *he;
	size_t vlen;

	r->buf[r->len] = '\0';
	if ((he = memmem(r->buf, r->len, "\r\n\r\n", 4)) == NULL)
		return PARSE_MORE;
	r->head_len = (size_t)(he - r->buf) + 4;
	end = r->buf + r->head_len;
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
		r->body_len = strtoul(v, NULL, 10);
	} else
		r->framing = FRAME_EOF;
	return PARSE_DONE;
}

/* Is the response in r->buf complete? (at_eof: the peer has closed) */
static enum parse
response_parse(struct response *r, const char *tally_header, int at_eof)
{
	long n;

	if (r->head_len == 0) {
		switch (parse_head(r, tally_header)) {
		case PARSE_BAD:
			return PARSE_BAD;
		case PARSE_MORE:
			return at_eof ? PARSE_BAD : PARSE_MORE;
		case PARSE_DONE:
			break;
		}
	}
	switch (r->framing) {
	case FRAME_NONE:
		return PARSE_DONE;
	case FRAME_LENGTH:
		if (r->len - r->head_len >= r->body_len)
			return PARSE_DONE;
		break;
	case FRAME_CHUNKED:
		n = chunked_length(r->buf + r->head_len, r->len - r->head_len);
		if (n < 0)
			return PARSE_BAD;
		if (n > 0)
			return PARSE_DONE;
		break;
	case FRAME_EOF:
		if (at_eof) {
			r->keep_alive = 0;
			return PARSE_DONE;
		}
		break;
	case FRAME_UNKNOWN:
		return PARSE_BAD;
	}
	return at_eof ? PARSE_BAD : PARSE_MORE;
}

/* -- stampede mode --------------------------------------------------------- */

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

/* Reads what q's socket has; finishes q when its response is complete. */
static void
on_readable(const struct options *opt, struct request *q)
{
	ssize_t n;
	enum parse p;

	for (;;) {
		if (response_room(&q->resp) == -1) {
			finish(q, FAIL_PARSE);
			return;
		}
		n = recv(q->fd, q->resp.buf + q->resp.len,
		    q->resp.cap - q->resp.len - 1, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				finish(q, FAIL_READ);
			return;
		}
		if (n > 0)
			q->resp.len += (size_t)n;
		p = response_parse(&q->resp, opt->tally_header, n == 0);
		if (p == PARSE_DONE) {
			finish(q, q->resp.status == 200 ? OK : FAIL_STATUS);
			return;
		}
		if (p == PARSE_BAD) {
			finish(q, n == 0 ? FAIL_READ : FAIL_PARSE);
			return;
		}
	}
}

static void *
stampede_thread(void *arg)
{
	struct worker *w = arg;
	const struct options *opt = w->opt;
	struct epoll_event ev, events[EPOLL_BATCH];
	char req[REQUEST_MAX];
	size_t reqlen;
	int64_t deadline;
	int i, k, ep, pending = 0;

	format_request(req, sizeof(req), opt->path, -1, opt->host, 0);
	reqlen = strlen(req);
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
			on_readable(opt, q);
			if (q->done)
				pending--;
		}
	}
	for (i = w->index; i < opt->conns; i += opt->threads)
		if (!w->reqs[i].done)
			finish(&w->reqs[i], FAIL_TIMEOUT);
	if (ep != -1)
		close(ep);
	return NULL;
}

/* -- walk mode ----------------------------------------------------------- */

/* Reads one response on a blocking socket: PARSE_DONE or PARSE_BAD. */
static enum parse
read_blocking(int fd, struct response *r, int *timed_out)
{
	enum parse p;
	ssize_t n;

	response_reset(r);
	*timed_out = 0;
	for (;;) {
		if (response_room(r) == -1)
			return PARSE_BAD;
		n = recv(fd, r->buf + r->len, r->cap - r->len - 1, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			*timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
			return PARSE_BAD;
		}
		if (n == 0 && r->len == 0)
			return PARSE_BAD;
		r->len += (size_t)n;
		if ((p = response_parse(r, NULL, n == 0)) != PARSE_MORE)
			return p;
	}
}

static void *
walk_thread(void *arg)
{
	struct worker *w = arg;
	const struct options *opt = w->opt;
	struct response r = { 0 };
	char req[REQUEST_MAX];
	enum parse p;
	int fd = -1, tries, timed_out = 0;
	long key;

	for (key = w->index; key < opt->walk_keys; key += opt->conns) {
		format_request(req, sizeof(req), opt->path, key, opt->host, 1);
		p = PARSE_BAD;
		/* A reused connection the server closed is retried once. */
		for (tries = 0; tries < 2; tries++) {
			int reused = fd != -1;

			if (fd == -1 && (fd = connect_to(&opt->targets[0],
			    opt->timeout_ms)) == -1)
				break;
			if (send_all(fd, req, strlen(req)) == 0)
				p = read_blocking(fd, &r, &timed_out);
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

static void
print_stampede(const struct options *opt, struct request *reqs)
{
	int64_t *lat, first_sent = INT64_MAX, last_sent = 0;
	int i, j, k, n = opt->conns, nlat = 0, failures = 0;
	int fail_by[OUTCOME_COUNT] = { 0 };
	double last_done = 0;

	if ((lat = calloc((size_t)n, sizeof(*lat))) == NULL) {
		fprintf(stderr, "stampede: out of memory\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {
		struct request *q = &reqs[i];

		fail_by[q->outcome]++;
		if (q->outcome != OK)
			failures++;
		if (q->outcome == OK || q->outcome == FAIL_STATUS) {
			lat[nlat++] = q->latency_us;
			if (q->done_at > last_done)
				last_done = q->done_at;
		}
		if (q->sent_ns < first_sent)
			first_sent = q->sent_ns;
		if (q->sent_ns > last_sent)
			last_sent = q->sent_ns;
	}
	qsort(lat, (size_t)nlat, sizeof(*lat), cmp_i64);

	printf("{\"count\": %d, \"failures\": %d, \"failed_by\": {", n, failures);
	for (i = 1, j = 0; i < OUTCOME_COUNT; i++)
		if (fail_by[i] > 0)
			printf("%s\"%s\": %d", j++ ? ", " : "", outcome_names[i],
			    fail_by[i]);
	printf("}, \"statuses\": {");
	for (i = 0, j = 0; i < n; i++) {
		int seen = 0, count = 0;

		if (reqs[i].status == 0)
			continue;
		for (k = 0; k < i && !seen; k++)
			seen = reqs[k].status == reqs[i].status;
		if (seen)
			continue;
		for (k = i; k < n; k++)
			count += reqs[k].status == reqs[i].status;
		printf("%s\"%d\": %d", j++ ? ", " : "", reqs[i].status, count);
	}
	printf("}, \"p50_us\": %lld, \"p99_us\": %lld, \"max_us\": %lld, "
	    "\"min_us\": %lld, \"send_spread_us\": %lld, \"last_done_at\": %.6f",
	    (long long)percentile(lat, nlat, 50),
	    (long long)percentile(lat, nlat, 99),
	    (long long)(nlat ? lat[nlat - 1] : 0), (long long)(nlat ? lat[0] : 0),
	    (long long)((last_sent - first_sent) / 1000), last_done);
	if (opt->tally_header != NULL) {
		printf(", \"tally\": {");
		for (i = 0, j = 0; i < n; i++) {
			const char *t = reqs[i].resp.tally;
			int seen = 0, count = 0;

			if (reqs[i].status == 0)
				continue;
			for (k = 0; k < i && !seen; k++)
				seen = reqs[k].status != 0 &&
				    strcmp(reqs[k].resp.tally, t) == 0;
			if (seen)
				continue;
			for (k = i; k < n; k++)
				count += reqs[k].status != 0 &&
				    strcmp(reqs[k].resp.tally, t) == 0;
			printf("%s", j++ ? ", " : "");
			print_json_string(t);
			printf(": %d", count);
		}
		printf("}");
	}
	if (opt->list) {
		printf(", \"requests\": [");
		for (i = 0; i < n; i++)
			printf("%s{\"target\": %d, \"status\": %d, \"outcome\": "
			    "\"%s\", \"latency_us\": %lld, \"sent_us\": %lld, "
			    "\"done_at\": %.6f}", i ? ", " : "", reqs[i].target,
			    reqs[i].status, outcome_names[reqs[i].outcome],
			    (long long)reqs[i].latency_us,
			    (long long)((reqs[i].sent_ns - first_sent) / 1000),
			    reqs[i].done_at);
		printf("]");
	}
	printf("}\n");
	free(lat);
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
	    "usage: stampede [-n N] [-j THREADS] [-H HOST] [-h HEADER] [-T MS] [-l]\n"
	    "                HOST:PORT[,HOST:PORT...] PATH\n"
	    "       stampede -w KEYS [-c CONNS] [-H HOST] [-T MS] HOST:PORT PREFIX\n");
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
	while ((c = getopt(argc, argv, "n:c:j:H:h:T:lw:")) != -1) {
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
		case 'l':
			opt.list = 1;
			break;
		case 'w':
			opt.walk_keys = atol(optarg);
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
	    opt.walk_keys < 0 || opt.threads < 1 || opt.threads > MAX_THREADS)
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
