/* SPDX-License-Identifier: MIT */
/*
 * proxy_tls against real clients: a small HTTPS server runs on this
 * process's event loop (a listener, tls_accept, a handshake timeout, an
 * HTTP/1.1 responder that answers with what the TLS helpers say), and
 * openssl s_client and curl, forked, talk to it. The certificates are
 * made at start with the openssl command in a temporary directory. Every
 * wait is "run the loop until this holds", bounded by a safety timer.
 */

#include "proxy/proxy_tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "common/util.h"
#include "tests/unit/unit.h"
#include "tests/unit/unit_tls.h"

#define SAFETY_MS		20000	/* a wait longer than this fails */
#define HANDSHAKE_MS		4000	/* the server's handshake timeout */
#define OUT_MAX			(64 * 1024)	/* a client's output kept */
#define REQ_MAX			4096
#define ARGS_MAX		24
#define ERR_LEN			1024

static const char request_close[] =
    "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
static const char request_keep[] =
    "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

static struct event_base *base;
static struct event	*safety;
static int		 timed_out;
static char		 addr[32];	/* "127.0.0.1:PORT" */

/* ---- the server ------------------------------------------------------- */

struct session {
	struct bufferevent	*bev;
	int			 closing;
	TAILQ_ENTRY(session)	 entry;
};

static struct {
	struct tls		*tls;
	struct evconnlistener	*lis;
	TAILQ_HEAD(, session)	 sessions;
	int			 nsessions;
	int			 connected;	/* BEV_EVENT_CONNECTED seen */
	int			 failures;	/* handshakes that failed */
	enum tls_fail		 last_fail;
	char			 last_detail[128];
	int			 answered;	/* requests answered */
	uint64_t		 accepted;	/* connections given to TLS */
} srv;

static void
session_free(struct session *s)
{
	TAILQ_REMOVE(&srv.sessions, s, entry);
	srv.nsessions--;
	bufferevent_free(s->bev);
	free(s);
}

static const char *
or_none(const char *s)
{
	return s != NULL ? s : "none";
}

/* Answers each request with what the TLS helpers say of its connection. */
static void
on_read(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	char body[512];
	int n;

	while ((end = evbuffer_search(in, "\r\n\r\n", 4, NULL)).pos != -1) {
		char head[REQ_MAX];
		size_t len = (size_t)end.pos + 4 < sizeof(head) - 1 ?
		    (size_t)end.pos + 4 : sizeof(head) - 1;

		evbuffer_remove(in, head, len);
		head[len] = '\0';
		n = snprintf(body, sizeof(body), "version=%s cipher=%s sni=%s "
		    "alpn=%s resumed=%d\n", or_none(tls_version(bev)),
		    or_none(tls_cipher(bev)), or_none(tls_sni(bev)),
		    or_none(tls_alpn(bev)), tls_resumed(bev));
		s->closing = strstr(head, "Connection: close") != NULL;
		evbuffer_add_printf(bufferevent_get_output(bev), "HTTP/1.1 200 "
		    "OK\r\nContent-Length: %d\r\n%s\r\n%s", n, s->closing ?
		    "Connection: close\r\n" : "", body);
		srv.answered++;
	}
}

static void
on_written(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	if (s->closing) {
		tls_close_notify(bev);
		session_free(s);
	}
}

static void
on_event(struct bufferevent *bev, short events, void *arg)
{
	struct session *s = arg;

	if (events & BEV_EVENT_CONNECTED) {
		srv.connected++;
		bufferevent_set_timeouts(bev, NULL, NULL);
		return;
	}
	if (tls_handshake(bev) != TLS_HANDSHAKE_DONE) {
		srv.failures++;
		srv.last_fail = tls_failed(bev, events);
		snprintf(srv.last_detail, sizeof(srv.last_detail), "%s",
		    tls_fail_detail(bev));
	}
	session_free(s);
}

