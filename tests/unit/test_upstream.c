/* SPDX-License-Identifier: MIT */
/*
 * upstream against in-process origins on the same event loop: an evhttp
 * origin with a few scripted paths, and a raw TCP origin that answers every
 * request with canned bytes (for replies evhttp cannot produce). Every wait
 * is "run the loop until a counter reaches n", bounded by a safety timer.
 */

#include "upstream/upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "common/hlist.h"
#include "tests/unit/unit.h"

#define SAFETY_MS		5000	/* a wait longer than this fails */
#define SLOW_DELAY_MS		300	/* /slow answers after this */
#define BIG_BODY_BYTES		(1024 * 1024)
#define BIG_CHUNK_BYTES		(64 * 1024)
#define FLEET			50	/* concurrent fetches */
#define SIBLINGS		10
#define MAX_PEERS		128
#define MAX_SLOW		16
#define MAX_RAW			16
#define URL_MAX			128
#define BODY_KEEP		8192
#define FIRST_PIECE_BYTES	(16 * 1024)	/* upstream_curl.c's bound */
#define HDR_KEEP		16
#define HDR_NAME_MAX		64
#define HDR_VALUE_MAX		128
#define FETCH_TIMEOUT_MS	3000
#define CONNECT_TIMEOUT_MS	1000

/* ---- what a done callback saw ----------------------------------------- */

struct got {
	int			 done;
	enum upstream_result	 result;
	int			 status;
	int64_t			 elapsed_ms;
	int			 active;	/* upstream_active() in the callback */
	char			 error[160];
	size_t			 body_len;
	char			 body[BODY_KEEP + 1];
	int			 nheaders;
	char			 name[HDR_KEEP][HDR_NAME_MAX];
	char			 value[HDR_KEEP][HDR_VALUE_MAX];
};

static struct event_base *base;
static struct upstream	*up;
static struct event	*safety;
static int		 timed_out;
static int		 completed;	/* done callbacks, all fetches */

static void
keep(char *dst, size_t dstlen, const char *src)
{
	snprintf(dst, dstlen, "%s", src);
}

static void
record(struct got *g, struct upstream_response *resp)
{
	const struct hfield *kv;
	size_t n;

	g->done++;
	g->result = resp->result;
	g->status = resp->status;
	g->elapsed_ms = resp->elapsed_ms;
	g->active = up != NULL ? upstream_active(up) : -1;
	keep(g->error, sizeof(g->error), resp->error);
	g->body_len = evbuffer_get_length(resp->body);
	n = g->body_len < BODY_KEEP ? g->body_len : BODY_KEEP;
	evbuffer_copyout(resp->body, g->body, n);
	g->body[n] = '\0';
	g->nheaders = 0;
	HL_FOREACH(kv, &resp->headers) {
		if (g->nheaders == HDR_KEEP)
			break;
		keep(g->name[g->nheaders], HDR_NAME_MAX, kv->key);
		keep(g->value[g->nheaders], HDR_VALUE_MAX, kv->value);
		g->nheaders++;
	}
}

/* The value of the first header called name, or NULL. */
static const char *
header(const struct got *g, const char *name)
{
	for (int i = 0; i < g->nheaders; i++)
		if (strcasecmp(g->name[i], name) == 0)
			return g->value[i];
	return NULL;
}

static void
on_done(struct upstream_response *resp, void *arg)
{
	record(arg, resp);
	upstream_response_free(&resp);
	completed++;
}

/* ---- the evhttp origin ------------------------------------------------ */

struct slow {
	struct evhttp_request	*req;
	struct event		*timer;
};

static struct {
	struct evhttp	*http;
	int		 port;
	int		 requests;
	uint16_t	 peers[MAX_PEERS];	/* distinct client ports */
	int		 npeers;
	struct slow	 slow[MAX_SLOW];
	int		 slow_started;
	int		 slow_replied;
} origin;

static void
seen(struct evhttp_request *req)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	char *addr;
	uint16_t port;

	origin.requests++;
	if (conn == NULL)
		return;
	evhttp_connection_get_peer(conn, &addr, &port);
	for (int i = 0; i < origin.npeers; i++)
		if (origin.peers[i] == port)
			return;
	if (origin.npeers < MAX_PEERS)
		origin.peers[origin.npeers++] = port;
}

static void
reply(struct evhttp_request *req, int code, const char *body)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL || evbuffer_add(b, body, strlen(body)) == -1)
		abort();
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Status", b);
	evbuffer_free(b);
}

static void
on_ok(struct evhttp_request *req, void *arg)
{
	(void)arg;
	seen(req);
	evhttp_add_header(evhttp_request_get_output_headers(req), "X-Test",
	    "1");
	reply(req, 200, "hello");
}

static void
on_503(struct evhttp_request *req, void *arg)
{
	(void)arg;
	seen(req);
	reply(req, 503, "busy");
}

static void
on_slow_due(evutil_socket_t fd, short what, void *arg)
{
	struct slow *s = arg;

	(void)fd;
	(void)what;
	reply(s->req, 200, "slow");
	s->req = NULL;
	origin.slow_replied++;
}

static void
on_slow(struct evhttp_request *req, void *arg)
{
	struct timeval tv = { 0, SLOW_DELAY_MS * 1000 };
	struct slow *s;

	(void)arg;
	seen(req);
	if (origin.slow_started == MAX_SLOW) {
		reply(req, 503, "too many slow requests");
		return;
	}
	s = &origin.slow[origin.slow_started++];
	s->req = req;
	if ((s->timer = evtimer_new(base, on_slow_due, s)) == NULL)
		abort();
	evtimer_add(s->timer, &tv);
}

