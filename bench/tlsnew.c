/*
 * tlsnew: the benchmark's client for new TLS connections, every one a
 * full handshake.
 *
 *   tlsnew [-t THREADS] [-c CONNS] [-d SECONDS] [-H HOST] [-T MS] TARGET PATH
 *	For SECONDS (default 8), keeps CONNS connections (default 50, spread
 *	over THREADS threads, default 1, each with its own epoll loop) busy
 *	on TARGET (host:port): each connects, makes a full TLS handshake
 *	(SNI HOST, ALPN http/1.1), sends one GET of PATH with "Connection:
 *	close", reads the response to the server's close and starts again on
 *	a new connection. A request's latency runs from its connect() to the
 *	last byte of its body. Prints one JSON line, "TLSJSON {...}": the
 *	requests finished within the time, duration_us, the failures by kind
 *	(connect, handshake, write, read, status, timeout), how many
 *	handshakes resumed a session (resumed: 0 unless something is wrong),
 *	p50_us, p99_us, max_us, and the protocol, cipher suite, group and
 *	ALPN protocol of the first handshake.
 *
 * Why not wrk with "Connection: close": wrk keeps its SSL objects from one
 * connection to the next (SSL_clear), so after the first it resumes the
 * session: nearly every handshake is an abbreviated one. Here every
 * connection gets a new SSL object, the context keeps no client session
 * cache and no session is ever set, so no handshake can resume; the count
 * of SSL_session_reused() proves it. Session tickets the server sends are
 * read and dropped, as a first visit's would be unused.
 *
 * The server's certificate is not verified (the bench's is self-signed);
 * the handshake's signature still is, by OpenSSL, so the client does a
 * real client's work but for the chain.
 *
 * A request fails when it cannot connect, finish the handshake, send,
 * read a whole response (head and, with a Content-Length, that many body
 * bytes) before the server closes, within -T milliseconds (default 5000),
 * or when its status is not 200. The exit status is 0 when the client
 * ran (even if requests failed), 2 on bad usage or when it could not run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAX_CONNS		4096
#define MAX_THREADS		64
#define HEAD_MAX		8192	/* a response head, the most kept */
#define READ_BUF_BYTES		(16 << 10)	/* a TLS record's plaintext */
#define REQUEST_MAX		1024
#define EPOLL_BATCH		256
#define TICK_MS			50	/* how often timeouts and the end are checked */
#define DEFAULT_CONNS		50
#define DEFAULT_SECONDS		8
#define DEFAULT_TIMEOUT_MS	5000
#define LATENCIES_START		4096

static const unsigned char alpn[] = "\x08http/1.1";

enum outcome { OK, FAIL_CONNECT, FAIL_HANDSHAKE, FAIL_WRITE, FAIL_READ,
    FAIL_STATUS, FAIL_TIMEOUT, OUTCOME_COUNT };

static const char *outcome_names[OUTCOME_COUNT] = { "ok", "connect",
    "handshake", "write", "read", "status", "timeout" };

/* A connection's steps, in order; WAIT and END are what a step returns. */
enum step { CONNECTING, HANDSHAKE, WRITING, READING, DRAINING, WAIT, END };

struct options {
	struct sockaddr_storage	 addr;
	socklen_t		 addrlen;
	const char		*host;
	const char		*path;
	int			 conns;
	int			 threads;
	int			 seconds;
	int			 timeout_ms;
	char			 request[REQUEST_MAX];
	size_t			 request_len;
};

/* One connection slot: a connection after another, one request each. */
struct slot {
	int		 fd;
	SSL		*ssl;
	enum step	 step;
	enum outcome	 outcome;	/* at END */
	int64_t		 start_ns;	/* connect() */
	int64_t		 done_ns;	/* the body's last byte */
	char		 head[HEAD_MAX];
	size_t		 head_len;	/* bytes of head[] used */
	int		 head_done;
	int		 status;
	long long	 body_len;	/* -1: no Content-Length */
	long long	 body_seen;
};

struct worker {
	const struct options	*opt;
	SSL_CTX			*ctx;
	int			 nslots;
	struct slot		*slots;
	int			 ep;
	int64_t			 end_ns;
	long			 outcomes[OUTCOME_COUNT];
	long			 resumed;
	int64_t			*lat;		/* µs, requests that succeeded */
	size_t			 nlat, caplat;
	char			 params[256];	/* the first handshake's, as JSON */
	int64_t			 began_ns, ended_ns;
};

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
usage(void)
{
	fprintf(stderr, "usage: tlsnew [-t THREADS] [-c CONNS] [-d SECONDS] "
	    "[-H HOST] [-T MS] TARGET PATH\n");
	exit(2);
}

