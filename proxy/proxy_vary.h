#ifndef PROXY_PROXY_VARY_H
#define PROXY_PROXY_VARY_H

/*
 * Vary: a response with Vary is stored as one variant of its key, "K\nID",
 * where ID hashes the request's values of the headers it varies on; a
 * marker at K names them. Each process remembers K's Vary (px->vary) so
 * that later requests go straight to their variant.
 */

#include <event2/keyvalq_struct.h>

#include "cache/cache.h"
#include "proxy/proxy_flow.h"

struct cache_entry;
struct proxy;

/* Does spec name any header that tells variants apart? */
int	vary_relevant(const char *spec);
/* The variant id of a request with these headers for a response that
 * varies on spec. */
void	vary_id(const char *spec, const struct evkeyvalq *headers,
	    char out[CACHE_VARIANT_MAX]);
/* Remembers what key's responses vary on (bounded). */
void	vary_learn(struct proxy *px, const char *key, const char *spec);
/* Appends "\nID" to key for a request with these headers, when key is
 * known to vary. */
void	vary_key(struct proxy *px, char key[FLOW_KEY_MAX + 1],
	    const struct evkeyvalq *headers);
/* Does e only say what its key's responses vary on? */
int	vary_is_marker(const struct cache_entry *e);
/* Makes key (K, or a variant of K) the variant of K for a request with
 * these headers, for a response that varies on spec. */
void	vary_variant(char key[FLOW_KEY_MAX + 1], const char *spec,
	    const struct evkeyvalq *headers);
/* Forgets every key's Vary (px->vary is freed). */
void	vary_free(struct proxy *px);

#endif
