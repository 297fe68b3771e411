/* SPDX-License-Identifier: MIT */
/*
 * Key sets (auth/jwt_keys.c): PEM files, JWK Sets and HMAC secret files,
 * what each accepts and what it refuses; and the claim sets a cache key
 * is made from (auth/jwt_claims.c). Keys are made at test time.
 */

#include "auth/jwt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/encoder.h>
#include <openssl/x509.h>

#include "common/util.h"
#include "tests/unit/unit.h"
#include "tests/unit/unit_jwt.h"

#define PATH_BUF	128
#define FILE_BUF	(8 * TEXT_BUF)

static EVP_PKEY *rsa, *rsa2, *ec256, *ec384, *ed;
static char dir[] = "/tmp/corral-test-jwt-XXXXXX";

static struct signer
by(EVP_PKEY *pkey)
{
	struct signer s = { pkey, NULL, 0, RSA_PSS_SALTLEN_DIGEST, 0 };

	return s;
}

static const char *
claims(void)
{
	static char out[ERR_BUF];

	snprintf(out, sizeof(out), "{\"sub\":\"u1\",\"exp\":%lld}", NOW + HOUR);
	return out;
}

/* What bio holds, into out; bio is freed. */
static const char *
bio_text(BIO *bio, int ok, char *out, size_t outlen)
{
	char *p;
	long n;

	out[0] = '\0';
	if (ok && (n = BIO_get_mem_data(bio, &p)) > 0 && (size_t)n < outlen) {
		memcpy(out, p, (size_t)n);
		out[n] = '\0';
	}
	BIO_free(bio);
	return out;
}

/* key's public key as PKCS #1: BEGIN RSA PUBLIC KEY. */
static const char *
pkcs1_of(EVP_PKEY *key, char *out, size_t outlen)
{
	OSSL_ENCODER_CTX *ctx = OSSL_ENCODER_CTX_new_for_pkey(key,
	    EVP_PKEY_PUBLIC_KEY, "PEM", "type-specific", NULL);
	BIO *bio = BIO_new(BIO_s_mem());
	int ok = ctx != NULL && bio != NULL && OSSL_ENCODER_to_bio(ctx, bio);

	OSSL_ENCODER_CTX_free(ctx);
	return bio_text(bio, ok, out, outlen);
}

static const char *
private_of(EVP_PKEY *key, char *out, size_t outlen)
{
	BIO *bio = BIO_new(BIO_s_mem());
	int ok = bio != NULL && PEM_write_bio_PrivateKey(bio, key, NULL, NULL,
	    0, NULL, NULL);

	return bio_text(bio, ok, out, outlen);
}

/* A self-signed certificate of key (an EC key). */
static const char *
cert_of(EVP_PKEY *key, char *out, size_t outlen)
{
	BIO *bio = BIO_new(BIO_s_mem());
	X509 *x = X509_new();
	X509_NAME *name;
	int ok;

	ok = bio != NULL && x != NULL && X509_set_version(x, 2) &&
	    ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
	    X509_gmtime_adj(X509_getm_notBefore(x), 0) != NULL &&
	    X509_gmtime_adj(X509_getm_notAfter(x), HOUR) != NULL &&
	    X509_set_pubkey(x, key) && (name = X509_get_subject_name(x)) !=
	    NULL && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)"corral-test", -1, -1, 0) &&
	    X509_set_issuer_name(x, name) && X509_sign(x, key, EVP_sha256()) >
	    0 && PEM_write_bio_X509(bio, x);
	X509_free(x);
	return bio_text(bio, ok, out, outlen);
}

/* Writes len bytes of data to the file name in the test directory,
 * private to its owner (0600). */
static const char *
put_file(const char *name, const void *data, size_t len)
{
	static char path[PATH_BUF];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL || fwrite(data, 1, len, f) != len ||
	    fchmod(fileno(f), 0600) == -1) {
		fprintf(stderr, "cannot write %s\n", path);
		abort();
	}
	fclose(f);
	return path;
}

