/*
 * proxy/proxy_frame.c: every rule of the strict reader, pipelining, the
 * canonical stream it emits, that any split of the input reads the same
 * as one piece, and a differential check against a small independent
 * decision function on requests generated from a grammar.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/proxy_frame.h"
#include "tests/unit/frame_canon.h"
#include "tests/unit/unit.h"

#define HEAD_MAX	1024
#define BODY_MAX	4096
#define OUT_MAX		16384
#define GEN_CASES	4000
#define GEN_SEED	20261123u

/* What was read, canonical (frame_canon.h), with a fixed buffer's face. */
struct out {
	char	 buf[OUT_MAX];
	size_t	 len;
	struct canon c;
};

static void
out_take(struct out *o)
{
	if (o->c.out.len > sizeof(o->buf))
		abort();
	memcpy(o->buf, o->c.out.p != NULL ? o->c.out.p : "", o->c.out.len);
	o->len = o->c.out.len;
}

static enum frame_result
feed_one(struct frame *f, const char *s, size_t n, struct out *o)
{
	enum frame_result r = canon_feed(f, s, n, &o->c);

	out_take(o);
	return r;
}

/* Feeds s in pieces of at most step bytes (0: one piece). The status
 * (0 when accepted), what was emitted, and the requests seen. */
static int
feed_n(const char *s, size_t n, size_t step, struct out *o, uint64_t *reqs)
{
	struct frame *f = frame_new(HEAD_MAX, BODY_MAX);
	int status = 0;

	memset(o, 0, sizeof(*o));
	for (size_t off = 0; off < n && status == 0; ) {
		size_t k = step == 0 || n - off < step ? n - off : step;

		if (feed_one(f, s + off, k, o) == FRAME_REJECT)
			status = frame_status(f);
		off += k;
	}
	if (reqs != NULL)
		*reqs = frame_requests(f);
	frame_free(&f);
	canon_free(&o->c);
	return status;
}

static int
feed(const char *s, struct out *o)
{
	return feed_n(s, strlen(s), 0, o, NULL);
}

static int
status_of(const char *s)
{
	struct out o;

	return feed(s, &o);
}

static int
emitted(const char *s, const char *want)
{
	struct out o;

	if (feed(s, &o) != 0 || o.len != strlen(want) ||
	    memcmp(o.buf, want, o.len) != 0) {
		printf("# emitted %.*s\n", (int)o.len, o.buf);
		return 0;
	}
	return 1;
}

#define GET(path)	"GET " path " HTTP/1.1\r\nHost: h\r\n\r\n"

/* ---- request line ----------------------------------------------------------------- */

static void
t_plain_requests_pass_unchanged(void)
{
	CHECK(emitted(GET("/a"), GET("/a")));
	CHECK(emitted("GET /a?b=c HTTP/1.0\r\n\r\n", "GET /a?b=c HTTP/1.0\r\n\r\n"));
	CHECK(emitted("POST /p HTTP/1.1\r\nHost: h\r\nX-A:  b \r\nContent-Length: 3\r\n\r\nabc",
	    "POST /p HTTP/1.1\r\nHost: h\r\nX-A: b\r\nContent-Length: 3\r\n\r\nabc"));
	CHECK(emitted("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
	    "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"));
	CHECK(emitted("GET http://h/x HTTP/1.1\r\nHost: h\r\n\r\n",
	    "GET http://h/x HTTP/1.1\r\nHost: h\r\n\r\n"));
}

static void
t_pipelined_requests_follow_one_another(void)
{
	struct out o;
	uint64_t n;
	const char *s = GET("/1") "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi" GET("/3");

	CHECK(feed_n(s, strlen(s), 0, &o, &n) == 0);
	CHECK(n == 3);
	CHECK(o.len == strlen(s) && memcmp(o.buf, s, o.len) == 0);
}

/* Empty lines before a request line are ignored (RFC 9112 2.2) up to the
 * head's limit, HEAD_MAX bytes of them: at the limit, in any pieces,
 * still read; one more line, 400. */