static void
on_accept(struct evconnlistener *lis, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct timeval tv = util_timeval(HANDSHAKE_MS);
	struct session *s;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->bev = tls_accept(srv.tls, base, fd, 0)) == NULL) {
		free(s);
		close(fd);
		return;
	}
	srv.accepted++;
	TAILQ_INSERT_TAIL(&srv.sessions, s, entry);
	srv.nsessions++;
	bufferevent_setcb(s->bev, on_read, on_written, on_event, s);
	bufferevent_set_timeouts(s->bev, &tv, &tv);
	bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}

/* ---- waiting and clients ---------------------------------------------- */

static void
on_safety(evutil_socket_t fd, short what, void *arg)
{
	timed_out = 1;
}

/* Runs the loop until done(arg) holds. 0, or -1 past SAFETY_MS. */
static int
wait_for(int (*done)(void *), void *arg)
{
	struct timeval tv = util_timeval(SAFETY_MS);

	timed_out = 0;
	evtimer_add(safety, &tv);
	while (!done(arg) && !timed_out)
		event_base_loop(base, EVLOOP_ONCE);
	evtimer_del(safety);
	return done(arg) ? 0 : -1;
}

struct child {
	pid_t		 pid;
	int		 in;		/* its stdin, or -1 once closed */
	struct event	*ev;		/* on its stdout and stderr */
	char		 out[OUT_MAX + 1];
	size_t		 len;
	int		 done;		/* its output ended, it was reaped */
	int		 status;	/* its exit status */
};

static void
on_child_output(evutil_socket_t fd, short what, void *arg)
{
	struct child *ch = arg;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	size_t keep;

	if (n > 0) {
		keep = ch->len + (size_t)n <= OUT_MAX ? (size_t)n :
		    OUT_MAX - ch->len;
		memcpy(ch->out + ch->len, buf, keep);
		ch->len += keep;
		ch->out[ch->len] = '\0';
		return;
	}
	if (n == -1 && errno == EINTR)
		return;
	event_free(ch->ev);
	ch->ev = NULL;
	close(fd);
	if (ch->in != -1)
		close(ch->in);
	ch->in = -1;
	waitpid(ch->pid, &ch->status, 0);
	ch->status = WIFEXITED(ch->status) ? WEXITSTATUS(ch->status) : -1;
	ch->done = 1;
}

