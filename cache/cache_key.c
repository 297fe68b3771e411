/* SPDX-License-Identifier: MIT */
/*
 * Cache keys: built from a request, bounded and hashed, their Redis hash
 * slot, and the rules for variant keys. See cache_key.h.
 *
 * Calls nothing in cache/. Called by the near caches, the Redis layers
 * (a key's slot) and from outside cache/.
 */

#include "cache/cache_key.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/*
 * The key is written through a sink that keeps the first CACHE_KEY_MAX
 * bytes and hashes every byte, so an input of any size costs no memory.
 * A key that does not fit becomes its first KEY_PREFIX_LEN bytes, '#' and
 * KEY_HASH_HEX hex digits of a 128-bit hash of the whole key. '#' is
 * never left raw by the normalisation, so it marks exactly those keys.
 */

#define KEY_HASH_HEX	32
#define KEY_HASH_MARK	'#'
/* What a key of cap bytes keeps of its text when it ends in a hash. */
#define KEY_PREFIX_LEN(cap)	((cap) - 1 - KEY_HASH_HEX)
#define KEY_PORT_SUFFIX	":80"

/* Two independent 64-bit hashes: FNV-1a, and a multiply-xorshift. */
#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x00000100000001b3ULL
#define MIX_SEED	0x9e3779b97f4a7c15ULL
#define MIX_MUL		0xff51afd7ed558ccdULL

/* Which bytes may appear raw. */
#define SAFE_UNRESERVED	0x01	/* ALPHA DIGIT - . _ ~ */
#define SAFE_PATH	0x02	/* unreserved, /:@!$&'()*+,;= */
#define SAFE_QUERY	0x04	/* path and ? */
#define SAFE_HOST	0x08	/* unreserved, sub-delims, : [ ] */

struct sink {
	char		*out;
	size_t		 cap;	/* bytes out holds, less the NUL */
	size_t		 len;	/* bytes emitted, kept or not */
	uint64_t	 h1;
	uint64_t	 h2;
};

static const char hex_upper[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

static int
is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

static int
safe_class(unsigned char c)
{
	int cls = 0;

	if (is_alnum(c) || (c != '\0' && strchr("-._~", c) != NULL))
		return SAFE_UNRESERVED | SAFE_PATH | SAFE_QUERY | SAFE_HOST;
	if (c == '\0')
		return 0;
	if (strchr("!$&'()*+,;=", c) != NULL)
		cls |= SAFE_PATH | SAFE_QUERY | SAFE_HOST;
	if (c == ':')
		cls |= SAFE_PATH | SAFE_QUERY | SAFE_HOST;
	if (c == '/' || c == '@')
		cls |= SAFE_PATH | SAFE_QUERY;
	if (c == '?')
		cls |= SAFE_QUERY;
	if (c == '[' || c == ']')
		cls |= SAFE_HOST;
	return cls;
}

static unsigned char
to_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static uint64_t
fmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= MIX_MUL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static void
sink_init(struct sink *s, char *out, size_t cap)
{
	s->out = out;
	s->cap = cap;
	s->len = 0;
	s->h1 = FNV_OFFSET;
	s->h2 = MIX_SEED;
}

static void
emit(struct sink *s, unsigned char c)
{
	if (s->len < s->cap)
		s->out[s->len] = (char)c;
	s->len++;
	s->h1 = (s->h1 ^ c) * FNV_PRIME;
	s->h2 = (s->h2 ^ c) * MIX_MUL;
	s->h2 ^= s->h2 >> 29;
}

static void
emit_pct(struct sink *s, unsigned char c)
{
	emit(s, '%');
	emit(s, (unsigned char)hex_upper[c >> 4]);
	emit(s, (unsigned char)hex_upper[c & 0xf]);
}

static void
sink_finish(struct sink *s)
{
	uint64_t h[2];
	char *p;

	if (s->len <= s->cap) {
		s->out[s->len] = '\0';
		return;
	}
	h[0] = fmix64(s->h1 ^ (uint64_t)s->len);
	h[1] = fmix64(s->h2 + (uint64_t)s->len);
	p = s->out + KEY_PREFIX_LEN(s->cap);
	*p++ = KEY_HASH_MARK;
	for (int i = 0; i < 2; i++)
		for (int shift = 60; shift >= 0; shift -= 4)
			*p++ = hex_lower[(h[i] >> shift) & 0xf];
	*p = '\0';
	assert(p == s->out + s->cap);
}

/*
 * Percent-encoding normal form: %XX of an unreserved byte is decoded,
 * other %XX get uppercase hex, and bytes outside the safe class,
 * including a '%' that starts no valid %XX, are encoded.
 */
static void
emit_normalised(struct sink *s, const char *in, int safe)
{
	const unsigned char *p = (const unsigned char *)in;

	while (*p != '\0') {
		if (*p == '%') {
			int hi = util_hex_value(p[1]);
			int lo = hi == -1 ? -1 : util_hex_value(p[2]);

			if (lo == -1) {
				emit_pct(s, '%');
				p++;
				continue;
			}
			unsigned char c = (unsigned char)(hi << 4 | lo);
			if (safe_class(c) & SAFE_UNRESERVED)
				emit(s, c);
			else
				emit_pct(s, c);
			p += 3;
		} else if (safe_class(*p) & safe) {
			emit(s, *p);
			p++;
		} else {
			emit_pct(s, *p);
			p++;
		}
	}
}

/*
 * The host is lower-cased and loses a trailing ":80". Bytes that are not
 * host characters ('/', '?', '%', '{' ...) are encoded, so the host ends
 * at the first '/' of the key and cannot pose as part of a path.
 */
static void
emit_host(struct sink *s, const char *host)
{
	size_t len = strlen(host), sfx = strlen(KEY_PORT_SUFFIX);

	if (len >= sfx && strcmp(host + len - sfx, KEY_PORT_SUFFIX) == 0)
		len -= sfx;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = to_lower((unsigned char)host[i]);

		if (safe_class(c) & SAFE_HOST)
			emit(s, c);
		else
			emit_pct(s, c);
	}
}

