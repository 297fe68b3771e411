/* SPDX-License-Identifier: MIT */
/*
 * What a TLS context is made from (proxy_tls_int.h): the certificate
 * chain and the key, read and checked so that a refusal says which file
 * and what is wrong with it. The leaf is read on its own first (its key's
 * strength, its dates), then the chain is loaded as OpenSSL loads one.
 * The key is a secret file (conf_secret.h), read into memory, decoded and
 * wiped; no passphrase is ever asked for.
 *
 * Calls conf_secret.c. Called by proxy_tls.c.
 */

#include "proxy/proxy_tls_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "conf/conf.h"
#include "conf/conf_secret.h"
#include "proxy/proxy_tls.h"

#define KEY_BITS_MIN		112	/* security bits: RSA-2048, P-224 */
#define DAY_S			(24 * 60 * 60)
#define DATE_MAX		32	/* "2026-01-31 23:59:59 UTC" */

const char *
ssl_why(void)
{
	const char *why = ERR_reason_error_string(ERR_peek_last_error());

	ERR_clear_error();
	return why != NULL ? why : "unknown error";
}

static void
format_date(const ASN1_TIME *t, char *out, size_t outlen)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1 ||
	    strftime(out, outlen, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(out, outlen, "(a date OpenSSL cannot read)");
}

/* Opens path for reading, a regular file. The stream, or NULL with
 * "path: why" in err. */
static FILE *
open_regular(const char *path, char *err, size_t errlen)
{
	struct stat st;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fileno(fp), &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		fclose(fp);
		return NULL;
	}
	return fp;
}

/* pkey has KEY_BITS_MIN bits of security or more; else -1 with why,
 * naming path and whose key it is, in err. */
static int
key_strong(const char *path, const char *whose, EVP_PKEY *pkey, char *err,
    size_t errlen)
{
	if (EVP_PKEY_get_security_bits(pkey) >= KEY_BITS_MIN)
		return 0;
	snprintf(err, errlen, "%s: %s %s key of %d bits is too weak "
	    "(RSA-2048 or ECDSA P-256 at least)", path, whose,
	    EVP_PKEY_get0_type_name(pkey), EVP_PKEY_get_bits(pkey));
	return -1;
}

/* The leaf is valid now, and long enough (else a warning in err). Its
 * notAfter into *not_after. 0, or -1 with why in err. */
static int
check_dates(const char *path, X509 *leaf, int64_t *not_after, char *err,
    size_t errlen)
{
	const ASN1_TIME *nb = X509_get0_notBefore(leaf);
	const ASN1_TIME *na = X509_get0_notAfter(leaf);
	time_t soon = time(NULL) + (time_t)TLS_EXPIRY_WARN_DAYS * DAY_S;
	char date[DATE_MAX];
	struct tm tm;

	if (ASN1_TIME_to_tm(na, &tm) != 1 || ASN1_TIME_check(nb) != 1) {
		snprintf(err, errlen, "%s: the certificate's dates cannot be "
		    "read", path);
		return -1;
	}
	*not_after = (int64_t)timegm(&tm);
	if (X509_cmp_current_time(na) < 0) {
		format_date(na, date, sizeof(date));
		snprintf(err, errlen, "%s: the certificate expired on %s",
		    path, date);
		return -1;
	}
	if (X509_cmp_current_time(nb) > 0) {
		format_date(nb, date, sizeof(date));
		snprintf(err, errlen, "%s: the certificate is not valid "
		    "before %s", path, date);
		return -1;
	}
	if (X509_cmp_time(na, &soon) < 0) {
		format_date(na, date, sizeof(date));
		snprintf(err, errlen, "%s: the certificate expires on %s, in "
		    "%lld days", path, date, (long long)((*not_after -
		    (int64_t)time(NULL)) / DAY_S));
	}
	return 0;
}

/* The leaf, the first certificate of path: read and checked on its own
 * before the chain is loaded, for errors that say what is wrong. */
static int
check_leaf(const char *path, int64_t *not_after, char *err, size_t errlen)
{
	X509 *leaf = NULL;
	FILE *fp;
	int rc = -1;

	if ((fp = open_regular(path, err, errlen)) == NULL)
		return -1;
	if ((leaf = PEM_read_X509(fp, NULL, NULL, NULL)) == NULL) {
		snprintf(err, errlen, "%s: no PEM certificate in it "
		    "(-----BEGIN CERTIFICATE-----)", path);
		goto fail;
	}
	if (key_strong(path, "the certificate's", X509_get0_pubkey(leaf),
	    err, errlen) == -1)
		goto fail;
	if (check_dates(path, leaf, not_after, err, errlen) == -1)
		goto fail;
	rc = 0;
fail:
	ERR_clear_error();
	X509_free(leaf);
	fclose(fp);
	return rc;
}