/* Starts argv with input on its stdin, kept open if keep_open. */
static int
child_start(struct child *ch, char *const argv[], const char *input,
    int keep_open)
{
	int in[2], out[2];

	memset(ch, 0, sizeof(*ch));
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		return -1;
	if ((ch->pid = fork()) == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ch->in = in[1];
	if (input != NULL)
		(void)write(ch->in, input, strlen(input));
	if (!keep_open) {
		close(ch->in);
		ch->in = -1;
	}
	ch->ev = event_new(base, out[0], EV_READ | EV_PERSIST,
	    on_child_output, ch);
	return ch->pid > 0 && event_add(ch->ev, NULL) == 0 ? 0 : -1;
}

static int
child_done(void *arg)
{
	return ((struct child *)arg)->done;
}

struct seek {
	struct child	*ch;
	const char	*text;
	int		 times;
};

static int
child_said(void *arg)
{
	struct seek *s = arg;
	const char *p = s->ch->out;
	int n = 0;

	while ((p = strstr(p, s->text)) != NULL && ++n < s->times)
		p++;
	return n >= s->times || s->ch->done;
}

/* Runs a client to its end: its output in ch->out, its status. */
static int
run(struct child *ch, const char *input, ...)
{
	char *argv[ARGS_MAX];
	va_list ap;
	int n = 0;

	va_start(ap, input);
	while (n < ARGS_MAX - 1 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	if (child_start(ch, argv, input, 0) == -1)
		return -1;
	return wait_for(child_done, ch);
}

/* openssl s_client to the server, sending input, with the extra options
 * given (up to four; NULL ends them). */
static int
sclient(struct child *ch, const char *input, const char *o1, const char *o2,
    const char *o3, const char *o4)
{
	return run(ch, input, "openssl", "s_client", "-connect", addr,
	    "-CAfile", in_dir("ca.pem"), "-ign_eof", o1, o2, o3, o4, NULL);
}

static int
curl(struct child *ch, const char *url, const char *o1, const char *o2)
{
	return run(ch, NULL, "curl", "-sS", "-i", "--noproxy", "*",
	    "--max-time", "10", "--cacert", in_dir("ca.pem"), url, o1, o2,
	    NULL);
}

static struct tls_counters
counted(void)
{
	struct tls_counters c;

	tls_counters(&c);
	return c;
}

/* ---- the tests ---------------------------------------------------------- */

static void
t_tls13_handshake_reads_sni_and_alpn(void)
{
	struct tls_counters before = counted();
	struct child ch;

	CHECK(sclient(&ch, request_close, "-servername", "localhost", "-alpn",
	    "http/1.1") == 0);
	CHECK(strstr(ch.out, "New, TLSv1.3, Cipher is TLS_") != NULL);
	CHECK(strstr(ch.out, "ALPN protocol: http/1.1") != NULL);
	CHECK(strstr(ch.out, "Verify return code: 0 (ok)") != NULL);
	CHECK(strstr(ch.out, "version=TLSv1.3 cipher=TLS_") != NULL);
	CHECK(strstr(ch.out, "sni=localhost alpn=http/1.1 resumed=0") != NULL);
	CHECK(counted().handshakes == before.handshakes + 1);
	/* tls_close_notify: a clean end, not a cut. */
	CHECK(strstr(ch.out, "unexpected eof") == NULL);
}

static void
t_tls12_handshake_is_ecdhe_aead_chosen_by_the_client(void)
{
	struct child ch;

	CHECK(sclient(&ch, request_close, "-tls1_2", "-servername",
	    "localhost", NULL) == 0);
	CHECK(strstr(ch.out, "version=TLSv1.2 cipher=ECDHE-ECDSA-AES256-GCM-"
	    "SHA384") != NULL);
	CHECK(sclient(&ch, request_close, "-tls1_2", "-cipher",
	    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256",
	    NULL) == 0);
	CHECK(strstr(ch.out, "cipher=ECDHE-ECDSA-CHACHA20-POLY1305 ") != NULL);
	CHECK(strstr(ch.out, "sni=none alpn=none") != NULL);
}

static void
t_tls13_suite_is_the_clients_choice(void)
{
	struct child ch;

	CHECK(sclient(&ch, request_close, "-ciphersuites",
	    "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384", NULL,
	    NULL) == 0);
	CHECK(strstr(ch.out, "cipher=TLS_CHACHA20_POLY1305_SHA256 ") != NULL);
}

static int
failures_past(void *arg)
{
	return srv.failures > *(int *)arg;
}

/* A refusal the server counts, and why. */
static void
expect_refused(const char *o1, const char *o2, const char *o3,
    const char *o4, enum tls_fail why, const char *detail, int *ok)
{
	struct tls_counters before = counted();
	int failures = srv.failures;
	struct child ch;

	*ok = 0;
	if (sclient(&ch, request_close, o1, o2, o3, o4) == -1 ||
	    ch.status == 0 || strstr(ch.out, "version=") != NULL) {
		printf("    the client ended with %d\n", ch.status);
		return;
	}
	if (wait_for(failures_past, &failures) == -1 ||
	    srv.failures != failures + 1)
		return;
	if (srv.last_fail != why || strcmp(srv.last_detail, detail) != 0)
		printf("    got %s (%s)\n", tls_fail_name(srv.last_fail),
		    srv.last_detail);
	*ok = srv.last_fail == why && strcmp(srv.last_detail, detail) == 0 &&
	    counted().failed[why] == before.failed[why] + 1 &&
	    counted().handshakes == before.handshakes;
}

static void
t_tls11_is_refused(void)
{
	int ok;

	expect_refused("-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0", NULL,
	    TLS_FAIL_MISMATCH, "unsupported protocol", &ok);
	CHECK(ok);
}

static void
t_cbc_and_rsa_key_exchange_are_refused(void)
{
	int ok;

	expect_refused("-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:"
	    "ECDHE-ECDSA-AES256-SHA384:AES128-GCM-SHA256", NULL,
	    TLS_FAIL_MISMATCH, "no shared cipher", &ok);
	CHECK(ok);
}

static void
t_alpn_offering_only_h2_is_refused(void)
{
	int ok;

	expect_refused("-alpn", "h2", NULL, NULL, TLS_FAIL_MISMATCH,
	    "no application protocol", &ok);
	CHECK(ok);
}

static void
t_sni_that_is_no_dns_name_is_refused(void)
{
	int ok;

	expect_refused("-servername", "bad name", NULL, NULL, TLS_FAIL_OTHER,
	    "callback failed", &ok);
	CHECK(ok);
}

static void
t_client_refusing_the_certificate_is_counted(void)
{
	int ok;

	/* Trusting another CA only: corral-ca is unknown. */
	expect_refused("-CAfile", in_dir("inter.pem"), "-verify_return_error",
	    NULL, TLS_FAIL_CERT, "tlsv1 alert unknown ca", &ok);
	CHECK(ok);
}

static void
t_curl_offering_h2_gets_http11_and_a_verified_200(void)
{
	char url[64];
	struct child ch;

	snprintf(url, sizeof(url), "https://localhost:%s/", strchr(addr,
	    ':') + 1);
	CHECK(curl(&ch, url, NULL, NULL) == 0);
	CHECK(ch.status == 0);
	CHECK(strncmp(ch.out, "HTTP/1.1 200 OK\r\n", 17) == 0);
	CHECK(strstr(ch.out, "version=TLSv1.3") != NULL);
	CHECK(strstr(ch.out, "sni=localhost alpn=http/1.1") != NULL);
}

static void
t_plain_http_gets_a_400_and_a_clean_close(void)
{
	struct tls_counters before = counted();
	char url[64];
	struct child ch;

	snprintf(url, sizeof(url), "http://%s/", addr);
	CHECK(curl(&ch, url, NULL, NULL) == 0);
	CHECK(ch.status == 0);	/* a whole answer, no reset */
	CHECK(strncmp(ch.out, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
	CHECK(strstr(ch.out, "\r\n\r\nThe plain HTTP request was sent to "
	    "HTTPS port\n") != NULL);
	CHECK(srv.last_fail == TLS_FAIL_PLAINTEXT);
	CHECK(strcmp(srv.last_detail, "http request") == 0);
	/* A method OpenSSL does not know: the record's first bytes tell. */
	CHECK(curl(&ch, url, "-X", "DELETE") == 0);
	CHECK(ch.status == 0);
	CHECK(strncmp(ch.out, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
	CHECK(srv.last_fail == TLS_FAIL_PLAINTEXT);
	CHECK(strcmp(srv.last_detail, "wrong version number") == 0);
	CHECK(counted().failed[TLS_FAIL_PLAINTEXT] ==
	    before.failed[TLS_FAIL_PLAINTEXT] + 2);
}

static int
no_sessions_but(void *arg)
{
	return srv.nsessions <= *(int *)arg;
}

/* A client that sends half a record and waits: the loop serves others,
 * the handshake stays pending until the server's timeout ends it. */
static void
t_stalled_handshake_blocks_nobody_and_times_out(void)
{
	static const unsigned char half[] = { 0x16, 0x03, 0x01, 0x01 };
	struct tls_counters before = counted();
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct session *s;
	struct child ch;
	int fd, zero = 0;
	int64_t start = util_mono_us();

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)atoi(strchr(addr, ':') + 1));
	CHECK((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1);
	CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	CHECK(write(fd, half, sizeof(half)) == (ssize_t)sizeof(half));
	CHECK(sclient(&ch, request_close, NULL, NULL, NULL, NULL) == 0);
	CHECK(strstr(ch.out, "version=TLSv1.3") != NULL);
	CHECK(srv.nsessions == 1);
	s = TAILQ_FIRST(&srv.sessions);
	CHECK(tls_handshake(s->bev) == TLS_HANDSHAKE_PENDING);
	CHECK(tls_version(s->bev) == NULL);
	CHECK(wait_for(no_sessions_but, &zero) == 0);
	CHECK(util_mono_us() - start >= (int64_t)HANDSHAKE_MS * 1000);
	CHECK(srv.last_fail == TLS_FAIL_TIMEOUT);
	CHECK(counted().failed[TLS_FAIL_TIMEOUT] ==
	    before.failed[TLS_FAIL_TIMEOUT] + 1);
	close(fd);
}

/* Tickets are sealed with the process's key chain, not a context's: a
 * reload (as each worker makes one) keeps them good. */
static void
t_session_resumes_from_a_ticket_across_a_reload(void)
{
	const char *versions[] = { "-tls1_2", "-tls1_3" };
	struct tls_counters before = counted();
	char err[ERR_LEN];
	struct child ch;

	for (size_t i = 0; i < ARRAY_LEN(versions); i++) {
		CHECK(sclient(&ch, request_close, versions[i], "-sess_out",
		    in_dir("sess"), NULL) == 0);
		CHECK(strstr(ch.out, "resumed=0") != NULL);
		CHECK(tls_reload(&srv.tls, in_dir("a.pem"), in_dir("a.key"),
		    err, sizeof(err)) == 0);
		CHECK(run(&ch, request_close, "openssl", "s_client",
		    "-connect", addr, "-ign_eof", versions[i], "-sess_in",
		    in_dir("sess"), "-sess_out", in_dir("sess2"), NULL) == 0);
		CHECK(strstr(ch.out, "Reused, TLSv1.") != NULL);
		CHECK(strstr(ch.out, "resumed=1") != NULL);
		/* Again: a TLS 1.3 client uses a ticket once, and the one it
		 * was given when resumed serves; a TLS 1.2 one keeps its own
		 * (and s_client saves no session it resumed). */
		CHECK(sclient(&ch, request_close, versions[i], "-sess_in",
		    in_dir(i == 1 ? "sess2" : "sess"), NULL) == 0);
		CHECK(strstr(ch.out, "resumed=1") != NULL);
	}
	CHECK(counted().resumed == before.resumed + 4);
}

/* The subject line s_client prints for the server's certificate. */
static int
saw_subject(const struct child *ch, const char *cn)
{
	char line[64];

	snprintf(line, sizeof(line), "subject=CN = %s\n", cn);
	return strstr(ch->out, line) != NULL;
}

static void
t_reload_serves_new_connections_while_open_ones_keep_theirs(void)
{
	int64_t old_not_after = tls_not_after(srv.tls);
	struct tls *old = srv.tls;
	char err[ERR_LEN];
	struct child a, b;
	struct seek two = { &a, "HTTP/1.1 200 OK", 2 };
	struct seek one = { &a, "HTTP/1.1 200 OK", 1 };
	/* Without -ign_eof: it ends when its input does. */
	char *argv[] = { "openssl", "s_client", "-connect", addr, "-CAfile",
	    in_dir("ca.pem"), NULL };

	CHECK(child_start(&a, argv, request_keep, 1) == 0);
	CHECK(wait_for(child_said, &one) == 0 && !a.done);
	CHECK(saw_subject(&a, "corral-a"));
	CHECK(tls_reload(&srv.tls, in_dir("b.pem"), in_dir("b.key"), err,
	    sizeof(err)) == 0);
	CHECK(err[0] == '\0' && srv.tls != old);
	CHECK(sclient(&b, request_close, NULL, NULL, NULL, NULL) == 0);
	CHECK(saw_subject(&b, "corral-b"));
	/* The open connection still works, on the context it began with. */
	CHECK(write(a.in, request_keep, strlen(request_keep)) > 0);
	CHECK(wait_for(child_said, &two) == 0 && !a.done);
	close(a.in);
	a.in = -1;
	CHECK(wait_for(child_done, &a) == 0);
	/* A reload that fails keeps what serves. */
	old = srv.tls;
	CHECK(tls_reload(&srv.tls, in_dir("old.pem"), in_dir("old.key"), err,
	    sizeof(err)) == -1);
	CHECK(srv.tls == old && strstr(err, "expired") != NULL);
	CHECK(sclient(&b, request_close, NULL, NULL, NULL, NULL) == 0);
	CHECK(saw_subject(&b, "corral-b"));
	CHECK(tls_not_after(srv.tls) >= old_not_after - 60);
	CHECK(tls_reload(&srv.tls, in_dir("a.pem"), in_dir("a.key"), err,
	    sizeof(err)) == 0);
}

static void
t_chain_file_sends_the_intermediate(void)
{
	char err[ERR_LEN], url[64];
	struct tls *keep = srv.tls;
	struct child ch;

	CHECK((srv.tls = tls_new(in_dir("c.pem"), in_dir("c.key"), err,
	    sizeof(err))) != NULL);
	snprintf(url, sizeof(url), "https://localhost:%s/", strchr(addr,
	    ':') + 1);
	CHECK(curl(&ch, url, NULL, NULL) == 0);
	tls_unref(&srv.tls);
	srv.tls = keep;
	CHECK(ch.status == 0 && strstr(ch.out, "200 OK") != NULL);
}

static void
t_not_after_is_the_leafs(void)
{
	int64_t now = (int64_t)time(NULL), na = tls_not_after(srv.tls);

	/* a.pem: -days 30 from when the test began. */
	CHECK(na > now + 29 * 86400 && na <= now + 30 * 86400);
}

/* ---- the counters ------------------------------------------------------- */

static void
t_every_handshake_is_counted_once(void)
{
	struct tls_counters c;
	uint64_t sum = 0;
	int zero = 0;

	CHECK(wait_for(no_sessions_but, &zero) == 0);
	tls_counters(&c);
	for (int i = 0; i < TLS_FAIL_MAX; i++)
		sum += c.failed[i];
	CHECK(c.failed[TLS_FAIL_NONE] == 0);
	CHECK(c.handshakes + sum == srv.accepted);
	CHECK(c.handshakes == (uint64_t)srv.connected);
}

/* ---- the run ------------------------------------------------------------- */

static int
server_start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	char err[ERR_LEN];

	TAILQ_INIT(&srv.sessions);
	if (tls_init(err, sizeof(err)) == -1 || (srv.tls =
	    tls_new(in_dir("a.pem"), in_dir("a.key"), err,
	    sizeof(err))) == NULL) {
		printf("FAIL setup: %s\n", err);
		return -1;
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.lis = evconnlistener_new_bind(base, on_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    -1, (struct sockaddr *)&sin, sizeof(sin));
	if (srv.lis == NULL || getsockname(evconnlistener_get_fd(srv.lis),
	    (struct sockaddr *)&sin, &len) == -1)
		return -1;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sin.sin_port));
	return 0;
}

static void
server_stop(void)
{
	while (!TAILQ_EMPTY(&srv.sessions))
		session_free(TAILQ_FIRST(&srv.sessions));
	if (srv.lis != NULL)
		evconnlistener_free(srv.lis);
	tls_unref(&srv.tls);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if ((base = event_base_new()) == NULL ||
	    (safety = evtimer_new(base, on_safety, NULL)) == NULL)
		return 1;
	if (certs_make() == -1) {
		printf("FAIL setup: cannot make certificates in %s "
		    "(see gen.log)\n", dir);
		return 1;
	}
	if (server_start() == -1) {
		certs_remove();
		return 1;
	}
	RUN(t_tls13_handshake_reads_sni_and_alpn);
	RUN(t_tls12_handshake_is_ecdhe_aead_chosen_by_the_client);
	RUN(t_tls13_suite_is_the_clients_choice);
	RUN(t_tls11_is_refused);
	RUN(t_cbc_and_rsa_key_exchange_are_refused);
	RUN(t_alpn_offering_only_h2_is_refused);
	RUN(t_sni_that_is_no_dns_name_is_refused);
	RUN(t_client_refusing_the_certificate_is_counted);
	RUN(t_curl_offering_h2_gets_http11_and_a_verified_200);
	RUN(t_plain_http_gets_a_400_and_a_clean_close);
	RUN(t_stalled_handshake_blocks_nobody_and_times_out);
	RUN(t_session_resumes_from_a_ticket_across_a_reload);
	RUN(t_reload_serves_new_connections_while_open_ones_keep_theirs);
	RUN(t_chain_file_sends_the_intermediate);
	RUN(t_not_after_is_the_leafs);
	RUN(t_every_handshake_is_counted_once);
	server_stop();
	event_free(safety);
	event_base_free(base);
	certs_remove();
	return unit_exit();
}
