/* SPDX-License-Identifier: MIT */
/*
 * Verifying tokens (auth/jwt.c): every alg both ways, the published
 * examples, and each way a token is refused, with the reason it names.
 * Keys are made at test time.
 */

#include "auth/jwt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"
#include "tests/unit/unit_jwt.h"

#define SECRET_LEN	64
#define TOK_COPY	4096	/* bytes of a token kept aside */
#define RFC_NOW		1300819000LL	/* before the RFC examples' exp */

static EVP_PKEY *rsa, *rsa2, *ec256, *ec384, *ed;
static unsigned char secret[SECRET_LEN];
/* Every key, each with a kid: "rsa", "ec256", "ec384", "ed", "hs". */
static struct jwt_keys *all;

static struct signer
by(EVP_PKEY *pkey)
{
	struct signer s = { pkey, NULL, 0, RSA_PSS_SALTLEN_DIGEST, 0 };

	return s;
}

static struct signer
by_secret(const void *p, size_t n)
{
	struct signer s = { NULL, p, n, 0, 0 };

	return s;
}

/* The test key for alg, and its kid in all. */
static struct signer
signer_for(const struct talg *a, const char **kid)
{
	switch (a->kind) {
	case T_HMAC:
		*kid = "hs";
		return by_secret(secret, sizeof(secret));
	case T_RSA:
	case T_PSS:
		*kid = "rsa";
		return by(rsa);
	case T_EC:
		*kid = a->coord == 32 ? "ec256" : "ec384";
		return by(a->coord == 32 ? ec256 : ec384);
	default:
		*kid = "ed";
		return by(ed);
	}
}

/* {"sub":"u1","exp":NOW+HOUR<more>}, in a static buffer. */
static const char *
claims(const char *more)
{
	static char out[TEXT_BUF];

	snprintf(out, sizeof(out), "{\"sub\":\"u1\",\"exp\":%lld%s}",
	    NOW + HOUR, more);
	return out;
}

/* An HS256 token of payload, signed with the secret. */
static const char *
hs(const char *payload)
{
	struct signer s = by_secret(secret, sizeof(secret));

	return tok(hdr("HS256", NULL), payload, "HS256", &s);
}

/* t copied into out, of TOK_COPY bytes (t is shorter). */
static char *
keep(char *out, const char *t)
{
	size_t n = strlen(t);

	if (n + 1 >= TOK_COPY)
		abort();
	memcpy(out, t, n + 1);
	return out;
}

/* t with the character at i (from the end when negative) set to c. */
static const char *
edit(const char *t, long i, char c)
{
	static char out[TOKEN_BUF];

	snprintf(out, sizeof(out), "%s", t);
	out[i < 0 ? (long)strlen(out) + i : i] = c;
	return out;
}

/* t with another character at i (from the end when negative). */
static const char *
flip(const char *t, long i)
{
	long at = i < 0 ? (long)strlen(t) + i : i;

	return edit(t, i, t[at] == 'A' ? 'B' : 'A');
}

static int
setup(void)
{
	char text[4 * TEXT_BUF], jwk[TEXT_BUF], k[2 * SECRET_LEN];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (unsigned char)(i * 7 + 1);
	if ((rsa = keygen("RSA", NULL, 2048)) == NULL ||
	    (rsa2 = keygen("RSA", NULL, 2048)) == NULL ||
	    (ec256 = keygen("EC", "P-256", 0)) == NULL ||
	    (ec384 = keygen("EC", "P-384", 0)) == NULL ||
	    (ed = keygen("ED25519", NULL, 0)) == NULL)
		return -1;
	base64url_encode(secret, sizeof(secret), k);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"keys\":[%s,",
	    jwk_of(rsa, "\"kid\":\"rsa\",", jwk, sizeof(jwk)));
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s,",
	    jwk_of(ec256, "\"kid\":\"ec256\",", jwk, sizeof(jwk)));
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s,",
	    jwk_of(ec384, "\"kid\":\"ec384\",", jwk, sizeof(jwk)));
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s,",
	    jwk_of(ed, "\"kid\":\"ed\",", jwk, sizeof(jwk)));
	snprintf(text + n, sizeof(text) - n, "{\"kid\":\"hs\",\"kty\":\"oct\","
	    "\"k\":\"%s\"}]}", k);
	if ((all = keys_of(JWT_KEYS_JWKS, text, 1)) == NULL) {
		fprintf(stderr, "%s\n", unit_err);
		return -1;
	}
	return 0;
}

static void
teardown(void)
{
	jwt_keys_free(&all);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(rsa2);
	EVP_PKEY_free(ec256);
	EVP_PKEY_free(ec384);
	EVP_PKEY_free(ed);
}

static void
t_every_alg_verifies_a_token_it_signed_with_or_without_a_kid(void)
{
	struct json *c = NULL;
	const char *kid, *t;
	struct signer s;

	CHECK(jwt_keys_count(all) == 5);
	for (size_t i = 0; i < TALGS; i++) {
		s = signer_for(&talgs[i], &kid);
		t = tok(hdr(talgs[i].name, kid), claims(""), talgs[i].name, &s);
		CHECK(verify(all, t) == JWT_OK);
		t = tok(hdr(talgs[i].name, NULL), claims(""), talgs[i].name, &s);
		CHECK(verify(all, t) == JWT_OK);
	}
	CHECK(jwt_verify(all, t, strlen(t), NOW, &plain, &c, unit_err,
	    sizeof(unit_err)) == JWT_OK);
	CHECK(c != NULL && unit_err[0] == '\0');
	CHECK_STR(json_get_string(json_member(json_root(c), "sub", 3), NULL),
	    "u1");
	json_free(&c);
}

/* RFC 7515 A.1 (HS256) and A.3 (ES256), RFC 8037 A.4 (Ed25519, whose
 * payload is text, not claims: refused, but only after it verifies). */