void
cache_key_build(const char *host, const char *path, const char *query,
    char out[CACHE_KEY_MAX + 1])
{
	cache_key_build_within(host, path, query, CACHE_KEY_MAX, out);
}

void
cache_key_build_within(const char *host, const char *path, const char *query,
    size_t cap, char *out)
{
	struct sink s;

	assert(cap >= CACHE_KEY_MIN && cap <= CACHE_KEY_MAX);
	sink_init(&s, out, cap);
	if (host != NULL)
		emit_host(&s, host);
	/* The path always starts with '/': it separates host from path. */
	if (path == NULL || path[0] != '/')
		emit(&s, '/');
	if (path != NULL)
		emit_normalised(&s, path, SAFE_PATH);
	if (query != NULL && query[0] != '\0') {
		emit(&s, '?');
		emit_normalised(&s, query, SAFE_QUERY);
	}
	sink_finish(&s);
}

/*
 * By name only, and stably: "x=2&x=1" and "x=1&x=2" are different lists
 * to an origin that reads the repeated name in order. The parameters lie
 * in one buffer in their order, so their addresses break ties.
 */
static int
cmp_param(const void *a, const void *b)
{
	const char *pa = *(const char *const *)a, *pb = *(const char *const *)b;
	size_t na = strcspn(pa, "="), nb = strcspn(pb, "=");
	int c = strncmp(pa, pb, na < nb ? na : nb);

	if (c == 0 && na != nb)
		c = na < nb ? -1 : 1;
	if (c == 0)
		c = pa < pb ? -1 : pa > pb;
	return c;
}

/*
 * The parameters are put in the key's normal form first, so that "%62=1"
 * and "b=1" sort alike. Every byte can grow to three ("%XX").
 */
char *
cache_query_sorted(const char *query)
{
	size_t len = strlen(query), n = 1, i, off = 0;
	char *copy, *out, **params, *p;
	struct sink norm;

	for (i = 0; i < len; i++)
		if (query[i] == '&')
			n++;
	copy = malloc(len * 3 + 1);
	out = malloc(len * 3 + 1);
	params = calloc(n, sizeof(*params));
	if (copy == NULL || out == NULL || params == NULL) {
		free(copy);
		free(out);
		free(params);
		return NULL;
	}
	sink_init(&norm, copy, len * 3);
	emit_normalised(&norm, query, SAFE_QUERY);
	copy[norm.len] = '\0';
	for (i = 0, p = copy; i < n; i++) {
		params[i] = p;
		if ((p = strchr(p, '&')) != NULL)
			*p++ = '\0';
	}
	qsort(params, n, sizeof(*params), cmp_param);
	for (i = 0; i < n; i++) {
		size_t pl = strlen(params[i]);
		if (i > 0)
			out[off++] = '&';
		memcpy(out + off, params[i], pl);
		off += pl;
	}
	out[off] = '\0';
	free(params);
	free(copy);
	return out;
}

int
cache_key_for(const char *host, const char *path, const char *query,
    int sort_query, char out[CACHE_KEY_MAX + 1])
{
	return cache_key_for_within(host, path, query, sort_query,
	    CACHE_KEY_MAX, out);
}

int
cache_key_for_within(const char *host, const char *path, const char *query,
    int sort_query, size_t cap, char *out)
{
	char *sorted = NULL;

	if (sort_query && query != NULL &&
	    (sorted = cache_query_sorted(query)) == NULL)
		return -1;
	cache_key_build_within(host, path, sorted != NULL ? sorted : query,
	    cap, out);
	free(sorted);
	return 0;
}

char *
cache_query_normalised(const char *query)
{
	size_t len = strlen(query);
	char *out = malloc(len * 3 + 1);
	struct sink s;

	if (out == NULL)
		return NULL;
	sink_init(&s, out, len * 3);
	emit_normalised(&s, query, SAFE_QUERY);
	out[s.len] = '\0';
	return out;
}

/* CRC16-CCITT (XMODEM), as in the Redis Cluster specification. */
static uint16_t
crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) :
			    (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned
cache_key_slot(const char *name)
{
	const char *open = strchr(name, '{'), *close;

	if (open != NULL && (close = strchr(open + 1, '}')) != NULL &&
	    close > open + 1)
		return crc16(open + 1, (size_t)(close - open - 1)) %
		    CACHE_KEY_SLOTS;
	return crc16(name, strlen(name)) % CACHE_KEY_SLOTS;
}

void
cache_key_hash(const char *key, struct cache_key_hash *kh)
{
	size_t base = strcspn(key, (const char[]){ CACHE_VARIANT_SEP, '\0' });

	kh->len = base + strlen(key + base);
	kh->base_hash = util_hash_more(UTIL_HASH_INIT, key, base);
	kh->hash = util_hash_more(kh->base_hash, key + base, kh->len - base);
}

int
cache_key_covers(const char *base, size_t base_len, const char *key,
    size_t key_len)
{
	return key_len >= base_len && memcmp(key, base, base_len) == 0 &&
	    (key[base_len] == '\0' || key[base_len] == CACHE_VARIANT_SEP);
}