static void
remove_files(void)
{
	static const char *const names[] = { "keys.pem", "keys.json",
	    "secret", "big", "fifo" };
	char path[PATH_BUF];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Does text fail to load as format, with why holding want? */
static int
refused(enum jwt_keys_format format, const char *text, int allow_secrets,
    const char *want)
{
	struct jwt_keys *k = keys_of(format, text, allow_secrets);

	if (k != NULL) {
		jwt_keys_free(&k);
		printf("# loaded, though it should say: %s\n", want);
		return 0;
	}
	if (strstr(unit_err, want) == NULL) {
		printf("# said \"%s\", not \"%s\"\n", unit_err, want);
		return 0;
	}
	return 1;
}

static void
t_pem_files_hold_public_keys_certificates_and_kids(void)
{
	char text[FILE_BUF], a[TEXT_BUF], b[TEXT_BUF], c[TEXT_BUF];
	char d[TEXT_BUF], e[TEXT_BUF], *crlf = e;
	struct signer s;
	struct jwt_keys *k;

	CHECK(strstr(pkcs1_of(rsa2, b, sizeof(b)), "BEGIN RSA PUBLIC KEY"));
	CHECK(strstr(cert_of(ec256, c, sizeof(c)), "BEGIN CERTIFICATE"));
	pem_of(ec384, d, sizeof(d));
	for (const char *p = d; *p != '\0'; p++)	/* CRLF line ends */
		crlf += sprintf(crlf, *p == '\n' ? "\r\n" : "%c", *p);
	snprintf(text, sizeof(text), "# The identity provider's keys\n"
	    "# kid: rsa-spki\n%s\n#kid: not a kid line\n# kid:  rsa-pkcs1 \n"
	    "%s# kid: cert\n%s%s\n\n%s", pem_of(rsa, a, sizeof(a)), b, c, e,
	    pem_of(ed, d, sizeof(d)));
	CHECK((k = jwt_keys_load(put_file("keys.pem", text, strlen(text)),
	    JWT_KEYS_PEM, 0, unit_err, sizeof(unit_err))) != NULL);
	CHECK(jwt_keys_count(k) == 5);
	s = by(rsa);
	CHECK(verify(k, tok(hdr("RS256", "rsa-spki"), claims(), "RS256",
	    &s)) == JWT_OK);
	s = by(rsa2);
	CHECK(verify(k, tok(hdr("PS512", "rsa-pkcs1"), claims(), "PS512",
	    &s)) == JWT_OK);
	s = by(ec256);
	CHECK(verify(k, tok(hdr("ES256", "cert"), claims(), "ES256", &s)) ==
	    JWT_OK);
	s = by(ec384);
	CHECK(verify(k, tok(hdr("ES384", NULL), claims(), "ES384", &s)) ==
	    JWT_OK);
	s = by(ed);
	CHECK(verify(k, tok(hdr("EdDSA", NULL), claims(), "EdDSA", &s)) ==
	    JWT_OK);
	jwt_keys_free(&k);
	CHECK(k == NULL);
	jwt_keys_free(&k);
}

static void
t_pem_files_with_anything_but_public_keys_are_refused(void)
{
	char pem[TEXT_BUF], text[2 * TEXT_BUF];
	EVP_PKEY *weak = keygen("RSA", NULL, 1024);
	EVP_PKEY *p521 = keygen("EC", "P-521", 0);
	EVP_PKEY *ed448 = keygen("ED448", NULL, 0);

	CHECK(weak != NULL && p521 != NULL && ed448 != NULL);
	CHECK(refused(JWT_KEYS_PEM, private_of(rsa, text, sizeof(text)), 0,
	    "test: line 1: a private key: give the public key only"));
	CHECK(refused(JWT_KEYS_PEM, "hello\n", 0, "test: line 1: neither a "
	    "comment nor a PEM block"));
	CHECK(refused(JWT_KEYS_PEM, " # indented\n", 0, "line 1: neither"));
	CHECK(refused(JWT_KEYS_PEM, "#\n\n-----BEGIN PUBLIC KEY-----\nMII\n", 0,
	    "line 3: a PEM block without its END line"));
	CHECK(refused(JWT_KEYS_PEM, "-----BEGIN PUBLIC KEY-----\nMII\n"
	    "-----END CERTIFICATE-----\n", 0, "without its END line"));
	CHECK(refused(JWT_KEYS_PEM, "-----BEGIN PUBLIC KEY-----\nMII*\n"
	    "-----END PUBLIC KEY-----\n", 0, "line 1: a PEM block that does "
	    "not decode"));
	CHECK(refused(JWT_KEYS_PEM, "-----BEGIN X509 CRL-----\nMIIB\n"
	    "-----END X509 CRL-----\n", 0, "line 1: a X509 CRL block: only "
	    "public keys and certificates are read"));
	snprintf(text, sizeof(text), "# kid: a\n# kid: b\n%s", pem_of(rsa, pem,
	    sizeof(pem)));
	CHECK(refused(JWT_KEYS_PEM, text, 0, "line 2: an empty kid or a second "
	    "one before a key"));
	snprintf(text, sizeof(text), "# kid:\n%s", pem);
	CHECK(refused(JWT_KEYS_PEM, text, 0, "line 1: an empty kid"));
	snprintf(text, sizeof(text), "%s# kid: a\n", pem);
	CHECK(refused(JWT_KEYS_PEM, text, 0, "a kid with no key after it"));
	CHECK(refused(JWT_KEYS_PEM, pem_of(weak, pem, sizeof(pem)), 0,
	    "an RSA key of 1024 bits: at least 2048 are needed"));
	CHECK(refused(JWT_KEYS_PEM, pem_of(p521, pem, sizeof(pem)), 0,
	    "only P-256 and P-384 are verified"));
	CHECK(refused(JWT_KEYS_PEM, pem_of(ed448, pem, sizeof(pem)), 0,
	    "only RSA, EC and Ed25519 keys are verified"));
	CHECK(refused(JWT_KEYS_PEM, "", 0, "test: holds no key"));
	CHECK(refused(JWT_KEYS_PEM, "# only a comment\n", 0, "holds no key"));
	EVP_PKEY_free(weak);
	EVP_PKEY_free(p521);
	EVP_PKEY_free(ed448);
}

static void
t_jwk_sets_load_and_skip_keys_they_cannot_verify_with(void)
{
	char text[FILE_BUF], j1[TEXT_BUF], j2[TEXT_BUF], j3[TEXT_BUF];
	char j4[TEXT_BUF];
	struct signer s = by(rsa);
	struct jwt_keys *k;

	snprintf(text, sizeof(text), "{\"keys\":[%s,%s,%s,%s,"
	    "{\"kty\":\"EC\",\"crv\":\"P-521\",\"x\":\"AA\",\"y\":\"AA\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AA\"},"
	    "{\"kty\":\"EC\",\"crv\":\"secp256k1\",\"x\":\"AA\",\"y\":\"AA\"},"
	    "{\"kty\":\"RSA\",\"alg\":\"RSA-OAEP\",\"n\":\"AA\",\"e\":\"AQAB\"},"
	    "{\"kty\":\"EC\",\"alg\":\"ES512\",\"crv\":\"P-521\"},"
	    "{\"kty\":\"oct\",\"use\":\"enc\",\"k\":\"AA\"},"
	    "{\"kty\":\"foo\"}],\"x-other\":1}",
	    jwk_of(rsa, "\"kid\":\"r\",\"use\":\"sig\",\"alg\":\"RS256\","
	    "\"x5c\":[\"MII\"],", j1, sizeof(j1)),
	    jwk_of(ec256, "\"kid\":\"e\",\"key_ops\":[\"sign\",\"verify\"],",
	    j2, sizeof(j2)),
	    jwk_of(rsa2, "\"kid\":\"enc\",\"use\":\"enc\",", j3, sizeof(j3)),
	    jwk_of(ed, "\"kid\":\"d\",\"key_ops\":[\"verify\"],", j4,
	    sizeof(j4)));
	CHECK((k = jwt_keys_load(put_file("keys.json", text, strlen(text)),
	    JWT_KEYS_JWKS, 0, unit_err, sizeof(unit_err))) != NULL);
	CHECK(jwt_keys_count(k) == 3);
	CHECK(verify(k, tok(hdr("RS256", "r"), claims(), "RS256", &s)) ==
	    JWT_OK);
	/* Its alg narrows what the key verifies to RS256. */
	CHECK(verify(k, tok(hdr("PS256", "r"), claims(), "PS256", &s)) ==
	    JWT_ALG_KEY_MISMATCH);
	CHECK(verify(k, tok(hdr("RS384", NULL), claims(), "RS384", &s)) ==
	    JWT_KEY_UNKNOWN);
	s = by(rsa2);
	CHECK(verify(k, tok(hdr("RS256", "enc"), claims(), "RS256", &s)) ==
	    JWT_KEY_UNKNOWN);
	s = by(ec256);
	CHECK(verify(k, tok(hdr("ES256", "e"), claims(), "ES256", &s)) ==
	    JWT_OK);
	s = by(ed);
	CHECK(verify(k, tok(hdr("EdDSA", "d"), claims(), "EdDSA", &s)) ==
	    JWT_OK);
	jwt_keys_free(&k);
}

static void
t_jwk_sets_with_a_wrong_key_are_refused(void)
{
	static const char zeros[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	char text[FILE_BUF], j[TEXT_BUF], *at;

	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"AyM1Sy"
	    "sPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T\"}]}", 0, "test: keys[0]: "
	    "a secret (kty oct), where secrets are not allowed"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"AyM1Sy"
	    "sPpbyDfgZld3umjw\"}]}", 1, "an HMAC secret of 16 bytes: at least 32 "
	    "are needed"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"oct\",\"alg\":"
	    "\"HS512\",\"k\":\"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T\"}]}",
	    1, "alg HS512 does not fit the key"));
	snprintf(text, sizeof(text), "{\"keys\":[%s,%s]}", jwk_of(ec256, "", j,
	    sizeof(j)), jwk_of(rsa, "\"d\":\"AQAB\",", j + 512, sizeof(j) -
	    512));
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "keys[1]: a private key (d)"));
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_of(rsa,
	    "\"alg\":\"ES256\",", j, sizeof(j)));
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "alg ES256 does not fit the key"));
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_of(rsa, "", j,
	    sizeof(j)));
	at = strstr(text, "\"n\":\"") + 6;
	*at = '+';
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "n is not base64url"));
	at = strstr(text, "\"e\":\"");
	memcpy(at, "\"e\":\"Ag\"}]}", 12);
	*(strstr(text, "\"n\":\"") + 6) = 'A';
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "exponent is 1 or even"));
	snprintf(text, sizeof(text), "{\"keys\":[{\"kty\":\"EC\",\"crv\":"
	    "\"P-256\",\"x\":\"%.42s\",\"y\":\"%.43s\"}]}", zeros, zeros);
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "x and y of a P-256 key must be "
	    "32 bytes each"));
	snprintf(text, sizeof(text), "{\"keys\":[{\"kty\":\"EC\",\"crv\":"
	    "\"P-256\",\"x\":\"AQ%.41s\",\"y\":\"AQ%.41s\"}]}", zeros, zeros);
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "keys[0]: not an EC public key"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":"
	    "\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUQ\"}]}",
	    0, "x of an Ed25519 key must be 32 bytes"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"crv\":\"P-256\"}]}", 0,
	    "keys[0]: no kty string"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"EC\",\"kid\":1}]}", 0,
	    "a kid that is not a string"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"EC\",\"use\":1}]}", 0,
	    "a use that is not a string"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"EC\",\"key_ops\":"
	    "\"verify\"}]}", 0, "key_ops that is not an array"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"EC\",\"alg\":[]}]}",
	    0, "an alg that is not a string"));
}