/* A 1 MiB body with its Content-Length, also sent for HEAD. */
static void
on_big(struct evhttp_request *req, void *arg)
{
	struct evbuffer *b = evbuffer_new();
	char len[32];

	(void)arg;
	seen(req);
	if (b == NULL)
		abort();
	for (int i = 0; i < BIG_BODY_BYTES / BIG_CHUNK_BYTES; i++)
		if (evbuffer_expand(b, BIG_CHUNK_BYTES) == -1 ||
		    evbuffer_add_printf(b, "%*s", BIG_CHUNK_BYTES, "") == -1)
			abort();
	snprintf(len, sizeof(len), "%d", BIG_BODY_BYTES);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Length", len);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

/* The same 1 MiB, chunked: no Content-Length to judge it by. */
static void
on_big_chunked(struct evhttp_request *req, void *arg)
{
	struct evbuffer *b = evbuffer_new();

	(void)arg;
	seen(req);
	if (b == NULL)
		abort();
	evhttp_send_reply_start(req, 200, "OK");
	for (int i = 0; i < BIG_BODY_BYTES / BIG_CHUNK_BYTES; i++) {
		if (evbuffer_add_printf(b, "%*s", BIG_CHUNK_BYTES, "") == -1)
			abort();
		evhttp_send_reply_chunk(req, b);
	}
	evhttp_send_reply_end(req);
	evbuffer_free(b);
}

static const char *
method_name(enum evhttp_cmd_type cmd)
{
	switch (cmd) {
	case EVHTTP_REQ_GET:
		return "GET";
	case EVHTTP_REQ_POST:
		return "POST";
	case EVHTTP_REQ_HEAD:
		return "HEAD";
	case EVHTTP_REQ_PUT:
		return "PUT";
	case EVHTTP_REQ_DELETE:
		return "DELETE";
	default:
		return "OTHER";
	}
}

/* Reports request header name as X-Got-<name>: "[value]" or "-". */
static void
echo_header(struct evhttp_request *req, const char *name)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req),
	    name);
	char out_name[HDR_NAME_MAX], out_value[HDR_VALUE_MAX];

	snprintf(out_name, sizeof(out_name), "X-Got-%s", name);
	if (v == NULL)
		keep(out_value, sizeof(out_value), "-");
	else
		snprintf(out_value, sizeof(out_value), "[%s]", v);
	evhttp_add_header(evhttp_request_get_output_headers(req), out_name,
	    out_value);
}

/* Replies "METHOD\n" and the request body. */
static void
on_echo(struct evhttp_request *req, void *arg)
{
	struct evbuffer *b = evbuffer_new();

	(void)arg;
	seen(req);
	if (b == NULL)
		abort();
	evbuffer_add_printf(b, "%s\n",
	    method_name(evhttp_request_get_command(req)));
	evbuffer_add_buffer(b, evhttp_request_get_input_buffer(req));
	echo_header(req, "Content-Type");
	echo_header(req, "Accept");
	echo_header(req, "Accept-Encoding");
	echo_header(req, "Expect");
	echo_header(req, "X-Req");
	echo_header(req, "X-Empty");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static int
bound_port(evutil_socket_t fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		return -1;
	return ntohs(sin.sin_port);
}

static int
origin_start(void)
{
	struct evhttp_bound_socket *bound;

	memset(&origin, 0, sizeof(origin));
	if ((origin.http = evhttp_new(base)) == NULL)
		return -1;
	evhttp_set_cb(origin.http, "/ok", on_ok, NULL);
	evhttp_set_cb(origin.http, "/slow", on_slow, NULL);
	evhttp_set_cb(origin.http, "/big", on_big, NULL);
	evhttp_set_cb(origin.http, "/bigchunked", on_big_chunked, NULL);
	evhttp_set_cb(origin.http, "/echo", on_echo, NULL);
	evhttp_set_cb(origin.http, "/status/503", on_503, NULL);
	bound = evhttp_bind_socket_with_handle(origin.http, "127.0.0.1", 0);
	if (bound == NULL)
		return -1;
	origin.port = bound_port(evhttp_bound_socket_get_fd(bound));
	return origin.port == -1 ? -1 : 0;
}

static void
origin_stop(void)
{
	/* Answer what is still held (a detached request is freed then). */
	for (int i = 0; i < origin.slow_started; i++) {
		struct slow *s = &origin.slow[i];

		if (s->timer != NULL)
			event_free(s->timer);
		if (s->req != NULL)
			evhttp_send_reply(s->req, 200, "OK", NULL);
	}
	if (origin.http != NULL)
		evhttp_free(origin.http);
	memset(&origin, 0, sizeof(origin));
}

/* ---- the raw origin: canned bytes for any request, then close --------- */

static struct {
	struct evconnlistener	*listener;
	int			 port;
	const char		*reply;
	struct bufferevent	*conns[MAX_RAW];
} raw;

static void
raw_close(struct bufferevent *bev)
{
	for (int i = 0; i < MAX_RAW; i++)
		if (raw.conns[i] == bev)
			raw.conns[i] = NULL;
	bufferevent_free(bev);
}

static void
on_raw_written(struct bufferevent *bev, void *arg)
{
	(void)arg;
	raw_close(bev);
}

static void
on_raw_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);

	(void)arg;
	if (evbuffer_search(in, "\r\n\r\n", 4, NULL).pos == -1)
		return;
	evbuffer_drain(in, evbuffer_get_length(in));
	bufferevent_setcb(bev, NULL, on_raw_written, NULL, NULL);
	bufferevent_write(bev, raw.reply, strlen(raw.reply));
}

