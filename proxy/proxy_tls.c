/* SPDX-License-Identifier: MIT */
/*
 * TLS contexts and connections (proxy_tls.h). With proxy_tls_load.c
 * (certificates and keys) and proxy_tls_ticket.c (session tickets), the
 * only place that sees OpenSSL.
 *
 * What a context offers, and why:
 *   - TLS 1.2 and 1.3 (TLS_VERSION_MIN): every browser of the last ten
 *     years speaks 1.2; 1.0 and 1.1 are deprecated (RFC 8996).
 *   - TLS_CIPHERS_12: Mozilla's "intermediate" list for TLS 1.2 less its
 *     finite-field DHE suites: forward-secret ECDHE, AEAD only (AES-GCM,
 *     ChaCha20-Poly1305); no RSA key exchange, no CBC, no SHA-1. DHE
 *     would need a dhparam file, and every client that has DHE-GCM has
 *     ECDHE-GCM. TLS_CIPHERS_13: TLS 1.3's three, OpenSSL's default.
 *   - The client chooses the suite, in 1.2 as in 1.3 (Mozilla's
 *     intermediate: prefer_server_ciphers off). Every suite offered is
 *     strong, and a phone without AES instructions rightly asks for
 *     ChaCha20 first.
 *   - TLS_GROUPS: X25519, P-256, P-384, in that order (Mozilla's).
 *   - TLS_SECURITY_LEVEL 2: OpenSSL refuses keys under 112 bits of
 *     security and SHA-1 signatures, whatever openssl.cnf says.
 *   - No renegotiation (a client could make the server do a handshake's
 *     work over and over); a close without close_notify reads as EOF.
 *   - Session tickets, no session cache: keys that turn every period and
 *     are shared by the workers (proxy_tls_ticket.c). A cache would be
 *     each worker's own, and a client's next connection mostly reaches
 *     another worker. One ticket a handshake (OpenSSL sends two): a
 *     client has one for each connection it made, and a resumption gets
 *     a new one; the second cost 6% of the CPU of a full handshake.
 *   - ALPN: http/1.1, then http/1.0 (nginx's list without HTTP/0.9). A
 *     client that offers ALPN but none of them (h2 alone) is refused with
 *     no_application_protocol (RFC 7301 3.2), as nginx does since 1.21.4
 *     (ALPACA: a TLS connection meant for one protocol must not be
 *     served as another). One that offers no ALPN is served HTTP/1.1.
 *   - SNI: a name that is no DNS name (bytes outside letters, digits,
 *     '-', '_', '.') is refused with unrecognized_name; the name is kept
 *     for the log. One certificate serves every name.
 *
 * A connection's own state (struct conn) hangs on its SSL as ex_data and
 * is freed with it, when the bufferevent is: there it is counted.
 */

#include "proxy/proxy_tls.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/util.h"
#include "conf/conf.h"
#include "conf/conf_secret.h"
#include "proxy/proxy_tls_int.h"

#define TLS_MAGIC		0x544c5343u	/* "TLSC" */
#define CONN_MAGIC		0x544c534eu	/* "TLSN" */

#define TLS_VERSION_MIN		TLS1_2_VERSION
#define TLS_VERSION_MAX		TLS1_3_VERSION
#define TLS_CIPHERS_12							\
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"	\
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"	\
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define TLS_CIPHERS_13							\
	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"		\
	"TLS_CHACHA20_POLY1305_SHA256"
#define TLS_GROUPS		"X25519:P-256:P-384"
#define TLS_SECURITY_LEVEL	2

/* ALPN, in the wire's form (a length byte before each), best first. */
static const unsigned char alpn_protos[] = "\x08http/1.1\x08http/1.0";
static const char *const alpn_names[] = { "http/1.1", "http/1.0" };

/* A record's header is 5 bytes: the first record of a plain HTTP client
 * is "GET /", "POST ", "DELET"... */
