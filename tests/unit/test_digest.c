/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 and HMAC by libcrypto (common/digest.c): the published
 * vectors, and the same bytes for any input however it is cut. The
 * keys made with them are pinned in test_keyrule.c.
 */

#include "common/digest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

#define HEX_LEN		(2 * DIGEST_LEN + 1)
#define MILLION		1000000
#define RANDOM_LEN_MAX	300	/* every length up to this, and a few more */
#define KEY_LEN_MAX	200	/* past a block, and past two */
#define SEED		0x9e3779b97f4a7c15ULL

static uint64_t rng = SEED;

/* xorshift64*: the same inputs on every run. */
static uint64_t
next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static void
fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)next();
}

static const char *
hex_of(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	return out;
}

static const char *
sha_hex(const void *msg, size_t n, char out[HEX_LEN])
{
	unsigned char d[DIGEST_LEN];
	struct digest s;

	digest_init(&s);
	digest_update(&s, msg, n);
	if (digest_final(&s, d) == -1)
		return "(failed)";
	return hex_of(d, sizeof(d), out);
}

static const char *
hmac_hex(const void *key, size_t keylen, const void *msg, size_t n,
    char out[HEX_LEN])
{
	unsigned char d[DIGEST_LEN];
	struct digest_hmac m;

	digest_hmac_init(&m, key, keylen);
	digest_hmac_update(&m, msg, n);
	if (digest_hmac_final(&m, d) == -1)
		return "(failed)";
	return hex_of(d, sizeof(d), out);
}

/* FIPS 180-4 examples (NIST CSRC): "abc", the empty message, two blocks
 * and a million 'a's fed in uneven pieces. */
