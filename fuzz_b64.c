#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/base64.h"
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
	unsigned char *out = malloc(BASE64URL_DECODED_MAX(n) + 1);
	char *enc = malloc(BASE64URL_ENCODED_LEN(n) + 1);
	size_t ol = 0;
	if (base64url_decode((const char *)d, n, out, &ol) == 0) {
		char *re = malloc(BASE64URL_ENCODED_LEN(ol) + 1);
		size_t rl = base64url_encode(out, ol, re);
		if (rl != n || memcmp(re, d, n) != 0) abort();	/* canonical */
		free(re);
	}
	size_t el = base64url_encode(d, n, enc);
	if (el != BASE64URL_ENCODED_LEN(n)) abort();
	unsigned char *back = malloc(BASE64URL_DECODED_MAX(el) + 1);
	if (base64url_decode(enc, el, back, &ol) != 0 || ol != n || memcmp(back, d, n) != 0) abort();
	free(back); free(out); free(enc);
	return 0;
}
