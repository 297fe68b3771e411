/* SPDX-License-Identifier: MIT */
#ifndef TESTS_UNIT_JWT_H
#define TESTS_UNIT_JWT_H

/*
 * Keys and tokens for the JWT tests, made at test time with libcrypto:
 * no private key is kept anywhere. The signing here is written apart
 * from auth/ (its own table of algs), so that a wrong digest or padding
 * there is not mirrored here.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "auth/jwt.h"
#include "common/base64.h"
#include "common/json.h"

#define NOW		1700000000LL
#define HOUR		3600
#define SIG_MAX		1024		/* bytes of a signature */
#define TOKEN_BUF	(64 * 1024 + 64)
#define TEXT_BUF	8192		/* a PEM block, a JWK, a claim set */
#define ERR_BUF		256

enum talg_kind { T_HMAC, T_RSA, T_PSS, T_EC, T_ED };

/* The algs, as the tests sign them. */
static const struct talg {
	const char	*name;
	const char	*md;
	enum talg_kind	 kind;
	int		 coord;		/* EC: bytes of r and of s */
} talgs[] = {
	{ "HS256", "SHA256", T_HMAC, 0 }, { "HS384", "SHA384", T_HMAC, 0 },
	{ "HS512", "SHA512", T_HMAC, 0 }, { "RS256", "SHA256", T_RSA, 0 },
	{ "RS384", "SHA384", T_RSA, 0 }, { "RS512", "SHA512", T_RSA, 0 },
	{ "PS256", "SHA256", T_PSS, 0 }, { "PS384", "SHA384", T_PSS, 0 },
	{ "PS512", "SHA512", T_PSS, 0 }, { "ES256", "SHA256", T_EC, 32 },
	{ "ES384", "SHA384", T_EC, 48 }, { "EdDSA", NULL, T_ED, 0 },
};
#define TALGS	(sizeof(talgs) / sizeof(talgs[0]))

/* Who signs: a key pair, or an HMAC secret. pss_salt: the salt length
 * PS* use (RSA_PSS_SALTLEN_DIGEST as RFC 7518 wants, or another). */
struct signer {
	EVP_PKEY		*pkey;
	const unsigned char	*secret;
	size_t			 secretlen;
	int			 pss_salt;
	int			 ec_der;	/* keep ECDSA's DER form */
};

static char unit_err[ERR_BUF];

static inline const struct talg *
talg_find(const char *name)
{
	for (size_t i = 0; i < TALGS; i++)
		if (strcmp(talgs[i].name, name) == 0)
			return &talgs[i];
	return NULL;
}

static inline EVP_PKEY *
keygen(const char *type, const char *curve, size_t bits)
{
	if (strcmp(type, "RSA") == 0)
		return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", bits);
	if (strcmp(type, "EC") == 0)
		return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
	return EVP_PKEY_Q_keygen(NULL, NULL, type);
}

/* DER r, s as r || s, each coord bytes. */
static inline int
ecdsa_raw(unsigned char *sig, size_t *siglen, int coord)
{
	const unsigned char *p = sig;
	const BIGNUM *r, *s;
	ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)*siglen);
	int ok;

	if (es == NULL)
		return -1;
	ECDSA_SIG_get0(es, &r, &s);
	ok = BN_bn2binpad(r, sig, coord) == coord &&
	    BN_bn2binpad(s, sig + coord, coord) == coord;
	ECDSA_SIG_free(es);
	*siglen = (size_t)(2 * coord);
	return ok ? 0 : -1;
}

static inline int
sign_pkey(const struct talg *a, const struct signer *s, const char *in,
    size_t inlen, unsigned char *sig, size_t *siglen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	int ok;

	*siglen = SIG_MAX;
	ok = ctx != NULL && EVP_DigestSignInit_ex(ctx, &pctx, a->md, NULL,
	    NULL, s->pkey, NULL) == 1;
	if (ok && a->kind == T_RSA)
		ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1;
	if (ok && a->kind == T_PSS)
		ok = EVP_PKEY_CTX_set_rsa_padding(pctx,
		    RSA_PKCS1_PSS_PADDING) == 1 &&
		    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, s->pss_salt) == 1 &&
		    EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, a->md, NULL) == 1;
	ok = ok && EVP_DigestSign(ctx, sig, siglen,
	    (const unsigned char *)in, inlen) == 1;
	EVP_MD_CTX_free(ctx);
	if (ok && a->kind == T_EC && !s->ec_der)
		return ecdsa_raw(sig, siglen, a->coord);
	return ok ? 0 : -1;
}

static inline int
sign_input(const char *alg, const struct signer *s, const char *in,
    size_t inlen, unsigned char *sig, size_t *siglen)
{
	const struct talg *a = talg_find(alg);

	if (a == NULL)
		return -1;
	if (a->kind == T_HMAC) {
		*siglen = 0;
		return EVP_Q_mac(NULL, "HMAC", NULL, a->md, NULL, s->secret,
		    s->secretlen, (const unsigned char *)in, inlen, sig,
		    SIG_MAX, siglen) != NULL ? 0 : -1;
	}
	return sign_pkey(a, s, in, inlen, sig, siglen);
}

/* base64url(header) . base64url(payload), into out. Its length. */
static inline size_t
signing_input(const char *header, const char *payload, char *out)
{
	size_t n = base64url_encode(header, strlen(header), out);

	out[n++] = '.';
	return n + base64url_encode(payload, strlen(payload), out + n);
}

/* The token of the signing input in (base64url texts joined by '.',
 * sent as they are) with signature sig[0..siglen), into out. */
