/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_TLS_H
#define PROXY_PROXY_TLS_H

/*
 * TLS on a listener: a server context made from a certificate and its key
 * (struct tls), and the accepted connections it wraps in OpenSSL
 * bufferevents. Callers never see OpenSSL: this face and libevent's
 * bufferevents are all they handle.
 *
 * What a context offers clients (why: proxy_tls.c, at the top):
 *   TLS 1.2 and 1.3 only; ECDHE with AES-GCM or ChaCha20-Poly1305, the
 *   client choosing among them; X25519, P-256, P-384;
 *   ALPN: http/1.1 (or http/1.0); a client that offers ALPN but neither
 *   is refused (no_application_protocol), as nginx does;
 *   session tickets under keys that change every TLS_TICKET_PERIOD_S,
 *   the same in every process forked after tls_init();
 *   SNI read for the log (a name that is no DNS name is refused with
 *   unrecognized_name); one certificate for every name. (A second
 *   certificate, chosen by the SNI name, will be added to a context by a
 *   tls_add(t, name, cert, key, err, errlen); the rest of this face stays
 *   as it is.)
 *
 * A certificate file holds the leaf first, then its chain. The key file
 * is a secret file (conf_secret.h): an absolute path or a systemd
 * credential name, refused if others may read it; it is read into memory,
 * decoded and wiped, and never shown. Errors name the file and what is
 * wrong with it ("PATH: the certificate expired on ..."), never a key's
 * bytes.
 *
 * Reload: a context is reference-counted. Each connection holds one
 * reference until its bufferevent is freed, so a new context serves new
 * connections while open ones keep the old one (tls_reload).
 *
 * A handshake is counted once: done when it finishes, or failed, by
 * class, when its bufferevent is freed unfinished (tls_counters). A peer
 * that speaks plain HTTP to a TLS port is answered "400 The plain HTTP
 * request was sent to HTTPS port" on the raw socket, its sending side
 * shut, before its handshake fails (as nginx answers it).
 */

#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#define TLS_KEY_FILE_MAX	(64 * 1024)	/* RSA-16384 in PEM: ~13 KiB */
#define TLS_EXPIRY_WARN_DAYS	14	/* warn when the leaf expires sooner */
#define TLS_TICKET_PERIOD_S	3600	/* a ticket key's turn; tickets last
					 * one to two turns */
#define TLS_SNI_MAX		253	/* a DNS name, the longest */

struct bufferevent;
struct event_base;
struct tls;

/* Where a connection's handshake is. */
enum tls_handshake {
	TLS_HANDSHAKE_PENDING,	/* under way (or not a TLS bufferevent) */
	TLS_HANDSHAKE_DONE,	/* finished: the connection carries data */
	TLS_HANDSHAKE_FAILED	/* failed: free the bufferevent */
};

/* Why a handshake failed, by class: the label of tls_counters' failed[]. */
enum tls_fail {
	TLS_FAIL_NONE = 0,	/* it has not failed */
	TLS_FAIL_TIMEOUT,	/* the server gave up waiting (tls_failed) */
	TLS_FAIL_MISMATCH,	/* no common version, cipher suite, group,
				 * signature algorithm or ALPN protocol */
	TLS_FAIL_CERT,		/* the client refused the certificate (an
				 * unknown CA, a wrong name, expired) */
	TLS_FAIL_PLAINTEXT,	/* the peer spoke plain HTTP: answered 400 */
	TLS_FAIL_CLOSED,	/* closed unfinished, with no TLS error: the
				 * peer left, or the server closed it */
	TLS_FAIL_OTHER,		/* any other TLS error */
	TLS_FAIL_MAX
};

/* Counted since the process started, across every context it made. */
struct tls_counters {
	uint64_t	handshakes;		/* finished */
	uint64_t	resumed;		/* of those, from a ticket */
	uint64_t	failed[TLS_FAIL_MAX];	/* [TLS_FAIL_NONE] stays 0 */
};

/*
 * Once, before forking the workers: loads OpenSSL's error texts and makes
 * the session-ticket key chain every process forked afterwards inherits
 * (a ticket one worker issued then resumes on any other, through their
 * reloads). tls_new calls it when no one has. 0, or -1 with why in err.
 */
int	tls_init(char *err, size_t errlen);

/*
 * Moves the ticket key chain on to the current period, erasing keys of
 * periods past. Each context does it as it uses the chain; a process that
 * made the chain but serves no TLS (the master) calls it every
 * TLS_TICKET_PERIOD_S, so that it holds no key a past ticket was made
 * with.
 */
void	tls_tick(void);

