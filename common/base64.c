/* SPDX-License-Identifier: MIT */
/*
 * base64url without padding (base64.h).
 *
 * Calls nothing of Corral.
 */

#include "common/base64.h"

#include <string.h>

#define SEXTET_BITS	6
#define SEXTET_MASK	0x3f
#define BYTE_MASK	0xff

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The value of one character, or -1. */
static int
sextet(char c)
{
	const char *at = c != '\0' ? strchr(alphabet, c) : NULL;

	return at != NULL ? (int)(at - alphabet) : -1;
}

int
base64url_decode(const char *in, size_t len, unsigned char *out,
    size_t *outlen)
{
	unsigned acc = 0;
	size_t n = 0;
	int bits = 0, v;

	if (len % 4 == 1)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if ((v = sextet(in[i])) == -1)
			return -1;
		acc = acc << SEXTET_BITS | (unsigned)v;	/* high bits drop */
		bits += SEXTET_BITS;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits & BYTE_MASK);
		}
	}
	if ((acc & ((1u << bits) - 1)) != 0)
		return -1;	/* a second text of the same bytes */
	*outlen = n;
	return 0;
}

size_t
base64url_encode(const void *in, size_t len, char *out)
{
	const unsigned char *p = in;
	unsigned acc = 0;
	size_t n = 0;
	int bits = 0;

	for (size_t i = 0; i < len; i++) {
		acc = acc << 8 | p[i];
		bits += 8;
		while (bits >= SEXTET_BITS) {
			bits -= SEXTET_BITS;
			out[n++] = alphabet[acc >> bits & SEXTET_MASK];
		}
	}
	if (bits > 0)
		out[n++] = alphabet[acc << (SEXTET_BITS - bits) & SEXTET_MASK];
	out[n] = '\0';
	return n;
}
