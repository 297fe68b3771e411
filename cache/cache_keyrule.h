/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_KEYRULE_H
#define CACHE_CACHE_KEYRULE_H

/*
 * What a route's key rules add to a request's URL key (cache_key.h), and
 * what they take out of it. Pure: same inputs, same key.
 *
 *	host/path?query|h=name:value,...|m=POST|b=DIGEST|c=DIGEST|j=DIGEST
 *
 * The query loses the names key_ignore_query lists (or keeps only those
 * key_query lists); then come, each only when it applies, the key_headers
 * values, the method of a cached POST, the digest of its body (b=, or g=
 * for a GraphQL query: its query text, operationName and variables) and
 * the digest of the credential (c=) or of the verified claim set (j=). '|' never appears raw in a URL key
 * (it is percent-encoded), so the URL part ends at the first one. Digests
 * are HMAC-SHA-256 keyed with the key secret, cut to KEYRULE_DIGEST_HEX
 * hex digits: a key reveals no credential and no body.
 *
 * Every key with parts after its URL is filed under its URL's tag
 * (keyrule_url_tag), so that a purge by URL reaches every credential's,
 * header value's and body's entry of that URL.
 */

#include <stddef.h>

#include "cache/cache_key.h"
#include "common/digest.h"

#define KEYRULE_SEP		'|'	/* between a key's parts */
#define KEYRULE_DIGEST_HEX	32	/* 128 bits of HMAC-SHA-256 */
#define KEYRULE_TAG_PREFIX	"url:"
#define KEYRULE_TAG_MAX		(sizeof(KEYRULE_TAG_PREFIX) - 1 + \
				 KEYRULE_DIGEST_HEX)
#define KEYRULE_HEADERS_MAX	16	/* key_headers names */
#define KEYRULE_VALUE_MAX	256	/* of a header value, normalised */
/* Parts longer than this (header values) are kept as a digest. */
#define KEYRULE_PARTS_MAX	(CACHE_KEY_MAX - CACHE_KEY_MIN)

/* The rule that made a key, most specific first when several did. */
enum key_rule {
	KEY_RULE_URL,		/* the URL alone */
	KEY_RULE_QUERY,		/* key_query or key_ignore_query */
	KEY_RULE_HEADERS,	/* key_headers */
	KEY_RULE_POST,		/* cache_post: the body's digest */
	KEY_RULE_GRAPHQL,	/* graphql: the query's digest */
	KEY_RULE_CREDENTIAL,	/* per-credential: the credential's digest */
	KEY_RULE_CLAIMS,	/* claims: the verified claim set's digest */
};

/* "url", "query-rules", "headers", "post", "graphql", "credential",
 * "claims". */
const char *keyrule_name(enum key_rule r);

/* Does list ("a, b, utm_*": names, or prefixes ending in '*') name the
 * query parameter name (len bytes, in the key's normal form)? */
int	keyrule_listed(const char *list, const char *name, size_t len);
/* query in the key's normal form less the parameters the rules drop:
 * those ignore lists, or with only (not NULL) all but those it lists.
 * NULL on no memory. */
char	*keyrule_query(const char *query, const char *ignore,
	    const char *only);
/* A header value as a key holds it: trimmed, each run of spaces and tabs
 * one space, cut to outlen - 1 bytes. The length written. */
size_t	keyrule_header_value(const char *in, char *out, size_t outlen);

/* A digest's hex digits: HMAC-SHA-256 over what keyrule_digest_part()
 * fed (each part length-prefixed, so parts never run together). hex
 * returns -1 (and hex holds nothing) when libcrypto failed: a key must
 * then not be made, never one shared by every failure. */
struct keyrule_digest {
	struct digest_hmac	 m;
};
void	keyrule_digest_init(struct keyrule_digest *d, const void *secret,
	    size_t secret_len, const char *label);
void	keyrule_digest_part(struct keyrule_digest *d, const void *p,
	    size_t len);
int	keyrule_digest_hex(struct keyrule_digest *d,
	    char hex[KEYRULE_DIGEST_HEX + 1]) __attribute__((warn_unused_result));
/* Lets go of a digest begun and not wanted. */
void	keyrule_digest_drop(struct keyrule_digest *d);

/* What a key is made of. The URL's query is taken as it is: filter it
 * first with keyrule_query(). */
struct key_parts {
	const char	*host;
	const char	*path;
	const char	*query;
	int		 sort_query;
	int		 nheaders;	/* key_headers names with a value */
	const char	*header_names[KEYRULE_HEADERS_MAX];
	const char	*header_values[KEYRULE_HEADERS_MAX];	/* raw */
	const void	*secret;	/* digests the header part if long */
	size_t		 secret_len;
	int		 post;		/* m=POST */
	const char	*body_digest;	/* b=, or NULL */
	const char	*graphql_digest;	/* g=, or NULL */
	const char	*credential_digest;	/* c=, or NULL */
	const char	*claims_digest;		/* j=, or NULL */
};

/* Writes the key (at most CACHE_KEY_MAX bytes) and, when parts follow its
 * URL, its URL's tag (else ""). 0, or -1 on no memory. */
int	keyrule_build(const struct key_parts *kp, char key[CACHE_KEY_MAX + 1],
	    char tag[KEYRULE_TAG_MAX + 1]);
/* The tag of the URL key url (keyrule_build()'s tag for its keys). 0,
 * or -1 when its digest failed. */
int	keyrule_url_tag(const char *url, char tag[KEYRULE_TAG_MAX + 1])
	    __attribute__((warn_unused_result));

#endif