static void
t_leading_empty_lines_are_ignored(void)
{
	char s[2 * HEAD_MAX + 128];
	size_t n = 0;
	struct out o;

	CHECK(emitted("\r\n\r\n" GET("/a"), GET("/a")));
	CHECK(status_of("\n" GET("/a")) == 400);
	for (; n < HEAD_MAX; n += 2)
		memcpy(s + n, "\r\n", 2);
	memcpy(s + n, GET("/a"), strlen(GET("/a")));
	for (size_t step = 0; step <= 3; step++) {
		CHECK(feed_n(s, n + strlen(GET("/a")), step, &o, NULL) == 0);
		CHECK(o.len == strlen(GET("/a")) &&
		    memcmp(o.buf, GET("/a"), o.len) == 0);
	}
	memcpy(s + n, "\r\n" GET("/a"), strlen(GET("/a")) + 2);
	for (size_t step = 0; step <= 3; step++)
		CHECK(feed_n(s, n + 2 + strlen(GET("/a")), step, &o, NULL) ==
		    400);
	/* Before each of pipelined requests: the count starts again. */
	n = 0;
	for (int r = 0; r < 2; r++) {
		for (size_t k = 0; k < HEAD_MAX; k += 2, n += 2)
			memcpy(s + n, "\r\n", 2);
		memcpy(s + n, GET("/a"), strlen(GET("/a")));
		n += strlen(GET("/a"));
	}
	CHECK(feed_n(s, n, 0, &o, NULL) == 0);
	CHECK(o.len == 2 * strlen(GET("/a")));
}

