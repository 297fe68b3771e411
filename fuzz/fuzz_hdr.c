/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the response and request header rules of
 * proxy/proxy_hdr.c, which read what the origin and clients send.
 *
 * Input: one flag byte, then "Name: value" lines; the lines before the
 * first empty line are the origin's response headers, those after it a
 * client's request headers. The flag byte picks origin_cache_control,
 * an Authorization header and the status. The freshness found must be
 * non-negative and bounded, and only storable answers have a lifetime.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>


#include "common/hlist.h"
#include "conf/conf.h"
#include "proxy/proxy_hdr.h"

#define NOW_MS		INT64_C(1700000000000)
#define LIFETIME_MAX	(INT64_C(1) << 53)	/* far past any real date */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int statuses[] = { 200, 203, 204, 206, 301, 304, 404, 410, 500 };

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "header rules break: %s\n", what);
		abort();
	}
}

/* Adds "Name: value" lines of text[0..len) to q until an empty line;
 * returns how many bytes were used. */
static size_t
add_lines(struct hlist *q, const char *text, size_t len)
{
	size_t used = 0;

	while (used < len) {
		const char *line = text + used;
		const char *nl = memchr(line, '\n', len - used);
		size_t n = nl != NULL ? (size_t)(nl - line) : len - used;
		char *copy, *colon;

		used += n + (nl != NULL);
		if (n == 0)
			break;
		if ((copy = strndup(line, n)) == NULL)
			abort();
		if ((colon = strchr(copy, ':')) != NULL && colon != copy) {
			*colon++ = '\0';
			while (*colon == ' ')
				colon++;
			(void)hl_add(q, copy, colon);	/* may refuse */
		}
		free(copy);
	}
	return used;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hlist resp, req, copy;
	struct conf_route rt;
	struct freshness f;
	const char *why;
	size_t used;
	uint8_t flags;
	int status;

	if (size < 1)
		return 0;
	flags = data[0];
	hl_init(&resp);
	hl_init(&req);
	hl_init(&copy);
	used = add_lines(&resp, (const char *)data + 1, size - 1);
	add_lines(&req, (const char *)data + 1 + used, size - 1 - used);

	memset(&rt, 0, sizeof(rt));
	rt.prefix[0] = '/';
	rt.ttl_ms = 10000;
	rt.swr_ms = 60000;
	rt.stale_if_error_ms = (flags & 0x40) ? 3600000 : 0;
	rt.ttl_404_ms = (flags & 0x20) ? 30000 : 0;
	rt.origin_cache_control = flags & 1;
	status = statuses[(flags >> 2) % (sizeof(statuses) / sizeof(statuses[0]))];

	hdr_freshness(status, &resp, (flags & 2) != 0, &rt, NOW_MS, &f);
	check(f.ttl_ms >= 0 && f.swr_ms >= 0 && f.sie_ms >= 0, "negative lifetime");
	check(f.ttl_ms < LIFETIME_MAX && f.swr_ms < LIFETIME_MAX &&
	    f.sie_ms < LIFETIME_MAX, "lifetime past any date");
	check(f.storable || (f.ttl_ms == 0 && f.swr_ms == 0 && f.sie_ms == 0),
	    "a lifetime for what is not storable");
	check(f.storable || f.why != NULL, "refused without a reason");

	/* What is stored goes to every request: one rule says both. */
	check(!f.storable || hdr_shareable(&resp, (flags & 2) != 0, &rt, &why),
	    "stored but not shareable");
	(void)hdr_not_modified(&req, &resp);
	hdr_copy(&resp, &copy, HDR_DROP_LENGTH);
	hdr_merge_304(&copy, &req);
	if (hl_find(&resp, "Date") != NULL) {
		int64_t t = hdr_parse_date(hl_find(&resp, "Date"));
		char out[64];

		if (t >= 0) {
			hdr_format_date(t, out, sizeof(out));
			check(hdr_parse_date(out) == t - t % 1000,
			    "a formatted date does not parse back");
		}
	}
	hl_free(&resp);
	hl_free(&req);
	hl_free(&copy);
	return 0;
}