static void
on_raw_event(struct bufferevent *bev, short what, void *arg)
{
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		raw_close(bev);
}

static void
on_raw_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct bufferevent *bev;
	int slot;

	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	for (slot = 0; slot < MAX_RAW && raw.conns[slot] != NULL; slot++)
		;
	if (slot == MAX_RAW) {
		close(fd);
		return;
	}
	bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		abort();
	raw.conns[slot] = bev;
	bufferevent_setcb(bev, on_raw_read, NULL, on_raw_event, NULL);
	bufferevent_enable(bev, EV_READ);
}

static int
raw_start(void)
{
	struct sockaddr_in sin;

	memset(&raw, 0, sizeof(raw));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	raw.listener = evconnlistener_new_bind(base, on_raw_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
	    (struct sockaddr *)&sin, sizeof(sin));
	if (raw.listener == NULL)
		return -1;
	raw.port = bound_port(evconnlistener_get_fd(raw.listener));
	return raw.port == -1 ? -1 : 0;
}

static void
raw_stop(void)
{
	for (int i = 0; i < MAX_RAW; i++)
		if (raw.conns[i] != NULL)
			bufferevent_free(raw.conns[i]);
	if (raw.listener != NULL)
		evconnlistener_free(raw.listener);
	memset(&raw, 0, sizeof(raw));
}

/* ---- the fixture ------------------------------------------------------ */

static void
on_safety(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	timed_out = 1;
	event_base_loopbreak(base);
}

/* Runs the loop until *counter reaches target; -1 after SAFETY_MS. */
static int
run_until(const int *counter, int target)
{
	struct timeval tv = { SAFETY_MS / 1000, (SAFETY_MS % 1000) * 1000 };

	timed_out = 0;
	evtimer_add(safety, &tv);
	while (*counter < target && !timed_out)
		event_base_loop(base, EVLOOP_ONCE);
	evtimer_del(safety);
	return timed_out ? -1 : 0;
}

static void
teardown(void)
{
	upstream_free(&up);
	origin_stop();
	raw_stop();
	if (safety != NULL)
		event_free(safety);
	safety = NULL;
	if (base != NULL)
		event_base_free(base);
	base = NULL;
}

static int
setup(void)
{
	completed = 0;
	if ((base = event_base_new()) == NULL ||
	    (safety = evtimer_new(base, on_safety, NULL)) == NULL ||
	    origin_start() == -1 || raw_start() == -1 ||
	    (up = upstream_new(base)) == NULL) {
		teardown();
		return -1;
	}
	return 0;
}

/* A test with a fresh loop, origins and upstream, torn down even when a
 * CHECK fails. */
#define SCENARIO(name)							\
	static void name(void);						\
	static void							\
	t_##name(void)							\
	{								\
		CHECK(setup() == 0);					\
		name();							\
		teardown();						\
	}								\
	static void							\
	name(void)

static const char *
url(char buf[URL_MAX], int port, const char *path)
{
	snprintf(buf, URL_MAX, "http://127.0.0.1:%d%s", port, path);
	return buf;
}

static struct upstream_request
request(const char *method, const char *u)
{
	struct upstream_request r = {
		.method = method,
		.url = u,
		.connect_timeout_ms = CONNECT_TIMEOUT_MS,
		.timeout_ms = FETCH_TIMEOUT_MS,
	};

	return r;
}

static struct upstream_fetch *
fetch_path(const char *method, const char *path, struct got *g)
{
	char buf[URL_MAX];
	struct upstream_request r = request(method, url(buf, origin.port,
	    path));

	return upstream_fetch(up, &r, on_done, g);
}

static struct upstream_fetch *
fetch_raw(const char *canned, struct got *g)
{
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, raw.port, "/"));

	raw.reply = canned;
	return upstream_fetch(up, &r, on_done, g);
}

/* ---- plain fetches ---------------------------------------------------- */

SCENARIO(get_returns_status_header_and_body)
{
	struct got g = { 0 };

	CHECK(fetch_path("GET", "/ok", &g) != NULL);
	CHECK(upstream_active(up) == 1);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.done == 1);
	CHECK(g.result == UPSTREAM_OK);
	CHECK(g.status == 200);
	CHECK(header(&g, "X-Test") != NULL);
	CHECK_STR(header(&g, "X-Test"), "1");
	CHECK(g.body_len == 5);
	CHECK_STR(g.body, "hello");
	CHECK_STR(g.error, "");
	CHECK(g.active == 0);
	CHECK(g.elapsed_ms >= 0 && g.elapsed_ms < SAFETY_MS);
	CHECK(upstream_active(up) == 0);
}