static void
t_the_rfc_example_tokens_verify(void)
{
	static const char payload[] = "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkz"
	    "ODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
	char a1[TOK_COPY], a3[TOK_COPY], ed8037[TOK_COPY];
	struct jwt_keys *k;
	struct jwt_policy joe = { 0, "joe", NULL, NULL, 1 };
	struct json *c = NULL;
	int root = 0;

	snprintf(a1, sizeof(a1), "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.%s."
	    "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", payload);
	snprintf(a3, sizeof(a3), "eyJhbGciOiJFUzI1NiJ9.%s.DtEhU3ljbEg8L38VWAf"
	    "UAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU"
	    "1Q", payload);
	snprintf(ed8037, sizeof(ed8037), "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiB"
	    "FZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6d"
	    "WbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg");
	CHECK((k = keys_of(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"oct\",\"k\":"
	    "\"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0"
	    "iPS4hcgUuTwjAzZr1Z9CAow\"},{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":"
	    "\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\",\"y\":\"x_FEzRu9m3"
	    "6HLN_tue659LNpXW6pCyStikYjKIWI5a0\"},{\"kty\":\"OKP\",\"crv\":"
	    "\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}"
	    "]}", 1)) != NULL);
	CHECK(jwt_verify(k, a1, strlen(a1), RFC_NOW, &joe, &c, unit_err,
	    sizeof(unit_err)) == JWT_OK);
	CHECK(json_get_bool(json_path(json_root(c),
	    "http://example\\.com/is_root"), &root) == 0 && root == 1);
	json_free(&c);
	CHECK(verify_with(k, a3, RFC_NOW, 0, "joe", NULL) == JWT_OK);
	CHECK(verify_with(k, a1, RFC_NOW + 380, 0, NULL, NULL) == JWT_EXPIRED);
	CHECK(verify_with(k, ed8037, RFC_NOW, 0, NULL, NULL) == JWT_MALFORMED);
	CHECK(strstr(unit_err, "payload is not JSON") != NULL);
	CHECK(verify(k, flip(a1, -10)) == JWT_BAD_SIGNATURE);
	CHECK(verify(k, flip(a3, -10)) == JWT_BAD_SIGNATURE);
	CHECK(verify(k, flip(ed8037, -10)) == JWT_BAD_SIGNATURE);
	CHECK(verify(k, flip(ed8037, 30)) == JWT_BAD_SIGNATURE);
	jwt_keys_free(&k);
	CHECK(k == NULL);
}

static void
t_alg_none_is_refused_in_any_case(void)
{
	const char *names[] = { "none", "None", "NONE", "nOnE" };
	char h[ERR_BUF], in[TOK_COPY];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(h, sizeof(h), "{\"alg\":\"%s\",\"typ\":\"JWT\"}",
		    names[i]);
		CHECK(verify(all, tok(h, claims(""), NULL, NULL)) ==
		    JWT_ALG_NONE);
		signing_input(h, claims(""), in);
		strcat(in, ".");
		CHECK(verify(all, in) == JWT_ALG_NONE);
		CHECK(verify(all, tok(hdr(names[i], "hs"), claims(""), NULL,
		    NULL)) == JWT_ALG_NONE);
	}
}

static void
t_algs_that_are_not_verified_are_refused(void)
{
	const char *names[] = { "ES512", "HS1", "RS1", "hs256", "Rs256",
	    "ES256K", "PS256 ", "", "Ed25519", "EDDSA", "RSA-OAEP", "non" };
	struct signer s = by_secret(secret, sizeof(secret));

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(verify(all, tok(hdr(names[i], NULL), claims(""), "HS256",
		    &s)) == JWT_ALG_UNSUPPORTED);
	CHECK(verify(all, tok("{\"typ\":\"JWT\"}", claims(""), "HS256", &s)) ==
	    JWT_MALFORMED);
	CHECK(verify(all, tok("{\"alg\":256}", claims(""), "HS256", &s)) ==
	    JWT_MALFORMED);
	CHECK(verify(all, tok("{\"alg\":null}", claims(""), "HS256", &s)) ==
	    JWT_MALFORMED);
	CHECK(verify(all, tok("{\"alg\":\"none\\u0000\"}", claims(""), "HS256",
	    &s)) == JWT_ALG_UNSUPPORTED);
}

/*
 * The classic confusion: a verifier that hands an RSA key's PEM text to
 * HMAC as the secret accepts a token anyone holding the public key can
 * sign. A key verifies only the algs of its type.
 */
