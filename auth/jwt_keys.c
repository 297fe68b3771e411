/* SPDX-License-Identifier: MIT */
/*
 * Key sets (jwt.h): PEM public keys, JWK Sets (RFC 7517) and HMAC
 * secrets made into libcrypto keys, each with its kid and the algs it
 * may verify (RFC 7518 3.1).
 *
 * Calls common/json.c and common/base64.c. Called by jwt.c, and by the
 * configuration to load a set.
 */

#include "auth/jwt.h"
#include "auth/jwt_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/base64.h"
#include "common/digest.h"
#include "common/json.h"

#define WHY_MAX		256	/* bytes of an error, before its file's name */
#define GROUP_NAME_MAX	64	/* bytes of a curve's name */
#define KID_LINE	"# kid:"
#define PEM_BEGIN	"-----BEGIN "
#define PEM_END		"-----END "
#define EC_UNCOMPRESSED	0x04	/* SEC 1 2.3.3: a point as 04 || x || y */
#define EC_COORD_MAX	48	/* bytes of a P-384 coordinate */
#define ED25519_KEY_LEN	32	/* RFC 8032 5.1.5 */
#define ED25519_ALG_ALIAS "Ed25519"	/* a JWK's alg taken as EdDSA */
#define BLANKS		" \t\r\n"

const struct jwt_alg_info jwt_algs[JWT_ALG_COUNT] = {
	[JWT_HS256] = { "HS256", FAMILY_HMAC, "SHA256", 32 },
	[JWT_HS384] = { "HS384", FAMILY_HMAC, "SHA384", 48 },
	[JWT_HS512] = { "HS512", FAMILY_HMAC, "SHA512", 64 },
	[JWT_RS256] = { "RS256", FAMILY_RSA, "SHA256", 0 },
	[JWT_RS384] = { "RS384", FAMILY_RSA, "SHA384", 0 },
	[JWT_RS512] = { "RS512", FAMILY_RSA, "SHA512", 0 },
	[JWT_PS256] = { "PS256", FAMILY_PSS, "SHA256", 0 },
	[JWT_PS384] = { "PS384", FAMILY_PSS, "SHA384", 0 },
	[JWT_PS512] = { "PS512", FAMILY_PSS, "SHA512", 0 },
	[JWT_ES256] = { "ES256", FAMILY_EC, "SHA256", 32 },
	[JWT_ES384] = { "ES384", FAMILY_EC, "SHA384", 48 },
	[JWT_EDDSA] = { "EdDSA", FAMILY_EDDSA, NULL, 64 },
};

/* The curves ECDSA verifies on: a JWK's crv, libcrypto's name, the alg. */
static const struct curve {
	const char	*jwk;
	const char	*group;
	enum jwt_alg	 alg;
} curves[] = {
	{ "P-256", "prime256v1", JWT_ES256 },
	{ "P-384", "secp384r1", JWT_ES384 },
};