SCENARIO(null_method_means_get)
{
	struct got g = { 0 };

	CHECK(fetch_path(NULL, "/echo", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK_STR(g.body, "GET\n");
	/* Nothing the caller did not ask for. */
	CHECK_STR(header(&g, "X-Got-Accept"), "-");
	CHECK_STR(header(&g, "X-Got-Accept-Encoding"), "-");
	CHECK_STR(header(&g, "X-Got-Content-Type"), "-");
}

SCENARIO(head_returns_headers_without_body_even_over_the_limit)
{
	char buf[URL_MAX];
	struct upstream_request r = request("HEAD", url(buf, origin.port,
	    "/big"));
	struct got g = { 0 };

	r.max_body_bytes = 1000;
	CHECK(upstream_fetch(up, &r, on_done, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK(g.status == 200);
	CHECK(g.body_len == 0);
	CHECK(header(&g, "Content-Length") != NULL);
	CHECK_STR(header(&g, "Content-Length"), "1048576");
}

SCENARIO(post_sends_the_exact_body_and_only_the_given_headers)
{
	static const char payload[] = "a=1\0b=2";	/* with a NUL */
	struct hlist *h = malloc(sizeof(*h));
	char *u = malloc(URL_MAX), *method = strdup("POST");
	char *body = malloc(sizeof(payload) - 1);
	struct upstream_request r;
	struct got g = { 0 };
	char want[64];

	if (h == NULL || u == NULL || method == NULL || body == NULL)
		abort();
	hl_init(h);
	hl_add(h, "X-Req", "abc");
	hl_add(h, "X-Empty", "");
	hl_add(h, "Expect", "100-continue");
	memcpy(body, payload, sizeof(payload) - 1);
	url(u, origin.port, "/echo");
	r = request(method, u);
	r.headers = h;
	r.body = body;
	r.body_len = sizeof(payload) - 1;

	CHECK(upstream_fetch(up, &r, on_done, &g) != NULL);
	/* Everything in the request is the caller's to free now. */
	hl_free(h);
	free(h);
	free(u);
	free(method);
	free(body);

	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	memcpy(want, "POST\n", 5);
	memcpy(want + 5, payload, sizeof(payload) - 1);
	CHECK(g.body_len == 5 + sizeof(payload) - 1);
	CHECK(memcmp(g.body, want, g.body_len) == 0);
	CHECK_STR(header(&g, "X-Got-X-Req"), "[abc]");
	CHECK_STR(header(&g, "X-Got-X-Empty"), "[]");
	CHECK_STR(header(&g, "X-Got-Content-Type"), "-");
	CHECK_STR(header(&g, "X-Got-Expect"), "-");
}

SCENARIO(large_post_does_not_wait_for_100_continue)
{
	char buf[URL_MAX];
	struct upstream_request r = request("POST", url(buf, origin.port,
	    "/echo"));
	static char body[4096];
	struct got g = { 0 };

	memset(body, 'x', sizeof(body));
	r.body = body;
	r.body_len = sizeof(body);
	CHECK(upstream_fetch(up, &r, on_done, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK(g.body_len == 5 + sizeof(body));
	CHECK(strncmp(g.body, "POST\nxxxx", 9) == 0);
	CHECK_STR(header(&g, "X-Got-Expect"), "-");
	CHECK(g.elapsed_ms < 900);	/* curl's 100-continue wait is 1 s */
}

SCENARIO(other_methods_are_sent_by_name)
{
	char buf[URL_MAX];
	struct upstream_request put = request("PUT", url(buf, origin.port,
	    "/echo"));
	struct upstream_request del = request("DELETE", buf);
	struct got gp = { 0 }, gd = { 0 };

	put.body = "new";
	put.body_len = 3;
	CHECK(upstream_fetch(up, &put, on_done, &gp) != NULL);
	CHECK(upstream_fetch(up, &del, on_done, &gd) != NULL);
	CHECK(run_until(&completed, 2) == 0);
	CHECK(gp.result == UPSTREAM_OK);
	CHECK_STR(gp.body, "PUT\nnew");
	CHECK(gd.result == UPSTREAM_OK);
	CHECK_STR(gd.body, "DELETE\n");
}

SCENARIO(invalid_method_is_refused)
{
	char buf[URL_MAX];
	struct upstream_request r = request("GET / HTTP/1.1\r\nX:",
	    url(buf, origin.port, "/ok"));
	struct got g = { 0 };

	CHECK(upstream_fetch(up, &r, on_done, &g) == NULL);
	CHECK(upstream_active(up) == 0);
}

SCENARIO(status_503_is_a_complete_response)
{
	struct got g = { 0 };

	CHECK(fetch_path("GET", "/status/503", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK(g.status == 503);
	CHECK_STR(g.body, "busy");
}

/* ---- failures --------------------------------------------------------- */

SCENARIO(slow_origin_hits_the_total_timeout_once)
{
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    "/slow"));
	struct got g = { 0 };

	r.timeout_ms = 100;
	CHECK(upstream_fetch(up, &r, on_done, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_TIMEOUT);
	CHECK(g.status == 0);
	CHECK(g.error[0] != '\0');
	CHECK(g.elapsed_ms >= 90 && g.elapsed_ms < SLOW_DELAY_MS);
	/* The origin's late answer changes nothing. */
	CHECK(run_until(&origin.slow_replied, 1) == 0);
	CHECK(g.done == 1);
	CHECK(completed == 1);
}

static int
closed_port(void)
{
	struct sockaddr_in sin;
	int fd, port;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	port = bound_port(fd);
	close(fd);
	return port;
}

SCENARIO(refused_connection_is_a_connect_error)
{
	char buf[URL_MAX];
	int port = closed_port();
	struct upstream_request r = request("GET", url(buf, port, "/"));
	struct got g = { 0 };

	CHECK(port > 0);
	CHECK(upstream_fetch(up, &r, on_done, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_CONNECT);
	CHECK(g.error[0] != '\0');
	CHECK(g.nheaders == 0 && g.body_len == 0);
}

static struct upstream_fetch *
fetch_limited(const char *path, size_t limit, struct got *g)
{
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    path));

	r.max_body_bytes = limit;
	return upstream_fetch(up, &r, on_done, g);
}

SCENARIO(body_over_the_limit_is_too_big)
{
	struct got by_length = { 0 }, chunked = { 0 }, at_limit = { 0 };

	CHECK(fetch_limited("/big", 1000, &by_length) != NULL);
	CHECK(fetch_limited("/bigchunked", 1000, &chunked) != NULL);
	CHECK(fetch_limited("/bigchunked", BIG_BODY_BYTES, &at_limit) != NULL);
	CHECK(upstream_active(up) == 3);
	CHECK(run_until(&completed, 3) == 0);
	CHECK(by_length.result == UPSTREAM_ERR_TOO_BIG);
	CHECK(by_length.body_len == 0);
	CHECK(strstr(by_length.error, "1000") != NULL);
	CHECK(chunked.result == UPSTREAM_ERR_TOO_BIG);
	CHECK(chunked.body_len == 0);
	CHECK(at_limit.result == UPSTREAM_OK);
	CHECK(at_limit.body_len == BIG_BODY_BYTES);
	CHECK(strcmp(upstream_result_name(chunked.result), "too_big") == 0);
}

/* ---- cancelling ------------------------------------------------------- */

SCENARIO(cancel_right_after_start_never_calls_back)
{
	struct got cancelled = { 0 }, later = { 0 };
	struct upstream_fetch *f;

	CHECK((f = fetch_path("GET", "/ok", &cancelled)) != NULL);
	upstream_cancel(&f);
	CHECK(f == NULL);
	CHECK(upstream_active(up) == 0);
	upstream_cancel(&f);		/* harmless on NULL */
	/* The loop keeps running; the cancelled fetch stays silent. */
	CHECK(fetch_path("GET", "/ok", &later) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(later.result == UPSTREAM_OK);
	CHECK(cancelled.done == 0);
}

SCENARIO(cancel_in_flight_never_calls_back)
{
	struct got cancelled = { 0 };
	struct upstream_fetch *f;

	CHECK((f = fetch_path("GET", "/slow", &cancelled)) != NULL);
	CHECK(run_until(&origin.slow_started, 1) == 0);
	upstream_cancel(&f);
	CHECK(f == NULL && upstream_active(up) == 0);
	CHECK(run_until(&origin.slow_replied, 1) == 0);
	CHECK(cancelled.done == 0 && completed == 0);
}

struct pair {
	struct got		 got;
	struct upstream_fetch	*victim;
};

static void
on_done_cancel(struct upstream_response *resp, void *arg)
{
	struct pair *p = arg;

	upstream_cancel(&p->victim);
	on_done(resp, &p->got);
}

SCENARIO(cancel_from_another_fetchs_callback)
{
	struct got victim = { 0 };
	struct pair p = { 0 };
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    "/ok"));

	CHECK((p.victim = fetch_path("GET", "/slow", &victim)) != NULL);
	CHECK(upstream_fetch(up, &r, on_done_cancel, &p) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(p.got.result == UPSTREAM_OK);
	CHECK(p.victim == NULL);
	CHECK(upstream_active(up) == 0);
	CHECK(run_until(&origin.slow_replied, 1) == 0);
	CHECK(victim.done == 0 && completed == 1);
}

/* Siblings that may all finish in one pass: the first cancels the rest. */
struct sibling {
	struct got		 got;
	struct upstream_fetch	*f;
	struct sibling		*all;
};

static void
on_done_cancel_siblings(struct upstream_response *resp, void *arg)
{
	struct sibling *me = arg;

	me->f = NULL;			/* finished: no longer ours */
	for (int i = 0; i < SIBLINGS; i++)
		upstream_cancel(&me->all[i].f);
	on_done(resp, &me->got);
}

SCENARIO(first_of_siblings_cancels_the_rest)
{
	static struct sibling s[SIBLINGS];
	struct got after = { 0 };
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    "/ok"));

	memset(s, 0, sizeof(s));
	for (int i = 0; i < SIBLINGS; i++) {
		s[i].all = s;
		CHECK((s[i].f = upstream_fetch(up, &r, on_done_cancel_siblings,
		    &s[i])) != NULL);
	}
	CHECK(run_until(&completed, 1) == 0);
	CHECK(upstream_active(up) == 0);
	/* Nothing left over fires while the loop runs on. */
	CHECK(fetch_path("GET", "/ok", &after) != NULL);
	CHECK(run_until(&completed, 2) == 0);
	CHECK(completed == 2 && after.result == UPSTREAM_OK);
}

/* ---- many, nested, reused --------------------------------------------- */

SCENARIO(fifty_concurrent_fetches_all_complete)
{
	static struct got g[FLEET];

	memset(g, 0, sizeof(g));
	for (int i = 0; i < FLEET; i++)
		CHECK(fetch_path("GET", "/ok", &g[i]) != NULL);
	CHECK(upstream_active(up) == FLEET);
	CHECK(run_until(&completed, FLEET) == 0);
	for (int i = 0; i < FLEET; i++) {
		CHECK(g[i].done == 1);
		CHECK(g[i].result == UPSTREAM_OK);
		CHECK_STR(g[i].body, "hello");
	}
	CHECK(upstream_active(up) == 0);
	CHECK(origin.requests == FLEET);
}

struct chain {
	struct got	first, second;
	int		started;
};

static void
on_done_start_another(struct upstream_response *resp, void *arg)
{
	struct chain *c = arg;

	on_done(resp, &c->first);
	c->started = fetch_path("GET", "/echo", &c->second) != NULL;
}

SCENARIO(fetch_started_from_a_done_callback_completes)
{
	struct chain c = { 0 };
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    "/ok"));

	CHECK(upstream_fetch(up, &r, on_done_start_another, &c) != NULL);
	CHECK(run_until(&completed, 2) == 0);
	CHECK(c.started);
	CHECK(c.first.result == UPSTREAM_OK);
	CHECK(c.second.result == UPSTREAM_OK);
	CHECK_STR(c.second.body, "GET\n");
}

SCENARIO(sequential_fetches_reuse_one_connection)
{
	struct got a = { 0 }, b = { 0 };

	CHECK(fetch_path("GET", "/ok", &a) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(fetch_path("GET", "/ok", &b) != NULL);
	CHECK(run_until(&completed, 2) == 0);
	CHECK(a.result == UPSTREAM_OK && b.result == UPSTREAM_OK);
	CHECK(origin.requests == 2);
	CHECK(origin.npeers == 1);
}

/* ---- freeing the upstream --------------------------------------------- */

SCENARIO(free_with_fetches_in_flight_calls_nobody)
{
	struct got g[3] = { { 0 } };

	for (int i = 0; i < 3; i++)
		CHECK(fetch_path("GET", "/slow", &g[i]) != NULL);
	CHECK(run_until(&origin.slow_started, 3) == 0);
	upstream_free(&up);
	CHECK(up == NULL);
	CHECK(run_until(&origin.slow_replied, 3) == 0);
	CHECK(completed == 0);
}

static void
on_done_free_upstream(struct upstream_response *resp, void *arg)
{
	on_done(resp, arg);
	upstream_free(&up);
}

SCENARIO(free_from_a_done_callback_is_deferred)
{
	struct got first = { 0 }, pending = { 0 };
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    "/ok"));

	CHECK(fetch_path("GET", "/slow", &pending) != NULL);
	CHECK(upstream_fetch(up, &r, on_done_free_upstream, &first) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(up == NULL);
	CHECK(first.result == UPSTREAM_OK);
	CHECK(run_until(&origin.slow_replied, 1) == 0);
	CHECK(pending.done == 0 && completed == 1);
}

/* ---- what the origin sends, byte for byte ----------------------------- */

SCENARIO(interim_response_headers_are_dropped)
{
	struct got g = { 0 };

	CHECK(fetch_raw(
	    "HTTP/1.1 103 Early Hints\r\n"
	    "Link: </style.css>; rel=preload\r\n"
	    "Content-Length: 7\r\n"	/* its own: not a second one */
	    "\r\n"
	    "HTTP/1.1 200 OK\r\n"
	    "X-Final: yes\r\n"
	    "Content-Length: 2\r\n"
	    "Connection: close\r\n"
	    "\r\n"
	    "ok", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK(g.status == 200);
	CHECK(header(&g, "Link") == NULL);
	CHECK(header(&g, "X-Final") != NULL);
	CHECK_STR(header(&g, "X-Final"), "yes");
	CHECK(g.nheaders == 3);
	CHECK_STR(g.body, "ok");
	CHECK(upstream_counters(up)->bad_framing == 0);
}

SCENARIO(header_lines_are_trimmed_and_odd_ones_ignored)
{
	struct got g = { 0 };

	CHECK(fetch_raw(
	    "HTTP/1.1 200 OK\r\n"
	    "X-Pad: \t padded \t\r\n"
	    "X-Empty:\r\n"
	    "X-Plain: first\r\n"
	    ": no name\r\n"
	    "Content-Length: 2\r\n"
	    "Connection: close\r\n"
	    "\r\n"
	    "ok", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK_STR(header(&g, "X-Pad"), "padded");
	CHECK(header(&g, "X-Empty") != NULL);
	CHECK_STR(header(&g, "X-Empty"), "");
	CHECK_STR(header(&g, "X-Plain"), "first");
	CHECK(g.nheaders == 5);
	CHECK_STR(g.body, "ok");
}

SCENARIO(folded_header_line_fails_the_response)
{
	struct got g = { 0 };

	CHECK(fetch_raw(
	    "HTTP/1.1 200 OK\r\n"
	    "X-Fold: first\r\n"
	    "  folded: continuation\r\n"
	    "Content-Length: 2\r\n"
	    "Connection: close\r\n"
	    "\r\n"
	    "ok", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_PROTOCOL);
	CHECK(upstream_counters(up)->bad_framing == 1);
}

SCENARIO(trailers_are_not_merged_into_headers)
{
	struct got g = { 0 };

	CHECK(fetch_raw(
	    "HTTP/1.1 200 OK\r\n"
	    "Transfer-Encoding: chunked\r\n"
	    "Connection: close\r\n"
	    "\r\n"
	    "2\r\nok\r\n"
	    "0\r\n"
	    "X-Trailer: late\r\n"
	    "\r\n", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK);
	CHECK_STR(g.body, "ok");
	CHECK(header(&g, "X-Trailer") == NULL);
}

SCENARIO(truncated_body_is_a_protocol_error)
{
	struct got g = { 0 };

	CHECK(fetch_raw(
	    "HTTP/1.1 200 OK\r\n"
	    "Content-Length: 10\r\n"
	    "\r\n"
	    "abc", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_PROTOCOL);
	CHECK(g.error[0] != '\0');
	CHECK(g.status == 0 && g.nheaders == 0 && g.body_len == 0);
}

SCENARIO(non_http_reply_is_a_protocol_error)
{
	struct got g = { 0 };

	CHECK(fetch_raw("SSH-2.0-OpenSSH_9.2\r\n\r\n", &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_PROTOCOL);
	CHECK(g.error[0] != '\0');
}

SCENARIO(oversized_header_block_is_a_protocol_error)
{
	static char canned[128 * 1024];
	size_t n = 0;
	struct got g = { 0 };

	n += snprintf(canned + n, sizeof(canned) - n, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 800; i++)
		n += snprintf(canned + n, sizeof(canned) - n,
		    "X-Filler-%03d: %090d\r\n", i, 0);
	snprintf(canned + n, sizeof(canned) - n,
	    "Content-Length: 2\r\n\r\nok");
	CHECK(fetch_raw(canned, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_PROTOCOL);
	CHECK(strstr(g.error, "headers") != NULL);
	CHECK(g.nheaders == 0);
}

/* Fails canned as bad framing, counted once. */
static void
expect_bad_framing(const char *canned, const char *why)
{
	struct got g = { 0 };
	uint64_t before = upstream_counters(up)->bad_framing;

	completed = 0;
	CHECK(fetch_raw(canned, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_PROTOCOL);
	CHECK(strstr(g.error, why) != NULL);
	CHECK(g.status == 0 && g.body_len == 0);
	CHECK(upstream_counters(up)->bad_framing == before + 1);
}

SCENARIO(ambiguous_lengths_are_bad_framing)
{
	expect_bad_framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    "Content-Length: 12\r\n\r\nhello world!", "two Content-Length");
	expect_bad_framing("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "content-length: 2\r\n\r\nok", "two Content-Length");
	expect_bad_framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	    "Transfer-Encoding with Content-Length");
	expect_bad_framing("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	    "Transfer-Encoding with Content-Length");
	expect_bad_framing("HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nok",
	    "not a number");
	expect_bad_framing("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
	    "not a number");
	expect_bad_framing("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
	    "not a number");
	expect_bad_framing("HTTP/1.1 200 OK\r\n"
	    "Content-Length: 0000000000000000002\r\n\r\nok", "not a number");
}

SCENARIO(header_lines_over_the_limit_fail_and_are_counted)
{
	struct got g = { 0 }, h = { 0 };
	const char *canned =
	    "HTTP/1.1 200 OK\r\n"
	    "A: 1\r\n"
	    "B: 2\r\n"
	    "Content-Length: 2\r\n"
	    "\r\n"
	    "ok";

	upstream_set_max_headers(up, 3);
	CHECK(fetch_raw(canned, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK && g.nheaders == 3);

	upstream_set_max_headers(up, 2);
	completed = 0;
	CHECK(fetch_raw(canned, &h) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(h.result == UPSTREAM_ERR_PROTOCOL);
	CHECK(strstr(h.error, "more than 2 header lines") != NULL);
	CHECK(h.nheaders == 0);
	CHECK(upstream_counters(up)->too_many_headers == 1);
}

/* ---- over an abstract Unix socket ------------------------------------ */

/* The evhttp origin listens on an abstract Unix socket too: its name. */
static const char *
origin_unix(char name[URL_MAX])
{
	struct sockaddr_un sa;
	struct evconnlistener *l;
	size_t n;

	snprintf(name, URL_MAX, "corral-test-upstream-%d", (int)getpid());
	n = strlen(name);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, n);	/* abstract: sun_path[0] is 0 */
	l = evconnlistener_new_bind(base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE,
	    16, (struct sockaddr *)&sa,
	    (int)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	if (l == NULL)
		return NULL;
	if (evhttp_bind_listener(origin.http, l) == NULL) {
		evconnlistener_free(l);
		return NULL;
	}
	return name;
}

static struct upstream_fetch *
fetch_unix(const char *name, pid_t pid, struct got *g)
{
	struct upstream_request r = request("GET", "http://peer/ok");

	r.abstract_socket = name;
	r.listen_pid = pid;
	return upstream_fetch(up, &r, on_done, g);
}

/* ---- streaming --------------------------------------------------------- */

struct streamed {
	int	heads;
	int	pieces;
	size_t	first;		/* the first piece's length */
	size_t	total;
};

static int
on_stream_data(const struct upstream_response *resp, struct evbuffer *chunk,
    void *arg)
{
	struct streamed *s = arg;

	if (chunk == NULL) {
		s->heads++;
		return UPSTREAM_STREAM;
	}
	if (s->pieces++ == 0)
		s->first = evbuffer_get_length(chunk);
	s->total += evbuffer_get_length(chunk);
	return 0;
}

/* 1 MiB sent at once arrives in reads far longer than a first piece: the
 * callee gets a short one first, then the rest, and all of it. */
SCENARIO(a_streamed_body_comes_first_in_a_short_piece_then_all_of_it)
{
	char buf[URL_MAX];
	struct upstream_request r = request("GET", url(buf, origin.port,
	    "/big"));
	struct streamed s = { 0 };
	struct got g = { 0 };

	r.on_data = on_stream_data;
	r.data_arg = &s;
	r.keep_body = BODY_KEEP;
	CHECK(upstream_fetch(up, &r, on_done, &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK && g.status == 200);
	CHECK(s.heads == 1);
	CHECK(s.total == BIG_BODY_BYTES);
	CHECK(s.first > 0 && s.first <= FIRST_PIECE_BYTES);
	CHECK(s.pieces >= 2);
	CHECK(s.total / (size_t)s.pieces > FIRST_PIECE_BYTES);	/* not all short */
}

SCENARIO(abstract_socket_reaches_the_process_named)
{
	char name[URL_MAX];
	struct got g = { 0 }, h = { 0 };

	CHECK(origin_unix(name) != NULL);
	CHECK(fetch_unix(name, getpid(), &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_OK && g.status == 200);
	CHECK_STR(g.body, "hello");
	/* Its connection is reused, and was checked when it was new. */
	CHECK(fetch_unix(name, getpid(), &h) != NULL);
	CHECK(run_until(&completed, 2) == 0);
	CHECK(h.result == UPSTREAM_OK && h.status == 200);
	CHECK(origin.requests == 2);
}

SCENARIO(abstract_socket_of_another_process_is_refused)
{
	char name[URL_MAX];
	struct got g = { 0 };

	/* Whoever listens there, it is not the process the caller named. */
	CHECK(origin_unix(name) != NULL);
	CHECK(fetch_unix(name, getppid(), &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_CONNECT && g.status == 0);
	CHECK(strstr(g.error, "no process") != NULL);
	CHECK(g.body_len == 0 && g.nheaders == 0);
}

SCENARIO(abstract_socket_nobody_listens_on_is_a_connect_error)
{
	struct got g = { 0 };

	CHECK(fetch_unix("corral-test-nobody-listens", getpid(), &g) != NULL);
	CHECK(run_until(&completed, 1) == 0);
	CHECK(g.result == UPSTREAM_ERR_CONNECT);
}

static void
t_result_names(void)
{
	CHECK_STR(upstream_result_name(UPSTREAM_OK), "ok");
	CHECK_STR(upstream_result_name(UPSTREAM_ERR_CONNECT), "connect");
	CHECK_STR(upstream_result_name(UPSTREAM_ERR_TIMEOUT), "timeout");
	CHECK_STR(upstream_result_name(UPSTREAM_ERR_TOO_BIG), "too_big");
	CHECK_STR(upstream_result_name(UPSTREAM_ERR_PROTOCOL), "protocol");
}

static void
t_free_and_cancel_accept_null(void)
{
	struct upstream *none = NULL;
	struct upstream_fetch *f = NULL;
	struct upstream_response *r = NULL;

	upstream_free(&none);
	upstream_cancel(&f);
	upstream_response_free(&r);
	CHECK(none == NULL && f == NULL && r == NULL);
}

int
main(void)
{
	RUN(t_get_returns_status_header_and_body);
	RUN(t_null_method_means_get);
	RUN(t_head_returns_headers_without_body_even_over_the_limit);
	RUN(t_post_sends_the_exact_body_and_only_the_given_headers);
	RUN(t_large_post_does_not_wait_for_100_continue);
	RUN(t_other_methods_are_sent_by_name);
	RUN(t_invalid_method_is_refused);
	RUN(t_status_503_is_a_complete_response);
	RUN(t_slow_origin_hits_the_total_timeout_once);
	RUN(t_refused_connection_is_a_connect_error);
	RUN(t_body_over_the_limit_is_too_big);
	RUN(t_cancel_right_after_start_never_calls_back);
	RUN(t_cancel_in_flight_never_calls_back);
	RUN(t_cancel_from_another_fetchs_callback);
	RUN(t_first_of_siblings_cancels_the_rest);
	RUN(t_fifty_concurrent_fetches_all_complete);
	RUN(t_fetch_started_from_a_done_callback_completes);
	RUN(t_sequential_fetches_reuse_one_connection);
	RUN(t_free_with_fetches_in_flight_calls_nobody);
	RUN(t_free_from_a_done_callback_is_deferred);
	RUN(t_interim_response_headers_are_dropped);
	RUN(t_header_lines_are_trimmed_and_odd_ones_ignored);
	RUN(t_folded_header_line_fails_the_response);
	RUN(t_trailers_are_not_merged_into_headers);
	RUN(t_truncated_body_is_a_protocol_error);
	RUN(t_non_http_reply_is_a_protocol_error);
	RUN(t_oversized_header_block_is_a_protocol_error);
	RUN(t_ambiguous_lengths_are_bad_framing);
	RUN(t_header_lines_over_the_limit_fail_and_are_counted);
	RUN(t_abstract_socket_reaches_the_process_named);
	RUN(t_abstract_socket_of_another_process_is_refused);
	RUN(t_abstract_socket_nobody_listens_on_is_a_connect_error);
	RUN(t_a_streamed_body_comes_first_in_a_short_piece_then_all_of_it);
	RUN(t_result_names);
	RUN(t_free_and_cancel_accept_null);
	return unit_exit();
}
