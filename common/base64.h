/* SPDX-License-Identifier: MIT */
#ifndef COMMON_BASE64_H
#define COMMON_BASE64_H

/*
 * base64url (RFC 4648 5) without padding, as JOSE writes it (RFC 7515
 * 2). Pure: no allocation, no I/O.
 */

#include <stddef.h>

/* Characters of n bytes encoded; bytes at most that len characters
 * decode to. */
#define BASE64URL_ENCODED_LEN(n)	(((n) * 4 + 2) / 3)
#define BASE64URL_DECODED_MAX(len)	((len) * 3 / 4)

/*
 * Decodes in[0..len) to out (room for BASE64URL_DECODED_MAX(len)),
 * setting *outlen. Strict: only A-Z a-z 0-9 '-' '_', no '=' and no
 * whitespace, no length that leaves one character over (len % 4 == 1),
 * and the bits past the last whole byte zero, so that every byte string
 * has exactly one text. 0, or -1 when in is not such a text.
 */
int	base64url_decode(const char *in, size_t len, unsigned char *out,
	    size_t *outlen);
/* Encodes in[0..len) to out (room for BASE64URL_ENCODED_LEN(len) + 1,
 * with a NUL). Its length. */
size_t	base64url_encode(const void *in, size_t len, char *out);

#endif
