/* SPDX-License-Identifier: MIT */
/*
 * Session-ticket keys (proxy_tls_int.h): one chain for a process tree.
 *
 * A ticket is the client's copy of its session, sealed with a key of the
 * server's (RFC 5077's layout: AES-256-CBC, then HMAC-SHA256 over it;
 * the CBC here is the ticket's, not a cipher suite's). Whoever holds the
 * key can read every session sealed under it, so a key serves
 * TLS_TICKET_PERIOD_S only. Period n's keys come from a secret S(n), and
 * S(n+1) = HMAC(S(n), "next"), after which S(n) is erased: a secret
 * stolen now opens no ticket of a period before the last. Every process
 * forked from the one that made S carries the chain on by the clock
 * alone, so a ticket one worker sealed opens on any other, and through a
 * reload (the chain is the process's, not a context's). A ticket is
 * opened under the current key or the one before, and renewed under the
 * current one: it lasts one to two periods. A ticket used is replaced
 * by a new one, under the current key: a TLS 1.3 client uses each ticket
 * once (RFC 8446 4.6.1), and without a new one its next connection would
 * be a full handshake; a TLS 1.2 client keeps a fresh one.
 *
 * A ticket's keys are never handed to OpenSSL's own store, which would
 * keep one key for a context's whole life.
 *
 * Calls nothing in Corral. Called by proxy_tls.c.
 */

#include "proxy/proxy_tls_int.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "proxy/proxy_tls.h"

#define SECRET_BYTES	32
#define NAME_BYTES	16	/* the callback's key_name[16] */
#define AES_BYTES	32	/* AES-256 */
#define MAC_BYTES	32	/* HMAC-SHA256's key */
#define SEALED		1	/* the callback's "ticket sealed" */
#define RENEW		2	/* "ticket opened: seal a new one" */

struct ticket_key {
	int		 valid;
	unsigned char	 name[NAME_BYTES];
	unsigned char	 aes[AES_BYTES];
	unsigned char	 mac[MAC_BYTES];
};

static struct {
	int			 ready;
	int64_t			 period;	/* of secret and cur */
	unsigned char		 secret[SECRET_BYTES];
	struct ticket_key	 cur, prev;
} chain;

static char mac_digest[] = "SHA256";

static int64_t
period_now(void)
{
	return (int64_t)time(NULL) / TLS_TICKET_PERIOD_S;
}

/* HMAC-SHA256(secret, label) into out (SECRET_BYTES). 0 or -1. */
static int
hmac(const unsigned char *secret, const char *label, unsigned char *out)
{
	size_t len = 0;

	if (EVP_Q_mac(NULL, "HMAC", NULL, mac_digest, NULL, secret,
	    SECRET_BYTES, (const unsigned char *)label, strlen(label), out,
	    SECRET_BYTES, &len) == NULL || len != SECRET_BYTES)
		return -1;
	return 0;
}

/* k: the keys of chain.secret's period. */
static void
derive(struct ticket_key *k)
{
	unsigned char name[SECRET_BYTES];

	k->valid = hmac(chain.secret, "name", name) == 0 &&
	    hmac(chain.secret, "aes", k->aes) == 0 &&
	    hmac(chain.secret, "mac", k->mac) == 0;
	memcpy(k->name, name, NAME_BYTES);
	OPENSSL_cleanse(name, sizeof(name));
}

/* One period on: the next secret, the last one erased. */
static void
step(void)
{
	unsigned char next[SECRET_BYTES];

	if (hmac(chain.secret, "next", next) == -1)
		RAND_priv_bytes(next, sizeof(next));	/* a chain of its own */
	memcpy(chain.secret, next, sizeof(next));
	OPENSSL_cleanse(next, sizeof(next));
	chain.prev = chain.cur;
	derive(&chain.cur);
	chain.period++;
}

int
ticket_init(char *err, size_t errlen)
{
	if (chain.ready)
		return 0;
	if (RAND_priv_bytes(chain.secret, sizeof(chain.secret)) != 1) {
		snprintf(err, errlen, "no random bytes for the session "
		    "ticket keys");
		return -1;
	}
	chain.period = period_now();
	derive(&chain.cur);
	chain.prev.valid = 0;
	chain.ready = 1;
	return 0;
}

/* Each period missed costs one step: a year idle, about 9,000 HMACs.
 * A clock set back leaves the chain where it is. */
void
ticket_tick(void)
{
	int64_t now = period_now();

	if (!chain.ready)
		return;
	while (chain.period < now)
		step();
}

static const struct ticket_key *
key_named(const unsigned char *name)
{
	if (chain.cur.valid && memcmp(name, chain.cur.name, NAME_BYTES) == 0)
		return &chain.cur;
	if (chain.prev.valid && memcmp(name, chain.prev.name, NAME_BYTES) == 0)
		return &chain.prev;
	return NULL;
}

/* OpenSSL's ticket key callback: seal (enc) under the current key, or
 * open under the key the ticket names. SEALED, RENEW, 0 (no ticket: a
 * full handshake) or -1. */
static int
on_ticket_key(SSL *ssl, unsigned char name[NAME_BYTES], unsigned char *iv,
    EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
	const EVP_CIPHER *aes = EVP_aes_256_cbc();
	const struct ticket_key *k;
	OSSL_PARAM params[3];

	ticket_tick();
	if (enc) {
		k = &chain.cur;
		if (!k->valid || RAND_bytes(iv, EVP_CIPHER_get_iv_length(aes))
		    != 1)
			return 0;
		memcpy(name, k->name, NAME_BYTES);
		if (!EVP_EncryptInit_ex(cctx, aes, NULL, k->aes, iv))
			return -1;
	} else {
		if ((k = key_named(name)) == NULL)
			return 0;
		if (!EVP_DecryptInit_ex(cctx, aes, NULL, k->aes, iv))
			return -1;
	}
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
	    (void *)k->mac, MAC_BYTES);
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    mac_digest, 0);
	params[2] = OSSL_PARAM_construct_end();
	if (!EVP_MAC_CTX_set_params(hctx, params))
		return -1;
	return enc ? SEALED : RENEW;
}

int
ticket_install(SSL_CTX *ctx, char *err, size_t errlen)
{
	assert(chain.ready);
	if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket_key) != 1) {
		snprintf(err, errlen, "cannot set the session ticket keys");
		return -1;
	}
	SSL_CTX_set_timeout(ctx, TLS_TICKET_PERIOD_S);
	return 0;
}
