/* SPDX-License-Identifier: MIT */
#ifndef AUTH_JWT_INT_H
#define AUTH_JWT_INT_H

/*
 * Inside auth/: the algorithms, and a key set as jwt_keys.c builds it
 * and jwt.c reads it.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

struct digest_mac_key;

#define JWT_KEYS_MAGIC	0x4a4b4559u	/* "JKEY" */

/* How an alg signs (RFC 7518 3.1). */
enum jwt_family {
	FAMILY_HMAC,		/* HMAC with SHA-2 */
	FAMILY_RSA,		/* RSASSA-PKCS1-v1_5 */
	FAMILY_PSS,		/* RSASSA-PSS, MGF1 and salt of the hash */
	FAMILY_EC,		/* ECDSA, r || s */
	FAMILY_EDDSA,		/* EdDSA (RFC 8037), Ed25519 only */
};

enum jwt_alg {
	JWT_HS256, JWT_HS384, JWT_HS512,
	JWT_RS256, JWT_RS384, JWT_RS512,
	JWT_PS256, JWT_PS384, JWT_PS512,
	JWT_ES256, JWT_ES384,
	JWT_EDDSA,
	JWT_ALG_COUNT,
};

#define JWT_ALG_BIT(a)	(1u << (a))
#define JWT_ALGS_RSA	(JWT_ALG_BIT(JWT_RS256) | JWT_ALG_BIT(JWT_RS384) | \
			 JWT_ALG_BIT(JWT_RS512) | JWT_ALG_BIT(JWT_PS256) | \
			 JWT_ALG_BIT(JWT_PS384) | JWT_ALG_BIT(JWT_PS512))

struct jwt_alg_info {
	const char	*name;		/* as a header's alg writes it */
	enum jwt_family	 family;
	const char	*md;		/* libcrypto's digest name; EdDSA: NULL */
	size_t		 size;		/* HMAC: digest bytes; EC: of r and s */
};

/* Indexed by enum jwt_alg. */
extern const struct jwt_alg_info jwt_algs[JWT_ALG_COUNT];

/* The alg named name[0..len) exactly, or -1. */
int	jwt_alg_find(const char *name, size_t len);

/* Is s[0..len) word exactly? */
static inline int
jwt_is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(s, word, len) == 0;
}

/* Is s[0..len) word in any case? */
static inline int
jwt_is_caseless(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

/* Does s[0..len) start with prefix? */
static inline int
jwt_starts(const char *s, size_t len, const char *prefix)
{
	size_t k = strlen(prefix);

	return len >= k && memcmp(s, prefix, k) == 0;
}

struct jwt_key {
	char		*kid;		/* NULL: none */
	size_t		 kidlen;
	unsigned	 algs;		/* JWT_ALG_BIT()s it verifies */
	EVP_PKEY	*pkey;		/* a public key, or */
	unsigned char	*secret;	/* an HMAC secret */
	size_t		 secretlen;
	/* The secret set up for each HMAC alg it verifies (HS256, HS384,
	 * HS512 in turn; NULL for one it does not): keyed once, copied for
	 * each token. */
	struct digest_mac_key *mac[JWT_HS512 - JWT_HS256 + 1];
};

struct jwt_keys {
	uint32_t	 magic;
	struct jwt_key	*key;
	size_t		 n;
};

#endif