static int say(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes why; -1. */
static int
say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

int
jwt_alg_find(const char *name, size_t len)
{
	for (int a = 0; a < JWT_ALG_COUNT; a++)
		if (jwt_is(name, len, jwt_algs[a].name))
			return a;
	return -1;
}

/* A new, empty key at the end of the set, or NULL. */
static struct jwt_key *
add_key(struct jwt_keys *keys, const char *kid, size_t kidlen)
{
	struct jwt_key *k;

	if ((k = realloc(keys->key, (keys->n + 1) * sizeof(*k))) == NULL)
		return NULL;
	keys->key = k;
	k = &keys->key[keys->n++];
	memset(k, 0, sizeof(*k));
	if (kid == NULL)
		return k;
	if ((k->kid = malloc(kidlen + 1)) == NULL)
		return NULL;
	memcpy(k->kid, kid, kidlen);
	k->kid[kidlen] = '\0';
	k->kidlen = kidlen;
	return k;
}

/* *algs narrowed to alg (-1: not narrowed), which it must hold. */
static int
narrow(unsigned *algs, int alg, char *why, size_t whylen)
{
	if (alg < 0)
		return 0;
	if (!(*algs & JWT_ALG_BIT(alg)))
		return say(why, whylen, "alg %s does not fit the key",
		    jwt_algs[alg].name);
	*algs = JWT_ALG_BIT(alg);
	return 0;
}

/* RFC 7518 3.3: 2048 bits or more. An exponent of 1 or an even one
 * makes no signature scheme. */
static int
rsa_algs(EVP_PKEY *pkey, unsigned *algs, char *why, size_t whylen)
{
	BIGNUM *e = NULL;
	int bits = EVP_PKEY_get_bits(pkey), ok;

	if (bits < JWT_RSA_BITS_MIN)
		return say(why, whylen, "an RSA key of %d bits: at least %d "
		    "are needed", bits, JWT_RSA_BITS_MIN);
	if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e) != 1)
		return say(why, whylen, "an RSA key without an exponent");
	ok = BN_is_odd(e) && !BN_is_one(e);
	BN_free(e);
	if (!ok)
		return say(why, whylen, "an RSA key whose exponent is 1 or even");
	*algs = JWT_ALGS_RSA;
	return 0;
}

/* A P-256 or P-384 key whose point is on its curve. */
static int
ec_algs(EVP_PKEY *pkey, unsigned *algs, char *why, size_t whylen)
{
	char group[GROUP_NAME_MAX];
	EVP_PKEY_CTX *ctx;
	int ok;

	if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME,
	    group, sizeof(group), NULL) != 1)
		return say(why, whylen, "an EC key without a named curve");
	ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
	ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
	EVP_PKEY_CTX_free(ctx);
	if (!ok)
		return say(why, whylen, "an EC key whose point is not on its "
		    "curve");
	for (size_t i = 0; i < sizeof(curves) / sizeof(curves[0]); i++)
		if (strcmp(group, curves[i].group) == 0) {
			*algs = JWT_ALG_BIT(curves[i].alg);
			return 0;
		}
	return say(why, whylen, "an EC key on %s: only P-256 and P-384 are "
	    "verified", group);
}

/* The algs a public key verifies. */
static int
pkey_algs(EVP_PKEY *pkey, unsigned *algs, char *why, size_t whylen)
{
	const char *type;

	if (EVP_PKEY_is_a(pkey, "RSA"))
		return rsa_algs(pkey, algs, why, whylen);
	if (EVP_PKEY_is_a(pkey, "EC"))
		return ec_algs(pkey, algs, why, whylen);
	if (EVP_PKEY_is_a(pkey, "ED25519")) {
		*algs = JWT_ALG_BIT(JWT_EDDSA);
		return 0;
	}
	type = EVP_PKEY_get0_type_name(pkey);
	return say(why, whylen, "a %s key: only RSA, EC and Ed25519 keys are "
	    "verified", type != NULL ? type : "unknown");
}

/* Adds pkey (the set's from now on, freed on failure too). */
static int
add_pkey(struct jwt_keys *keys, EVP_PKEY *pkey, const char *kid,
    size_t kidlen, int alg, char *why, size_t whylen)
{
	struct jwt_key *k;
	unsigned algs;

	if (pkey_algs(pkey, &algs, why, whylen) == -1 ||
	    narrow(&algs, alg, why, whylen) == -1)
		goto fail;
	if ((k = add_key(keys, kid, kidlen)) == NULL) {
		say(why, whylen, "out of memory");
		goto fail;
	}
	k->pkey = pkey;
	k->algs = algs;
	return 0;
fail:
	EVP_PKEY_free(pkey);
	return -1;
}

