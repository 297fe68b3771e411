/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: entry_decode() on any bytes. An input it accepts must
 * encode back to exactly the same bytes (the format has one encoding per
 * entry), and the decoded entry must be one entry_encode() accepts.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/cache_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cache_entry *e;
	struct evbuffer *out;
	char err[128];

	if ((e = entry_decode(data, size, err, sizeof(err))) == NULL)
		return 0;
	if ((out = evbuffer_new()) == NULL)
		abort();
	if (entry_encode(e, out) == -1) {
		fprintf(stderr, "a decoded entry does not encode\n");
		abort();
	}
	if (evbuffer_get_length(out) != size ||
	    memcmp(evbuffer_pullup(out, -1), data, size) != 0) {
		fprintf(stderr, "re-encoding gives %zu bytes that differ from the "
		    "%zu decoded\n", evbuffer_get_length(out), size);
		abort();
	}
	evbuffer_free(out);
	entry_unref(&e);
	return 0;
}
