/* SPDX-License-Identifier: MIT */
#ifndef AUTH_JWT_H
#define AUTH_JWT_H

/*
 * JSON Web Tokens (RFC 7519) in compact JWS form (RFC 7515), verified
 * against a set of keys, and the claims a cache key is made from.
 * libcrypto hides behind it; no caller includes an OpenSSL header.
 *
 * A key set is immutable once loaded: a reload loads a new one and
 * swaps it in, then frees the old one.
 */

#include <stddef.h>
#include <stdint.h>

struct json;

#define JWT_TOKEN_MAX		16384		/* bytes of a token */
#define JWT_KEYS_FILE_MAX	(1024 * 1024)	/* bytes of a key file */
#define JWT_SECRET_MIN		32	/* bytes of an HMAC secret (HS256) */
#define JWT_RSA_BITS_MIN	2048	/* RFC 7518 3.3 */
#define JWT_LEEWAY_MAX		300	/* seconds of clock skew allowed */
#define JWT_TYPS_DEFAULT	"JWT,at+jwt"	/* RFC 7519 5.1, RFC 9068 2.1 */
#define JWT_TYPS_ANY		"any"	/* typ is not looked at */

/* ---- key sets ------------------------------------------------------- */

enum jwt_keys_format {
	/*
	 * PEM blocks of public keys: BEGIN PUBLIC KEY (any of the types
	 * below), BEGIN RSA PUBLIC KEY, or BEGIN CERTIFICATE (its key is
	 * taken, the certificate itself is not checked). A comment line
	 * "# kid: NAME" names the block after it; other lines starting
	 * with '#' and blank lines are skipped, anything else (a private
	 * key above all) is an error.
	 */
	JWT_KEYS_PEM,
	/*
	 * A JWK Set (RFC 7517 5), {"keys": [...]}: kty RSA (n, e), EC (crv
	 * P-256 or P-384, x, y), OKP (crv Ed25519, x), and oct (k) only
	 * when secrets are allowed. A key whose use is not "sig", whose
	 * key_ops lack "verify", or whose kty, crv or alg Corral does not
	 * verify with is skipped; one with a private part (d) or that is
	 * malformed is an error.
	 */
	JWT_KEYS_JWKS,
	/* One HMAC secret: every byte of the file (a final newline too). */
	JWT_KEYS_SECRET,
	/*
	 * Told by the text: a JWK Set when its first byte past blanks is
	 * '{', PEM when that is '#' or it holds a PEM block, else a secret
	 * (which therefore can never be a key file read as a secret).
	 */
	JWT_KEYS_AUTO,
};

/*
 * What a key verifies follows from its type: RSA RS256/384/512 and
 * PS256/384/512 (of JWT_RSA_BITS_MIN bits or more), EC P-256 ES256, EC
 * P-384 ES384, Ed25519 EdDSA, a secret HS256 (and HS384 from 48 bytes,
 * HS512 from 64: RFC 7518 3.2). A JWK's alg narrows that to one.
 */
struct jwt_keys;

/* What jwt_keys_load() lets a file hold besides public keys. */
enum jwt_secrets {
	JWT_SECRETS_NO,		/* public keys only */
	JWT_SECRETS_PRIVATE,	/* secrets from a file private to its owner */
	JWT_SECRETS_CREDENTIAL,	/* ... or, a systemd credential, that its
				 * group may read too (0440: systemd's ACL
				 * shows as the group's bits) */
};

/*
 * Loads the file at path (at most JWT_KEYS_FILE_MAX bytes). It is opened
 * without blocking (a FIFO or a device is refused, never waited on) and
 * judged by fstat() of what was opened: it must be a regular file, and
 * it may hold a secret (a secret file, or an oct key in a JWK Set) only
 * as allow_secrets (enum jwt_secrets) says and when it is private to
 * its owner: owned by the effective user or root, nothing for others,
 * nothing for its group (JWT_SECRETS_CREDENTIAL: its group may read).
 * NULL, with "path: what" in err, when the file holds anything wrong, or
 * no key.
 */
struct jwt_keys	*jwt_keys_load(const char *path, enum jwt_keys_format format,
		    int allow_secrets, char *err, size_t errlen);
/* The same from data[0..len), named name in err. */
struct jwt_keys	*jwt_keys_parse(const char *name, const void *data,
		    size_t len, enum jwt_keys_format format, int allow_secrets,
		    char *err, size_t errlen);
size_t		 jwt_keys_count(const struct jwt_keys *keys);
void		 jwt_keys_free(struct jwt_keys **keys);

/* ---- verification ---------------------------------------------------- */