static void
t_request_line_must_be_exact(void)
{
	CHECK(status_of("GET  /a HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a  HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a HTTP/1.1 \r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a http/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a HTTP/1.12\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("G(T /a HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a HTTP/2.0\r\nHost: h\r\n\r\n") == 505);
	/* HTTP/0.9: refused by version, as soon as its line ends. */
	CHECK(status_of("GET /a\r\nHost: h\r\n\r\n") == 505);
	CHECK(status_of("GET /a\r\n") == 505);
	CHECK(status_of("GET/a\r\n") == 400);
	CHECK(status_of("GET /a HTTP/2.0\r\n") == 505);
}

static void
t_target_percent_encoding_is_valid(void)
{
	CHECK(status_of("GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a%2 HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a% HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a?b=%g1 HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a%2F%7e?b=%25 HTTP/1.1\r\nHost: h\r\n\r\n") == 0);
}

static void
t_target_has_no_control_bytes_spaces_or_fragment(void)
{
	CHECK(status_of("GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a\x80 HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a#f HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET /a%0D HTTP/1.1\r\nHost: h\r\n\r\n") == 0);
}

static void
t_target_forms(void)
{
	CHECK(status_of("GET * HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET h:80 HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n") == 501);
	CHECK(status_of("GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET http://u@h/x HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET http://other/x HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET HTTP://H/x HTTP/1.1\r\nHost: h\r\n\r\n") == 0);
	CHECK(status_of("GET http://h HTTP/1.1\r\nHost: h\r\n\r\n") == 0);
	CHECK(status_of("GET http://h:8080?q HTTP/1.1\r\nHost: h:8080\r\n\r\n") == 0);
	CHECK(status_of("GET http://h:8080?q HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
}

/* ---- field lines -------------------------------------------------------------------- */

static void
t_field_lines_are_strict(void)
{
	static const char nul[] = "GET / HTTP/1.1\r\nHost: h\r\nX-A: b\0c\r\n\r\n";
	struct out o;

	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A : b\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A\t: b\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\r\n c\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A b\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\n: b\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX(A: b\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\rc\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\x01\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\x7f\r\n\r\n") == 400);
	CHECK(feed_n(nul, sizeof(nul) - 1, 0, &o, NULL) == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\tc \xff\r\n\r\n") == 0);
}

static void
t_bare_lf_ends_no_line(void)
{
	CHECK(status_of("GET / HTTP/1.1\nHost: h\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\n\n") == 400);
}

static void
t_host_exactly_once_in_http11(void)
{
	CHECK(status_of("GET / HTTP/1.1\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nhost: h\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.0\r\nHost: h\r\nHost: i\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.0\r\n\r\n") == 0);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h/x\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nHost: h.example:8080\r\n\r\n") == 0);
}

#define WITH_HOST(h)	"GET / HTTP/1.1\r\nHost: " h "\r\n\r\n"

/* RFC 9110 7.2 / RFC 3986 3.2.2-3, strictly: a name or an IPv6 literal,
 * then nothing or ':' and 1 to 5 digits naming 1..65535. */
static void
t_host_is_a_name_and_a_port_of_digits(void)
{
	static const char *const good[] = {
		"", "h", "app.test:8080", "APP.test:080", "a-b_c~d.e.", "[::1]",
		"[2001:DB8::1]:443", "127.0.0.1:1", "h:65535",
	};
	static const char *const bad[] = {
		"h:", "h:evil", "h:80x", "h:8080:1", "h:99999", "h:0",
		"h:000080", ":8080", "h%2e", "a..b", ".h", "h;x", "h,i", "h!",
		"[::1", "[::1]x", "[v1.x]", "[fe80::1%25eth0]", "[]", "[::1]:",
		"h h", "u@h",
	};
	char req[256];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(req, sizeof(req), WITH_HOST("%s"), good[i]);
		CHECK(status_of(req) == 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(req, sizeof(req), WITH_HOST("%s"), bad[i]);
		CHECK(status_of(req) == 400);
	}
	CHECK(status_of("GET http://h:/x HTTP/1.0\r\n\r\n") == 400);
	CHECK(status_of("GET http://h:x/x HTTP/1.0\r\n\r\n") == 400);
	CHECK(status_of("GET http://h:8080/x HTTP/1.0\r\n\r\n") == 0);
	CHECK(status_of("GET http://[::1]:8080/x HTTP/1.0\r\n\r\n") == 0);
}

static void
t_head_limits(void)
{
	char big[HEAD_MAX + 200];

	snprintf(big, sizeof(big), "GET /%0*d HTTP/1.1\r\nHost: h\r\n\r\n",
	    HEAD_MAX, 0);
	CHECK(status_of(big) == 414);
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: h\r\nX: %0*d\r\n\r\n",
	    HEAD_MAX, 0);
	CHECK(status_of(big) == 431);
}

/* ---- body framing ---------------------------------------------------------------- */

static void
t_content_length_rules(void)
{
	const char *p = "POST / HTTP/1.1\r\nHost: h\r\n";
	char s[256];

#define WITH(fields)	(snprintf(s, sizeof(s), "%s%s", p, fields), s)
	CHECK(status_of(WITH("Content-Length : 5\r\n\r\nhello")) == 400);
	CHECK(status_of(WITH("Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello")) == 400);
	CHECK(status_of(WITH("Content-Length: 5, 6\r\n\r\nhello")) == 400);
	CHECK(status_of(WITH("Content-Length: +5\r\n\r\nhello")) == 400);
	CHECK(status_of(WITH("Content-Length: 0x5\r\n\r\nhello")) == 400);
	CHECK(status_of(WITH("Content-Length: \r\n\r\n")) == 400);
	CHECK(status_of(WITH("Content-Length: 99999999999999999999\r\n\r\n")) == 413);
	CHECK(status_of(WITH("Content-Length: 4097\r\n\r\n")) == 413);
	CHECK(status_of(WITH("Content-Length: 4096\r\n\r\n")) == 0);	/* the limit */
	/* Not even identical values twice: a next hop may not merge them. */
	CHECK(status_of(WITH("Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello")) == 400);
	CHECK(status_of(WITH("Content-Length: 5, 5\r\n\r\nhello")) == 400);
	CHECK(emitted(WITH("Content-Length:5 \r\nX: y\r\n\r\nhello"),
	    "POST / HTTP/1.1\r\nHost: h\r\nX: y\r\nContent-Length: 5\r\n\r\nhello"));
#undef WITH
}

static void
t_transfer_encoding_rules(void)
{
	const char *p = "POST / HTTP/1.1\r\nHost: h\r\n";
	char s[256];

#define WITH(fields)	(snprintf(s, sizeof(s), "%s%s", p, fields), s)
	CHECK(status_of(WITH("Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding: xchunked\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding: gzip\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding: chunked, gzip\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding: chunked, chunked\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding: gzip, chunked\r\n\r\n")) == 501);
	CHECK(status_of(WITH("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding:\r\n\r\n")) == 400);
	CHECK(status_of(WITH("Transfer-Encoding: chunked;q=1\r\n\r\n")) == 400);
	CHECK(status_of("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400);
	CHECK(emitted(WITH("Transfer-Encoding: CHUNKED\r\n\r\n1\r\na\r\n0\r\n\r\n"),
	    "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\na"));
#undef WITH
}

/* Read whole, extensions and trailers dropped, passed on with a length. */
static void
t_chunked_body_is_reframed(void)
{
	const char *head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
	char s[512], want[512];

	snprintf(want, sizeof(want), "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 29"
	    "\r\n\r\nabc%s", "abcdefghijklmnopqrstuvwxyz");
	snprintf(s, sizeof(s), "%s003;ext=1\r\nabc\r\n1A ; a = \"q\\\"x\" ;b\r\n%s\r\n"
	    "0;last\r\nTrailer-A: x\r\n\r\n", head, "abcdefghijklmnopqrstuvwxyz");
	CHECK(emitted(s, want));
}

static void
t_chunked_errors(void)
{
	const char *head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
	static const char *const bodies[] = {
		"3;=1\r\nabc\r\n0\r\n\r\n",		/* extension without a name */
		"3;a=\r\nabc\r\n0\r\n\r\n",		/* and without a value */
		"3;a=\"x\r\nabc\r\n0\r\n\r\n",		/* unterminated quote */
		"3 \r\nabc\r\n0\r\n\r\n",		/* whitespace, no extension */
		"x\r\nabc\r\n0\r\n\r\n",		/* no size */
		"\r\nabc\r\n0\r\n\r\n",		/* an empty size line */
		";a\r\nabc\r\n0\r\n\r\n",		/* an extension, no size */
		"\r\nX: y\r\n\r\n",			/* no size, then a trailer */
		";a\r\nX: y\r\n\r\n",
		"-3\r\nabc\r\n0\r\n\r\n",
		"3\nabc\r\n0\r\n\r\n",			/* bare LF */
		"3\r\nabcd\r\n0\r\n\r\n",		/* data longer than its size */
		"3\r\nabc\r\n0\r\nBad : t\r\n\r\n",	/* a malformed trailer */
		"3\r\nabc\r\n0\r\n t\r\n\r\n",
	};
	char s[512];

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		snprintf(s, sizeof(s), "%s%s", head, bodies[i]);
		if (status_of(s) != 400)
			printf("# accepted %s\n", bodies[i]);
		CHECK(status_of(s) == 400);
	}
	snprintf(s, sizeof(s), "%s1000\r\n", head);
	CHECK(status_of(s) == 0);
	snprintf(s, sizeof(s), "%s1001\r\n", head);
	CHECK(status_of(s) == 413);
	snprintf(s, sizeof(s), "%s800\r\n", head);
	CHECK(status_of(s) == 0);
	snprintf(s, sizeof(s), "%sFFFFFFFFFFFFFFFFFFFFFFFF\r\n", head);
	CHECK(status_of(s) == 413);
	/* 17 digits would wrap a 64-bit size to 3: too large, not 3 bytes. */
	snprintf(s, sizeof(s), "%s10000000000000003\r\nabc\r\n0\r\n\r\n", head);
	CHECK(status_of(s) == 413);
	snprintf(s, sizeof(s), "%s0000000000000000000003\r\nabc\r\n0\r\n\r\n", head);
	CHECK(status_of(s) == 0);
}

/* PURGE, BAN and TRACE are refused with 405 (the reply says where purges
 * go, and Allow); any method not served with 501. Methods are
 * case-sensitive. */
static void
t_methods_not_served_are_refused_at_the_request_line(void)
{
	static const char *const served[] = {
		"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"
	};
	static const struct { const char *m; int status; } refused[] = {
		{ "PURGE", 405 }, { "BAN", 405 }, { "TRACE", 405 },
		{ "CONNECT", 501 }, { "FROB", 501 }, { "get", 501 },
		{ "PURGEX", 501 }, { "BA", 501 },
	};
	char s[256];

	for (size_t i = 0; i < sizeof(served) / sizeof(served[0]); i++) {
		snprintf(s, sizeof(s), "%s /a HTTP/1.1\r\nHost: h\r\n\r\n",
		    served[i]);
		CHECK(status_of(s) == 0);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(s, sizeof(s), "%s /a HTTP/1.1\r\nHost: h\r\n"
		    "Content-Length: 2\r\n\r\nxx" GET("/b"), refused[i].m);
		CHECK(status_of(s) == refused[i].status);
	}
}

static void
t_head_bodies_are_read_and_dropped(void)
{
	CHECK(emitted("HEAD /a HTTP/1.1\r\nHost: h\r\nContent-Length: 35\r\n\r\n"
	    GET("/smuggled") GET("/b"),
	    "HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n" GET("/b")));
	CHECK(emitted("HEAD /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5;x=y\r\nhello\r\n0\r\n\r\n" GET("/b"),
	    "HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n" GET("/b")));
	CHECK(status_of("HEAD /a HTTP/1.1\r\nHost: h\r\nContent-Length: 4097\r\n\r\n") == 413);
}

static void
t_nothing_is_read_after_a_reject(void)
{
	struct out o;
	uint64_t n;
	const char *s = GET("/1") "GET /2 HTTP/1.1\r\nHost: h\r\nX : y\r\n\r\n" GET("/3");

	CHECK(feed_n(s, strlen(s), 0, &o, &n) == 400);
	CHECK(n == 1);
	CHECK(o.len == strlen(GET("/1")));
	/* A fault in a chunked body: its head was read, its end never came,
	 * so none of it is served (a request is served at its end). */
	s = GET("/1") "POST /2 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabc\r\n2;=\r\nhi\r\n0\r\n\r\n";
	CHECK(feed_n(s, strlen(s), 0, &o, &n) == 400);
	CHECK(n == 2);
	CHECK(o.len == strlen(GET("/1")));
}

/* ---- splits ---------------------------------------------------------------------------- */

static const char *const split_cases[] = {
	GET("/1") "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi" GET("/3"),
	"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3;e=\"v\"\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: x\r\n\r\n" GET("/n"),
	"\r\nHEAD / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc" GET("/n"),
	GET("/1") "GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX",
	"GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",
};

static void
t_any_split_reads_like_one_piece(void)
{
	for (size_t c = 0; c < sizeof(split_cases) / sizeof(split_cases[0]); c++) {
		const char *s = split_cases[c];
		size_t n = strlen(s);
		struct out whole, part;
		uint64_t rw, rp;
		int sw = feed_n(s, n, 0, &whole, &rw);

		CHECK(feed_n(s, n, 1, &part, &rp) == sw && rp == rw &&
		    part.len == whole.len && memcmp(part.buf, whole.buf, whole.len) == 0);
		for (size_t cut = 1; cut < n; cut++) {
			struct frame *f = frame_new(HEAD_MAX, BODY_MAX);
			int st = 0;

			memset(&part, 0, sizeof(part));
			if (feed_one(f, s, cut, &part) == FRAME_REJECT ||
			    feed_one(f, s + cut, n - cut, &part) == FRAME_REJECT)
				st = frame_status(f);
			rp = frame_requests(f);
			frame_free(&f);
			canon_free(&part.c);
			CHECK(st == sw && rp == rw && part.len == whole.len &&
			    memcmp(part.buf, whole.buf, whole.len) == 0);
		}
	}
}

/* ---- differential: generated requests against an independent decision ------------ */

static uint32_t rng = GEN_SEED;

static uint32_t
rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

static const char *const gen_methods[] = { "GET", "POST", "HEAD", "PUT", "TRACE" };
static const char *const served_methods[] = { "GET", "POST", "HEAD", "PUT" };
static const char *const gen_targets[] = { "/a", "/a?b=1", "*", "/a b", "/a\x01", "http://h/x" };
static const char *const gen_fields[] = {
	"Host: h", "X-A: b", "Content-Length: 3", "Content-Length: 3", "Content-Length: 7",
	"Content-Length : 3", "Content-Length: 3, 3", "Content-Length: x",
	"Transfer-Encoding: chunked", "Transfer-Encoding: gzip",
	"Transfer-Encoding: gzip, chunked", "Transfer-Encoding : chunked",
	" folded", "X-B: a\rb", "Host: i",
};

/*
 * The decision, written apart from the reader: reject (1) or accept (0)
 * and the body length. It knows only the fields the generator makes.
 */
static int
reference(const char *method, const char *target, int minor, int nf,
    const int *fields, const char *body, uint64_t *len)
{
	int hosts = 0, cl = -1, te = 0, chunked_last = 0, codings = 0, i;

	*len = 0;
	for (i = 0; i < 4 && strcmp(method, served_methods[i]) != 0; i++)
		;
	if (i == 4)
		return 1;	/* TRACE: 405 */
	if (strchr(target, ' ') != NULL || strchr(target, '\x01') != NULL)
		return 1;
	if (strcmp(target, "*") == 0 && strcmp(method, "OPTIONS") != 0)
		return 1;
	for (i = 0; i < nf; i++) {
		const char *fl = gen_fields[fields[i]];
		const char *colon = strchr(fl, ':');

		if (fl[0] == ' ' || colon == NULL || colon[-1] == ' ' ||
		    strchr(fl, '\r') != NULL)
			return 1;
		if (strncasecmp(fl, "Host:", 5) == 0)
			hosts++;
		if (strncasecmp(fl, "Content-Length:", 15) == 0) {
			if (cl >= 0 || strcmp(fl + 16, "x") == 0 || strchr(fl, ',') != NULL)
				return 1;
			cl = atoi(fl + 16);
		}
		if (strncasecmp(fl, "Transfer-Encoding:", 18) == 0) {
			te = 1;
			codings += strchr(fl, ',') != NULL ? 2 : 1;
			chunked_last = strcmp(fl + strlen(fl) - 7, "chunked") == 0;
		}
	}
	if (hosts > 1 || (hosts == 0 && minor == 1))
		return 1;
	if (strncmp(target, "http://", 7) == 0 && hosts == 1)
		for (i = 0; i < nf; i++)
			if (strcmp(gen_fields[fields[i]], "Host: i") == 0)
				return 1;
	if (te && (minor == 0 || cl >= 0 || !chunked_last || codings > 1))
		return 1;
	if (te) {
		/* The generator's chunked bodies: "SIZE[;e=v]\r\nDATA\r\n"... */
		for (const char *p = body; *p != '0'; ) {
			uint64_t n = strtoull(p, NULL, 16);

			*len += n;
			p = strstr(p, "\r\n") + 2 + n + 2;
		}
	} else if (cl >= 0) {
		*len = (uint64_t)cl;
	}
	return 0;
}

static void
t_generated_requests_agree_with_reference(void)
{
	static char msg[OUT_MAX], body[256];
	int agree = 0;

	for (int c = 0; c < GEN_CASES; c++) {
		const char *method = gen_methods[rnd(5)];
		const char *target = gen_targets[rnd(6)];
		int minor = (int)rnd(4) != 0, nf = (int)rnd(4), fields[5], refused;
		int chunked = 0;
		struct frame *f = frame_new(HEAD_MAX, BODY_MAX);
		struct out o;
		uint64_t want, n;
		size_t len, blen = 0;

		len = (size_t)snprintf(msg, sizeof(msg), "%s %s HTTP/1.%d\r\n",
		    method, target, minor);
		for (int i = 0; i < nf; i++)
			fields[i] = (int)rnd(sizeof(gen_fields) / sizeof(gen_fields[0]));
		if (rnd(4) != 0)
			fields[nf++] = 0;	/* usually a Host */
		for (int i = 0; i < nf; i++) {
			len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s\r\n",
			    gen_fields[fields[i]]);
			chunked |= strncmp(gen_fields[fields[i]], "Transfer", 8) == 0;
		}
		if (chunked) {
			for (int k = (int)rnd(3); k > 0; k--) {
				int size = 1 + (int)rnd(20);

				blen += (size_t)snprintf(body + blen, sizeof(body) - blen,
				    "%x%s\r\n%.*s\r\n", size, rnd(2) ? ";e=v" : "", size,
				    "abcdefghijklmnopqrstuvwxyz");
			}
			blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "0\r\n\r\n");
		} else {
			blen = (size_t)snprintf(body, sizeof(body), "%.*s", (int)rnd(8),
			    "hello, world");
		}
		refused = reference(method, target, minor, nf, fields, body, &want);
		if (!chunked) {
			/* The body the reference expects, exactly. */
			blen = refused ? blen : (size_t)want;
			memset(body, 'b', blen);
		}
		len += (size_t)snprintf(msg + len, sizeof(msg) - len, "\r\n%.*s",
		    (int)blen, body);
		memset(&o, 0, sizeof(o));
		if (feed_one(f, msg, len, &o) == FRAME_REJECT) {
			canon_free(&o.c);
			if (!refused)
				printf("# refused (%s): %s\n", frame_reason(f), msg);
			CHECK(refused);
		} else {
			if (refused || frame_body_bytes(f) != want)
				printf("# accepted, body %llu: %s\n",
				    (unsigned long long)frame_body_bytes(f), msg);
			CHECK(!refused && frame_body_bytes(f) == want);
			/* Framed exactly: a request that follows is read whole. */
			CHECK(feed_one(f, GET("/next"), strlen(GET("/next")),
			    &o) == FRAME_OK);
			canon_free(&o.c);
			n = frame_requests(f);
			CHECK(n == 2);
			agree++;
		}
		frame_free(&f);
	}
	CHECK(agree > GEN_CASES / 10);	/* the grammar makes both kinds */
}

/* What the door hands on, head by head: a custom reader's face. */
struct seen {
	int		 heads, ends, stop_after;
	int		 expect[4], minor[4];
	size_t		 nfields[4];
	char		 names[4][128];		/* field names, comma-joined */
};

static void
seen_head(void *arg, const struct frame_head *h)
{
	struct seen *s = arg;
	int i = s->heads++;

	if (i >= 4)
		return;
	s->expect[i] = h->expect_continue;
	s->minor[i] = h->minor;
	s->nfields[i] = h->nfields;
	for (size_t k = 0; k < h->nfields; k++) {
		size_t len = strlen(s->names[i]);

		snprintf(s->names[i] + len, sizeof(s->names[i]) - len, "%s%s",
		    k > 0 ? "," : "", h->fields[k].name);
	}
}

static void
seen_body(void *arg, const char *p, size_t n)
{
	(void)arg, (void)p, (void)n;
}

static int
seen_end(void *arg)
{
	struct seen *s = arg;

	s->ends++;
	return s->stop_after > 0 && s->ends >= s->stop_after;
}

static const struct frame_ops seen_ops = { seen_head, seen_body, seen_end };

/* Feeds s whole to a new door (Host rules as given); the status, 0 when
 * accepted; *used as frame_feed() says. */
static int
seen_feed(const char *str, int host_rules, struct seen *s, size_t *used,
    enum frame_result *res)
{
	struct frame *f = frame_new(HEAD_MAX, BODY_MAX);
	size_t u = 0;
	enum frame_result r;
	int status;

	frame_set_host_rules(f, host_rules);
	r = frame_feed(f, str, strlen(str), &u, &seen_ops, s);
	status = r == FRAME_REJECT ? frame_status(f) : 0;
	if (used != NULL)
		*used = u;
	if (res != NULL)
		*res = r;
	frame_free(&f);
	return status;
}

static void
t_expect_100_continue_in_http11_only(void)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
	    "Content-Length: 2\r\n\r\nhi", 1, &s, NULL, NULL) == 0);
	CHECK(s.heads == 1 && s.expect[0] == 1);
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.1\r\nHost: h\r\nexpect: 100-Continue\r\n"
	    "Content-Length: 2\r\n\r\nhi", 1, &s, NULL, NULL) == 0);
	CHECK(s.heads == 1 && s.expect[0] == 1);
	/* Without the field: nothing to answer before the body. */
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n"
	    "hi", 1, &s, NULL, NULL) == 0);
	CHECK(s.heads == 1 && s.expect[0] == 0);
	/* Any other expectation, in HTTP/1.1: 417, no head handed on. */
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.1\r\nHost: h\r\nExpect: 100-continues\r\n"
	    "Content-Length: 2\r\n\r\nhi", 1, &s, NULL, NULL) == 417);
	CHECK(s.heads == 0);
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("GET / HTTP/1.1\r\nHost: h\r\nExpect: x\r\n\r\n", 1, &s,
	    NULL, NULL) == 417);
	/* An HTTP/1.0 client's is ignored, whatever it says. */
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.0\r\nExpect: 100-continue\r\n"
	    "Content-Length: 2\r\n\r\nhi", 1, &s, NULL, NULL) == 0);
	CHECK(s.heads == 1 && s.expect[0] == 0 && s.minor[0] == 0);
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("GET / HTTP/1.0\r\nExpect: x\r\n\r\n", 1, &s, NULL,
	    NULL) == 0);
	CHECK(s.heads == 1 && s.expect[0] == 0);
}

