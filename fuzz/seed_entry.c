/* SPDX-License-Identifier: MIT */
/*
 * Writes valid encoded entries, one per file, into DIR: the seed corpus of
 * fuzz_entry (fuzz/corpus/entry). Run by `make fuzz-seeds`.
 *
 *	seed_entry DIR
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/cache_entry.h"

#define GEN	"0123456789abcdef0123456789abcdef"

struct seed {
	const char	*name;
	int		 status;
	const char	*headers[8][2];
	const char	*body;
	size_t		 body_len;
};

static const struct seed seeds[] = {
	{ "ok-json", 200, { { "Content-Type", "application/json" },
	    { "X-Origin-Count", "1" } }, "{\"n\": 1}", 8 },
	{ "empty-204", 204, { { "X-Empty", "" } }, NULL, 0 },
	{ "not-found", 404, { { "Content-Type", "text/plain" } }, "nope", 4 },
	{ "binary-body", 200, { { "Content-Type", "application/octet-stream" },
	    { "ETag", "\"abc\"" }, { "Last-Modified", "Tue, 15 Nov 1994 08:12:31 GMT" } },
	    "a\0b\xff\0\0\r\n\x7f\x80z", 11 },
	{ "redirect", 301, { { "Location", "https://example.test/x" },
	    { "Cache-Control", "max-age=60, stale-while-revalidate=30" },
	    { "Vary", "Accept" } }, NULL, 0 },
};

static int
write_seed(const char *dir, const struct seed *s, int64_t stored)
{
	struct cache_entry *e = entry_new();
	struct evbuffer *b = evbuffer_new(), *body = evbuffer_new();
	char path[4096];
	FILE *f;
	int rc = -1;

	if (e == NULL || b == NULL || body == NULL)
		goto done;
	memcpy(e->gen, GEN, sizeof(GEN));
	e->status = s->status;
	e->stored_ms = stored;
	e->fresh_until_ms = stored + 10000;
	e->stale_until_ms = e->fresh_until_ms + 60000;
	e->fetch_ms = 300;
	for (int i = 0; i < 8 && s->headers[i][0] != NULL; i++)
		if (entry_add_header(e, s->headers[i][0], s->headers[i][1]) == -1)
			goto done;
	if (s->body_len > 0 && (evbuffer_add(body, s->body, s->body_len) == -1 ||
	    entry_set_body(e, body) == -1))
		goto done;
	if (entry_encode(e, b) == -1)
		goto done;
	snprintf(path, sizeof(path), "%s/%s", dir, s->name);
	if ((f = fopen(path, "wb")) == NULL)
		goto done;
	if (fwrite(evbuffer_pullup(b, -1), 1, evbuffer_get_length(b), f) ==
	    evbuffer_get_length(b))
		rc = 0;
	if (fclose(f) != 0)
		rc = -1;
done:
	if (b != NULL)
		evbuffer_free(b);
	if (body != NULL)
		evbuffer_free(body);
	entry_unref(&e);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seed_entry DIR\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		if (write_seed(argv[1], &seeds[i], 1700000000000LL) == -1) {
			fprintf(stderr, "seed_entry: cannot write %s\n", seeds[i].name);
			return 1;
		}
	}
	return 0;
}
