/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 and HMAC-SHA-256 (digest.h) by libcrypto's EVP_MD and EVP_MAC
 * ("HMAC" with the "SHA256" digest).
 *
 * Calls nothing of Corral.
 */

#include "common/digest.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#define HMAC_NAME	"HMAC"
#define HMAC_DIGEST	"SHA256"
/* Where an empty key points: EVP_MAC_init takes a NULL key to mean
 * "no key given" rather than a key of no bytes. */
static const unsigned char no_key[1];

void
digest_init(struct digest *d)
{
	d->failed = 0;
	if ((d->ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(d->ctx, EVP_sha256(), NULL) != 1)
		d->failed = 1;
}

void
digest_update(struct digest *d, const void *p, size_t len)
{
	if (!d->failed && len > 0 && EVP_DigestUpdate(d->ctx, p, len) != 1)
		d->failed = 1;
}

int
digest_final(struct digest *d, unsigned char out[DIGEST_LEN])
{
	unsigned int n = 0;

	if (!d->failed && (EVP_DigestFinal_ex(d->ctx, out, &n) != 1 ||
	    n != DIGEST_LEN))
		d->failed = 1;
	EVP_MD_CTX_free(d->ctx);
	d->ctx = NULL;
	return d->failed ? -1 : 0;
}

/*
 * libcrypto's HMAC, fetched once for the process and kept (a fetch looks
 * the algorithm up by name each time). Each worker is one thread.
 */
static EVP_MAC *
hmac(void)
{
	static EVP_MAC *mac;

	if (mac == NULL)
		mac = EVP_MAC_fetch(NULL, HMAC_NAME, NULL);
	return mac;
}

/* A context for HMAC over md keyed with key, or NULL. */
static EVP_MAC_CTX *
hmac_ctx(const char *md, const void *key, size_t keylen)
{
	OSSL_PARAM params[2];
	EVP_MAC_CTX *ctx;
	EVP_MAC *mac;

	if ((mac = hmac()) == NULL || (ctx = EVP_MAC_CTX_new(mac)) == NULL)
		return NULL;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)md, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, keylen > 0 ? key : no_key, keylen, params) !=
	    1) {
		EVP_MAC_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

void
digest_hmac_init(struct digest_hmac *m, const void *key, size_t keylen)
{
	m->ctx = hmac_ctx(HMAC_DIGEST, key, keylen);
	m->failed = m->ctx == NULL;
}

void
digest_hmac_update(struct digest_hmac *m, const void *p, size_t len)
{
	if (!m->failed && len > 0 && EVP_MAC_update(m->ctx, p, len) != 1)
		m->failed = 1;
}

int
digest_hmac_final(struct digest_hmac *m, unsigned char out[DIGEST_LEN])
{
	size_t n = 0;

	if (!m->failed && (EVP_MAC_final(m->ctx, out, &n, DIGEST_LEN) != 1 ||
	    n != DIGEST_LEN))
		m->failed = 1;
	EVP_MAC_CTX_free(m->ctx);
	m->ctx = NULL;
	return m->failed ? -1 : 0;
}

struct digest_mac_key {
	EVP_MAC_CTX	*ctx;		/* keyed, never fed: copied for each use */
};

struct digest_mac_key *
digest_mac_key_new(const char *md, const void *key, size_t keylen)
{
	struct digest_mac_key *k = malloc(sizeof(*k));

	if (k == NULL)
		return NULL;
	if ((k->ctx = hmac_ctx(md, key, keylen)) == NULL) {
		free(k);
		return NULL;
	}
	return k;
}

void
digest_mac_key_free(struct digest_mac_key **kp)
{
	if (*kp == NULL)
		return;
	EVP_MAC_CTX_free((*kp)->ctx);
	free(*kp);
	*kp = NULL;
}

int
digest_mac_with(const struct digest_mac_key *k, const void *msg, size_t len,
    unsigned char *out, size_t outcap, size_t *outlen)
{
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(k->ctx);
	int rc = -1;

	*outlen = 0;
	if (ctx != NULL && (len == 0 || EVP_MAC_update(ctx, msg, len) == 1) &&
	    EVP_MAC_final(ctx, out, outlen, outcap) == 1)
		rc = 0;
	EVP_MAC_CTX_free(ctx);
	return rc;
}