/* RFC 7518 3.2: a key as long as the hash or longer. */
static int
add_secret(struct jwt_keys *keys, const unsigned char *secret, size_t len,
    const char *kid, size_t kidlen, int alg, char *why, size_t whylen)
{
	unsigned algs = 0;
	struct jwt_key *k;

	if (len < JWT_SECRET_MIN)
		return say(why, whylen, "an HMAC secret of %zu bytes: at least "
		    "%d are needed", len, JWT_SECRET_MIN);
	for (int a = JWT_HS256; a <= JWT_HS512; a++)
		if (len >= jwt_algs[a].size)
			algs |= JWT_ALG_BIT(a);
	if (narrow(&algs, alg, why, whylen) == -1)
		return -1;
	if ((k = add_key(keys, kid, kidlen)) == NULL ||
	    (k->secret = malloc(len)) == NULL)
		return say(why, whylen, "out of memory");
	memcpy(k->secret, secret, len);
	k->secretlen = len;
	k->algs = algs;
	for (int a = JWT_HS256; a <= JWT_HS512; a++)
		if ((algs & JWT_ALG_BIT(a)) && (k->mac[a - JWT_HS256] =
		    digest_mac_key_new(jwt_algs[a].md, secret, len)) == NULL)
			return say(why, whylen, "libcrypto cannot key HMAC "
			    "with %s", jwt_algs[a].md);
	return 0;
}

/* ---- PEM ---------------------------------------------------------------- */

/* The line at *pp (before end), without its line end or trailing blanks,
 * in *line: its length. *pp moves past it. */