static int
parse_target(const char *text, struct options *opt)
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
	memcpy(&opt->addr, res->ai_addr, res->ai_addrlen);
	opt->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void
want(struct worker *w, struct slot *s, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	epoll_ctl(w->ep, EPOLL_CTL_MOD, s->fd, &ev);
}

/* Ends the slot's connection; OK counts its latency. */
static void
finish(struct worker *w, struct slot *s, enum outcome o)
{
	if (s->ssl != NULL) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	w->outcomes[o]++;
	if (o != OK)
		return;
	if (w->nlat == w->caplat) {
		size_t cap = w->caplat ? w->caplat * 2 : LATENCIES_START;
		int64_t *p = realloc(w->lat, cap * sizeof(*p));

		if (p == NULL) {
			fprintf(stderr, "tlsnew: out of memory\n");
			exit(2);
		}
		w->lat = p;
		w->caplat = cap;
	}
	w->lat[w->nlat++] = (s->done_ns - s->start_ns) / 1000;
}

/* A new connection on the slot; 0, or -1 when it failed at once. */
static int
start(struct worker *w, struct slot *s)
{
	const struct options *opt = w->opt;
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = s };
	int one = 1;

	s->ssl = NULL;
	s->outcome = OK;
	s->head_len = 0;
	s->head_done = 0;
	s->status = 0;
	s->body_len = -1;
	s->body_seen = 0;
	s->step = CONNECTING;
	s->start_ns = mono_ns();
	s->fd = socket(opt->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -1;
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(s->fd, (const struct sockaddr *)&opt->addr,
	    opt->addrlen) != 0 && errno != EINPROGRESS) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, s->fd, &ev) != 0) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	return 0;
}

static void
restart(struct worker *w, struct slot *s)
{
	while (mono_ns() < w->end_ns && start(w, s) != 0)
		w->outcomes[FAIL_CONNECT]++;
}

/* After an SSL call returned r <= 0: wait for what it needs (0), or -1. */
static int
wait_for_io(struct worker *w, struct slot *s, int r)
{
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		want(w, s, EPOLLIN);
		return 0;
	case SSL_ERROR_WANT_WRITE:
		want(w, s, EPOLLOUT);
		return 0;
	default:
		ERR_clear_error();
		return -1;
	}
}

static void
note_params(struct worker *w, SSL *ssl)
{
	const unsigned char *proto = NULL;
	unsigned int plen = 0;
	const char *group = SSL_group_to_name(ssl, SSL_get_negotiated_group(ssl));

	SSL_get0_alpn_selected(ssl, &proto, &plen);
	snprintf(w->params, sizeof(w->params), "\"protocol\": \"%s\", "
	    "\"cipher\": \"%s\", \"group\": \"%s\", \"alpn\": \"%.*s\"",
	    SSL_get_version(ssl), SSL_get_cipher_name(ssl),
	    group != NULL ? group : "?", (int)plen, proto != NULL ?
	    (const char *)proto : "");
}

/* The status and Content-Length of a complete head; -1 if it is none. */
static int
parse_head(struct slot *s, size_t end)
{
	const char *p, *lim = s->head + end;

	s->head[end] = '\0';
	if (sscanf(s->head, "HTTP/1.%*1d %3d", &s->status) != 1)
		return -1;
	for (p = strstr(s->head, "\r\n"); p != NULL && p + 2 < lim;
	    p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, "content-length:", 15) == 0)
			s->body_len = strtoll(p + 17, NULL, 10);
	}
	return 0;
}

/* Body bytes and head bytes read: 1 when the response is whole, 0 for
 * more, -1 when it cannot be one. */
static int
take(struct slot *s, const char *buf, size_t n)
{
	if (!s->head_done) {
		size_t room = HEAD_MAX - 1 - s->head_len, k = n < room ? n : room;
		char *end;

		memcpy(s->head + s->head_len, buf, k);
		s->head_len += k;
		s->head[s->head_len] = '\0';
		if ((end = strstr(s->head, "\r\n\r\n")) == NULL)
			return s->head_len == HEAD_MAX - 1 ? -1 : 0;
		if (parse_head(s, (size_t)(end + 4 - s->head)) != 0)
			return -1;
		s->head_done = 1;
		s->body_seen = (long long)(s->head_len - (size_t)(end + 4 -
		    s->head)) + (long long)(n - k);
	} else
		s->body_seen += (long long)n;
	if (s->body_len >= 0 && s->body_seen > s->body_len)
		return -1;
	return s->body_len >= 0 && s->body_seen == s->body_len;
}

/* A connection's steps. Each returns the next one, WAIT (the same step
 * again when epoll says so) or END (s->outcome says how it ended). */
