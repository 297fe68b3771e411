/* SPDX-License-Identifier: MIT */
/*
 * Verifying a compact JWS (jwt.h): its three parts read strictly, the
 * header checked (RFC 7515 4.1, 5.2), a key picked and the signature
 * checked with libcrypto (RFC 7518 3), and only then the payload read
 * and its registered claims checked (RFC 7519 4.1, 7.2).
 *
 * Error texts never quote the token: it is the client's, and they end
 * in logs.
 *
 * Calls jwt_keys.c's table, common/json.c and common/base64.c.
 */

#include "auth/jwt.h"
#include "auth/jwt_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/rsa.h>

#include "common/base64.h"
#include "common/digest.h"
#include "common/json.h"

#define WHY_MAX		128	/* bytes of a JSON reader's error */
#define ALG_NONE	"none"	/* RFC 7518 3.6, refused in any case */
#define TYP_MEDIA	"application/"	/* RFC 7515 4.1.9: may be left out */
#define TYP_SEPS	" \t,"	/* between a policy's typs */
#define TYP_MAX		127	/* bytes of a typ value */

enum part {
	PART_HEADER,
	PART_PAYLOAD,
	PART_SIG,
	PARTS,
};

/* A token being read. */
struct token {
	const char	*part[PARTS];	/* base64url texts */
	size_t		 partlen[PARTS];
	unsigned char	*buf;		/* the decoded parts, one after another */
	size_t		 used;
	unsigned char	*sig;		/* in buf */
	size_t		 siglen;
	struct json	*header;
	enum jwt_alg	 alg;
	const char	*kid;		/* in header; NULL: none */
	size_t		 kidlen;
};

/* What the claims are checked against. */
struct checks {
	double		 now, leeway;
	const char	*issuer, *audience;
	int		 require_exp;
};

/* What a token is read with: the policy's typs. */
struct reading {
	const char	*typs;		/* NULL: JWT_TYPS_ANY */
};

static const char *const result_names[] = {
	[JWT_OK] = "ok",
	[JWT_TOO_LARGE] = "too_large",
	[JWT_MALFORMED] = "malformed",
	[JWT_ALG_NONE] = "alg_none",
	[JWT_ALG_UNSUPPORTED] = "alg_unsupported",
	[JWT_KEY_UNKNOWN] = "key_unknown",
	[JWT_KID_NEEDED] = "kid_needed",
	[JWT_ALG_KEY_MISMATCH] = "alg_key_mismatch",
	[JWT_BAD_SIGNATURE] = "bad_signature",
	[JWT_EXPIRED] = "expired",
	[JWT_NO_EXP] = "no_exp",
	[JWT_NOT_YET_VALID] = "not_yet_valid",
	[JWT_ISSUER] = "issuer",
	[JWT_AUDIENCE] = "audience",
	[JWT_ERROR] = "error",
};

static enum jwt_result say(enum jwt_result r, char *err, size_t errlen,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Writes why to err; r. */
static enum jwt_result
say(enum jwt_result r, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

const char *
jwt_result_name(enum jwt_result r)
{
	if ((size_t)r >= sizeof(result_names) / sizeof(result_names[0]))
		return "unknown";
	return result_names[r];
}

/* ---- reading the token --------------------------------------------------- */

/* RFC 7515 7.1: three parts, joined by '.'. */
static int
split(struct token *t, const char *token, size_t len)
{
	size_t n = 0, start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && token[i] != '.')
			continue;
		if (n == PARTS)
			return -1;
		t->part[n] = token + start;
		t->partlen[n++] = i - start;
		start = i + 1;
	}
	return n == PARTS ? 0 : -1;
}

/* Part which decoded into t->buf: at *out, *outlen bytes. */
static int
decode(struct token *t, enum part which, unsigned char **out,
    size_t *outlen)
{
	*out = t->buf + t->used;
	if (base64url_decode(t->part[which], t->partlen[which], *out,
	    outlen) == -1)
		return -1;
	t->used += *outlen;
	return 0;
}

/* s[0..len) without "application/" before it, in any case. */
static const char *
media_subtype(const char *s, size_t *len)
{
	size_t n = strlen(TYP_MEDIA);

	if (*len > n && jwt_is_caseless(s, n, TYP_MEDIA)) {
		*len -= n;
		return s + n;
	}
	return s;
}

