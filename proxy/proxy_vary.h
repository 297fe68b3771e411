/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_VARY_H
#define PROXY_PROXY_VARY_H

/*
 * Vary: a response with Vary is stored as one variant of its key, "K\nID",
 * where ID is a digest of the request's values of the headers it varies
 * on (128 bits of HMAC-SHA-256, keyed with the key secret when there is
 * one); a marker at K names them. Each process remembers K's Vary
 * (px->vary) so that later requests go straight to their variant.
 *
 * No request can be made to share another's variant: the digest has no
 * collisions anyone can compute. With a key secret, an ID in Redis also
 * cannot be tested against a guessed credential (Authorization,
 * Proxy-Authorization, Cookie). On a per-credential route the key holds
 * the credential already, and the fetch sends no other: those fields are
 * left out of ID (a Vary on them alone makes no variants).
 */


#include "cache/cache.h"
#include "proxy/proxy_flow.h"

struct hlist;

struct cache_entry;
struct conf;
struct conf_route;
struct proxy;

/* How a route's variant ids hold credentials. Its pointers are c's and
 * rt's: made afresh for each use. */
struct vary_keying {
	const void	*secret;	/* keys the variant id (the key
					 * secret); NULL: none */
	size_t		 secret_len;
	const char	*keyed_header;	/* per-credential: its credential
					 * header (with Authorization,
					 * Proxy-Authorization and Cookie)
					 * left out; NULL: none */
};

/* The keying of route rt (NULL: none) under configuration c. */
void	vary_keying(const struct conf *c, const struct conf_route *rt,
	    struct vary_keying *vk);
/* Does spec name any header that tells variants apart? */
int	vary_relevant(const char *spec, const struct vary_keying *vk);
/* The variant id of a request with these headers for a response that
 * varies on spec. 0, or -1 (out is "") when its digest failed. */
int	vary_id(const char *spec, const struct hlist *headers,
	    const struct vary_keying *vk, char out[CACHE_VARIANT_MAX])
	    __attribute__((warn_unused_result));
/* Remembers what key's responses vary on (bounded). */
void	vary_learn(struct proxy *px, const char *key, const char *spec);
/* Appends "\nID" to key for a request with these headers on route rt,
 * when key is known to vary. 0, or -1 when the id could not be made. */
int	vary_key(struct proxy *px, const struct conf_route *rt,
	    char key[FLOW_KEY_MAX + 1], const struct hlist *headers)
	    __attribute__((warn_unused_result));
/* Does e only say what its key's responses vary on? */
int	vary_is_marker(const struct cache_entry *e);
/* Makes key (K, or a variant of K) the variant of K for a request with
 * these headers on route rt, for a response that varies on spec. */
int	vary_variant(struct proxy *px, const struct conf_route *rt,
	    char key[FLOW_KEY_MAX + 1], const char *spec,
	    const struct hlist *headers) __attribute__((warn_unused_result));
/* Forgets every key's Vary (px->vary is freed). */
void	vary_free(struct proxy *px);

#endif