#define HEAD_BYTES		5
#define METHOD_MIN		3	/* "GET", "PUT" */
#define PLAINTEXT_DRAIN_MAX	(16 * 1024)	/* read before answering */
#define PLAINTEXT_CHUNK		4096
#define PLAINTEXT_BODY	"The plain HTTP request was sent to HTTPS port\n"
#define PLAINTEXT_BODY_LEN	"46"
static const char plaintext_reply[] =
	"HTTP/1.1 400 Bad Request\r\n"
	"Content-Type: text/plain\r\n"
	"Content-Length: " PLAINTEXT_BODY_LEN "\r\n"
	"Cache-Control: no-store\r\n"
	"Connection: close\r\n"
	"\r\n"
	PLAINTEXT_BODY;
static_assert(sizeof(PLAINTEXT_BODY) - 1 == 46, "PLAINTEXT_BODY_LEN");

struct tls {
	uint32_t	 magic;
	int		 refs;
	SSL_CTX		*ctx;
	int64_t		 not_after;	/* the leaf's, in epoch seconds */
};

struct conn {
	uint32_t		 magic;
	int			 live;	/* its bufferevent was made */
	struct tls		*tls;	/* a reference */
	enum tls_handshake	 state;
	enum tls_fail		 fail;
	unsigned long		 err;	/* OpenSSL's error that failed it */
	unsigned char		 head[HEAD_BYTES];	/* the first record's */
	size_t			 headlen;
};

static struct tls_counters counters;
static int conn_index = -1;	/* the SSL ex_data slot of struct conn */

static const char *const fail_names[TLS_FAIL_MAX] = {
	[TLS_FAIL_NONE] = "",
	[TLS_FAIL_TIMEOUT] = "timeout",
	[TLS_FAIL_MISMATCH] = "mismatch",
	[TLS_FAIL_CERT] = "cert",
	[TLS_FAIL_PLAINTEXT] = "plaintext",
	[TLS_FAIL_CLOSED] = "closed",
	[TLS_FAIL_OTHER] = "other",
};

/* ---- a connection's handshake ------------------------------------------ */

static struct conn *
conn_of_ssl(const SSL *ssl)
{
	struct conn *c;

	if (ssl == NULL || conn_index < 0 ||
	    (c = SSL_get_ex_data(ssl, conn_index)) == NULL)
		return NULL;
	assert(c->magic == CONN_MAGIC);
	return c;
}

static SSL *
ssl_of(struct bufferevent *bev)
{
	return bev != NULL ? bufferevent_openssl_get_ssl(bev) : NULL;
}

/* The first record's header is a word of capitals ended by a space, or
 * five capitals: an HTTP method ("GET /", "DELET"), never TLS (whose
 * first byte is a record type, 20 to 24). */
static int
looks_like_http(const struct conn *c)
{
	size_t i = 0;

	while (i < c->headlen && c->head[i] >= 'A' && c->head[i] <= 'Z')
		i++;
	return c->headlen == HEAD_BYTES && i >= METHOD_MIN &&
	    (i == HEAD_BYTES || c->head[i] == ' ');
}

/* The class of a failed handshake whose error is e. */
static enum tls_fail
classify(const struct conn *c, unsigned long e)
{
	int reason = ERR_GET_REASON(e);

	if (looks_like_http(c))
		return TLS_FAIL_PLAINTEXT;
	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return TLS_FAIL_OTHER;
	switch (reason) {
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
		return TLS_FAIL_PLAINTEXT;
	case SSL_R_UNSUPPORTED_PROTOCOL:
	case SSL_R_VERSION_TOO_LOW:
	case SSL_R_NO_PROTOCOLS_AVAILABLE:
	case SSL_R_INAPPROPRIATE_FALLBACK:
	case SSL_R_NO_SHARED_CIPHER:
	case SSL_R_NO_SHARED_GROUPS:
	case SSL_R_NO_SUITABLE_KEY_SHARE:
	case SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS:
	case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
	case SSL_R_NO_APPLICATION_PROTOCOL:
		return TLS_FAIL_MISMATCH;
	}
	/* An alert the client sent: its number past SSL_AD_REASON_OFFSET. */
	switch (reason - SSL_AD_REASON_OFFSET) {
	case SSL_AD_HANDSHAKE_FAILURE:
	case SSL_AD_PROTOCOL_VERSION:
	case SSL_AD_INSUFFICIENT_SECURITY:
	case SSL_AD_NO_APPLICATION_PROTOCOL:
		return TLS_FAIL_MISMATCH;
	case SSL_AD_BAD_CERTIFICATE:
	case SSL_AD_UNSUPPORTED_CERTIFICATE:
	case SSL_AD_CERTIFICATE_REVOKED:
	case SSL_AD_CERTIFICATE_EXPIRED:
	case SSL_AD_CERTIFICATE_UNKNOWN:
	case SSL_AD_UNKNOWN_CA:
		return TLS_FAIL_CERT;
	}
	return TLS_FAIL_OTHER;
}