static size_t
next_line(const char **pp, const char *end, const char **line)
{
	const char *p = *pp, *nl = memchr(p, '\n', (size_t)(end - p));
	const char *e = nl != NULL ? nl : end;

	*line = p;
	*pp = nl != NULL ? nl + 1 : end;
	while (e > p && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	return (size_t)(e - p);
}

/* Moves *pp past the END line that matches the BEGIN line begin[0..n),
 * counting lines. 0, or -1 when the text ends first. */
static int
block_end(const char **pp, const char *end, const char *begin, size_t n,
    size_t *lineno)
{
	const char *label = begin + strlen(PEM_BEGIN), *line;
	size_t labellen = n - strlen(PEM_BEGIN), len;

	while (*pp < end) {
		len = next_line(pp, end, &line);
		(*lineno)++;
		if (len == strlen(PEM_END) + labellen &&
		    jwt_starts(line, len, PEM_END) &&
		    memcmp(line + strlen(PEM_END), label, labellen) == 0)
			return 0;
	}
	return -1;
}

/* The key in a block's DER, by the block's label. */
static EVP_PKEY *
pkey_of_der(const char *label, const unsigned char *der, long len,
    char *why, size_t whylen)
{
	const unsigned char *p = der;
	EVP_PKEY *pkey = NULL;
	X509 *x509;

	if (strcmp(label, "PUBLIC KEY") == 0)
		pkey = d2i_PUBKEY(NULL, &p, len);
	else if (strcmp(label, "RSA PUBLIC KEY") == 0)
		pkey = d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, len);
	else if (strcmp(label, "CERTIFICATE") == 0) {
		if ((x509 = d2i_X509(NULL, &p, len)) != NULL)
			pkey = X509_get_pubkey(x509);
		X509_free(x509);
	} else if (strstr(label, "PRIVATE KEY") != NULL) {
		say(why, whylen, "a private key: give the public key only");
		return NULL;
	} else {
		say(why, whylen, "a %s block: only public keys and "
		    "certificates are read", label);
		return NULL;
	}
	if (pkey == NULL || p != der + len) {
		say(why, whylen, "a %s block that does not decode", label);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;
}

/* Adds the key of the PEM block block[0..len). */
static int
pem_key(struct jwt_keys *keys, const char *block, size_t len,
    const char *kid, size_t kidlen, char *why, size_t whylen)
{
	char *label = NULL, *header = NULL;
	unsigned char *der = NULL;
	EVP_PKEY *pkey = NULL;
	long derlen = 0;
	BIO *bio;
	int rc = -1;

	if ((bio = BIO_new_mem_buf(block, (int)len)) == NULL) {
		say(why, whylen, "out of memory");
		goto fail;
	}
	if (PEM_read_bio(bio, &label, &header, &der, &derlen) != 1) {
		say(why, whylen, "a PEM block that does not decode");
		goto fail;
	}
	if (header[0] != '\0') {
		say(why, whylen, "a PEM block with headers (encrypted?)");
		goto fail;
	}
	if ((pkey = pkey_of_der(label, der, derlen, why, whylen)) != NULL)
		rc = add_pkey(keys, pkey, kid, kidlen, -1, why, whylen);
fail:
	BIO_free(bio);
	OPENSSL_free(label);
	OPENSSL_free(header);
	OPENSSL_free(der);
	return rc;
}

/* The name after "# kid:", blanks around it dropped. 0, or -1 if none. */
static int
kid_of(const char *line, size_t n, const char **kid, size_t *kidlen)
{
	const char *p = line + strlen(KID_LINE), *end = line + n;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	*kid = p;
	*kidlen = (size_t)(end - p);
	return *kidlen > 0 ? 0 : -1;
}

static int
load_pem(struct jwt_keys *keys, const char *text, size_t len, char *why,
    size_t whylen)
{
	const char *p = text, *end = text + len, *line, *begin, *kid = NULL;
	size_t n, lineno = 0, kidlen = 0, kidline = 0, first;
	char what[WHY_MAX];

	while (p < end) {
		begin = p;
		n = next_line(&p, end, &line);
		lineno++;
		if (jwt_starts(line, n, KID_LINE)) {
			if (kid != NULL || kid_of(line, n, &kid, &kidlen) == -1)
				return say(why, whylen, "line %zu: an empty kid "
				    "or a second one before a key", lineno);
			kidline = lineno;
		} else if (n > 0 && line[0] != '#') {
			if (!jwt_starts(line, n, PEM_BEGIN))
				return say(why, whylen, "line %zu: neither a "
				    "comment nor a PEM block", lineno);
			first = lineno;
			if (block_end(&p, end, line, n, &lineno) == -1)
				return say(why, whylen, "line %zu: a PEM block "
				    "without its END line", first);
			if (pem_key(keys, begin, (size_t)(p - begin), kid,
			    kidlen, what, sizeof(what)) == -1)
				return say(why, whylen, "line %zu: %s", first,
				    what);
			kid = NULL;
		}
	}
	if (kid != NULL)
		return say(why, whylen, "line %zu: a kid with no key after it",
		    kidline);
	return 0;
}

/* ---- JWK Sets ------------------------------------------------------------ */

/* The string member name of obj, or NULL (absent or not a string). */
static const char *
member_string(const struct json_value *obj, const char *name, size_t *len)
{
	const struct json_value *v = json_member(obj, name, strlen(name));

	return v != NULL ? json_get_string(v, len) : NULL;
}

/* The base64url member name of obj, decoded into *out (malloc'd). */
static int
member_bytes(const struct json_value *obj, const char *name,
    unsigned char **out, size_t *outlen, char *why, size_t whylen)
{
	const char *s;
	size_t len;

	*out = NULL;
	if ((s = member_string(obj, name, &len)) == NULL)
		return say(why, whylen, "no %s string", name);
	if ((*out = malloc(BASE64URL_DECODED_MAX(len) + 1)) == NULL)
		return say(why, whylen, "out of memory");
	if (base64url_decode(s, len, *out, outlen) == -1) {
		free(*out);
		*out = NULL;
		return say(why, whylen, "%s is not base64url", name);
	}
	return 0;
}

static EVP_PKEY *
from_params(const char *type, OSSL_PARAM *params, char *why,
    size_t whylen)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	EVP_PKEY *pkey = NULL;

	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) {
		say(why, whylen, "not an %s public key", type);
		pkey = NULL;
	}
	EVP_PKEY_CTX_free(ctx);
	return pkey;
}

