/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the replication stream's decoder (changes/pgoutput.c)
 * and the assembler behind it (changes/txn.c, changes/rules.c). The input
 * is a run of messages, each led by a 16-bit length; one decoder and one
 * assembler (with a rule) take them all, as a connection's stream would,
 * each message from a buffer of exactly its length, so that a read past
 * it is caught. Whatever comes, nothing is read out of bounds and an
 * output holds at most CHANGES_TXN_TAGS_MAX tags of at most
 * CHANGES_TAG_MAX bytes.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes/pgoutput.h"
#include "changes/txn.h"

#define ERR_MAX		256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct changes_rule rules[] = {
	{ "t", "t:{a} u:{b},{c} t", 0 },
};

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "pgoutput: %s\n", what);
		abort();
	}
}

static void
output(const struct txn *t)
{
	const struct changes_commit *c = txn_output(t);
	size_t i;

	check(c->n <= CHANGES_TXN_TAGS_MAX, "too many tags");
	for (i = 0; i < c->n; i++)
		check(strlen(c->tags[i]) <= CHANGES_TAG_MAX &&
		    c->tags[i][0] != '\0', "a tag too long or empty");
}

/* One message: as a CopyData frame, then as a pgoutput message. */
static void
one(struct pgoutput *d, struct txn *t, const uint8_t *msg, size_t len)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	struct pgoutput_frame fr;
	struct pgoutput_event ev;
	char err[ERR_MAX];

	check(copy != NULL, "out of memory");
	memcpy(copy, msg, len);
	if (pgoutput_frame(copy, len, &fr, err, sizeof(err)) == -1)
		check(strstr(err, "offset") != NULL, "a frame error without offset");
	if (pgoutput_decode(d, copy, len, &ev, err, sizeof(err)) == -1)
		check(strstr(err, "offset") != NULL, "an error without offset");
	else if (txn_add(t, &ev, err, sizeof(err)) == TXN_READY)
		output(t);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pgoutput *d = pgoutput_new();
	char err[ERR_MAX];
	struct txn *t = txn_new(rules, 1, 0, err, sizeof(err));
	size_t len;

	check(d != NULL && t != NULL, "no decoder");
	while (size >= 2) {
		len = (size_t)data[0] << 8 | data[1];
		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		one(d, t, data, len);
		data += len;
		size -= len;
	}
	pgoutput_free(&d);
	txn_free(&t);
	return 0;
}
