/*
 * SHA-256 as FIPS 180-4 section 6.2 states it, and HMAC (RFC 2104) over
 * it. See sha256.h. Calls nothing.
 */

#include "common/sha256.h"

#include <string.h>

#define HMAC_IPAD	0x36
#define HMAC_OPAD	0x5c

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t round_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* FIPS 180-4 5.3.3: the initial hash value. */
static const uint32_t initial_h[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static uint32_t
rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* FIPS 180-4 6.2.2: one 512-bit block into the hash value. */
static void
compress(uint32_t h[8], const unsigned char block[SHA256_BLOCK])
{
	uint32_t w[64], v[8], t1, t2;

	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)block[4 * t] << 24 |
		    (uint32_t)block[4 * t + 1] << 16 |
		    (uint32_t)block[4 * t + 2] << 8 | block[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^
		    (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^
		    (w[t - 2] >> 10);
		w[t] = s1 + w[t - 7] + s0 + w[t - 16];
	}
	memcpy(v, h, sizeof(v));
	for (int t = 0; t < 64; t++) {
		t1 = v[7] + (rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)) +
		    ((v[4] & v[5]) ^ (~v[4] & v[6])) + round_k[t] + w[t];
		t2 = (rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)) +
		    ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

void
sha256_init(struct sha256 *s)
{
	memcpy(s->h, initial_h, sizeof(s->h));
	s->bytes = 0;
	s->used = 0;
}

void
sha256_update(struct sha256 *s, const void *p, size_t len)
{
	const unsigned char *in = p;

	s->bytes += len;
	while (len > 0) {
		size_t n = SHA256_BLOCK - s->used;

		if (n > len)
			n = len;
		memcpy(s->buf + s->used, in, n);
		s->used += n;
		in += n;
		len -= n;
		if (s->used == SHA256_BLOCK) {
			compress(s->h, s->buf);
			s->used = 0;
		}
	}
}

/* FIPS 180-4 5.1.1: a 1 bit, zeros, and the length in bits. */
void
sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN])
{
	uint64_t bits = s->bytes * 8;

	s->buf[s->used++] = 0x80;
	if (s->used > SHA256_BLOCK - 8) {
		memset(s->buf + s->used, 0, SHA256_BLOCK - s->used);
		compress(s->h, s->buf);
		s->used = 0;
	}
	memset(s->buf + s->used, 0, SHA256_BLOCK - 8 - s->used);
	for (int i = 0; i < 8; i++)
		s->buf[SHA256_BLOCK - 1 - i] = (unsigned char)(bits >> (8 * i));
	compress(s->h, s->buf);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
	memset(s, 0, sizeof(*s));
}

/* RFC 2104 2: a key longer than a block is hashed first. */
void
hmac256_init(struct hmac256 *m, const void *key, size_t keylen)
{
	unsigned char k[SHA256_BLOCK], ikey[SHA256_BLOCK];
	struct sha256 s;

	memset(k, 0, sizeof(k));
	if (keylen > SHA256_BLOCK) {
		sha256_init(&s);
		sha256_update(&s, key, keylen);
		sha256_final(&s, k);
	} else if (keylen > 0) {
		memcpy(k, key, keylen);
	}
	for (int i = 0; i < SHA256_BLOCK; i++) {
		ikey[i] = k[i] ^ HMAC_IPAD;
		m->okey[i] = k[i] ^ HMAC_OPAD;
	}
	sha256_init(&m->inner);
	sha256_update(&m->inner, ikey, sizeof(ikey));
	memset(k, 0, sizeof(k));
	memset(ikey, 0, sizeof(ikey));
}

void
hmac256_update(struct hmac256 *m, const void *p, size_t len)
{
	sha256_update(&m->inner, p, len);
}

void
hmac256_final(struct hmac256 *m, unsigned char out[SHA256_LEN])
{
	unsigned char inner[SHA256_LEN];
	struct sha256 s;

	sha256_final(&m->inner, inner);
	sha256_init(&s);
	sha256_update(&s, m->okey, sizeof(m->okey));
	sha256_update(&s, inner, sizeof(inner));
	sha256_final(&s, out);
	memset(inner, 0, sizeof(inner));
	memset(m, 0, sizeof(*m));
}
