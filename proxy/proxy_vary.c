/*
 * Vary: the variant id of a request, and what each key of this process is
 * known to vary on (px->vary). Calls common/dict.c, common/fields.c (which
 * fields are credentials), and cache/ for the digest of a credential's
 * value.
 */

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/http.h>

#include "cache/cache_entry.h"
#include "cache/cache_keyrule.h"
#include "common/dict.h"
#include "common/fields.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_vary.h"

#define VARY_KEYS_MAX		100000	/* keys whose Vary a process remembers */
/*
 * The variant id's hash is FNV-1a with this start, which is not FNV's own
 * offset basis (UTIL_HASH_INIT) but one digit short of it. It names every
 * stored variant: changing it renames them all, so it stays.
 */
#define VARIANT_HASH_INIT	1469598103934665603ULL
#define VARIANT_HASH_PRIME	1099511628211ULL

static int
name_is(const char *name, size_t n, const char *word)
{
	return strlen(word) == n && strncasecmp(name, word, n) == 0;
}

void
vary_keying(const struct conf *c, const struct conf_route *rt,
    struct vary_keying *vk)
{
	vk->secret = c->key_secret_len > 0 ? c->key_secret : NULL;
	vk->secret_len = c->key_secret_len;
	vk->keyed_header = rt != NULL &&
	    rt->cache_authorized == CONF_AUTHZ_CREDENTIAL ?
	    rt->credential_header : NULL;
}

/*
 * The next header name of a Vary list at *p that tells variants apart,
 * with its length in *n, or NULL at the end; *p moves past it.
 * Accept-Encoding never does: Corral asks the upstream for identity and
 * stores only that. Nor does, on a per-credential route, a credential:
 * the key holds the one the fetch sends.
 */
static const char *
vary_next(const char **p, size_t *n, const struct vary_keying *vk)
{
	const char *name;

	while (**p != '\0') {
		while (**p == ' ' || **p == '\t' || **p == ',')
			(*p)++;
		name = *p;
		*n = strcspn(name, ", \t");
		*p += *n;
		if (*n == 0 || name_is(name, *n, "Accept-Encoding"))
			continue;
		if (vk->keyed_header != NULL &&
		    (field_is_credential(name, *n) ||
		    name_is(name, *n, vk->keyed_header)))
			continue;
		return name;
	}
	return NULL;
}

int
vary_relevant(const char *spec, const struct vary_keying *vk)
{
	size_t n;

	return vary_next(&spec, &n, vk) != NULL;
}

static uint64_t
fnv(uint64_t h, const char *s, size_t n, int fold)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)(fold ? tolower((unsigned char)s[i]) : s[i]);
		h *= VARIANT_HASH_PRIME;
	}
	return h;
}

/* A credential's value as ID holds it: its HMAC's hex digits. */
static void
keyed_value(const struct vary_keying *vk, const char *v,
    char hex[KEYRULE_DIGEST_HEX + 1])
{
	struct keyrule_digest d;

	keyrule_digest_init(&d, vk->secret, vk->secret_len, "vary");
	keyrule_digest_part(&d, v, strlen(v));
	keyrule_digest_hex(&d, hex);
}

void
vary_id(const char *spec, const struct evkeyvalq *headers,
    const struct vary_keying *vk, char out[CACHE_VARIANT_MAX])
{
	uint64_t h = VARIANT_HASH_INIT;
	const struct evkeyval *kv;
	const char *name;
	char hex[KEYRULE_DIGEST_HEX + 1];
	size_t n;

	while ((name = vary_next(&spec, &n, vk)) != NULL) {
		int keyed = vk->secret != NULL && field_is_credential(name, n);

		h = fnv(h, name, n, 1);
		h = fnv(h, "\0", 1, 0);
		TAILQ_FOREACH(kv, headers, next) {
			if (!name_is(name, n, kv->key))
				continue;
			if (keyed) {
				keyed_value(vk, kv->value, hex);
				h = fnv(h, hex, strlen(hex), 0);
			} else {
				h = fnv(h, kv->value, strlen(kv->value), 0);
			}
			h = fnv(h, ",", 1, 0);
		}
		h = fnv(h, "\1", 1, 0);
	}
	snprintf(out, CACHE_VARIANT_MAX, "%016" PRIx64, h);
}

void
vary_learn(struct proxy *px, const char *key, const char *spec)
{
	char *old = dict_get(px->vary, key), *copy;

	if (old != NULL && strcmp(old, spec) == 0)
		return;
	if (old == NULL && dict_count(px->vary) >= VARY_KEYS_MAX)
		return;		/* still correct: one more lookup each time */
	if ((copy = strdup(spec)) == NULL)
		return;
	if (dict_set(px->vary, key, copy) == -1) {
		free(copy);
		return;
	}
	free(old);
}

void
vary_key(struct proxy *px, const struct conf_route *rt,
    char key[FLOW_KEY_MAX + 1], const struct evkeyvalq *headers)
{
	const char *spec = dict_get(px->vary, key);

	if (spec != NULL && strchr(key, '\n') == NULL)
		vary_variant(px, rt, key, spec, headers);
}

int
vary_is_marker(const struct cache_entry *e)
{
	return evhttp_find_header(&e->headers, VARY_MARKER) != NULL;
}

void
vary_variant(struct proxy *px, const struct conf_route *rt,
    char key[FLOW_KEY_MAX + 1], const char *spec,
    const struct evkeyvalq *headers)
{
	char id[CACHE_VARIANT_MAX];
	size_t base = strcspn(key, "\n");
	struct vary_keying vk;

	vary_keying(px->conf, rt, &vk);
	vary_id(spec, headers, &vk, id);
	snprintf(key + base, FLOW_KEY_MAX + 1 - base, "\n%s", id);
}

static void
free_spec(const char *key, void *value, void *arg)
{
	free(value);
}

void
vary_free(struct proxy *px)
{
	if (px->vary == NULL)
		return;
	dict_foreach(px->vary, free_spec, NULL);
	dict_free(&px->vary);
}