/*
 * A server context for the certificate chain at cert_path and the key at
 * key_path (absolute paths, or systemd credential names). Refused, with
 * "PATH: what" in err: a file missing or unreadable; no PEM certificate
 * or key in it; a key others may read, encrypted (no passphrases are
 * taken), or weaker than RSA-2048 / P-256 (under 112 bits of security);
 * a key that does not match the certificate; a certificate expired or
 * not yet valid, or signed with a weak digest. When the certificate
 * expires within TLS_EXPIRY_WARN_DAYS the context is made and err holds
 * the warning; else err is "". NULL on refusal. One reference, the
 * caller's.
 */
struct tls	*tls_new(const char *cert_path, const char *key_path, char *err,
		    size_t errlen);

/* The checks of tls_new, for corral -t: 0 (err "" or a warning), or -1
 * with why in err. */
int	tls_check(const char *cert_path, const char *key_path, char *err,
	    size_t errlen);

/* One more reference to t; returns t. */
struct tls	*tls_ref(struct tls *t);
/* Drops the reference *tp holds, freeing the context with its last one;
 * sets *tp to NULL. NULL or *tp NULL: nothing. */
void	tls_unref(struct tls **tp);

/*
 * SIGHUP: a new context from the files into *tp, dropping the reference
 * *tp held (open connections keep theirs). 0 (err "" or a warning), or
 * -1 with why in err and *tp untouched, still serving.
 */
int	tls_reload(struct tls **tp, const char *cert_path,
	    const char *key_path, char *err, size_t errlen);

/* The certificate's notAfter, seconds since the epoch (a gauge). */
int64_t	tls_not_after(const struct tls *t);

/*
 * The server side of a TLS connection on the accepted socket fd (or -1,
 * when the caller sets it later with bufferevent_setfd, as evhttp's
 * bevcb does), its handshake under way. options as for
 * bufferevent_socket_new; BEV_OPT_CLOSE_ON_FREE is always added: freeing
 * the bufferevent closes fd and frees the connection's TLS state. A
 * peer's close without close_notify reads as EOF. The caller's event
 * callback sees BEV_EVENT_CONNECTED when the handshake is done, or an
 * error or EOF before (then tls_failed). A handshake timeout is the
 * caller's: bufferevent_set_timeouts() on the returned bufferevent gives
 * BEV_EVENT_TIMEOUT while the handshake stalls. The bufferevent holds a
 * reference to t. NULL on no memory (fd is then still the caller's).
 */
struct bufferevent	*tls_accept(struct tls *t, struct event_base *base,
			    evutil_socket_t fd, int options);

/*
 * Before freeing a connection whose handshake is done and whose output
 * is written: sends TLS's close_notify (one try; the peer's is not waited
 * for). Without it a client sees its connection cut: OpenSSL then drops
 * the session it would have resumed, and a response that ends at the
 * close could be a truncated one. Nothing for a bufferevent that is not
 * TLS or not done.
 */
void	tls_close_notify(struct bufferevent *bev);

/* Where bev's handshake is (PENDING for a bufferevent that is not TLS). */
enum tls_handshake	 tls_handshake(struct bufferevent *bev);

/*
 * From the caller's event callback, with the events it got, when bev's
 * handshake has not finished: why it failed. BEV_EVENT_TIMEOUT in events
 * (the caller's handshake timeout) makes it TLS_FAIL_TIMEOUT; an error
 * or EOF with no TLS error behind it, TLS_FAIL_CLOSED. The connection is
 * counted under it when freed. TLS_FAIL_NONE when the handshake is done
 * or bev is not TLS.
 */
enum tls_fail	 tls_failed(struct bufferevent *bev, short events);
/* OpenSSL's text for the error that failed bev's handshake ("no shared
 * cipher", "http request"), for the error log; "" when there was none. */
const char	*tls_fail_detail(struct bufferevent *bev);
/* "timeout", "mismatch", "cert", "plaintext", "closed", "other" ("" for
 * TLS_FAIL_NONE): a label for /metrics and the log. */
const char	*tls_fail_name(enum tls_fail f);

/* For the access log, once the handshake is done; NULL when bev is not
 * TLS or has no such thing. The strings live as long as bev. */
const char	*tls_version(struct bufferevent *bev);	/* "TLSv1.3" */
const char	*tls_cipher(struct bufferevent *bev);	/* "TLS_AES_128_..." */
const char	*tls_sni(struct bufferevent *bev);	/* "www.example.org" */
const char	*tls_alpn(struct bufferevent *bev);	/* "http/1.1" */
/* 1 when bev's session was resumed from a ticket, else 0. */
int		 tls_resumed(struct bufferevent *bev);

/* The counters so far, copied into out. */
void	tls_counters(struct tls_counters *out);

#endif