static void
t_an_rsa_public_key_used_as_an_hmac_secret_is_refused(void)
{
	char pem[TEXT_BUF], text[2 * TEXT_BUF], jwk[TEXT_BUF];
	const char *hmacs[] = { "HS256", "HS384", "HS512" };
	struct jwt_keys *k, *j;
	struct signer s;

	pem_of(rsa, pem, sizeof(pem));
	s = by_secret(pem, strlen(pem));
	snprintf(text, sizeof(text), "# kid: r1\n%s", pem);
	CHECK((k = keys_of(JWT_KEYS_PEM, text, 0)) != NULL);
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_of(rsa,
	    "\"kid\":\"r1\",", jwk, sizeof(jwk)));
	CHECK((j = keys_of(JWT_KEYS_JWKS, text, 0)) != NULL);
	for (size_t i = 0; i < 3; i++) {
		CHECK(verify(k, tok(hdr(hmacs[i], NULL), claims(""), hmacs[i],
		    &s)) == JWT_KEY_UNKNOWN);
		CHECK(verify(k, tok(hdr(hmacs[i], "r1"), claims(""), hmacs[i],
		    &s)) == JWT_ALG_KEY_MISMATCH);
		CHECK(verify(j, tok(hdr(hmacs[i], NULL), claims(""), hmacs[i],
		    &s)) == JWT_KEY_UNKNOWN);
		CHECK(verify(j, tok(hdr(hmacs[i], "r1"), claims(""), hmacs[i],
		    &s)) == JWT_ALG_KEY_MISMATCH);
	}
	/* An RS256 header over an HMAC made with the PEM: a bad signature. */
	CHECK(verify(k, tok(hdr("RS256", "r1"), claims(""), "HS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	jwt_keys_free(&k);
	jwt_keys_free(&j);
	CHECK(keys_of(JWT_KEYS_SECRET, pem, 1) == NULL);
	CHECK(strstr(unit_err, "not an HMAC secret") != NULL);
	/* Nor when something comes before the PEM block: blanks, a
	 * comment, a kid line, other text. */
	snprintf(text, sizeof(text), "\n  %s", pem);
	CHECK(keys_of(JWT_KEYS_SECRET, text, 1) == NULL);
	snprintf(text, sizeof(text), "# kid: r1\n%s", pem);
	CHECK(keys_of(JWT_KEYS_SECRET, text, 1) == NULL);
	snprintf(text, sizeof(text), "the key is:%s", pem);
	CHECK(keys_of(JWT_KEYS_SECRET, text, 1) == NULL);
	CHECK(strstr(unit_err, "not an HMAC secret") != NULL);
	/* A JWK Set given as a secret, past blanks too. */
	snprintf(text, sizeof(text), " \t\r\n{\"keys\":[%s]}", jwk);
	CHECK(keys_of(JWT_KEYS_SECRET, text, 1) == NULL);
	CHECK(strstr(unit_err, "not an HMAC secret") != NULL);
	/* A secret of ordinary bytes with '{' or '#' inside is one. */
	CHECK((k = keys_of(JWT_KEYS_SECRET, "0123456789abcdef{0123456789#abcdef",
	    1)) != NULL);
	jwt_keys_free(&k);
}

/* The token a's header and signature around b's payload. */
static const char *
splice(const char *a, const char *b)
{
	static char out[2 * TOK_COPY];
	const char *ap = strchr(a, '.'), *bp = strchr(b, '.');
	const char *as = strrchr(a, '.'), *bs = strrchr(b, '.');

	snprintf(out, sizeof(out), "%.*s%.*s%s", (int)(ap - a), a,
	    (int)(bs - bp), bp, as);
	return out;
}

static void
t_a_tampered_payload_fails_with_the_old_signature(void)
{
	char user[TOK_COPY], admin[TOK_COPY];
	const char *kid;
	struct signer s;

	for (size_t i = 0; i < TALGS; i++) {
		s = signer_for(&talgs[i], &kid);
		keep(user, tok(hdr(talgs[i].name, kid), claims(",\"role\":"
		    "\"user\""), talgs[i].name, &s));
		keep(admin, tok(hdr(talgs[i].name, kid), claims(",\"role\":"
		    "\"admin\""), talgs[i].name, &s));
		CHECK(verify(all, user) == JWT_OK && verify(all, admin) ==
		    JWT_OK);
		CHECK(verify(all, splice(user, admin)) == JWT_BAD_SIGNATURE);
		CHECK(verify(all, splice(admin, user)) == JWT_BAD_SIGNATURE);
	}
}

static void
t_a_kid_not_in_the_set_is_unknown(void)
{
	char pem[TEXT_BUF];
	struct signer s = by(rsa);
	struct jwt_keys *k;

	CHECK(verify(all, tok(hdr("RS256", "nope"), claims(""), "RS256",
	    &s)) == JWT_KEY_UNKNOWN);
	CHECK(verify(all, tok(hdr("RS256", "RSA"), claims(""), "RS256", &s)) ==
	    JWT_KEY_UNKNOWN);
	CHECK(verify(all, tok(hdr("RS256", ""), claims(""), "RS256", &s)) ==
	    JWT_KEY_UNKNOWN);
	CHECK(verify(all, tok("{\"alg\":\"RS256\",\"kid\":7}", claims(""),
	    "RS256", &s)) == JWT_MALFORMED);
	/* A key without a kid is not one a kid names. */
	CHECK((k = keys_of(JWT_KEYS_PEM, pem_of(rsa, pem, sizeof(pem)), 0)) !=
	    NULL);
	CHECK(verify(k, tok(hdr("RS256", NULL), claims(""), "RS256", &s)) ==
	    JWT_OK);
	CHECK(verify(k, tok(hdr("RS256", "rsa"), claims(""), "RS256", &s)) ==
	    JWT_KEY_UNKNOWN);
	jwt_keys_free(&k);
}

/* A set of rsa2 (kid a) and rsa (kid b), or both kid a. */
static struct jwt_keys *
two_rsa(const char *kid1, const char *kid2)
{
	char text[3 * TEXT_BUF], j1[TEXT_BUF], j2[TEXT_BUF], x1[64], x2[64];

	snprintf(x1, sizeof(x1), kid1 != NULL ? "\"kid\":\"%s\"," : "%s",
	    kid1 != NULL ? kid1 : "");
	snprintf(x2, sizeof(x2), kid2 != NULL ? "\"kid\":\"%s\"," : "%s",
	    kid2 != NULL ? kid2 : "");
	snprintf(text, sizeof(text), "{\"keys\":[%s,%s]}", jwk_of(rsa2, x1, j1,
	    sizeof(j1)), jwk_of(rsa, x2, j2, sizeof(j2)));
	return keys_of(JWT_KEYS_JWKS, text, 0);
}

static void
t_every_key_a_token_may_name_is_tried(void)
{
	struct signer s = by(rsa);
	struct jwt_keys *k;

	CHECK((k = two_rsa(NULL, NULL)) != NULL);
	/* Two keys for RS256 and no kid: which one is not guessed. */
	CHECK(verify(k, tok(hdr("RS256", NULL), claims(""), "RS256", &s)) ==
	    JWT_KID_NEEDED);
	CHECK(strstr(unit_err, "no kid") != NULL);
	CHECK(verify(k, tok(hdr("ES256", NULL), claims(""), "RS256", &s)) ==
	    JWT_KEY_UNKNOWN);
	jwt_keys_free(&k);
	CHECK((k = two_rsa("a", "b")) != NULL);
	CHECK(verify(k, tok(hdr("PS384", "b"), claims(""), "PS384", &s)) ==
	    JWT_OK);
	CHECK(verify(k, tok(hdr("PS384", "a"), claims(""), "PS384", &s)) ==
	    JWT_BAD_SIGNATURE);
	CHECK(verify(k, tok(hdr("PS384", NULL), claims(""), "PS384", &s)) ==
	    JWT_KID_NEEDED);
	jwt_keys_free(&k);
	CHECK((k = two_rsa("a", "a")) != NULL);
	CHECK(verify(k, tok(hdr("RS512", "a"), claims(""), "RS512", &s)) ==
	    JWT_OK);
	jwt_keys_free(&k);
}

/* {"sub":"u1","exp":...,"pad":"xx...x"} with n x's, into out. */
static const char *
padded(char *out, size_t n)
{
	int at = sprintf(out, "{\"sub\":\"u1\",\"exp\":%lld,\"pad\":\"",
	    NOW + HOUR);

	memset(out + at, 'x', n);
	strcpy(out + at + n, "\"}");
	return out;
}

static void
t_tokens_over_16_kib_are_refused_unread(void)
{
	char *big = malloc(64 * 1024 + 1), *payload = malloc(JWT_TOKEN_MAX);
	size_t n = JWT_TOKEN_MAX * 3 / 4 - 200, fit = 0;
	enum jwt_result huge, at_limit, longest, past;

	CHECK(big != NULL && payload != NULL);
	memset(big, '.', 64 * 1024);
	big[64 * 1024] = '\0';
	huge = verify(all, big);
	big[JWT_TOKEN_MAX] = '\0';
	at_limit = verify(all, big);	/* read: not three parts */
	free(big);
	for (; strlen(hs(padded(payload, n))) <= JWT_TOKEN_MAX; n++)
		fit = n;
	longest = verify(all, hs(padded(payload, fit)));
	n = strlen(hs(padded(payload, fit)));
	past = verify(all, hs(padded(payload, fit + 1)));
	free(payload);
	CHECK(huge == JWT_TOO_LARGE && at_limit == JWT_MALFORMED);
	CHECK(longest == JWT_OK && n > JWT_TOKEN_MAX - 3 && past ==
	    JWT_TOO_LARGE);
}

static void
t_exp_is_refused_from_exp_less_leeway_on(void)
{
	struct jwt_policy no_exp = { 0, NULL, NULL, NULL, 0 };
	char p[TEXT_BUF];
	struct json *c = NULL;
	const char *t;

	snprintf(p, sizeof(p), "{\"exp\":%lld}", NOW);
	t = hs(p);
	CHECK(verify_with(all, t, NOW - 1, 0, NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, t, NOW, 0, NULL, NULL) == JWT_EXPIRED);
	CHECK(verify_with(all, t, NOW + 1, 0, NULL, NULL) == JWT_EXPIRED);
	CHECK(verify_with(all, t, NOW + 29, 30, NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, t, NOW + 30, 30, NULL, NULL) == JWT_EXPIRED);
	CHECK(verify_with(all, t, NOW + 31, 30, NULL, NULL) == JWT_EXPIRED);
	CHECK(strstr(unit_err, "expired at 1700000000") != NULL);
	snprintf(p, sizeof(p), "{\"exp\":%lld.5}", NOW);
	t = hs(p);
	CHECK(verify_with(all, t, NOW, 0, NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, t, NOW + 1, 0, NULL, NULL) == JWT_EXPIRED);
	snprintf(p, sizeof(p), "{\"exp\":%lld.5e1}", NOW / 10);
	CHECK(verify_with(all, hs(p), NOW + 4, 0, NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, hs(p), NOW + 5, 0, NULL, NULL) == JWT_EXPIRED);
	CHECK(verify(all, hs("{\"sub\":\"u1\"}")) == JWT_NO_EXP);
	t = hs("{\"sub\":\"u1\"}");
	CHECK(jwt_verify(all, t, strlen(t), NOW, &no_exp, &c, unit_err,
	    sizeof(unit_err)) == JWT_OK);
	json_free(&c);
	CHECK(verify(all, hs("{\"exp\":\"1900000000\"}")) == JWT_MALFORMED);
	CHECK(verify(all, hs("{\"exp\":1e400}")) == JWT_MALFORMED);
	CHECK(verify(all, hs("{\"exp\":null}")) == JWT_MALFORMED);
	CHECK(verify(all, hs("{\"exp\":true}")) == JWT_MALFORMED);
}

static void
t_nbf_and_iat_in_the_future_are_refused_past_the_leeway(void)
{
	char p[TEXT_BUF];
	const char *t;

	snprintf(p, sizeof(p), "{\"exp\":%lld,\"nbf\":%lld}", NOW + HOUR,
	    NOW + 10);
	t = hs(p);
	CHECK(verify_with(all, t, NOW, 0, NULL, NULL) == JWT_NOT_YET_VALID);
	CHECK(verify_with(all, t, NOW + 9, 0, NULL, NULL) ==
	    JWT_NOT_YET_VALID);
	CHECK(verify_with(all, t, NOW + 10, 0, NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, t, NOW, 9, NULL, NULL) == JWT_NOT_YET_VALID);
	CHECK(verify_with(all, t, NOW, 10, NULL, NULL) == JWT_OK);
	snprintf(p, sizeof(p), "{\"exp\":%lld,\"iat\":%lld}", NOW + HOUR,
	    NOW + 5);
	t = hs(p);
	CHECK(verify_with(all, t, NOW, 4, NULL, NULL) == JWT_NOT_YET_VALID);
	CHECK(verify_with(all, t, NOW, 5, NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, t, NOW + 5, 0, NULL, NULL) == JWT_OK);
	snprintf(p, sizeof(p), "{\"exp\":%lld,\"iat\":%lld,\"nbf\":%lld}",
	    NOW + HOUR, NOW - HOUR, NOW - HOUR);
	CHECK(verify(all, hs(p)) == JWT_OK);
	snprintf(p, sizeof(p), "{\"exp\":%lld,\"nbf\":\"now\"}", NOW + HOUR);
	CHECK(verify(all, hs(p)) == JWT_MALFORMED);
}

static void
t_the_issuer_must_match_exactly(void)
{
	const char *idp = "https://idp.example";

	CHECK(verify_with(all, hs(claims(",\"iss\":\"https://idp.example\"")),
	    NOW, 0, idp, NULL) == JWT_OK);
	CHECK(verify_with(all, hs(claims(",\"iss\":\"https://idp.example/\"")),
	    NOW, 0, idp, NULL) == JWT_ISSUER);
	CHECK(verify_with(all, hs(claims(",\"iss\":\"https://IDP.example\"")),
	    NOW, 0, idp, NULL) == JWT_ISSUER);
	CHECK(verify_with(all, hs(claims(",\"iss\":\"https://idp.example"
	    "\\u0000x\"")), NOW, 0, idp, NULL) == JWT_ISSUER);
	CHECK(verify_with(all, hs(claims("")), NOW, 0, idp, NULL) ==
	    JWT_ISSUER);
	CHECK(verify_with(all, hs(claims(",\"iss\":\"other\"")), NOW, 0, NULL,
	    NULL) == JWT_OK);
	CHECK(verify_with(all, hs(claims(",\"iss\":[\"https://idp.example\"]")),
	    NOW, 0, idp, NULL) == JWT_MALFORMED);
	CHECK(verify_with(all, hs(claims(",\"iss\":1")), NOW, 0, NULL, NULL) ==
	    JWT_MALFORMED);
}

static void
t_the_audience_may_be_a_string_or_in_an_array(void)
{
	CHECK(verify_with(all, hs(claims(",\"aud\":\"api\"")), NOW, 0, NULL,
	    "api") == JWT_OK);
	CHECK(verify_with(all, hs(claims(",\"aud\":[\"x\",\"api\"]")), NOW, 0,
	    NULL, "api") == JWT_OK);
	CHECK(verify_with(all, hs(claims(",\"aud\":[\"x\"]")), NOW, 0, NULL,
	    "api") == JWT_AUDIENCE);
	CHECK(verify_with(all, hs(claims(",\"aud\":[]")), NOW, 0, NULL,
	    "api") == JWT_AUDIENCE);
	CHECK(verify_with(all, hs(claims(",\"aud\":\"API\"")), NOW, 0, NULL,
	    "api") == JWT_AUDIENCE);
	CHECK(verify_with(all, hs(claims(",\"aud\":\"api2\"")), NOW, 0, NULL,
	    "api") == JWT_AUDIENCE);
	CHECK(verify_with(all, hs(claims("")), NOW, 0, NULL, "api") ==
	    JWT_AUDIENCE);
	/* RFC 7519 4.1.3: an aud that names no one here is refused. */
	CHECK(verify_with(all, hs(claims(",\"aud\":\"api\"")), NOW, 0, NULL,
	    NULL) == JWT_AUDIENCE);
	CHECK(verify_with(all, hs(claims(",\"aud\":[\"api\",1]")), NOW, 0,
	    NULL, "api") == JWT_MALFORMED);
	CHECK(verify_with(all, hs(claims(",\"aud\":{\"api\":1}")), NOW, 0,
	    NULL, "api") == JWT_MALFORMED);
	CHECK(verify_with(all, hs(claims(",\"aud\":null")), NOW, 0, NULL,
	    "api") == JWT_MALFORMED);
}

static void
t_a_member_named_twice_in_header_or_payload_is_malformed(void)
{
	struct signer s = by_secret(secret, sizeof(secret));
	char p[TEXT_BUF];

	CHECK(verify(all, tok("{\"alg\":\"HS256\",\"alg\":\"HS256\"}",
	    claims(""), "HS256", &s)) == JWT_MALFORMED);
	CHECK(verify(all, tok("{\"alg\":\"HS256\",\"alg\":\"none\"}",
	    claims(""), "HS256", &s)) == JWT_MALFORMED);
	CHECK(verify(all, tok("{\"alg\":\"HS256\",\"kid\":\"x\",\"k\\u0069d"
	    "\":\"hs\"}", claims(""), "HS256", &s)) == JWT_MALFORMED);
	CHECK(verify(all, hs(claims(",\"sub\":\"u2\""))) == JWT_MALFORMED);
	CHECK(strstr(unit_err, "payload") != NULL);
	CHECK(verify(all, hs(claims(",\"role\":\"user\",\"r\\u006fle\":"
	    "\"admin\""))) == JWT_MALFORMED);
	snprintf(p, sizeof(p), "{\"exp\":%lld,\"exp\":%lld}", NOW - HOUR,
	    NOW + HOUR);
	CHECK(verify(all, hs(p)) == JWT_MALFORMED);
}

static void
t_the_header_must_be_an_object_with_typ_jwt_and_no_crit(void)
{
	struct signer s = by_secret(secret, sizeof(secret));
	const char *good[] = { "{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
	    "{\"alg\":\"HS256\",\"typ\":\"jwt\"}",
	    "{\"typ\":\"JwT\",\"alg\":\"HS256\",\"cty\":\"x\",\"x5u\":1}",
	    " {\"alg\" : \"HS256\"}\r\n" };
	const char *bad[] = { "{\"alg\":\"HS256\",\"typ\":\"JOSE\"}",
	    "{\"alg\":\"HS256\",\"typ\":\"JWT \"}",
	    "{\"alg\":\"HS256\",\"typ\":1}",
	    "{\"alg\":\"HS256\",\"crit\":[\"exp\"]}",
	    "{\"alg\":\"HS256\",\"crit\":[]}", "[\"HS256\"]", "\"HS256\"",
	    "{alg:\"HS256\"}", "\xef\xbb\xbf{\"alg\":\"HS256\"}", "" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(verify(all, tok(good[i], claims(""), "HS256", &s)) ==
		    JWT_OK);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(verify(all, tok(bad[i], claims(""), "HS256", &s)) ==
		    JWT_MALFORMED);
	CHECK(verify(all, hs("[1]")) == JWT_MALFORMED);
	CHECK(verify(all, hs("\"claims\"")) == JWT_MALFORMED);
	CHECK(verify(all, hs("{\"exp\":1,}")) == JWT_MALFORMED);
	CHECK(verify(all, hs("")) == JWT_MALFORMED);
}

/* A signing input of header and payload with base64url made loose by
 * loosen(), signed for HS256: a lenient reader would take it. */
static const char *
loose(const char *header, const char *payload, void (*loosen)(char *))
{
	struct signer s = by_secret(secret, sizeof(secret));
	static char in[TOK_COPY];

	signing_input(header, payload, in);
	loosen(in);
	return tok_in(in, "HS256", &s);
}

static void
pad_header(char *in)
{
	char *dot = strchr(in, '.');

	memmove(dot + 2, dot, strlen(dot) + 1);
	memcpy(dot, "==", 2);
}

static void
std_alphabet(char *in)
{
	for (; *in != '\0'; in++)
		*in = *in == '-' ? '+' : *in == '_' ? '/' : *in;
}

static void
add_space(char *in)
{
	char *dot = strchr(in, '.');

	memmove(dot + 1, dot, strlen(dot) + 1);
	*dot = ' ';
}

/* Padding, the base64 alphabet's '+' and '/', blanks, a length that
 * leaves one character over, bits set past the last byte: each a
 * second text for the same bytes, refused. */
static void
t_base64url_is_read_strictly(void)
{
	const char *h = "{\"alg\":\"HS256\",\"kid\":\"hs\"}";	/* pads */
	const char *p = claims(",\"x\":\"?\?\?>>>\"");	/* has - and _ */
	struct signer s = by_secret(secret, sizeof(secret));
	char t[TOK_COPY], in[TOK_COPY];
	size_t n;

	CHECK(strchr(loose(h, p, std_alphabet), '+') != NULL);
	CHECK(strchr(loose(h, p, std_alphabet), '/') != NULL);
	CHECK(verify(all, loose(h, p, std_alphabet)) == JWT_MALFORMED);
	CHECK(verify(all, loose(h, p, pad_header)) == JWT_MALFORMED);
	CHECK(verify(all, loose(h, p, add_space)) == JWT_MALFORMED);
	keep(t, hs(p));
	CHECK(verify(all, t) == JWT_OK);
	n = strlen(t);
	strcat(t, "=");
	CHECK(verify(all, t) == JWT_MALFORMED);
	t[n] = '\0';
	/* HS256: 32 bytes, 43 characters, the last with 2 unused bits. */
	CHECK(strlen(strrchr(t, '.') + 1) == 43);
	CHECK(verify(all, edit(t, -1, t[n - 1] + 1)) == JWT_MALFORMED);
	signing_input(h, p, in);
	n = strlen(strrchr(in, '.') + 1) % 4;
	strcat(in, n == 0 ? "A" : n == 2 ? "AAA" : "AA");	/* 4k + 1 */
	CHECK(verify(all, tok_in(in, "HS256", &s)) == JWT_MALFORMED);
	CHECK(strstr(unit_err, "payload is not base64url") != NULL);
	CHECK(verify(all, "a.b") == JWT_MALFORMED);
	CHECK(verify(all, "e30.e30.e30.e30") == JWT_MALFORMED);
	CHECK(verify(all, "..") == JWT_MALFORMED);
	CHECK(verify(all, "") == JWT_MALFORMED);
	strcat(keep(in, t), ".");
	CHECK(verify(all, in) == JWT_MALFORMED);
	in[0] = '.';
	keep(in + 1, t);
	CHECK(verify(all, in) == JWT_MALFORMED);
}

static void
t_an_empty_signature_is_refused(void)
{
	char in[TOK_COPY];
	const char *kid;

	for (size_t i = 0; i < TALGS; i++) {
		signer_for(&talgs[i], &kid);
		signing_input(hdr(talgs[i].name, kid), claims(""), in);
		strcat(in, ".");
		CHECK(verify(all, in) == JWT_MALFORMED);
		CHECK(strstr(unit_err, "empty signature") != NULL);
	}
}

/* RFC 7518 3.4: r || s, 32 bytes each for P-256. */
static void
t_es256_signatures_are_r_and_s_and_nothing_else(void)
{
	unsigned char sig[SIG_MAX], fixed[SIG_MAX];
	struct signer s = by(ec256), der = by(ec256);
	char in[TOK_COPY], t[TOK_COPY];
	size_t len;

	der.ec_der = 1;
	signing_input(hdr("ES256", "ec256"), claims(""), in);
	CHECK(verify(all, tok_in(in, "ES256", &der)) == JWT_BAD_SIGNATURE);
	CHECK(sign_input("ES256", &s, in, strlen(in), sig, &len) == 0);
	CHECK(len == 64);
	CHECK(verify(all, tok_sig(in, sig, len, t)) == JWT_OK);
	CHECK(verify(all, tok_sig(in, sig, len - 1, t)) == JWT_BAD_SIGNATURE);
	sig[len] = 0;
	CHECK(verify(all, tok_sig(in, sig, len + 1, t)) == JWT_BAD_SIGNATURE);
	memset(fixed, 0, sizeof(fixed));
	memcpy(fixed + 1, sig, len);	/* r and s shifted by one byte */
	CHECK(verify(all, tok_sig(in, fixed, len, t)) == JWT_BAD_SIGNATURE);
	memcpy(fixed, sig + 32, 32);	/* s || r */
	memcpy(fixed + 32, sig, 32);
	CHECK(verify(all, tok_sig(in, fixed, len, t)) == JWT_BAD_SIGNATURE);
	memset(fixed, 0, 64);
	CHECK(verify(all, tok_sig(in, fixed, 64, t)) == JWT_BAD_SIGNATURE);
	/* ES384 wants 96 bytes, and a P-384 key. */
	signing_input(hdr("ES384", "ec384"), claims(""), in);
	CHECK(verify(all, tok_sig(in, sig, len, t)) == JWT_BAD_SIGNATURE);
	signing_input(hdr("ES384", "ec256"), claims(""), in);
	CHECK(verify(all, tok_in(in, "ES384", &s)) == JWT_ALG_KEY_MISMATCH);
}

/* Nothing of the payload counts before the signature verifies: not
 * even whether it is JSON. */
static void
t_claims_are_read_only_after_the_signature_verifies(void)
{
	struct signer s = by_secret(secret, sizeof(secret));
	char p[TEXT_BUF];

	CHECK(verify(all, tok(hdr("HS256", NULL), "not json", "HS256",
	    NULL)) == JWT_BAD_SIGNATURE);
	CHECK(verify(all, tok(hdr("HS256", NULL), "not json", "HS256",
	    &s)) == JWT_MALFORMED);
	snprintf(p, sizeof(p), "{\"exp\":%lld,\"aud\":7}", NOW - HOUR);
	CHECK(verify(all, tok(hdr("HS256", NULL), p, "HS256", NULL)) ==
	    JWT_BAD_SIGNATURE);
	CHECK(verify(all, tok(hdr("HS256", NULL), p, "HS256", &s)) ==
	    JWT_EXPIRED);
	CHECK(verify(all, tok(hdr("HS256", NULL), "{\"a\":1,\"a\":2}",
	    "HS256", NULL)) == JWT_BAD_SIGNATURE);
}

/* RFC 7518 3.5: PS* salt is the hash's size; PKCS #1 v1.5 and PSS do
 * not stand in for each other. */
static void
t_rsa_paddings_are_told_apart(void)
{
	struct signer s = by(rsa);

	s.pss_salt = 0;
	CHECK(verify(all, tok(hdr("PS256", "rsa"), claims(""), "PS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	s.pss_salt = RSA_PSS_SALTLEN_MAX;
	CHECK(verify(all, tok(hdr("PS256", "rsa"), claims(""), "PS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	s.pss_salt = 48;
	CHECK(verify(all, tok(hdr("PS384", "rsa"), claims(""), "PS384", &s)) ==
	    JWT_OK);
	s.pss_salt = RSA_PSS_SALTLEN_DIGEST;
	CHECK(verify(all, tok(hdr("RS256", "rsa"), claims(""), "PS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	CHECK(verify(all, tok(hdr("PS256", "rsa"), claims(""), "RS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	CHECK(verify(all, tok(hdr("RS384", "rsa"), claims(""), "RS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	s = by(rsa2);
	CHECK(verify(all, tok(hdr("RS256", "rsa"), claims(""), "RS256", &s)) ==
	    JWT_BAD_SIGNATURE);
}

/* RFC 7518 3.2: a secret at least as long as the hash. */
static void
t_hmac_algs_need_a_secret_as_long_as_their_hash(void)
{
	struct signer s = by_secret(secret, 32);
	char text[TEXT_BUF], k[2 * SECRET_LEN];
	struct jwt_keys *keys;

	base64url_encode(secret, 32, k);
	snprintf(text, sizeof(text), "{\"keys\":[{\"kty\":\"oct\",\"k\":"
	    "\"%s\"}]}", k);
	CHECK((keys = keys_of(JWT_KEYS_JWKS, text, 1)) != NULL);
	CHECK(verify(keys, tok(hdr("HS256", NULL), claims(""), "HS256", &s)) ==
	    JWT_OK);
	CHECK(verify(keys, tok(hdr("HS384", NULL), claims(""), "HS384", &s)) ==
	    JWT_KEY_UNKNOWN);
	CHECK(verify(keys, tok(hdr("HS512", NULL), claims(""), "HS512", &s)) ==
	    JWT_KEY_UNKNOWN);
	jwt_keys_free(&keys);
	/* A MAC cut short is no MAC. */
	s = by_secret(secret, sizeof(secret));
	CHECK(verify(all, tok(hdr("HS512", NULL), claims(""), "HS256", &s)) ==
	    JWT_BAD_SIGNATURE);
}

static void
t_every_result_has_a_name_of_its_own(void)
{
	for (int r = JWT_OK; r <= JWT_ERROR; r++) {
		CHECK(jwt_result_name(r) != NULL && *jwt_result_name(r) != '\0');
		for (int q = JWT_OK; q < r; q++)
			CHECK(strcmp(jwt_result_name(q), jwt_result_name(r)) != 0);
	}
	CHECK_STR(jwt_result_name(JWT_ALG_KEY_MISMATCH), "alg_key_mismatch");
	CHECK_STR(jwt_result_name((enum jwt_result)99), "unknown");
}

/* Claims that are arrays and objects come out canonical: an object's
 * members by name, an array in its order. */
/* typ (RFC 7515 4.1.9, RFC 9068 2.1): "JWT" and "at+jwt" by default, in
 * any case, with or without "application/"; a policy's own list; or
 * typ not looked at. */
static void
t_typ_is_one_of_the_policys_list_with_or_without_application(void)
{
	struct signer s = by_secret(secret, sizeof(secret));
	const char *deflt[] = { "JWT", "jwt", "application/JWT",
	    "APPLICATION/jwt", "at+jwt", "application/at+JWT" };
	const char *refused[] = { "JOSE", "application/", "application/JOSE",
	    "JWT ", "text/JWT", "at+jwt;x" };
	struct jwt_policy only = { 0, NULL, NULL, "application/dpop+jwt, x",
	    1 }, any = { 0, NULL, NULL, JWT_TYPS_ANY, 1 };
	struct json *c = NULL;
	char h[ERR_BUF];
	const char *t;

	for (size_t i = 0; i < sizeof(deflt) / sizeof(deflt[0]); i++) {
		snprintf(h, sizeof(h), "{\"alg\":\"HS256\",\"typ\":\"%s\"}",
		    deflt[i]);
		CHECK(verify(all, tok(h, claims(""), "HS256", &s)) == JWT_OK);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(h, sizeof(h), "{\"alg\":\"HS256\",\"typ\":\"%s\"}",
		    refused[i]);
		CHECK(verify(all, tok(h, claims(""), "HS256", &s)) ==
		    JWT_MALFORMED);
	}
	t = tok("{\"alg\":\"HS256\",\"typ\":\"DPoP+JWT\"}", claims(""),
	    "HS256", &s);
	CHECK(jwt_verify(all, t, strlen(t), NOW, &only, &c, unit_err,
	    sizeof(unit_err)) == JWT_OK);
	json_free(&c);
	t = tok("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", claims(""), "HS256",
	    &s);
	CHECK(jwt_verify(all, t, strlen(t), NOW, &only, &c, unit_err,
	    sizeof(unit_err)) == JWT_MALFORMED);
	t = tok("{\"alg\":\"HS256\",\"typ\":7}", claims(""), "HS256", &s);
	CHECK(jwt_verify(all, t, strlen(t), NOW, &any, &c, unit_err,
	    sizeof(unit_err)) == JWT_OK);
	json_free(&c);
	CHECK(jwt_typs_valid(JWT_TYPS_DEFAULT, unit_err, sizeof(unit_err)) ==
	    0 && jwt_typs_valid(JWT_TYPS_ANY, unit_err, sizeof(unit_err)) == 0);
	CHECK(jwt_typs_valid(" , ", unit_err, sizeof(unit_err)) == -1);
}

/* The leeway is bounded: 0 to JWT_LEEWAY_MAX seconds, and a policy out
 * of that is refused whatever the token. */
static void
t_a_leeway_below_0_or_over_the_maximum_is_refused(void)
{
	char p[TEXT_BUF];
	const char *t;

	snprintf(p, sizeof(p), "{\"exp\":%lld}", NOW);
	t = hs(p);
	CHECK(verify_with(all, t, NOW + JWT_LEEWAY_MAX - 1, JWT_LEEWAY_MAX,
	    NULL, NULL) == JWT_OK);
	CHECK(verify_with(all, t, NOW + JWT_LEEWAY_MAX, JWT_LEEWAY_MAX, NULL,
	    NULL) == JWT_EXPIRED);
	CHECK(verify_with(all, t, NOW - 10, JWT_LEEWAY_MAX + 1, NULL, NULL) ==
	    JWT_ERROR);
	CHECK(strstr(unit_err, "leeway") != NULL);
	CHECK(verify_with(all, t, NOW - 10, -1, NULL, NULL) == JWT_ERROR);
	CHECK(verify_with(all, t, NOW - 10, 86400, NULL, NULL) == JWT_ERROR);
}

/* Dates in errors keep their fraction and their size (%.17g). */
static void
t_dates_in_errors_are_written_whole(void)
{
	char p[TEXT_BUF];

	snprintf(p, sizeof(p), "{\"exp\":%lld.25}", NOW);
	CHECK(verify_with(all, hs(p), NOW + 1, 0, NULL, NULL) == JWT_EXPIRED);
	CHECK(strstr(unit_err, "expired at 1700000000.25,") != NULL);
	snprintf(p, sizeof(p), "{\"exp\":%lld,\"nbf\":1e300}", NOW + HOUR);
	CHECK(verify(all, hs(p)) == JWT_NOT_YET_VALID);
	CHECK(strstr(unit_err, "not valid before 1.0000000000000001e+300") !=
	    NULL);
}

/* A claim's number keys by its value: 1, 1.0, 1e0 and 10E-1 are one
 * claim set, and -0 is 0's. */
static void
t_claim_numbers_written_otherwise_make_the_same_set(void)
{
	const char *texts[] = { "1", "1.0", "1e0", "10E-1" };
	char first[TEXT_BUF], more[TEXT_BUF];
	struct json *c = NULL;
	const char *t;
	size_t len;
	char *set;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]) + 2; i++) {
		snprintf(more, sizeof(more), ",\"tenant_id\":%s,\"role\":\"r\"",
		    i < 4 ? texts[i] : i == 4 ? "-0" : "0");
		t = hs(claims(more));
		CHECK(jwt_verify(all, t, strlen(t), NOW, &plain, &c, unit_err,
		    sizeof(unit_err)) == JWT_OK);
		CHECK(jwt_claims_canon(c, "role tenant_id", &set, &len,
		    unit_err, sizeof(unit_err)) == 0);
		json_free(&c);
		if (i == 0)
			snprintf(first, sizeof(first), "%s", set);
		CHECK_STR(set, i < 4 ? first : "role \"r\"\ntenant_id 0\n");
		free(set);
	}
	CHECK_STR(first, "role \"r\"\ntenant_id 1\n");
}

static void
t_verified_claims_make_one_canonical_claim_set(void)
{
	struct json *c = NULL;
	const char *t;
	size_t len;
	char *set;

	t = hs(claims(",\"roles\":[\"b\",\"a\"],\"app_metadata\":{\"tier\":"
	    "1,\"org\":{\"name\":\"x\",\"id\":7}},\"tenant_id\":null"));
	CHECK(jwt_verify(all, t, strlen(t), NOW, &plain, &c, unit_err,
	    sizeof(unit_err)) == JWT_OK);
	CHECK(jwt_claims_canon(c, "roles app_metadata.org tenant_id role "
	    "app_metadata", &set, &len, unit_err, sizeof(unit_err)) == 0);
	json_free(&c);
	CHECK(len == strlen(set));
	CHECK_STR(set, "roles [\"b\",\"a\"]\n"
	    "app_metadata.org {\"id\":7,\"name\":\"x\"}\n"
	    "tenant_id null\n"
	    "role\n"
	    "app_metadata {\"org\":{\"id\":7,\"name\":\"x\"},\"tier\":1}\n");
	free(set);
}

int
main(void)
{
	if (setup() == -1) {
		printf("FAIL setup: cannot make the test keys\n");
		return 1;
	}
	RUN(t_every_alg_verifies_a_token_it_signed_with_or_without_a_kid);
	RUN(t_the_rfc_example_tokens_verify);
	RUN(t_alg_none_is_refused_in_any_case);
	RUN(t_algs_that_are_not_verified_are_refused);
	RUN(t_an_rsa_public_key_used_as_an_hmac_secret_is_refused);
	RUN(t_a_tampered_payload_fails_with_the_old_signature);
	RUN(t_a_kid_not_in_the_set_is_unknown);
	RUN(t_every_key_a_token_may_name_is_tried);
	RUN(t_tokens_over_16_kib_are_refused_unread);
	RUN(t_exp_is_refused_from_exp_less_leeway_on);
	RUN(t_nbf_and_iat_in_the_future_are_refused_past_the_leeway);
	RUN(t_the_issuer_must_match_exactly);
	RUN(t_the_audience_may_be_a_string_or_in_an_array);
	RUN(t_a_member_named_twice_in_header_or_payload_is_malformed);
	RUN(t_the_header_must_be_an_object_with_typ_jwt_and_no_crit);
	RUN(t_base64url_is_read_strictly);
	RUN(t_an_empty_signature_is_refused);
	RUN(t_es256_signatures_are_r_and_s_and_nothing_else);
	RUN(t_claims_are_read_only_after_the_signature_verifies);
	RUN(t_rsa_paddings_are_told_apart);
	RUN(t_hmac_algs_need_a_secret_as_long_as_their_hash);
	RUN(t_verified_claims_make_one_canonical_claim_set);
	RUN(t_every_result_has_a_name_of_its_own);
	RUN(t_typ_is_one_of_the_policys_list_with_or_without_application);
	RUN(t_a_leeway_below_0_or_over_the_maximum_is_refused);
	RUN(t_dates_in_errors_are_written_whole);
	RUN(t_claim_numbers_written_otherwise_make_the_same_set);
	teardown();
	return unit_exit();
}
