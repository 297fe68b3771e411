/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the strict reader of the client byte stream
 * (proxy/proxy_frame.c). The first byte seeds how the rest is split into
 * pieces. Whatever the split, the reader must decide as it does on one
 * piece (same status, same requests, the same read); and what it read,
 * written back canonical (tests/unit/frame_canon.h), is a fixed point:
 * read again, it is accepted and comes out unchanged.
 * The decision against an independent reference is checked on generated
 * requests in tests/unit/test_frame.c.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy_frame.h"
#include "tests/unit/frame_canon.h"

#define HEAD_MAX	512
#define BODY_MAX	2048
#define HEAD_SLACK	64	/* a canonical length line may be longer */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "frame reader: %s\n", what);
		abort();
	}
}

/* Feeds p in pieces whose sizes come from seed (0: one piece). */
static int
run(const char *p, size_t n, size_t head_max, unsigned seed, struct canon *o,
    uint64_t *requests)
{
	struct frame *f = frame_new(head_max, BODY_MAX);
	int status = 0;

	check(f != NULL, "out of memory");
	for (size_t off = 0; off < n && status == 0; ) {
		size_t k = n - off;

		if (seed != 0) {
			seed = seed * 1103515245u + 12345u;
			k = 1 + (seed >> 16) % 17;
			if (k > n - off)
				k = n - off;
		}
		if (canon_feed(f, p + off, k, o) == FRAME_REJECT) {
			status = frame_status(f);
			check(status >= 400 && status <= 505, "status");
			check(frame_reason(f)[0] != '\0', "reason");
		}
		off += k;
	}
	*requests = o->written;
	frame_free(&f);
	return status;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct canon whole = { 0 }, split = { 0 }, again = { 0 };
	uint64_t rw, rs, ra;
	int sw, ss;

	if (size < 1)
		return 0;
	sw = run((const char *)data + 1, size - 1, HEAD_MAX, 0, &whole, &rw);
	ss = run((const char *)data + 1, size - 1, HEAD_MAX, data[0] | 1u, &split,
	    &rs);
	check(sw == ss && rw == rs, "a split changes the decision");
	check(whole.out.len == split.out.len && (whole.out.len == 0 ||
	    memcmp(whole.out.p, split.out.p, whole.out.len) == 0), "a split changes the output");
	/* "name:value" becomes "name: value": a byte more a field at most. */
	check(whole.out.len <= 2 * size + rw * HEAD_SLACK, "output grows");

	/* Canonical: a fixed point of the reader. */
	check(run(whole.out.p, whole.out.len, 2 * HEAD_MAX + HEAD_SLACK, 0, &again,
	    &ra) == 0,
	    "its own output is refused");
	check(ra == rw, "its own output has other requests");
	check(again.out.len == whole.out.len && (whole.out.len == 0 ||
	    memcmp(again.out.p, whole.out.p, whole.out.len) == 0), "its own output changes");
	canon_free(&whole);
	canon_free(&split);
	canon_free(&again);
	return 0;
}
