/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 and HMAC-SHA-256 (digest.h) by libcrypto's EVP_MD and EVP_MAC
 * ("HMAC" with the "SHA256" digest).
 *
 * Calls nothing of Corral.
 */

#include "common/digest.h"

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

void
digest_hmac_init(struct digest_hmac *m, const void *key, size_t keylen)
{
	OSSL_PARAM params[2];
	EVP_MAC *mac;

	m->failed = 0;
	m->ctx = NULL;
	if ((mac = EVP_MAC_fetch(NULL, HMAC_NAME, NULL)) == NULL) {
		m->failed = 1;
		return;
	}
	m->ctx = EVP_MAC_CTX_new(mac);
	EVP_MAC_free(mac);	/* the context holds its own reference */
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)HMAC_DIGEST, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (m->ctx == NULL || EVP_MAC_init(m->ctx, keylen > 0 ? key : no_key,
	    keylen, params) != 1)
		m->failed = 1;
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