enum jwt_result {
	JWT_OK,
	JWT_TOO_LARGE,		/* over JWT_TOKEN_MAX: not read at all */
	JWT_MALFORMED,		/* not a compact JWS, or a part is wrong */
	JWT_ALG_NONE,		/* "none" in any case */
	JWT_ALG_UNSUPPORTED,	/* an alg Corral does not verify */
	JWT_KEY_UNKNOWN,	/* no key with its kid, or none for its alg */
	JWT_KID_NEEDED,		/* no kid, and more than one key fits its alg */
	JWT_ALG_KEY_MISMATCH,	/* its kid names a key of another type */
	JWT_BAD_SIGNATURE,
	JWT_EXPIRED,
	JWT_NO_EXP,		/* exp is required and absent */
	JWT_NOT_YET_VALID,	/* nbf or iat later than now + leeway */
	JWT_ISSUER,
	JWT_AUDIENCE,
	JWT_ERROR,		/* out of memory, a libcrypto failure, or a
				 * policy out of its bounds */
};

/* What a token is checked against besides its signature. */
struct jwt_policy {
	int64_t		 leeway;	/* seconds, 0 to JWT_LEEWAY_MAX */
	const char	*issuer;	/* iss must be this; NULL: any */
	const char	*audience;	/* aud must hold this; NULL: none */
	/* typ values accepted, separated by spaces or commas; NULL:
	 * JWT_TYPS_DEFAULT; JWT_TYPS_ANY: typ is not looked at. */
	const char	*typs;
	int		 require_exp;
};

/* Its name for logs and metrics: "ok", "malformed", "alg_none", ... */
const char	*jwt_result_name(enum jwt_result r);

/*
 * Verifies token[0..len) with keys at now (seconds since the epoch).
 *
 * The header must be a JSON object with a supported alg, a typ (if
 * any, and unless the policy ignores typ) that is one of the policy's
 * typs, compared in any case and with or without "application/" before
 * it (RFC 7515 4.1.9), a kid (if any) that is a string, and no crit. A
 * kid picks the keys with that kid (a key without one is not among
 * them), each tried in turn; without one, the one key whose type fits
 * the alg is used, and a token without a kid is refused (JWT_KID_NEEDED)
 * when more than one key fits: a set of several keys for one alg needs
 * its tokens to name theirs. Nothing of the payload is read before a
 * signature verifies.
 *
 * Then the claims: exp (a number, integer or not; required when
 * require_exp) must be later than now - leeway, nbf and iat no later
 * than now + leeway; iss must be the policy's issuer (NULL: any); aud, a
 * string or an array of strings, must hold its audience, and a token
 * with an aud is refused when audience is NULL (RFC 7519 4.1.3). iss and
 * aud must be strings wherever they appear, and the dates numbers. A
 * leeway below 0 or over JWT_LEEWAY_MAX is refused (JWT_ERROR).
 *
 * JWT_OK with the claims (the payload object) in *claims, for the
 * caller to json_free(); otherwise *claims is NULL and err says why.
 */
enum jwt_result	 jwt_verify(const struct jwt_keys *keys, const char *token,
		    size_t len, int64_t now, const struct jwt_policy *policy,
		    struct json **claims, char *err, size_t errlen);
/* 0, or -1 with why in err when typs (a policy's) is empty or names a
 * value longer than a typ may be. */
int		 jwt_typs_valid(const char *typs, char *err, size_t errlen);

/* ---- claims for a cache key ----------------------------------------- */

/*
 * names lists claims, separated by spaces, tabs or commas; each is a
 * json_path() ("role", "app_metadata.org", "https://x\.io/tenant" for a
 * name with dots). 0, or -1 with why in err when the list is empty or a
 * name is not a valid path.
 */
int		 jwt_claims_valid(const char *names, char *err,
		    size_t errlen);
/*
 * The canonical text of the claims named, for a caller to take a keyed
 * hash of: for each name in the list's order, the name as the list
 * writes it, then a space and the value's canonical JSON text
 * (json_write(): an object's members sorted by name, an array in its
 * order, a number in one form whichever way the token wrote it), then a
 * newline; a claim that
 * is absent is its name and the newline alone, so it differs from one
 * that is null. No name holds a space or newline and no canonical text
 * a newline, so the text has one reading. *out (malloc'd, with a NUL
 * after *outlen bytes) is the caller's to free. 0, or -1 with why in
 * err.
 */
int		 jwt_claims_canon(const struct json *claims, const char *names,
		    char **out, size_t *outlen, char *err, size_t errlen);

#endif