/* The chain, leaf first, into ctx. 0, or -1 with why in err. */
static int
load_chain(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
	unsigned long e;

	if (SSL_CTX_use_certificate_chain_file(ctx, path) == 1)
		return 0;
	e = ERR_peek_last_error();
	if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
	    ERR_GET_REASON(e) == SSL_R_CA_MD_TOO_WEAK)
		snprintf(err, errlen, "%s: a certificate in it is signed with "
		    "too weak a digest (SHA-1 or MD5)", path);
	else if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
	    ERR_GET_REASON(e) == SSL_R_CA_KEY_TOO_SMALL)
		snprintf(err, errlen, "%s: a certificate of its chain has too "
		    "weak a key (RSA-2048 or ECDSA P-256 at least)", path);
	else
		snprintf(err, errlen, "%s: cannot load the certificate chain: "
		    "%s", path, ssl_why());
	ERR_clear_error();
	return -1;
}

int
cert_load(SSL_CTX *ctx, const char *path, int64_t *not_after, char *err,
    size_t errlen)
{
	if (check_leaf(path, not_after, err, errlen) == -1)
		return -1;
	return load_chain(ctx, path, err, errlen);
}

/* OpenSSL asks for a passphrase: the key is encrypted. None is given. */
static int
on_passphrase(char *buf, int size, int rwflag, void *arg)
{
	*(int *)arg = 1;
	return -1;
}

/* The private key in the secret file key_name names, read into memory,
 * decoded, the memory wiped. The key, or NULL with why in err. */
static EVP_PKEY *
read_key(const char *key_name, char *path, size_t pathlen, char *err,
    size_t errlen)
{
	EVP_PKEY *pkey = NULL;
	BIO *bio = NULL;
	char *buf = NULL;
	size_t len = 0;
	int fd, encrypted = 0;

	if ((fd = secret_open(key_name, SECRET_GROUP_WRITES, path, pathlen,
	    err, errlen)) == -1)
		return NULL;
	if ((buf = malloc(TLS_KEY_FILE_MAX + 1)) == NULL) {
		snprintf(err, errlen, "%s: no memory to read it", path);
		goto fail;
	}
	if (secret_fill(fd, path, buf, TLS_KEY_FILE_MAX + 1, &len, err,
	    errlen) == -1)
		goto fail;
	if (len > TLS_KEY_FILE_MAX) {
		snprintf(err, errlen, "%s: longer than %d bytes: no key file",
		    path, TLS_KEY_FILE_MAX);
		goto fail;
	}
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		snprintf(err, errlen, "%s: no memory to read it", path);
		goto fail;
	}
	if ((pkey = PEM_read_bio_PrivateKey(bio, NULL, on_passphrase,
	    &encrypted)) == NULL && encrypted)
		snprintf(err, errlen, "%s: the key is encrypted, and Corral "
		    "takes no passphrase: decrypt it (openssl pkey -in FILE "
		    "-out NEW) into a file only Corral may read", path);
	else if (pkey == NULL)
		snprintf(err, errlen, "%s: no PEM private key in it "
		    "(-----BEGIN PRIVATE KEY-----)", path);
fail:
	ERR_clear_error();
	BIO_free(bio);
	if (buf != NULL)
		OPENSSL_cleanse(buf, len);
	free(buf);
	close(fd);
	return pkey;
}

int
key_load(SSL_CTX *ctx, const char *cert_path, const char *key_name,
    char *err, size_t errlen)
{
	char path[CONF_PATH_MAX];
	EVP_PKEY *pkey;
	int rc = -1;

	if ((pkey = read_key(key_name, path, sizeof(path), err,
	    errlen)) == NULL)
		return -1;
	if (key_strong(path, "the", pkey, err, errlen) == -1)
		goto fail;
	if (X509_check_private_key(SSL_CTX_get0_certificate(ctx),
	    pkey) != 1 || SSL_CTX_use_PrivateKey(ctx, pkey) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, errlen, "%s: the key does not match the "
		    "certificate in %s", path, cert_path);
		goto fail;
	}
	rc = 0;
fail:
	ERR_clear_error();
	EVP_PKEY_free(pkey);
	return rc;
}
