/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: base64url (common/base64.c). A text that decodes
 * encodes back to itself (one text per byte string), every byte string
 * encodes to a text that decodes back to it, and the decoder never
 * writes past BASE64URL_DECODED_MAX().
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "%s\n", what);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *bytes = malloc(BASE64URL_DECODED_MAX(size) + 1);
	unsigned char *back = malloc(size + 1);
	char *text = malloc(BASE64URL_ENCODED_LEN(size) + 1);
	size_t n = 0, m = 0, len;

	if (bytes == NULL || back == NULL || text == NULL)
		abort();
	/* The input as a text. */
	if (base64url_decode((const char *)data, size, bytes, &n) == 0) {
		check(n <= BASE64URL_DECODED_MAX(size), "decoded past the max");
		len = base64url_encode(bytes, n, text);
		check(len == size && memcmp(text, data, size) == 0,
		    "a text that decodes does not encode back to itself");
	}
	/* The input as bytes. */
	len = base64url_encode(data, size, text);
	check(len == BASE64URL_ENCODED_LEN(size) && text[len] == '\0',
	    "an encoding of another length");
	check(base64url_decode(text, len, back, &m) == 0 && m == size &&
	    (size == 0 || memcmp(back, data, size) == 0),
	    "an encoding does not decode back");
	free(bytes);
	free(back);
	free(text);
	return 0;
}