static inline const char *
tok_sig(const char *in, const unsigned char *sig, size_t siglen, char *out)
{
	size_t n = strlen(in);

	memmove(out, in, n);
	out[n++] = '.';
	base64url_encode(sig, siglen, out + n);
	return out;
}

/* The token of the signing input in signed for alg by s (s NULL: a
 * signature of one zero byte). In a static buffer, until the next
 * call. */
static inline const char *
tok_in(const char *in, const char *alg, const struct signer *s)
{
	static char out[TOKEN_BUF];
	unsigned char sig[SIG_MAX] = { 0 };
	size_t siglen = 1;

	if (s != NULL && sign_input(alg, s, in, strlen(in), sig, &siglen) ==
	    -1) {
		fprintf(stderr, "cannot sign %s\n", alg);
		abort();
	}
	return tok_sig(in, sig, siglen, out);
}

/* The token of header and payload (JSON texts, sent as they are) signed
 * for alg by s, as tok_in() makes it. */
static inline const char *
tok(const char *header, const char *payload, const char *alg,
    const struct signer *s)
{
	static char in[TOKEN_BUF];

	signing_input(header, payload, in);
	return tok_in(in, alg, s);
}

/* {"alg":alg} or {"alg":alg,"kid":kid}, in a static buffer. */
static inline const char *
hdr(const char *alg, const char *kid)
{
	static char out[ERR_BUF];

	if (kid == NULL)
		snprintf(out, sizeof(out), "{\"alg\":\"%s\"}", alg);
	else
		snprintf(out, sizeof(out), "{\"alg\":\"%s\",\"kid\":\"%s\"}",
		    alg, kid);
	return out;
}

/* The PEM text of pkey's public key, in out. */
static inline const char *
pem_of(EVP_PKEY *pkey, char *out, size_t outlen)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *p;
	long n;

	out[0] = '\0';
	if (bio != NULL && PEM_write_bio_PUBKEY(bio, pkey) == 1 &&
	    (n = BIO_get_mem_data(bio, &p)) > 0 && (size_t)n < outlen) {
		memcpy(out, p, (size_t)n);
		out[n] = '\0';
	}
	BIO_free(bio);
	return out;
}

static inline void
b64_bn(EVP_PKEY *pkey, const char *param, int pad, char *out)
{
	unsigned char buf[SIG_MAX];
	BIGNUM *bn = NULL;
	int n;

	out[0] = '\0';
	if (EVP_PKEY_get_bn_param(pkey, param, &bn) != 1)
		return;
	n = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
	BN_free(bn);
	if (n > 0)
		base64url_encode(buf, (size_t)n, out);
}

/* A JWK of pkey's public key with extra members ("\"kid\":\"a\","
 * or ""), in out. */
static inline const char *
jwk_of(EVP_PKEY *pkey, const char *extra, char *out, size_t outlen)
{
	char a[SIG_MAX], b[SIG_MAX], group[64] = "";
	unsigned char raw[64];
	size_t rawlen = sizeof(raw);
	int coord;

	if (EVP_PKEY_is_a(pkey, "RSA")) {
		b64_bn(pkey, OSSL_PKEY_PARAM_RSA_N, 0, a);
		b64_bn(pkey, OSSL_PKEY_PARAM_RSA_E, 0, b);
		snprintf(out, outlen, "{%s\"kty\":\"RSA\",\"n\":\"%s\","
		    "\"e\":\"%s\"}", extra, a, b);
	} else if (EVP_PKEY_is_a(pkey, "EC")) {
		EVP_PKEY_get_utf8_string_param(pkey,
		    OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), NULL);
		coord = strcmp(group, "prime256v1") == 0 ? 32 : 48;
		b64_bn(pkey, OSSL_PKEY_PARAM_EC_PUB_X, coord, a);
		b64_bn(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, coord, b);
		snprintf(out, outlen, "{%s\"kty\":\"EC\",\"crv\":\"%s\","
		    "\"x\":\"%s\",\"y\":\"%s\"}", extra, coord == 32 ? "P-256" :
		    "P-384", a, b);
	} else {
		EVP_PKEY_get_raw_public_key(pkey, raw, &rawlen);
		base64url_encode(raw, rawlen, a);
		snprintf(out, outlen, "{%s\"kty\":\"OKP\",\"crv\":\"Ed25519\","
		    "\"x\":\"%s\"}", extra, a);
	}
	return out;
}

static inline struct jwt_keys *
keys_of(enum jwt_keys_format format, const char *text, int allow_secrets)
{
	return jwt_keys_parse("test", text, strlen(text), format,
	    allow_secrets, unit_err, sizeof(unit_err));
}

/* Verifies token with the checks given; the claims are dropped. */
static inline enum jwt_result
verify_with(const struct jwt_keys *keys, const char *token, long long now,
    long long leeway, const char *iss, const char *aud)
{
	struct json *claims = NULL;
	enum jwt_result r;
	struct jwt_policy p = { leeway, iss, aud, NULL, 1 };

	r = jwt_verify(keys, token, strlen(token), now, &p, &claims, unit_err,
	    sizeof(unit_err));
	if ((r == JWT_OK) != (claims != NULL)) {
		fprintf(stderr, "claims do not follow the result\n");
		abort();
	}
	json_free(&claims);
	return r;
}

/* The policy of verify(): no leeway, issuer or audience, the default
 * typs, exp required. */
static const struct jwt_policy plain = { 0, NULL, NULL, NULL, 1 };

/* At NOW, no leeway, no issuer or audience, exp required. */
static inline enum jwt_result
verify(const struct jwt_keys *keys, const char *token)
{
	return verify_with(keys, token, NOW, 0, NULL, NULL);
}

#endif