/*
 * A plain HTTP client on a TLS port: what it sent so far is read and
 * dropped (so that closing does not answer it with a reset, which could
 * destroy the answer before it is read), the 400 written to the raw
 * socket and its sending side shut. The bytes past PLAINTEXT_DRAIN_MAX,
 * or those yet to come, are the server's to linger over.
 */
static void
answer_plaintext(int fd)
{
	char scratch[PLAINTEXT_CHUNK];
	size_t drained = 0;
	ssize_t n;

	if (fd < 0)
		return;
	while (drained < PLAINTEXT_DRAIN_MAX && (n = recv(fd, scratch,
	    sizeof(scratch), MSG_DONTWAIT)) > 0)
		drained += (size_t)n;
	(void)send(fd, plaintext_reply, sizeof(plaintext_reply) - 1,
	    MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_WR);
}

static void
failed(struct conn *c, enum tls_fail why, unsigned long e)
{
	c->state = TLS_HANDSHAKE_FAILED;
	c->fail = why;
	c->err = e;
}

/* OpenSSL's info callback: a handshake done, or one that failed (its
 * error still queued: libevent empties the queue before each step and
 * reads it only after). */
static void
on_info(const SSL *ssl, int where, int ret)
{
	struct conn *c = conn_of_ssl(ssl);
	unsigned long e;

	if (c == NULL || c->state != TLS_HANDSHAKE_PENDING)
		return;
	if (where & SSL_CB_HANDSHAKE_DONE) {
		c->state = TLS_HANDSHAKE_DONE;
		counters.handshakes++;
		if (SSL_session_reused(ssl))
			counters.resumed++;
	} else if ((where & SSL_CB_EXIT) && ret <= 0 &&
	    (e = ERR_peek_last_error()) != 0) {
		failed(c, classify(c, e), e);
		if (c->fail == TLS_FAIL_PLAINTEXT)
			answer_plaintext(SSL_get_fd(ssl));
	}
}

/* OpenSSL's message callback: keeps the first record header read. */
static void
on_record(int write_p, int version, int content_type, const void *buf,
    size_t len, SSL *ssl, void *arg)
{
	struct conn *c = arg;

	if (write_p || content_type != SSL3_RT_HEADER || c->headlen > 0)
		return;
	c->headlen = len < HEAD_BYTES ? len : HEAD_BYTES;
	memcpy(c->head, buf, c->headlen);
}

/* A DNS name: letters, digits, '-', '_', '.'; TLS_SNI_MAX bytes at most
 * (and a final dot). */
static int
dns_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > TLS_SNI_MAX + 1)
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == len;
}

/* SNI: the name is kept (OpenSSL keeps it) for the log. Where a second
 * certificate comes, this chooses its context (SSL_set_SSL_CTX). */
