#ifndef COMMON_SHA256_H
#define COMMON_SHA256_H

/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for keys that must
 * reveal nothing of what they were made from (a credential, a body).
 * Pure: no allocation, no I/O.
 */

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN		32	/* bytes of a digest */
#define SHA256_BLOCK		64	/* bytes of a block */

struct sha256 {
	uint32_t	 h[8];
	uint64_t	 bytes;		/* hashed so far */
	unsigned char	 buf[SHA256_BLOCK];
	size_t		 used;		/* of buf */
};

void	sha256_init(struct sha256 *s);
void	sha256_update(struct sha256 *s, const void *p, size_t len);
void	sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);

/* HMAC-SHA-256: init with the key, update with the message, final. */
struct hmac256 {
	struct sha256	 inner;
	unsigned char	 okey[SHA256_BLOCK];	/* key ^ opad */
};

void	hmac256_init(struct hmac256 *m, const void *key, size_t keylen);
void	hmac256_update(struct hmac256 *m, const void *p, size_t len);
void	hmac256_final(struct hmac256 *m, unsigned char out[SHA256_LEN]);

#endif