/* RFC 7518 6.3.1: n and e, big-endian. */
static EVP_PKEY *
jwk_rsa(const struct json_value *jwk, char *why, size_t whylen)
{
	unsigned char *n = NULL, *e = NULL;
	size_t nlen = 0, elen = 0;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY *pkey = NULL;

	if (member_bytes(jwk, "n", &n, &nlen, why, whylen) == -1 ||
	    member_bytes(jwk, "e", &e, &elen, why, whylen) == -1)
		goto fail;
	if ((bn = BN_bin2bn(n, (int)nlen, NULL)) == NULL ||
	    (be = BN_bin2bn(e, (int)elen, NULL)) == NULL ||
	    (bld = OSSL_PARAM_BLD_new()) == NULL ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL) {
		say(why, whylen, "out of memory");
		goto fail;
	}
	pkey = from_params("RSA", params, why, whylen);
fail:
	free(n);
	free(e);
	BN_free(bn);
	BN_free(be);
	OSSL_PARAM_BLD_free(bld);
	OSSL_PARAM_free(params);
	return pkey;
}

/* RFC 7518 6.2.1: crv, and x and y of the curve's size each. 1, 0 for
 * a curve not verified here, or -1. */
static int
jwk_ec(const struct json_value *jwk, EVP_PKEY **pkey, char *why,
    size_t whylen)
{
	unsigned char *x = NULL, *y = NULL, point[1 + 2 * EC_COORD_MAX];
	const struct curve *c = NULL;
	size_t crvlen, xlen = 0, ylen = 0, size;
	OSSL_PARAM params[3];
	const char *crv;
	int rc = -1;

	if ((crv = member_string(jwk, "crv", &crvlen)) == NULL)
		return say(why, whylen, "no crv string");
	for (size_t i = 0; i < sizeof(curves) / sizeof(curves[0]); i++)
		if (jwt_is(crv, crvlen, curves[i].jwk))
			c = &curves[i];
	if (c == NULL)
		return 0;
	size = jwt_algs[c->alg].size;
	if (member_bytes(jwk, "x", &x, &xlen, why, whylen) == -1 ||
	    member_bytes(jwk, "y", &y, &ylen, why, whylen) == -1)
		goto fail;
	if (xlen != size || ylen != size) {
		say(why, whylen, "x and y of a %s key must be %zu bytes each",
		    c->jwk, size);
		goto fail;
	}
	point[0] = EC_UNCOMPRESSED;
	memcpy(point + 1, x, size);
	memcpy(point + 1 + size, y, size);
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
	    (char *)c->group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY,
	    point, 1 + 2 * size);
	params[2] = OSSL_PARAM_construct_end();
	if ((*pkey = from_params("EC", params, why, whylen)) != NULL)
		rc = 1;
fail:
	free(x);
	free(y);
	return rc;
}

/* RFC 8037 2: crv Ed25519 and x. 1, 0 for another crv, or -1. */
static int
jwk_okp(const struct json_value *jwk, EVP_PKEY **pkey, char *why,
    size_t whylen)
{
	unsigned char *x = NULL;
	size_t crvlen, xlen = 0;
	const char *crv;

	if ((crv = member_string(jwk, "crv", &crvlen)) == NULL)
		return say(why, whylen, "no crv string");
	if (!jwt_is(crv, crvlen, "Ed25519"))
		return 0;	/* Ed448, X25519: not verified here */
	if (member_bytes(jwk, "x", &x, &xlen, why, whylen) == -1)
		return -1;
	if (xlen == ED25519_KEY_LEN)
		*pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x,
		    xlen);
	free(x);
	if (*pkey == NULL)
		return say(why, whylen, "x of an Ed25519 key must be %d bytes",
		    ED25519_KEY_LEN);
	return 1;
}