static int
on_servername(SSL *ssl, int *alert, void *arg)
{
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	if (name == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	if (!dns_name(name)) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

/* ALPN: ours first among the client's; none of ours is a fatal alert. */
static int
on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	if (SSL_select_next_proto((unsigned char **)out, outlen, alpn_protos,
	    sizeof(alpn_protos) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	return SSL_TLSEXT_ERR_OK;
}

/* SSL_free's ex_data callback (for every SSL of the process: others
 * have no conn): counts an unfinished handshake, drops the reference. */
static void
on_conn_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	struct conn *c = ptr;

	if (c == NULL)
		return;
	assert(c->magic == CONN_MAGIC);
	if (c->live && c->state != TLS_HANDSHAKE_DONE)
		counters.failed[c->fail != TLS_FAIL_NONE ? c->fail :
		    TLS_FAIL_CLOSED]++;
	tls_unref(&c->tls);
	c->magic = 0;
	free(c);
}

/* ---- contexts --------------------------------------------------------- */

/* The policy at the top of this file, on t's new context. */
static int
configure(struct tls *t, char *err, size_t errlen)
{
	SSL_CTX *ctx = t->ctx;

	SSL_CTX_set_security_level(ctx, TLS_SECURITY_LEVEL);
	if (SSL_CTX_set_min_proto_version(ctx, TLS_VERSION_MIN) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, TLS_VERSION_MAX) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS_12) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, TLS_CIPHERS_13) != 1 ||
	    SSL_CTX_set1_groups_list(ctx, TLS_GROUPS) != 1) {
		snprintf(err, errlen, "cannot set the TLS policy: %s",
		    ssl_why());
		return -1;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
	SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE |
	    SSL_OP_NO_TICKET);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 1);
	SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
	SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
	SSL_CTX_set_info_callback(ctx, on_info);
	return ticket_install(ctx, err, errlen);
}

static void
tls_free(struct tls *t)
{
	assert(t->magic == TLS_MAGIC && t->refs == 0);
	SSL_CTX_free(t->ctx);
	t->magic = 0;
	free(t);
}

int
tls_init(char *err, size_t errlen)
{
	if (conn_index >= 0)
		return 0;
	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS |
	    OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL) != 1) {
		snprintf(err, errlen, "cannot start OpenSSL: %s", ssl_why());
		return -1;
	}
	if (ticket_init(err, errlen) == -1)
		return -1;
	if ((conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL,
	    on_conn_free)) < 0) {
		snprintf(err, errlen, "cannot make OpenSSL's ex_data slot");
		return -1;
	}
	return 0;
}

void
tls_tick(void)
{
	ticket_tick();
}

struct tls *
tls_new(const char *cert_path, const char *key_path, char *err,
    size_t errlen)
{
	char path[CONF_PATH_MAX];
	struct tls *t;

	err[0] = '\0';
	if (tls_init(err, errlen) == -1)
		return NULL;
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "no memory for a TLS context");
		return NULL;
	}
	t->magic = TLS_MAGIC;
	if ((t->ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		snprintf(err, errlen, "cannot make a TLS context: %s",
		    ssl_why());
		goto fail;
	}
	if (configure(t, err, errlen) == -1 ||
	    secret_resolve(cert_path, path, sizeof(path), err, errlen) == -1 ||
	    cert_load(t->ctx, path, &t->not_after, err, errlen) == -1 ||
	    key_load(t->ctx, path, key_path, err, errlen) == -1)
		goto fail;
	t->refs = 1;
	return t;
fail:
	ERR_clear_error();
	tls_free(t);
	return NULL;
}

int
tls_check(const char *cert_path, const char *key_path, char *err,
    size_t errlen)
{
	struct tls *t;

	if ((t = tls_new(cert_path, key_path, err, errlen)) == NULL)
		return -1;
	tls_unref(&t);
	return 0;
}

struct tls *
tls_ref(struct tls *t)
{
	assert(t->magic == TLS_MAGIC && t->refs > 0);
	t->refs++;
	return t;
}

void
tls_unref(struct tls **tp)
{
	struct tls *t;

	if (tp == NULL || (t = *tp) == NULL)
		return;
	*tp = NULL;
	assert(t->magic == TLS_MAGIC && t->refs > 0);
	if (--t->refs == 0)
		tls_free(t);
}

int
tls_reload(struct tls **tp, const char *cert_path, const char *key_path,
    char *err, size_t errlen)
{
	struct tls *t;

	if ((t = tls_new(cert_path, key_path, err, errlen)) == NULL)
		return -1;
	tls_unref(tp);
	*tp = t;
	return 0;
}

int64_t
tls_not_after(const struct tls *t)
{
	assert(t->magic == TLS_MAGIC);
	return t->not_after;
}

/* ---- connections -------------------------------------------------------- */

