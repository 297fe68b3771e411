/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the JSON reader (common/json.c). Whatever the input,
 * it is read or refused with a reason, never past its end; a document it
 * reads has a canonical text that reads again to the same text (one text
 * per value), and json_write() cuts as snprintf does.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ERR_MAX	256

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "%s\n", what);
		abort();
	}
}

/* Walks v as a caller would: every member found again by its name. */
static void
walk(const struct json_value *v)
{
	const struct json_value *kid;
	const char *name;
	size_t namelen;

	for (size_t i = 0; i < json_len(v); i++) {
		kid = json_index(v, i, &name, &namelen);
		check(kid != NULL, "an index within json_len() is NULL");
		if (json_type(v) == JSON_OBJECT)
			check(json_member(v, name, namelen) == kid,
			    "a member is not found by its own name");
		walk(kid);
	}
	check(json_index(v, json_len(v), NULL, NULL) == NULL,
	    "an index past json_len() is not NULL");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[ERR_MAX], *text, *again, cut[8];
	struct json *doc, *doc2;
	size_t n, n2;

	err[0] = '\0';
	if ((doc = json_parse((const char *)data, size, err,
	    sizeof(err))) == NULL) {
		check(err[0] != '\0', "refused without a reason");
		return 0;
	}
	walk(json_root(doc));
	n = json_write(json_root(doc), NULL, 0);
	if ((text = malloc(n + 1)) == NULL)
		abort();
	check(json_write(json_root(doc), text, n + 1) == n, "length differs");
	check(strlen(text) <= n, "text longer than said");
	check(json_write(json_root(doc), cut, sizeof(cut)) == n &&
	    strlen(cut) == (n < sizeof(cut) ? n : sizeof(cut) - 1),
	    "a cut text is not cut as snprintf cuts");
	doc2 = json_parse(text, n, err, sizeof(err));
	check(doc2 != NULL, "the canonical text does not read");
	n2 = json_write(json_root(doc2), NULL, 0);
	if ((again = malloc(n2 + 1)) == NULL)
		abort();
	json_write(json_root(doc2), again, n2 + 1);
	check(n2 == n && memcmp(text, again, n) == 0,
	    "the canonical text of the canonical text differs");
	free(again);
	free(text);
	json_free(&doc2);
	json_free(&doc);
	return 0;
}
