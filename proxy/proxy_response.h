/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_RESPONSE_H
#define PROXY_PROXY_RESPONSE_H

/*
 * An origin's response as an entry: for a refresh to store, for a passed
 * request to be answered with. Its times are its caller's to set.
 */

#include <stdint.h>

struct cache_entry;
struct fetch_kept;
struct upstream_response;

/* resp as an entry of generation gen, fresh for no time yet, holding the
 * request body sent has (if not NULL); it takes resp's body. NULL on no
 * memory. */
struct cache_entry *response_entry(struct upstream_response *resp,
	    const char *gen, int64_t fetch_ms, const struct fetch_kept *sent);
/* base, still valid by a 304: its body, its headers updated by resp, as
 * an entry of generation gen. NULL on no memory. */
struct cache_entry *response_revalidated(const struct cache_entry *base,
	    const struct upstream_response *resp, const char *gen,
	    int64_t fetch_ms);

#endif