static enum step
step_connect(struct worker *w, struct slot *s)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
	    err != 0 || (s->ssl = SSL_new(w->ctx)) == NULL ||
	    SSL_set_fd(s->ssl, s->fd) != 1 ||
	    SSL_set_tlsext_host_name(s->ssl, w->opt->host) != 1) {
		s->outcome = FAIL_CONNECT;
		return END;
	}
	SSL_set_connect_state(s->ssl);
	return HANDSHAKE;
}

static enum step
step_handshake(struct worker *w, struct slot *s)
{
	int r = SSL_do_handshake(s->ssl);

	if (r != 1) {
		if (wait_for_io(w, s, r) == 0)
			return WAIT;
		s->outcome = FAIL_HANDSHAKE;
		return END;
	}
	if (SSL_session_reused(s->ssl))
		w->resumed++;
	if (w->params[0] == '\0')
		note_params(w, s->ssl);
	return WRITING;
}

static enum step
step_write(struct worker *w, struct slot *s)
{
	int r = SSL_write(s->ssl, w->opt->request, (int)w->opt->request_len);

	if (r <= 0) {
		if (wait_for_io(w, s, r) == 0)
			return WAIT;
		s->outcome = FAIL_WRITE;
		return END;
	}
	want(w, s, EPOLLIN);
	return READING;
}

/* READING until the response is whole, then DRAINING to the server's
 * close (close_notify or EOF): a response framed by the close ends
 * there. */
static enum step
step_read(struct worker *w, struct slot *s)
{
	char buf[READ_BUF_BYTES];
	int r;

	while ((r = SSL_read(s->ssl, buf, sizeof(buf))) > 0) {
		if (s->step == DRAINING)
			continue;	/* a server writes nothing after */
		switch (take(s, buf, (size_t)r)) {
		case 1:
			s->done_ns = mono_ns();
			s->step = DRAINING;
			break;
		case -1:
			s->outcome = FAIL_READ;
			return END;
		}
	}
	if (wait_for_io(w, s, r) == 0)
		return WAIT;
	if (s->step == READING && s->head_done && s->body_len < 0) {
		s->done_ns = mono_ns();
		s->step = DRAINING;
	}
	if (s->step != DRAINING)
		s->outcome = FAIL_READ;
	else
		s->outcome = s->status == 200 ? OK : FAIL_STATUS;
	return END;
}

/* The slot's steps, as far as they go without waiting. */
static void
advance(struct worker *w, struct slot *s)
{
	enum step next;

	for (;;) {
		switch (s->step) {
		case CONNECTING:
			next = step_connect(w, s);
			break;
		case HANDSHAKE:
			next = step_handshake(w, s);
			break;
		case WRITING:
			next = step_write(w, s);
			break;
		case READING:
		case DRAINING:
			next = step_read(w, s);
			break;
		default:
			abort();	/* WAIT and END are no slot's step */
		}
		if (next == WAIT)
			return;
		if (next == END) {
			finish(w, s, s->outcome);
			restart(w, s);
			return;
		}
		s->step = next;
	}
}

static void
check_timeouts(struct worker *w, int64_t now)
{
	int64_t limit = (int64_t)w->opt->timeout_ms * 1000000;

	for (int i = 0; i < w->nslots; i++) {
		struct slot *s = &w->slots[i];

		if (s->fd >= 0 && now - s->start_ns > limit) {
			finish(w, s, FAIL_TIMEOUT);
			restart(w, s);
		}
	}
}

