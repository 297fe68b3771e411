/* SPDX-License-Identifier: MIT */
/*
 * Entries made from what the origin answered (proxy_response.h): a
 * response as it came, or the entry a 304 revalidated. Both are fresh
 * for no time yet: their times are the route's to set.
 */

#include <stdint.h>
#include <stdio.h>


#include "cache/cache_entry.h"
#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_response.h"
#include "proxy/proxy_vary.h"
#include "upstream/upstream.h"

struct cache_entry *
response_entry(struct upstream_response *resp, const char *gen,
    int64_t fetch_ms, const struct fetch_kept *sent)
{
	struct cache_entry *e;
	int64_t now = util_now_ms();

	if ((e = entry_new()) == NULL)
		return NULL;
	snprintf(e->gen, sizeof(e->gen), "%s", gen);
	e->status = resp->status;
	e->stored_ms = e->fresh_until_ms = e->stale_until_ms = now;
	e->fetch_ms = (uint32_t)(fetch_ms > UINT32_MAX ? UINT32_MAX : fetch_ms);
	hdr_copy(&resp->headers, &e->headers, HDR_DROP_LENGTH);
	while (hl_remove(&e->headers, VARY_MARKER) == 0 ||
	    hl_remove(&e->headers, CODING_MARKER) == 0)
		;	/* only Corral writes markers */
	(void)hl_compact(&e->headers);	/* kept long: no slack */
	if (entry_set_body(e, resp->body) == -1 || (sent != NULL &&
	    entry_set_request(e, sent->body, sent->body_len) == -1)) {
		entry_unref(&e);
		return NULL;
	}
	return e;
}

struct cache_entry *
response_revalidated(const struct cache_entry *base,
    const struct upstream_response *resp, const char *gen, int64_t fetch_ms)
{
	struct cache_entry *e;

	if ((e = entry_new()) == NULL)
		return NULL;
	snprintf(e->gen, sizeof(e->gen), "%s", gen);
	e->status = base->status;
	e->stored_ms = util_now_ms();
	e->fetch_ms = (uint32_t)(fetch_ms > UINT32_MAX ? UINT32_MAX : fetch_ms);
	hdr_copy(&base->headers, &e->headers, 0);
	hdr_merge_304(&e->headers, &resp->headers);
	if (entry_copy_body(e, base->body, base->body_len) == -1 ||
	    entry_set_request(e, base->request, base->request_len) == -1)
		entry_unref(&e);
	return e;
}