/* Does the list typs (TYP_SEPS between its values) hold typ[0..len),
 * each compared without "application/" and in any case (RFC 7515
 * 4.1.9)? */
static int
typ_listed(const char *typs, const char *typ, size_t len)
{
	const char *v;
	size_t n;

	typ = media_subtype(typ, &len);
	for (const char *p = typs + strspn(typs, TYP_SEPS); *p != '\0';
	    p += strspn(p, TYP_SEPS)) {
		v = p;
		n = strcspn(p, TYP_SEPS);
		p += n;
		v = media_subtype(v, &n);
		if (n == len && strncasecmp(v, typ, len) == 0)
			return 1;
	}
	return 0;
}

int
jwt_typs_valid(const char *typs, char *err, size_t errlen)
{
	size_t n, count = 0;

	if (strcmp(typs, JWT_TYPS_ANY) == 0)
		return 0;
	for (const char *p = typs + strspn(typs, TYP_SEPS); *p != '\0';
	    p += strspn(p, TYP_SEPS)) {
		if ((n = strcspn(p, TYP_SEPS)) > TYP_MAX) {
			snprintf(err, errlen, "a typ longer than %d bytes",
			    TYP_MAX);
			return -1;
		}
		p += n;
		count++;
	}
	if (count == 0) {
		snprintf(err, errlen, "no typ values (\"%s\" takes any)",
		    JWT_TYPS_ANY);
		return -1;
	}
	return 0;
}

/* typ, crit and kid (RFC 7515 4.1.9, 4.1.11, 4.1.4). */
static enum jwt_result
header_params(struct token *t, const struct json_value *h,
    const struct reading *rd, char *err, size_t errlen)
{
	const struct json_value *v;
	const char *s;
	size_t len;

	if (rd->typs != NULL && (v = json_member(h, "typ", 3)) != NULL &&
	    ((s = json_get_string(v, &len)) == NULL ||
	    !typ_listed(rd->typs, s, len)))
		return say(JWT_MALFORMED, err, errlen, "typ is not one of "
		    "those accepted (%s)", rd->typs);
	if (json_member(h, "crit", 4) != NULL)
		return say(JWT_MALFORMED, err, errlen, "crit names extensions, "
		    "and none is understood");
	if ((v = json_member(h, "kid", 3)) != NULL &&
	    (t->kid = json_get_string(v, &t->kidlen)) == NULL)
		return say(JWT_MALFORMED, err, errlen, "kid is not a string");
	return JWT_OK;
}

static enum jwt_result
read_header(struct token *t, const struct reading *rd, char *err,
    size_t errlen)
{
	const struct json_value *h, *v;
	unsigned char *text;
	char why[WHY_MAX];
	const char *alg;
	size_t len;
	int a;

	if (decode(t, PART_HEADER, &text, &len) == -1)
		return say(JWT_MALFORMED, err, errlen, "header is not base64url");
	if ((t->header = json_parse((const char *)text, len, why,
	    sizeof(why))) == NULL)
		return say(JWT_MALFORMED, err, errlen, "header is not JSON: %s",
		    why);
	h = json_root(t->header);
	if (json_type(h) != JSON_OBJECT)
		return say(JWT_MALFORMED, err, errlen, "header is not a JSON "
		    "object");
	if ((v = json_member(h, "alg", 3)) == NULL ||
	    (alg = json_get_string(v, &len)) == NULL)
		return say(JWT_MALFORMED, err, errlen, "header has no alg "
		    "string");
	if (jwt_is_caseless(alg, len, ALG_NONE))
		return say(JWT_ALG_NONE, err, errlen, "alg none: unsigned");
	if ((a = jwt_alg_find(alg, len)) == -1)
		return say(JWT_ALG_UNSUPPORTED, err, errlen, "alg is not one "
		    "Corral verifies");
	t->alg = (enum jwt_alg)a;
	return header_params(t, h, rd, err, errlen);
}

static enum jwt_result
read_token(struct token *t, const char *token, size_t len,
    const struct reading *rd, char *err, size_t errlen)
{
	enum jwt_result r;

	if (split(t, token, len) == -1)
		return say(JWT_MALFORMED, err, errlen, "not three parts joined "
		    "by '.'");
	/* The decoded parts are shorter than their texts together. */
	if ((t->buf = malloc(len + 1)) == NULL)
		return say(JWT_ERROR, err, errlen, "out of memory");
	if ((r = read_header(t, rd, err, errlen)) != JWT_OK)
		return r;
	if (decode(t, PART_SIG, &t->sig, &t->siglen) == -1)
		return say(JWT_MALFORMED, err, errlen, "signature is not "
		    "base64url");
	if (t->siglen == 0)
		return say(JWT_MALFORMED, err, errlen, "an empty signature");
	return JWT_OK;
}