static void *
run_worker(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[EPOLL_BATCH];
	int64_t now;

	w->began_ns = mono_ns();
	for (int i = 0; i < w->nslots; i++) {
		w->slots[i].fd = -1;
		restart(w, &w->slots[i]);
	}
	while ((now = mono_ns()) < w->end_ns) {
		int n = epoll_wait(w->ep, evs, EPOLL_BATCH, TICK_MS);

		for (int i = 0; i < n && mono_ns() < w->end_ns; i++)
			advance(w, evs[i].data.ptr);
		check_timeouts(w, mono_ns());
	}
	w->ended_ns = mono_ns();
	for (int i = 0; i < w->nslots; i++) {	/* unfinished: not counted */
		struct slot *s = &w->slots[i];

		if (s->ssl != NULL)
			SSL_free(s->ssl);
		if (s->fd >= 0)
			close(s->fd);
	}
	return NULL;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t
pct(const int64_t *v, size_t n, int p)
{
	size_t rank;

	if (n == 0)
		return 0;
	rank = (n * (size_t)p + 99) / 100;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

static SSL_CTX *
client_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
	if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void
report(struct worker *ws, int nw)
{
	long outcomes[OUTCOME_COUNT] = { 0 }, resumed = 0;
	size_t n = 0, at = 0;
	int64_t *all, began = ws[0].began_ns, ended = ws[0].ended_ns;
	const char *params = "";

	for (int i = 0; i < nw; i++) {
		n += ws[i].nlat;
		resumed += ws[i].resumed;
		for (int o = 0; o < OUTCOME_COUNT; o++)
			outcomes[o] += ws[i].outcomes[o];
		if (ws[i].began_ns < began)
			began = ws[i].began_ns;
		if (ws[i].ended_ns > ended)
			ended = ws[i].ended_ns;
		if (params[0] == '\0')
			params = ws[i].params;
	}
	if ((all = malloc((n ? n : 1) * sizeof(*all))) == NULL) {
		fprintf(stderr, "tlsnew: out of memory\n");
		exit(2);
	}
	for (int i = 0; i < nw; i++) {
		memcpy(all + at, ws[i].lat, ws[i].nlat * sizeof(*all));
		at += ws[i].nlat;
	}
	qsort(all, n, sizeof(*all), cmp_i64);
	printf("TLSJSON {\"requests\": %zu, \"duration_us\": %lld", n,
	    (long long)((ended - began) / 1000));
	for (int o = 1; o < OUTCOME_COUNT; o++)
		printf(", \"%s\": %ld", outcome_names[o], outcomes[o]);
	printf(", \"resumed\": %ld, \"p50_us\": %lld, \"p99_us\": %lld, "
	    "\"max_us\": %lld%s%s}\n", resumed, (long long)pct(all, n, 50),
	    (long long)pct(all, n, 99), (long long)(n ? all[n - 1] : 0),
	    params[0] ? ", " : "", params);
	free(all);
}

int
main(int argc, char **argv)
{
	struct options opt = { .conns = DEFAULT_CONNS, .threads = 1,
	    .seconds = DEFAULT_SECONDS, .timeout_ms = DEFAULT_TIMEOUT_MS };
	struct worker ws[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	SSL_CTX *ctx;
	int c, n;
	int64_t end_ns;

	while ((c = getopt(argc, argv, "t:c:d:H:T:")) != -1) {
		switch (c) {
		case 't': opt.threads = atoi(optarg); break;
		case 'c': opt.conns = atoi(optarg); break;
		case 'd': opt.seconds = atoi(optarg); break;
		case 'H': opt.host = optarg; break;
		case 'T': opt.timeout_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (argc - optind != 2 || opt.threads < 1 || opt.threads > MAX_THREADS ||
	    opt.conns < opt.threads || opt.conns > MAX_CONNS ||
	    opt.seconds < 1 || opt.timeout_ms < 1)
		usage();
	if (parse_target(argv[optind], &opt) != 0) {
		fprintf(stderr, "tlsnew: bad target %s\n", argv[optind]);
		return 2;
	}
	opt.path = argv[optind + 1];
	if (opt.host == NULL)
		opt.host = "localhost";
	n = snprintf(opt.request, sizeof(opt.request), "GET %s HTTP/1.1\r\n"
	    "Host: %s\r\nConnection: close\r\n\r\n", opt.path, opt.host);
	if (n < 0 || (size_t)n >= sizeof(opt.request))
		usage();
	opt.request_len = (size_t)n;
	signal(SIGPIPE, SIG_IGN);
	if ((ctx = client_ctx()) == NULL) {
		fprintf(stderr, "tlsnew: no TLS context\n");
		return 2;
	}
	end_ns = mono_ns() + (int64_t)opt.seconds * 1000000000;
	for (int i = 0; i < opt.threads; i++) {
		struct worker *w = &ws[i];

		memset(w, 0, sizeof(*w));
		w->opt = &opt;
		w->ctx = ctx;
		w->end_ns = end_ns;
		w->nslots = opt.conns / opt.threads + (i < opt.conns % opt.threads);
		w->slots = calloc((size_t)w->nslots, sizeof(*w->slots));
		w->ep = epoll_create1(EPOLL_CLOEXEC);
		if (w->slots == NULL || w->ep < 0 ||
		    pthread_create(&tids[i], NULL, run_worker, w) != 0) {
			fprintf(stderr, "tlsnew: cannot start thread %d\n", i);
			return 2;
		}
	}
	for (int i = 0; i < opt.threads; i++)
		pthread_join(tids[i], NULL);
	report(ws, opt.threads);
	for (int i = 0; i < opt.threads; i++) {
		free(ws[i].slots);
		free(ws[i].lat);
		close(ws[i].ep);
	}
	SSL_CTX_free(ctx);
	return 0;
}
