/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_TLS_INT_H
#define PROXY_PROXY_TLS_INT_H

/*
 * Inside the TLS module (proxy_tls.c, proxy_tls_ticket.c): the session
 * ticket key chain a context seals its tickets with. Nothing outside
 * proxy_tls*.c includes this, nor OpenSSL.
 */

#include <stddef.h>

#include <openssl/ssl.h>

/* Starts this process tree's chain from a random secret (once; again is
 * nothing). 0, or -1 with why in err. */
int	ticket_init(char *err, size_t errlen);
/* Moves the chain on to the current period, erasing the ones before. */
void	ticket_tick(void);
/* Seals and opens ctx's tickets with the chain's keys, and sets the
 * lifetime its tickets are given. 0, or -1 with why in err. */
int	ticket_install(SSL_CTX *ctx, char *err, size_t errlen);

#endif