/* ---- the signature -------------------------------------------------------- */

/* RFC 7518 3.3 and 3.5: PKCS #1 v1.5, or PSS with MGF1 and a salt of
 * the hash's own size. */
static int
rsa_padding(EVP_PKEY_CTX *pctx, const struct jwt_alg_info *a)
{
	if (a->family == FAMILY_RSA)
		return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) ==
		    1 ? 0 : -1;
	if (a->family != FAMILY_PSS)
		return 0;
	if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) !=
	    1 || EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, a->md, NULL) != 1)
		return -1;
	return 0;
}

/* 1 when sig (DER for ECDSA) verifies, 0 when not, -1 on a failure. */
static int
verify_pkey(EVP_PKEY *pkey, const struct jwt_alg_info *a,
    const unsigned char *sig, size_t siglen, const char *input,
    size_t inputlen)
{
	EVP_PKEY_CTX *pctx = NULL;
	EVP_MD_CTX *ctx;
	int rc = -1;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestVerifyInit_ex(ctx, &pctx, a->md, NULL, NULL, pkey,
	    NULL) != 1 || rsa_padding(pctx, a) == -1)
		goto done;
	rc = EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)input,
	    inputlen) == 1;
done:
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return rc;
}

/* RFC 7518 3.4: r || s, each of the curve's size, made DER for
 * libcrypto. Any other length does not verify. */
static int
verify_ecdsa(EVP_PKEY *pkey, const struct jwt_alg_info *a,
    const unsigned char *sig, size_t siglen, const char *input,
    size_t inputlen)
{
	BIGNUM *r = NULL, *s = NULL;
	unsigned char *der = NULL;
	ECDSA_SIG *es;
	int derlen, rc = -1;

	if (siglen != 2 * a->size)
		return 0;
	if ((es = ECDSA_SIG_new()) == NULL ||
	    (r = BN_bin2bn(sig, (int)a->size, NULL)) == NULL ||
	    (s = BN_bin2bn(sig + a->size, (int)a->size, NULL)) == NULL ||
	    ECDSA_SIG_set0(es, r, s) != 1)
		goto done;
	r = s = NULL;	/* es holds them */
	if ((derlen = i2d_ECDSA_SIG(es, &der)) > 0)
		rc = verify_pkey(pkey, a, der, (size_t)derlen, input,
		    inputlen);
done:
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(es);
	OPENSSL_free(der);
	return rc;
}

/* RFC 7518 3.2, compared in constant time. */
static int
verify_hmac(const struct jwt_key *k, const struct jwt_alg_info *a,
    const unsigned char *sig, size_t siglen, const char *input,
    size_t inputlen)
{
	const struct digest_mac_key *key = k->mac[(a - jwt_algs) - JWT_HS256];
	unsigned char mac[DIGEST_MAC_MAX];
	size_t n = 0;
	int rc;

	assert(key != NULL);	/* keyed for every HS alg it verifies */
	if (digest_mac_with(key, input, inputlen, mac, sizeof(mac), &n) ==
	    -1) {
		ERR_clear_error();
		return -1;
	}
	rc = n == a->size && siglen == n && CRYPTO_memcmp(mac, sig, n) == 0;
	OPENSSL_cleanse(mac, sizeof(mac));
	return rc;
}

static int
verify_with(const struct jwt_key *k, const struct token *t)
{
	const struct jwt_alg_info *a = &jwt_algs[t->alg];
	const char *input = t->part[PART_HEADER];	/* header.payload */
	size_t inputlen = t->partlen[PART_HEADER] + 1 +
	    t->partlen[PART_PAYLOAD];

	if (a->family == FAMILY_HMAC) {
		assert(k->secret != NULL);
		return verify_hmac(k, a, t->sig, t->siglen, input, inputlen);
	}
	assert(k->pkey != NULL);
	if (a->family == FAMILY_EC)
		return verify_ecdsa(k->pkey, a, t->sig, t->siglen, input,
		    inputlen);
	return verify_pkey(k->pkey, a, t->sig, t->siglen, input, inputlen);
}

