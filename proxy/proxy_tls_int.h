/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_TLS_INT_H
#define PROXY_PROXY_TLS_INT_H

/*
 * Inside the TLS module: what proxy_tls.c asks of proxy_tls_load.c (a
 * context's certificate and key) and of proxy_tls_ticket.c (the session
 * ticket key chain). Nothing outside proxy_tls*.c includes this, nor
 * OpenSSL.
 */

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

/* OpenSSL's reason for its last error ("unknown error" if none); its
 * error queue is emptied. */
const char	*ssl_why(void);

/* The certificate chain at path (the leaf first) into ctx, the leaf's
 * notAfter into *not_after. Refused: no file, no PEM certificate, a key
 * under 112 bits of security, expired or not yet valid, a weak
 * signature; with "path: what" in err. 0 (err "" or, the leaf expiring
 * within TLS_EXPIRY_WARN_DAYS, a warning), or -1. */
int	cert_load(SSL_CTX *ctx, const char *path, int64_t *not_after,
	    char *err, size_t errlen);
/* The private key in the secret file key_name names into ctx, which
 * holds the certificate from cert_path. Refused: see conf_secret.h;
 * no PEM key, an encrypted one, a weak one, one that does not match.
 * 0, or -1 with why in err. */
int	key_load(SSL_CTX *ctx, const char *cert_path, const char *key_name,
	    char *err, size_t errlen);

/* Starts this process tree's chain from a random secret (once; again is
 * nothing). 0, or -1 with why in err. */
int	ticket_init(char *err, size_t errlen);
/* Moves the chain on to the current period, erasing the ones before. */
void	ticket_tick(void);
/* Seals and opens ctx's tickets with the chain's keys, and sets the
 * lifetime its tickets are given. 0, or -1 with why in err. */
int	ticket_install(SSL_CTX *ctx, char *err, size_t errlen);

#endif