/* The public key of a JWK of type kty: 1, 0 for a type not verified
 * here, or -1. */
static int
jwk_pkey(const struct json_value *jwk, const char *kty, size_t ktylen,
    EVP_PKEY **pkey, char *why, size_t whylen)
{
	*pkey = NULL;
	if (json_member(jwk, "d", 1) != NULL)
		return say(why, whylen, "a private key (d): give the public "
		    "key only");
	if (jwt_is(kty, ktylen, "RSA"))
		return (*pkey = jwk_rsa(jwk, why, whylen)) != NULL ? 1 : -1;
	if (jwt_is(kty, ktylen, "EC"))
		return jwk_ec(jwk, pkey, why, whylen);
	if (jwt_is(kty, ktylen, "OKP"))
		return jwk_okp(jwk, pkey, why, whylen);
	return 0;
}

/*
 * Whether a JWK is one to verify with (RFC 7517 4.2 to 4.4): 1, 0 when
 * its use or key_ops say it is not or its alg is not one verified
 * here, or -1 when one of them is malformed. *alg: its alg, or -1.
 */
static int
jwk_wanted(const struct json_value *jwk, int *alg, char *why, size_t whylen)
{
	const struct json_value *v, *ops;
	const char *s;
	size_t len;
	int verify = 0;

	*alg = -1;
	if ((v = json_member(jwk, "use", 3)) != NULL) {
		if ((s = json_get_string(v, &len)) == NULL)
			return say(why, whylen, "a use that is not a string");
		if (!jwt_is(s, len, "sig"))
			return 0;
	}
	if ((ops = json_member(jwk, "key_ops", 7)) != NULL) {
		if (json_type(ops) != JSON_ARRAY)
			return say(why, whylen, "key_ops that is not an array");
		for (size_t i = 0; i < json_len(ops); i++) {
			if ((s = json_get_string(json_index(ops, i, NULL, NULL),
			    &len)) == NULL)
				return say(why, whylen, "key_ops with a "
				    "member that is not a string");
			verify |= jwt_is(s, len, "verify");
		}
		if (!verify)
			return 0;
	}
	if ((v = json_member(jwk, "alg", 3)) != NULL) {
		if ((s = json_get_string(v, &len)) == NULL)
			return say(why, whylen, "an alg that is not a string");
		/* "Ed25519" for EdDSA, as some issuers write it (the
		 * curve's name, not RFC 8037's alg). */
		if (jwt_is(s, len, ED25519_ALG_ALIAS))
			*alg = JWT_EDDSA;
		else if ((*alg = jwt_alg_find(s, len)) == -1)
			return 0;
	}
	return 1;
}

/* An oct JWK's k (RFC 7518 6.4.1), where secrets are allowed. */
static int
jwk_oct(struct jwt_keys *keys, const struct json_value *jwk,
    int allow_secrets, const char *kid, size_t kidlen, int alg, char *why,
    size_t whylen)
{
	unsigned char *k;
	size_t klen = 0;
	int rc;

	if (!allow_secrets)
		return say(why, whylen, "a secret (kty oct), where secrets "
		    "are not allowed");
	if (member_bytes(jwk, "k", &k, &klen, why, whylen) == -1)
		return -1;
	rc = add_secret(keys, k, klen, kid, kidlen, alg, why, whylen);
	OPENSSL_cleanse(k, klen);
	free(k);
	return rc;
}