struct bufferevent *
tls_accept(struct tls *t, struct event_base *base, evutil_socket_t fd,
    int options)
{
	struct bufferevent *bev;
	struct conn *c;
	SSL *ssl;

	assert(t->magic == TLS_MAGIC && conn_index >= 0);
	if ((ssl = SSL_new(t->ctx)) == NULL) {
		ERR_clear_error();
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	c->magic = CONN_MAGIC;
	c->tls = tls_ref(t);
	c->state = TLS_HANDSHAKE_PENDING;
	if (SSL_set_ex_data(ssl, conn_index, c) != 1) {
		tls_unref(&c->tls);
		free(c);
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_msg_callback(ssl, on_record);
	SSL_set_msg_callback_arg(ssl, c);
	/* On failure libevent frees ssl, and with it c. */
	if ((bev = bufferevent_openssl_socket_new(base, fd, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, options | BEV_OPT_CLOSE_ON_FREE)) ==
	    NULL)
		return NULL;
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	c->live = 1;
	return bev;
}

/* bev's SSL once its handshake is done, else NULL. */
static SSL *
ssl_done(struct bufferevent *bev)
{
	SSL *ssl = ssl_of(bev);
	struct conn *c = conn_of_ssl(ssl);

	return c != NULL && c->state == TLS_HANDSHAKE_DONE ? ssl : NULL;
}

void
tls_close_notify(struct bufferevent *bev)
{
	SSL *ssl = ssl_done(bev);

	if (ssl == NULL)
		return;
	if (SSL_shutdown(ssl) < 0)
		ERR_clear_error();	/* the peer left first: nothing to do */
}

enum tls_handshake
tls_handshake(struct bufferevent *bev)
{
	struct conn *c = conn_of_ssl(ssl_of(bev));

	return c != NULL ? c->state : TLS_HANDSHAKE_PENDING;
}

enum tls_fail
tls_failed(struct bufferevent *bev, short events)
{
	struct conn *c = conn_of_ssl(ssl_of(bev));
	unsigned long e, last = 0;

	if (c == NULL || c->state == TLS_HANDSHAKE_DONE)
		return TLS_FAIL_NONE;
	if (c->state != TLS_HANDSHAKE_PENDING)
		return c->fail;
	/* libevent's list: SSL_get_error's code (no library), then
	 * OpenSSL's errors, if any. */
	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (ERR_GET_LIB(e) != 0)
			last = e;
	if (events & BEV_EVENT_TIMEOUT)
		failed(c, TLS_FAIL_TIMEOUT, 0);
	else if (last != 0)
		failed(c, classify(c, last), last);
	else
		failed(c, TLS_FAIL_CLOSED, 0);
	return c->fail;
}

const char *
tls_fail_detail(struct bufferevent *bev)
{
	struct conn *c = conn_of_ssl(ssl_of(bev));
	const char *why;

	if (c == NULL || c->err == 0 ||
	    (why = ERR_reason_error_string(c->err)) == NULL)
		return "";
	return why;
}

const char *
tls_fail_name(enum tls_fail f)
{
	return f >= 0 && f < TLS_FAIL_MAX ? fail_names[f] : "";
}

const char *
tls_version(struct bufferevent *bev)
{
	SSL *ssl = ssl_done(bev);

	return ssl != NULL ? SSL_get_version(ssl) : NULL;
}

const char *
tls_cipher(struct bufferevent *bev)
{
	SSL *ssl = ssl_done(bev);

	return ssl != NULL ? SSL_get_cipher_name(ssl) : NULL;
}

const char *
tls_sni(struct bufferevent *bev)
{
	SSL *ssl = ssl_done(bev);

	return ssl != NULL ?
	    SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) : NULL;
}

const char *
tls_alpn(struct bufferevent *bev)
{
	SSL *ssl = ssl_done(bev);
	const unsigned char *p;
	unsigned int len = 0;

	if (ssl == NULL)
		return NULL;
	SSL_get0_alpn_selected(ssl, &p, &len);
	for (size_t i = 0; len > 0 && i < ARRAY_LEN(alpn_names); i++)
		if (strlen(alpn_names[i]) == len &&
		    memcmp(alpn_names[i], p, len) == 0)
			return alpn_names[i];
	return NULL;
}

int
tls_resumed(struct bufferevent *bev)
{
	SSL *ssl = ssl_done(bev);

	return ssl != NULL && SSL_session_reused(ssl);
}

void
tls_counters(struct tls_counters *out)
{
	*out = counters;
}