static int
kid_is(const struct jwt_key *k, const struct token *t)
{
	return k->kid != NULL && k->kidlen == t->kidlen &&
	    memcmp(k->kid, t->kid, t->kidlen) == 0;
}

/* Without a kid: how many keys fit the alg (jwt.h: more than one is
 * refused, not tried one after another). */
static size_t
keys_fitting(const struct jwt_keys *keys, enum jwt_alg alg)
{
	size_t fit = 0;

	for (size_t i = 0; i < keys->n; i++)
		if (keys->key[i].algs & JWT_ALG_BIT(alg))
			fit++;
	return fit;
}

/* The keys the kid names whose type fits the alg, tried in turn; with
 * no kid, the one key that fits. */
static enum jwt_result
check_signature(const struct jwt_keys *keys, const struct token *t,
    char *err, size_t errlen)
{
	const char *alg = jwt_algs[t->alg].name;
	size_t named = 0, fit = 0;
	int v;

	if (t->kid == NULL && keys_fitting(keys, t->alg) > 1)
		return say(JWT_KID_NEEDED, err, errlen, "no kid, and more than "
		    "one key verifies %s", alg);
	for (size_t i = 0; i < keys->n; i++) {
		if (t->kid != NULL && !kid_is(&keys->key[i], t))
			continue;
		named++;
		if (!(keys->key[i].algs & JWT_ALG_BIT(t->alg)))
			continue;
		fit++;
		if ((v = verify_with(&keys->key[i], t)) == 1)
			return JWT_OK;
		if (v == -1)
			return say(JWT_ERROR, err, errlen, "libcrypto failed "
			    "to verify an %s signature", alg);
	}
	if (named == 0)
		return say(JWT_KEY_UNKNOWN, err, errlen, "no key has the "
		    "token's kid");
	if (fit == 0 && t->kid != NULL)
		return say(JWT_ALG_KEY_MISMATCH, err, errlen, "the key the kid "
		    "names does not verify %s", alg);
	if (fit == 0)
		return say(JWT_KEY_UNKNOWN, err, errlen, "no key verifies %s",
		    alg);
	return say(JWT_BAD_SIGNATURE, err, errlen, "the %s signature does not "
	    "verify", alg);
}

/* ---- the claims ------------------------------------------------------------ */

static enum jwt_result
read_claims(struct token *t, struct json **claims, char *err, size_t errlen)
{
	unsigned char *text;
	char why[WHY_MAX];
	size_t len;

	if (decode(t, PART_PAYLOAD, &text, &len) == -1)
		return say(JWT_MALFORMED, err, errlen, "payload is not "
		    "base64url");
	if ((*claims = json_parse((const char *)text, len, why,
	    sizeof(why))) == NULL)
		return say(JWT_MALFORMED, err, errlen, "payload is not JSON: %s",
		    why);
	if (json_type(json_root(*claims)) != JSON_OBJECT) {
		json_free(claims);
		return say(JWT_MALFORMED, err, errlen, "payload is not a JSON "
		    "object");
	}
	return JWT_OK;
}

/* A NumericDate claim (RFC 7519 2): 1 with *when, 0 when absent, -1
 * when it is not a number. */
static int
date(const struct json_value *c, const char *name, double *when)
{
	const struct json_value *v = json_member(c, name, strlen(name));

	if (v == NULL)
		return 0;
	return json_get_number(v, when) == 0 ? 1 : -1;
}

/* RFC 7519 4.1.4, 4.1.5, 4.1.6. */
static enum jwt_result
check_dates(const struct json_value *c, const struct checks *ck, char *err,
    size_t errlen)
{
	double exp = 0, nbf = 0, iat = 0;
	int has_exp, has_nbf, has_iat;

	if ((has_exp = date(c, "exp", &exp)) == -1 ||
	    (has_nbf = date(c, "nbf", &nbf)) == -1 ||
	    (has_iat = date(c, "iat", &iat)) == -1)
		return say(JWT_MALFORMED, err, errlen, "exp, nbf or iat is not "
		    "a number");
	if (!has_exp && ck->require_exp)
		return say(JWT_NO_EXP, err, errlen, "no exp claim");
	if (has_exp && ck->now >= exp + ck->leeway)
		return say(JWT_EXPIRED, err, errlen, "expired at %.17g, now is "
		    "%.17g (leeway %.17g s)", exp, ck->now, ck->leeway);
	if (has_nbf && ck->now + ck->leeway < nbf)
		return say(JWT_NOT_YET_VALID, err, errlen, "not valid before "
		    "%.17g, now is %.17g (leeway %.17g s)", nbf, ck->now,
		    ck->leeway);
	if (has_iat && ck->now + ck->leeway < iat)
		return say(JWT_NOT_YET_VALID, err, errlen, "issued at %.17g, "
		    "later than now, %.17g (leeway %.17g s)", iat, ck->now,
		    ck->leeway);
	return JWT_OK;
}

