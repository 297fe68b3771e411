/* SPDX-License-Identifier: MIT */
#ifndef COMMON_DIGEST_H
#define COMMON_DIGEST_H

/*
 * SHA-256 and HMAC-SHA-256 through libcrypto (EVP), shaped as sha256.h
 * is: init, update, final on a caller's struct. libcrypto hides behind
 * it; no caller includes an OpenSSL header.
 *
 * init allocates libcrypto's context, so it may fail: a failure is kept
 * in the struct, update then does nothing, and final reports it. Only
 * final's result need be checked (a digest a caller uses without
 * checking could be one shared by every input). Every init must be
 * matched by a final, which frees the context whatever happened.
 *
 * This is the one module of Corral that hashes: cache keys' digests
 * (cache/cache_keyrule.c) and JWT HMACs (auth/) come here.
 */

#include <stddef.h>

#define DIGEST_LEN		32	/* bytes of a SHA-256 digest */
#define DIGEST_BLOCK		64	/* bytes of a SHA-256 block */

struct evp_md_ctx_st;
struct evp_mac_ctx_st;

struct digest {
	struct evp_md_ctx_st	*ctx;
	int			 failed;
};

void	digest_init(struct digest *d);
void	digest_update(struct digest *d, const void *p, size_t len);
/* 0, or -1 (out holds nothing) when a step failed. */
int	digest_final(struct digest *d, unsigned char out[DIGEST_LEN])
	    __attribute__((warn_unused_result));

/* HMAC-SHA-256 (RFC 2104): init with the key, update with the message,
 * final. A key may have any length, none included. */
struct digest_hmac {
	struct evp_mac_ctx_st	*ctx;
	int			 failed;
};

void	digest_hmac_init(struct digest_hmac *m, const void *key,
	    size_t keylen);
void	digest_hmac_update(struct digest_hmac *m, const void *p, size_t len);
int	digest_hmac_final(struct digest_hmac *m, unsigned char out[DIGEST_LEN])
	    __attribute__((warn_unused_result));

/*
 * HMAC over the digest md ("SHA256", "SHA384", "SHA512": libcrypto's
 * names) with a key set up once (its pads computed) and used for many
 * messages: each digest_mac_with() copies the keyed context and writes
 * the MAC of msg into out[0..outcap), 0 with its length in *outlen, or
 * -1. new gives NULL on a failure; free takes NULL.
 */
#define DIGEST_MAC_MAX		64	/* bytes of the largest (SHA-512) */
struct digest_mac_key;
struct digest_mac_key *digest_mac_key_new(const char *md, const void *key,
	    size_t keylen);
void	digest_mac_key_free(struct digest_mac_key **k);
int	digest_mac_with(const struct digest_mac_key *k, const void *msg,
	    size_t len, unsigned char *out, size_t outcap, size_t *outlen)
	    __attribute__((warn_unused_result));

#endif