static int
jwk_add(struct jwt_keys *keys, const struct json_value *jwk,
    int allow_secrets, char *why, size_t whylen)
{
	const char *kty, *kid = NULL;
	size_t ktylen, kidlen = 0;
	EVP_PKEY *pkey;
	int alg, rc;

	if (json_type(jwk) != JSON_OBJECT)
		return say(why, whylen, "not an object");
	if ((kty = member_string(jwk, "kty", &ktylen)) == NULL)
		return say(why, whylen, "no kty string");
	if (json_member(jwk, "kid", 3) != NULL &&
	    (kid = member_string(jwk, "kid", &kidlen)) == NULL)
		return say(why, whylen, "a kid that is not a string");
	if ((rc = jwk_wanted(jwk, &alg, why, whylen)) <= 0)
		return rc;
	if (jwt_is(kty, ktylen, "oct"))
		return jwk_oct(keys, jwk, allow_secrets, kid, kidlen, alg, why,
		    whylen);
	if ((rc = jwk_pkey(jwk, kty, ktylen, &pkey, why, whylen)) <= 0)
		return rc;
	return add_pkey(keys, pkey, kid, kidlen, alg, why, whylen);
}

static int
load_jwks(struct jwt_keys *keys, const char *text, size_t len,
    int allow_secrets, char *why, size_t whylen)
{
	const struct json_value *set;
	char what[WHY_MAX];
	struct json *doc;
	int rc = 0;

	if ((doc = json_parse(text, len, what, sizeof(what))) == NULL)
		return say(why, whylen, "not JSON: %s", what);
	set = json_member(json_root(doc), "keys", 4);
	if (set == NULL || json_type(set) != JSON_ARRAY)
		rc = say(why, whylen, "not a JWK Set: no \"keys\" array");
	for (size_t i = 0; rc == 0 && i < json_len(set); i++)
		if (jwk_add(keys, json_index(set, i, NULL, NULL), allow_secrets,
		    what, sizeof(what)) == -1)
			rc = say(why, whylen, "keys[%zu]: %s", i, what);
	json_free(&doc);
	return rc;
}

/* ---- secrets, files and sets ------------------------------------------- */

/* JWT_KEYS_AUTO's format for data[0..len). */
static enum jwt_keys_format
sniff(const unsigned char *data, size_t len)
{
	const char *p = (const char *)data;
	size_t i = 0;

	while (i < len && strchr(BLANKS, p[i]) != NULL && p[i] != '\0')
		i++;
	if (i < len && p[i] == '{')
		return JWT_KEYS_JWKS;
	if ((i < len && p[i] == '#') ||
	    memmem(p, len, PEM_BEGIN, strlen(PEM_BEGIN)) != NULL)
		return JWT_KEYS_PEM;
	return JWT_KEYS_SECRET;
}

/*
 * A secret that is a public key's file, or a key set, given as a secret
 * by mistake: a PEM block anywhere in it, or a first byte past blanks
 * that opens a JSON object or a comment (what sniff() takes for a key
 * file). Taken as a secret, a public key would let anyone who has it
 * sign (the RSA-as-HMAC confusion).
 */
static int
secret_is_a_key_file(const unsigned char *data, size_t len)
{
	return sniff(data, len) != JWT_KEYS_SECRET;
}

static int
load_secret(struct jwt_keys *keys, const unsigned char *data, size_t len,
    int allow_secrets, char *why, size_t whylen)
{
	if (!allow_secrets)
		return say(why, whylen, "an HMAC secret, where secrets are not "
		    "allowed");
	if (secret_is_a_key_file(data, len))
		return say(why, whylen, "a PEM block, a JWK Set or a commented "
		    "key file, not an HMAC secret");
	return add_secret(keys, data, len, NULL, 0, -1, why, whylen);
}

/* May the file st describes hold a secret, as allow (enum jwt_secrets)
 * says? Private to its owner: nothing for others or its group (a
 * credential's group may read), owned by us or root. */
static int
is_private(const struct stat *st, int allow)
{
	mode_t group = allow == JWT_SECRETS_CREDENTIAL ? S_IWGRP | S_IXGRP :
	    S_IRWXG;

	return allow != JWT_SECRETS_NO &&
	    (st->st_mode & (group | S_IRWXO)) == 0 &&
	    (st->st_uid == geteuid() || st->st_uid == 0);
}