static void
t_pause_leaves_the_rest_unread(void)
{
	static const char two[] = GET("/1") GET("/2");
	struct seen s;
	size_t used = 0;
	enum frame_result r;

	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	CHECK(seen_feed(two, 1, &s, &used, &r) == 0);
	CHECK(r == FRAME_PAUSE);
	CHECK(used == strlen(GET("/1")));
	CHECK(s.heads == 1 && s.ends == 1);
	/* Not asked to stop: both read, all of it taken. */
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed(two, 1, &s, &used, &r) == 0);
	CHECK(r == FRAME_OK && used == strlen(two));
	CHECK(s.heads == 2 && s.ends == 2);
}

static void
t_host_rules_off_leave_the_host_to_the_handler(void)
{
	static const char *judged[] = {
		"GET / HTTP/1.1\r\n\r\n",			/* none */
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",	/* twice */
		"GET http://other/x HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",		/* not a name */
	};
	struct seen s;

	for (size_t i = 0; i < sizeof(judged) / sizeof(judged[0]); i++) {
		memset(&s, 0, sizeof(s));
		CHECK(seen_feed(judged[i], 1, &s, NULL, NULL) == 400);
		memset(&s, 0, sizeof(s));
		CHECK(seen_feed(judged[i], 0, &s, NULL, NULL) == 0);
		CHECK(s.heads == 1);
	}
	/* The other rules stay on. */
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("GET / HTTP/1.1\r\nX-A : b\r\n\r\n", 0, &s, NULL,
	    NULL) == 400);
}

