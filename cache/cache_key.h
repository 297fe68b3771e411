/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_KEY_H
#define CACHE_CACHE_KEY_H

/*
 * The method-independent cache key of a request: host, path and query,
 * normalised and bounded. Bytes outside a safe set are percent-encoded
 * (so '{' and '}' never appear and Redis hash tags stay intact); keys
 * longer than CACHE_KEY_MAX end in a hash of the whole key.
 */

#include <stddef.h>
#include <stdint.h>

#define CACHE_KEY_MAX	512
/* The least room a key may be built in (cache_key_build_within). */
#define CACHE_KEY_MIN	128
/* A variant key is "K\nID": the key K it varies, and a variant id. */
#define CACHE_VARIANT_SEP	'\n'

/* Writes the key (NUL-terminated, at most CACHE_KEY_MAX bytes) to out,
 * which must hold CACHE_KEY_MAX + 1 bytes. host may be NULL or empty;
 * query may be NULL. Host is lower-cased and loses a trailing ":80". */
void	cache_key_build(const char *host, const char *path, const char *query,
	    char out[CACHE_KEY_MAX + 1]);

/* The same in cap bytes (CACHE_KEY_MIN..CACHE_KEY_MAX; out holds cap + 1),
 * for a key that other parts follow (cache_keyrule.h). */
void	cache_key_build_within(const char *host, const char *path,
	    const char *query, size_t cap, char *out);

/* A copy of query in the key's normal form (percent-encoding as the key
 * writes it). NULL on no memory. */
char	*cache_query_normalised(const char *query);

/* A copy of query with its '&'-separated parameters in bytewise order, for
 * routes whose key ignores parameter order. NULL on no memory. */
char	*cache_query_sorted(const char *query);

/* cache_key_build(), with the query's parameters sorted first when
 * sort_query is set (a route's sort_query). 0, or -1 on no memory. */
int	cache_key_for(const char *host, const char *path, const char *query,
	    int sort_query, char out[CACHE_KEY_MAX + 1]);
/* The same in cap bytes (see cache_key_build_within). */
int	cache_key_for_within(const char *host, const char *path,
	    const char *query, int sort_query, size_t cap, char *out);

/* The Redis Cluster hash slot of a Redis key or shard channel: CRC16 of
 * its {hash tag} (its first non-empty {...}), else of the whole name,
 * modulo CACHE_KEY_SLOTS (the Redis Cluster specification). */
#define CACHE_KEY_SLOTS	16384
unsigned cache_key_slot(const char *name);

/* A key's hashes (util_hash()) for the near caches' tables: of the whole
 * key, and of its base (what precedes CACHE_VARIANT_SEP), so that a key
 * and its variants can share a chain. */
struct cache_key_hash {
	uint64_t	hash;
	uint64_t	base_hash;
	size_t		len;		/* of the whole key */
};
void	cache_key_hash(const char *key, struct cache_key_hash *kh);
/* Is key (key_len bytes, NUL-terminated) base itself or a variant of it
 * ("base\n...")? */
int	cache_key_covers(const char *base, size_t base_len, const char *key,
	    size_t key_len);

#endif