static void
t_sha256_matches_the_fips_180_4_examples(void)
{
	unsigned char d[DIGEST_LEN];
	char hex[HEX_LEN], *million;
	struct digest s;

	CHECK_STR(sha_hex("abc", 3, hex), "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	CHECK_STR(sha_hex("", 0, hex), "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	CHECK_STR(sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnop"
	    "nopq", 56, hex), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167"
	    "f6ecedd419db06c1");
	CHECK((million = malloc(MILLION)) != NULL);
	memset(million, 'a', MILLION);
	digest_init(&s);
	for (size_t i = 0; i < MILLION; i += 999)
		digest_update(&s, million + i, i + 999 > MILLION ?
		    MILLION - i : 999);
	free(million);
	CHECK(digest_final(&s, d) == 0);
	CHECK_STR(hex_of(d, sizeof(d), hex), "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
}

/* RFC 4231 4.2 to 4.8: test cases 1 to 7 (5 truncated to 128 bits). */
static void
t_hmac_sha256_matches_rfc_4231(void)
{
	unsigned char key[131], data[50];
	char hex[HEX_LEN];

	memset(key, 0x0b, 20);
	CHECK_STR(hmac_hex(key, 20, "Hi There", 8, hex), "b0344c61d8db38535ca8"
	    "afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	CHECK_STR(hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, hex),
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(key, 0xaa, 20);
	memset(data, 0xdd, sizeof(data));
	CHECK_STR(hmac_hex(key, 20, data, sizeof(data), hex), "773ea91e36800e"
	    "46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (int i = 0; i < 25; i++)
		key[i] = (unsigned char)(i + 1);
	memset(data, 0xcd, sizeof(data));
	CHECK_STR(hmac_hex(key, 25, data, sizeof(data), hex), "82558a389a443c"
	    "0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(key, 0x0c, 20);
	CHECK(strncmp(hmac_hex(key, 20, "Test With Truncation", 20, hex),
	    "a3b6167473100ee06e0c796c2955552b", 32) == 0);
	memset(key, 0xaa, sizeof(key));
	CHECK_STR(hmac_hex(key, sizeof(key), "Test Using Larger Than Block-Size "
	    "Key - Hash Key First", 54, hex), "60e431591ee0b67f0d8a26aacbf5b7"
	    "7f8e0bc6213728c5140546040f0ee37f54");
	CHECK_STR(hmac_hex(key, sizeof(key), "This is a test using a larger "
	    "than block-size key and a larger than block-size data. The key "
	    "needs to be hashed before being used by the HMAC algorithm.", 152,
	    hex), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c"
	    "3a35e2");
}

/* msg[0..len) fed in random pieces hashes as fed whole. */
static int
same_digest(const unsigned char *msg, size_t len)
{
	unsigned char a[DIGEST_LEN], b[DIGEST_LEN];
	struct digest d, w;
	size_t i = 0, n;

	digest_init(&d);
	while (i < len) {
		n = (size_t)(next() % (len - i + 1));
		digest_update(&d, msg + i, n);
		i += n;
	}
	digest_init(&w);
	digest_update(&w, msg, len);
	return digest_final(&d, a) == 0 && digest_final(&w, b) == 0 &&
	    memcmp(a, b, DIGEST_LEN) == 0;
}

/* The same for HMAC, and a key set up once agrees. */
static int
same_hmac(const unsigned char *key, size_t keylen, const unsigned char *msg,
    size_t len)
{
	unsigned char a[DIGEST_LEN], b[DIGEST_MAC_MAX];
	struct digest_hmac d;
	size_t i = 0, n, blen = 0;

	digest_hmac_init(&d, key, keylen);
	while (i < len) {
		n = (size_t)(next() % (len - i + 1));
		digest_hmac_update(&d, msg + i, n);
		i += n;
	}
	struct digest_mac_key *k = digest_mac_key_new("SHA256", key, keylen);
	int same;

	same = k != NULL && digest_hmac_final(&d, a) == 0 &&
	    digest_mac_with(k, msg, len, b, sizeof(b), &blen) == 0 &&
	    blen == DIGEST_LEN && memcmp(a, b, DIGEST_LEN) == 0;
	digest_mac_key_free(&k);
	return same;
}

static void
t_sha256_is_the_same_for_every_length_and_cut(void)
{
	static const size_t more[] = { 511, 512, 513, 1000, 4095, 4096, 65537 };
	unsigned char *msg = malloc(more[6]);

	CHECK(msg != NULL);
	fill(msg, more[6]);
	for (size_t len = 0; len <= RANDOM_LEN_MAX; len++)
		for (int cut = 0; cut < 3; cut++)
			if (!same_digest(msg + cut, len)) {
				free(msg);
				CHECK(!"a digest differs");
			}
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		if (!same_digest(msg, more[i])) {
			free(msg);
			CHECK(!"a long digest differs");
		}
	free(msg);
}

static void
t_hmac_is_the_same_for_every_key_length_and_cut(void)
{
	unsigned char key[KEY_LEN_MAX], msg[RANDOM_LEN_MAX];

	fill(key, sizeof(key));
	fill(msg, sizeof(msg));
	for (size_t k = 0; k < sizeof(key); k++)
		CHECK(same_hmac(key, k, msg, (size_t)(next() % sizeof(msg))));
	for (size_t len = 0; len < sizeof(msg); len++)
		CHECK(same_hmac(key, len % 70, msg, len));
}

/* The MAC of msg with a key set up for md, as hex; "" on a failure. */
static const char *
mac_hex(const char *md, const char *key, const char *msg, char *hex)
{
	struct digest_mac_key *k = digest_mac_key_new(md, key, strlen(key));
	unsigned char d[DIGEST_MAC_MAX];
	size_t n = 0;

	hex[0] = '\0';
	if (k != NULL && digest_mac_with(k, msg, strlen(msg), d, sizeof(d),
	    &n) == 0)
		hex_of(d, n, hex);
	digest_mac_key_free(&k);
	return hex;
}

/* RFC 4231 test case 2 with SHA-384 and SHA-512, the key set up once and
 * used twice. */
static void
t_a_mac_key_matches_rfc_4231_for_sha384_and_sha512(void)
{
	const char *msg = "what do ya want for nothing?";
	char hex[2 * DIGEST_MAC_MAX + 1];

	CHECK_STR(mac_hex("SHA384", "Jefe", msg, hex), "af45d2e376484031617f78"
	    "d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239"
	    "ecfab21649");
	CHECK_STR(mac_hex("SHA512", "Jefe", msg, hex), "164b7a7bfcf819e2e395fb"
	    "e73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f"
	    "65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737");
	CHECK(digest_mac_key_new("NOSUCH", "Jefe", 4) == NULL);
}

/* final frees what init made, even when nothing was fed. */
static void
t_an_empty_key_and_an_empty_message_are_hashed(void)
{
	char hex[HEX_LEN];

	CHECK_STR(hmac_hex("", 0, "", 0, hex), "b613679a0814d9ec772f95d778c35f"
	    "c5ff1697c493715653c6c712144292c5ad");
	CHECK_STR(sha_hex(NULL, 0, hex), "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
}

int
main(void)
{
	RUN(t_sha256_matches_the_fips_180_4_examples);
	RUN(t_hmac_sha256_matches_rfc_4231);
	RUN(t_sha256_is_the_same_for_every_length_and_cut);
	RUN(t_hmac_is_the_same_for_every_key_length_and_cut);
	RUN(t_a_mac_key_matches_rfc_4231_for_sha384_and_sha512);
	RUN(t_an_empty_key_and_an_empty_message_are_hashed);
	return unit_exit();
}