static void
t_documents_that_are_no_jwk_set_are_refused(void)
{
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[1]}", 0, "keys[0]: not an "
	    "object"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":{}}", 0, "no \"keys\" array"));
	CHECK(refused(JWT_KEYS_JWKS, "[]", 0, "no \"keys\" array"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[],\"keys\":[]}", 0, "not JSON: "
	    "offset"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[]}", 0, "holds no key"));
	CHECK(refused(JWT_KEYS_JWKS, "{\"keys\":[{\"kty\":\"oct\",\"use\":\"enc\""
	    ",\"k\":\"AA\"}]}", 0, "holds no key"));
}

/* The file's bytes are the secret, a final newline too. */
static void
t_hmac_secret_files_are_read_whole(void)
{
	unsigned char secret[33];
	char *big = malloc(JWT_KEYS_FILE_MAX + 1);
	struct signer s = { NULL, secret, 32, 0, 0 };
	struct jwt_keys *k;
	const char *path;

	memset(secret, 's', 32);
	secret[32] = '\n';
	path = put_file("secret", secret, 32);
	CHECK((k = jwt_keys_load(path, JWT_KEYS_SECRET, 1, unit_err,
	    sizeof(unit_err))) != NULL && jwt_keys_count(k) == 1);
	CHECK(verify(k, tok(hdr("HS256", NULL), claims(), "HS256", &s)) ==
	    JWT_OK);
	CHECK(verify(k, tok(hdr("HS256", "x"), claims(), "HS256", &s)) ==
	    JWT_KEY_UNKNOWN);
	jwt_keys_free(&k);
	CHECK(jwt_keys_load(path, JWT_KEYS_SECRET, 0, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK(strstr(unit_err, "/secret: an HMAC secret, where secrets are not "
	    "allowed") != NULL);
	CHECK((k = jwt_keys_load(put_file("secret", secret, 33),
	    JWT_KEYS_SECRET, 1, unit_err, sizeof(unit_err))) != NULL);
	CHECK(verify(k, tok(hdr("HS256", NULL), claims(), "HS256", &s)) ==
	    JWT_BAD_SIGNATURE);
	jwt_keys_free(&k);
	CHECK(jwt_keys_load(put_file("secret", secret, 31), JWT_KEYS_SECRET, 1,
	    unit_err, sizeof(unit_err)) == NULL);
	CHECK(strstr(unit_err, "an HMAC secret of 31 bytes") != NULL);
	CHECK(big != NULL);
	memset(big, 'b', JWT_KEYS_FILE_MAX + 1);
	path = put_file("big", big, JWT_KEYS_FILE_MAX + 1);
	free(big);
	CHECK(jwt_keys_load(path, JWT_KEYS_SECRET, 1, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK(strstr(unit_err, "larger than") != NULL);
	CHECK(jwt_keys_load(dir, JWT_KEYS_PEM, 0, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK(strstr(unit_err, "not a regular file") != NULL);
	CHECK(jwt_keys_load("/nonexistent/keys.pem", JWT_KEYS_PEM, 0, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK_STR(unit_err, "/nonexistent/keys.pem: cannot open: No such file "
	    "or directory");
}

/* A secret is read only from a file private to its owner, judged on
 * what was opened; a FIFO or a device is refused at once, not read. */
static void
t_secrets_only_from_private_files_and_never_a_fifo(void)
{
	static const mode_t shared[] = { 0640, 0604, 0660, 0644, 0610 };
	char secret[40], fifo[PATH_BUF], pem[TEXT_BUF];
	struct jwt_keys *k;
	const char *path;
	int64_t start;

	memset(secret, 'q', sizeof(secret));
	path = put_file("secret", secret, sizeof(secret));
	CHECK((k = jwt_keys_load(path, JWT_KEYS_SECRET, 1, unit_err,
	    sizeof(unit_err))) != NULL);
	jwt_keys_free(&k);
	CHECK(chmod(path, 0400) == 0);
	CHECK((k = jwt_keys_load(path, JWT_KEYS_SECRET, 1, unit_err,
	    sizeof(unit_err))) != NULL);
	jwt_keys_free(&k);
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		CHECK(chmod(path, shared[i]) == 0);
		CHECK(jwt_keys_load(path, JWT_KEYS_SECRET, 1, unit_err,
		    sizeof(unit_err)) == NULL);
		CHECK(strstr(unit_err, "where secrets are not allowed") !=
		    NULL);
	}
	/* A public key file needs no such care. */
	pem_of(rsa, pem, sizeof(pem));
	path = put_file("keys.pem", pem, strlen(pem));
	CHECK(chmod(path, 0644) == 0);
	CHECK((k = jwt_keys_load(path, JWT_KEYS_PEM, 1, unit_err,
	    sizeof(unit_err))) != NULL);
	jwt_keys_free(&k);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	start = util_mono_us();
	CHECK(jwt_keys_load(fifo, JWT_KEYS_SECRET, 1, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK(strstr(unit_err, "not a regular file") != NULL);
	CHECK(jwt_keys_load(fifo, JWT_KEYS_PEM, 0, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK(util_mono_us() - start < 5 * 1000000);	/* not a hang */
	CHECK(jwt_keys_load("/dev/null", JWT_KEYS_PEM, 0, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK(strstr(unit_err, "not a regular file") != NULL);
}

/* JWT_KEYS_AUTO tells a file by its text; a systemd credential's group
 * may read it (0440), a private file's may not. */
static void
t_auto_tells_the_format_and_credentials_may_be_group_readable(void)
{
	char pem[TEXT_BUF], text[FILE_BUF], j[TEXT_BUF], secret[40];
	struct jwt_keys *k;
	const char *path;

	pem_of(rsa, pem, sizeof(pem));
	snprintf(text, sizeof(text), "# kid: r\n%s", pem);
	CHECK((k = keys_of(JWT_KEYS_AUTO, text, 0)) != NULL);
	jwt_keys_free(&k);
	CHECK((k = keys_of(JWT_KEYS_AUTO, pem, 0)) != NULL);
	jwt_keys_free(&k);
	snprintf(text, sizeof(text), "\n {\"keys\":[%s]}", jwk_of(ec256, "", j,
	    sizeof(j)));
	CHECK((k = keys_of(JWT_KEYS_AUTO, text, 0)) != NULL);
	jwt_keys_free(&k);
	memset(secret, 's', sizeof(secret));
	secret[sizeof(secret) - 1] = '\0';
	CHECK(refused(JWT_KEYS_AUTO, secret, 0, "where secrets are not allowed"));
	path = put_file("secret", secret, strlen(secret));
	CHECK(chmod(path, 0440) == 0);
	CHECK(jwt_keys_load(path, JWT_KEYS_AUTO, JWT_SECRETS_PRIVATE, unit_err,
	    sizeof(unit_err)) == NULL);
	CHECK((k = jwt_keys_load(path, JWT_KEYS_AUTO, JWT_SECRETS_CREDENTIAL,
	    unit_err, sizeof(unit_err))) != NULL);
	jwt_keys_free(&k);
	CHECK(chmod(path, 0460) == 0);
	CHECK(jwt_keys_load(path, JWT_KEYS_AUTO, JWT_SECRETS_CREDENTIAL,
	    unit_err, sizeof(unit_err)) == NULL);
	CHECK(chmod(path, 0600) == 0);
}

/* "alg": "Ed25519" in a JWK is EdDSA, as some issuers write it. */
static void
t_a_jwk_alg_of_ed25519_is_eddsa(void)
{
	char text[FILE_BUF], j[TEXT_BUF];
	struct signer s = by(ed);
	struct jwt_keys *k;

	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_of(ed,
	    "\"kid\":\"d\",\"alg\":\"Ed25519\",", j, sizeof(j)));
	CHECK((k = keys_of(JWT_KEYS_JWKS, text, 0)) != NULL);
	CHECK(k != NULL && jwt_keys_count(k) == 1);
	CHECK(verify(k, tok(hdr("EdDSA", "d"), claims(), "EdDSA", &s)) ==
	    JWT_OK);
	jwt_keys_free(&k);
	/* On a key of another type it does not fit. */
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_of(ec256,
	    "\"alg\":\"Ed25519\",", j, sizeof(j)));
	CHECK(refused(JWT_KEYS_JWKS, text, 0, "alg EdDSA does not fit"));
}

/* The canonical claim set of the document text for names. */
static const char *
canon(const char *text, const char *names)
{
	static char out[TEXT_BUF];
	struct json *doc;
	size_t len;
	char *c;

	if ((doc = json_parse(text, strlen(text), unit_err,
	    sizeof(unit_err))) == NULL)
		return "(not JSON)";
	if (jwt_claims_canon(doc, names, &c, &len, unit_err,
	    sizeof(unit_err)) == -1) {
		json_free(&doc);
		return "(refused)";
	}
	snprintf(out, sizeof(out), "%s", len == strlen(c) ? c : "(a NUL)");
	free(c);
	json_free(&doc);
	return out;
}

static void
t_claim_sets_are_canonical_and_tell_absent_from_null(void)
{
	const char *doc = "{\"role\":\"admin\",\"tenant_id\":42,\"app_metadata\":"
	    "{\"org\":\"acme\",\"z\":[3,1],\"a\":{\"y\":1.0,\"x\":2}},\"nul\":null,"
	    "\"arr\":[\"b\",\"a\"],\"u\":\"\\u00e9\\n\",\"https://x.io/t\":true}";

	CHECK_STR(canon(doc, "role tenant_id,app_metadata.org\tnul missing, "
	    "app_metadata arr u https://x\\.io/t role.x"),
	    "role \"admin\"\n"
	    "tenant_id 42\n"
	    "app_metadata.org \"acme\"\n"
	    "nul null\n"
	    "missing\n"
	    "app_metadata {\"a\":{\"x\":2,\"y\":1},\"org\":\"acme\",\"z\":[3,1]}\n"
	    "arr [\"b\",\"a\"]\n"
	    "u \"\xc3\xa9\\n\"\n"
	    "https://x\\.io/t true\n"
	    "role.x\n");
	CHECK_STR(canon("{}", "a"), "a\n");
	CHECK_STR(canon("{\"a\":null}", "a"), "a null\n");
	CHECK_STR(canon("{\"a\":\"\"}", "a"), "a \"\"\n");
	CHECK_STR(canon("{\"a\":\"x\\u0000y\"}", "a"), "a \"x\\u0000y\"\n");
}

static void
t_the_same_claims_written_otherwise_make_the_same_set(void)
{
	const char *names = "role org";
	char a[TEXT_BUF];

	snprintf(a, sizeof(a), "%s", canon("{\"role\":\"admin\",\"org\":"
	    "{\"id\":1,\"name\":\"acme\"}}", names));
	CHECK_STR(canon(" { \"org\" : { \"name\" : \"ac\\u006de\" , \"id\" : 1 } "
	    ", \"r\\u006fle\" : \"\\u0061dmin\" , \"other\" : 1 } ", names), a);
	CHECK(strcmp(canon("{\"role\":\"user\",\"org\":{\"id\":1,\"name\":"
	    "\"acme\"}}", names), a) != 0);
	CHECK(strcmp(canon("{\"role\":\"admin\",\"org\":{\"id\":2,\"name\":"
	    "\"acme\"}}", names), a) != 0);
	/* A claim's value cannot pass for the next claim. */
	snprintf(a, sizeof(a), "%s", canon("{\"role\":\"a\",\"org\":1}", names));
	CHECK_STR(a, "role \"a\"\norg 1\n");
	CHECK_STR(canon("{\"role\":\"a\\norg 1\"}", names), "role \"a\\norg 1\"\n"
	    "org\n");
}

static void
t_claim_name_lists_are_checked(void)
{
	char longname[600];

	CHECK(jwt_claims_valid("role", unit_err, sizeof(unit_err)) == 0);
	CHECK(jwt_claims_valid(" a,b c\td\n", unit_err, sizeof(unit_err)) == 0);
	CHECK(jwt_claims_valid("", unit_err, sizeof(unit_err)) == -1);
	CHECK_STR(unit_err, "no claim names");
	CHECK(jwt_claims_valid(" , ", unit_err, sizeof(unit_err)) == -1);
	CHECK(jwt_claims_valid("a a..b", unit_err, sizeof(unit_err)) == -1);
	CHECK(strstr(unit_err, "claim \"a..b\" is not a valid name") != NULL);
	CHECK(jwt_claims_valid("a\\x", unit_err, sizeof(unit_err)) == -1);
	CHECK(jwt_claims_valid("a.", unit_err, sizeof(unit_err)) == -1);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(jwt_claims_valid(longname, unit_err, sizeof(unit_err)) == -1);
	CHECK(strstr(unit_err, "longer than") != NULL);
	CHECK_STR(canon("{\"a\":1}", "a..b"), "(refused)");
}

int
main(void)
{
	int failed;

	if (mkdtemp(dir) == NULL || (rsa = keygen("RSA", NULL, 2048)) == NULL ||
	    (rsa2 = keygen("RSA", NULL, 2048)) == NULL ||
	    (ec256 = keygen("EC", "P-256", 0)) == NULL ||
	    (ec384 = keygen("EC", "P-384", 0)) == NULL ||
	    (ed = keygen("ED25519", NULL, 0)) == NULL) {
		printf("FAIL setup: cannot make the test keys\n");
		return 1;
	}
	RUN(t_pem_files_hold_public_keys_certificates_and_kids);
	RUN(t_pem_files_with_anything_but_public_keys_are_refused);
	RUN(t_jwk_sets_load_and_skip_keys_they_cannot_verify_with);
	RUN(t_jwk_sets_with_a_wrong_key_are_refused);
	RUN(t_documents_that_are_no_jwk_set_are_refused);
	RUN(t_hmac_secret_files_are_read_whole);
	RUN(t_secrets_only_from_private_files_and_never_a_fifo);
	RUN(t_a_jwk_alg_of_ed25519_is_eddsa);
	RUN(t_auto_tells_the_format_and_credentials_may_be_group_readable);
	RUN(t_claim_sets_are_canonical_and_tell_absent_from_null);
	RUN(t_the_same_claims_written_otherwise_make_the_same_set);
	RUN(t_claim_name_lists_are_checked);
	failed = unit_exit();
	remove_files();
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(rsa2);
	EVP_PKEY_free(ec256);
	EVP_PKEY_free(ec384);
	EVP_PKEY_free(ed);
	return failed;
}