/* The file at path into *data (malloc'd, *len bytes); *private: whether
 * what was opened is private to its owner. Opened without blocking and
 * judged by fstat() of the descriptor, never by a name looked up again. */
static int
read_file(const char *path, int allow, char **data, size_t *len,
    int *private, char *err, size_t errlen)
{
	struct stat st;
	ssize_t got;
	int fd;

	*len = 0;
	*private = 0;
	if ((*data = malloc(JWT_KEYS_FILE_MAX + 1)) == NULL ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) ==
	    -1) {
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(*data == NULL ? ENOMEM : errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	*private = is_private(&st, allow);
	while (*len <= JWT_KEYS_FILE_MAX && (got = read(fd, *data + *len,
	    JWT_KEYS_FILE_MAX + 1 - *len)) != 0) {
		if (got == -1 && errno == EINTR)
			continue;
		if (got == -1) {
			snprintf(err, errlen, "%s: cannot read: %s", path,
			    strerror(errno));
			goto fail;
		}
		*len += (size_t)got;
	}
	close(fd);
	return 0;
fail:
	close(fd);
	return -1;
}

struct jwt_keys *
jwt_keys_load(const char *path, enum jwt_keys_format format,
    int allow_secrets, char *err, size_t errlen)
{
	struct jwt_keys *keys = NULL;
	char *data;
	size_t len;
	int private;

	if (read_file(path, allow_secrets, &data, &len, &private, err,
	    errlen) == 0)
		keys = jwt_keys_parse(path, data, len, format, private, err,
		    errlen);
	if (data != NULL)
		OPENSSL_cleanse(data, len);	/* it may be a secret */
	free(data);
	return keys;
}

struct jwt_keys *
jwt_keys_parse(const char *name, const void *data, size_t len,
    enum jwt_keys_format format, int allow_secrets, char *err,
    size_t errlen)
{
	struct jwt_keys *keys;
	char why[WHY_MAX];
	int rc = -1;

	if ((keys = calloc(1, sizeof(*keys))) == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	keys->magic = JWT_KEYS_MAGIC;
	if (format == JWT_KEYS_AUTO)
		format = sniff(data, len);
	if (len > JWT_KEYS_FILE_MAX)
		say(why, sizeof(why), "larger than %d bytes", JWT_KEYS_FILE_MAX);
	else if (format == JWT_KEYS_PEM)
		rc = load_pem(keys, data, len, why, sizeof(why));
	else if (format == JWT_KEYS_JWKS)
		rc = load_jwks(keys, data, len, allow_secrets, why, sizeof(why));
	else if (format == JWT_KEYS_SECRET)
		rc = load_secret(keys, data, len, allow_secrets, why,
		    sizeof(why));
	else
		say(why, sizeof(why), "an unknown format");
	if (rc == 0 && keys->n == 0)
		rc = say(why, sizeof(why), "holds no key to verify with");
	ERR_clear_error();
	if (rc == -1) {
		snprintf(err, errlen, "%s: %s", name, why);
		jwt_keys_free(&keys);
	}
	return keys;
}

size_t
jwt_keys_count(const struct jwt_keys *keys)
{
	return keys->n;
}

void
jwt_keys_free(struct jwt_keys **keysp)
{
	struct jwt_keys *keys = *keysp;

	if (keys == NULL)
		return;
	for (size_t i = 0; i < keys->n; i++) {
		EVP_PKEY_free(keys->key[i].pkey);
		OPENSSL_clear_free(keys->key[i].secret, keys->key[i].secretlen);
		for (size_t m = 0; m < JWT_HS512 - JWT_HS256 + 1; m++)
			digest_mac_key_free(&keys->key[i].mac[m]);
		free(keys->key[i].kid);
	}
	free(keys->key);
	keys->magic = 0;
	free(keys);
	*keysp = NULL;
}