static void
t_fields_handed_on_leave_out_the_framing(void)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n"
	    "Content-Length: 2\r\nX-B: 2\r\n\r\nhi", 1, &s, NULL, NULL) == 0);
	CHECK(s.nfields[0] == 3);
	CHECK(strcmp(s.names[0], "Host,X-A,X-B") == 0);
	memset(&s, 0, sizeof(s));
	CHECK(seen_feed("POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Host: h\r\n\r\n2\r\nhi\r\n0\r\n\r\n", 1, &s, NULL, NULL) == 0);
	CHECK(strcmp(s.names[0], "Host") == 0);
}

int
main(void)
{
	RUN(t_plain_requests_pass_unchanged);
	RUN(t_pipelined_requests_follow_one_another);
	RUN(t_leading_empty_lines_are_ignored);
	RUN(t_request_line_must_be_exact);
	RUN(t_target_percent_encoding_is_valid);
	RUN(t_target_has_no_control_bytes_spaces_or_fragment);
	RUN(t_target_forms);
	RUN(t_field_lines_are_strict);
	RUN(t_bare_lf_ends_no_line);
	RUN(t_host_exactly_once_in_http11);
	RUN(t_host_is_a_name_and_a_port_of_digits);
	RUN(t_head_limits);
	RUN(t_content_length_rules);
	RUN(t_transfer_encoding_rules);
	RUN(t_chunked_body_is_reframed);
	RUN(t_chunked_errors);
	RUN(t_head_bodies_are_read_and_dropped);
	RUN(t_methods_not_served_are_refused_at_the_request_line);
	RUN(t_nothing_is_read_after_a_reject);
	RUN(t_any_split_reads_like_one_piece);
	RUN(t_generated_requests_agree_with_reference);
	RUN(t_expect_100_continue_in_http11_only);
	RUN(t_pause_leaves_the_rest_unread);
	RUN(t_host_rules_off_leave_the_host_to_the_handler);
	RUN(t_fields_handed_on_leave_out_the_framing);
	return unit_exit();
}
