/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: token verification (auth/jwt.c). The input is a
 * token, verified against a fixed key set of an HMAC secret and an
 * Ed25519 public key: whatever it holds, jwt_verify() answers a result
 * with a name, hands claims exactly when it says JWT_OK (which random
 * bytes cannot earn), and never reads past the token.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/jwt.h"
#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW	1700000000
#define ERR_MAX	256

/* A JWK Set: a 32-byte secret (kid "hs") and RFC 8037 A.2's Ed25519
 * public key (kid "ed"). */
static const char keyset[] = "{\"keys\":["
    "{\"kty\":\"oct\",\"kid\":\"hs\",\"k\":\"AyM1SysPpbyDfgZld3umj1qzKObwVM"
    "koqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow\"},"
    "{\"kty\":\"OKP\",\"kid\":\"ed\",\"crv\":\"Ed25519\","
    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}]}";

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
	static struct jwt_keys *keys;
	struct jwt_policy policy = { 60, NULL, NULL, NULL, 1 };
	struct json *claims = (struct json *)1;
	char err[ERR_MAX], *token, *set;
	enum jwt_result r;
	size_t len;

	if (keys == NULL && (keys = jwt_keys_parse("fuzz", keyset,
	    strlen(keyset), JWT_KEYS_JWKS, 1, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	/* A copy of its own size, so that a read past it is caught. */
	if ((token = malloc(size > 0 ? size : 1)) == NULL)
		abort();
	memcpy(token, data, size);
	r = jwt_verify(keys, token, size, NOW, &policy, &claims, err,
	    sizeof(err));
	check(strcmp(jwt_result_name(r), "unknown") != 0, "a nameless result");
	check((r == JWT_OK) == (claims != NULL), "claims do not follow");
	if (r == JWT_OK) {
		check(jwt_claims_canon(claims, "role tenant_id sub", &set, &len,
		    err, sizeof(err)) == 0, "no claim set");
		free(set);
		json_free(&claims);
	}
	free(token);
	return 0;
}