/* Does aud (a string, or an array of strings) hold want? 1 or 0, or -1
 * when it is neither. */
static int
aud_holds(const struct json_value *aud, const char *want)
{
	const char *s;
	size_t len;
	int found = 0;

	if ((s = json_get_string(aud, &len)) != NULL)
		return want != NULL && jwt_is(s, len, want);
	if (json_type(aud) != JSON_ARRAY)
		return -1;
	for (size_t i = 0; i < json_len(aud); i++) {
		if ((s = json_get_string(json_index(aud, i, NULL, NULL),
		    &len)) == NULL)
			return -1;
		found |= want != NULL && jwt_is(s, len, want);
	}
	return found;
}

/* RFC 7519 4.1.1 and 4.1.3. */
static enum jwt_result
check_parties(const struct json_value *c, const struct checks *ck,
    char *err, size_t errlen)
{
	const struct json_value *iss = json_member(c, "iss", 3);
	const struct json_value *aud = json_member(c, "aud", 3);
	const char *s = NULL;
	size_t len = 0;
	int held = 0;

	if (iss != NULL && (s = json_get_string(iss, &len)) == NULL)
		return say(JWT_MALFORMED, err, errlen, "iss is not a string");
	if (aud != NULL && (held = aud_holds(aud, ck->audience)) == -1)
		return say(JWT_MALFORMED, err, errlen, "aud is neither a string "
		    "nor an array of strings");
	if (ck->issuer != NULL && (s == NULL || !jwt_is(s, len, ck->issuer)))
		return say(JWT_ISSUER, err, errlen, "iss is not the issuer "
		    "expected");
	if (ck->audience != NULL && !held)
		return say(JWT_AUDIENCE, err, errlen, "aud does not name the "
		    "audience expected");
	if (ck->audience == NULL && aud != NULL)
		return say(JWT_AUDIENCE, err, errlen, "the token names an "
		    "audience and none is expected");
	return JWT_OK;
}

enum jwt_result
jwt_verify(const struct jwt_keys *keys, const char *token, size_t len,
    int64_t now, const struct jwt_policy *policy, struct json **claims,
    char *err, size_t errlen)
{
	struct checks ck = { (double)now, (double)policy->leeway,
	    policy->issuer, policy->audience, policy->require_exp };
	struct reading rd = { policy->typs != NULL ? policy->typs :
	    JWT_TYPS_DEFAULT };
	const struct json_value *c;
	struct token t;
	enum jwt_result r;

	assert(keys->magic == JWT_KEYS_MAGIC);
	*claims = NULL;
	if (strcmp(rd.typs, JWT_TYPS_ANY) == 0)
		rd.typs = NULL;
	if (policy->leeway < 0 || policy->leeway > JWT_LEEWAY_MAX)
		return say(JWT_ERROR, err, errlen, "a leeway of %lld s: it must "
		    "be 0 to %d", (long long)policy->leeway, JWT_LEEWAY_MAX);
	if (len > JWT_TOKEN_MAX)
		return say(JWT_TOO_LARGE, err, errlen, "a token of %zu bytes: "
		    "at most %d are read", len, JWT_TOKEN_MAX);
	memset(&t, 0, sizeof(t));
	if ((r = read_token(&t, token, len, &rd, err, errlen)) == JWT_OK &&
	    (r = check_signature(keys, &t, err, errlen)) == JWT_OK &&
	    (r = read_claims(&t, claims, err, errlen)) == JWT_OK) {
		c = json_root(*claims);
		if ((r = check_dates(c, &ck, err, errlen)) != JWT_OK ||
		    (r = check_parties(c, &ck, err, errlen)) != JWT_OK)
			json_free(claims);
	}
	free(t.buf);
	json_free(&t.header);
	if (r == JWT_OK && errlen > 0)
		err[0] = '\0';
	return r;
}
