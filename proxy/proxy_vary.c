/* SPDX-License-Identifier: MIT */
/*
 * Vary: the variant id of a request, and what each key of this process is
 * known to vary on (px->vary). Calls common/dict.c, common/fields.c (which
 * fields are credentials), and cache/ for the digest.
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


#include "cache/cache_entry.h"
#include "cache/cache_keyrule.h"
#include "common/dict.h"
#include "common/fields.h"
#include "common/hlist.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_vary.h"

#define VARY_KEYS_MAX		100000	/* keys whose Vary a process remembers */
#define VARIANT_LABEL		"variant"	/* what the digest is of */

_Static_assert(CACHE_VARIANT_MAX == KEYRULE_DIGEST_HEX + 1,
    "a variant id is a digest's hex digits");

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
 * Accept-Encoding never does: a key holds one body in one coding and
 * each client gets it in the coding it takes (proxy_coding.h). Nor does, on a per-credential route, a credential:
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

/*
 * The id is 128 bits of HMAC-SHA-256 over each name (lower-cased) and its
 * values, every part length-prefixed (cache_keyrule.c), keyed with the
 * key secret when there is one: no two requests' fields can be made to
 * share a variant, as an FNV hash once let them (its collisions can be
 * computed), and with a secret no id can be tested against a guessed
 * credential. Every instance of a fleet computes the same id: their key
 * secret is one (or none).
 */
int
vary_id(const char *spec, const struct hlist *headers,
    const struct vary_keying *vk, char out[CACHE_VARIANT_MAX])
{
	struct keyrule_digest d;
	const struct hfield *kv;
	const char *name;
	char lower[VARY_SPEC_MAX + 1];
	size_t n;

	keyrule_digest_init(&d, vk->secret != NULL ? vk->secret : "",
	    vk->secret != NULL ? vk->secret_len : 0, VARIANT_LABEL);
	while ((name = vary_next(&spec, &n, vk)) != NULL) {
		lower[0] = 'N';		/* a name, then 'V' each value */
		for (size_t i = 0; i < n && i < VARY_SPEC_MAX; i++)
			lower[i + 1] = (char)tolower((unsigned char)name[i]);
		keyrule_digest_part(&d, lower, 1 + (n < VARY_SPEC_MAX ? n :
		    VARY_SPEC_MAX));
		HL_FOREACH(kv, headers) {
			if (!name_is(name, n, kv->key))
				continue;
			keyrule_digest_part(&d, "V", 1);
			keyrule_digest_part(&d, kv->value, strlen(kv->value));
		}
	}
	return keyrule_digest_hex(&d, out);
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

int
vary_key(struct proxy *px, const struct conf_route *rt,
    char key[FLOW_KEY_MAX + 1], const struct hlist *headers)
{
	const char *spec = dict_get(px->vary, key);

	if (spec != NULL && strchr(key, '\n') == NULL)
		return vary_variant(px, rt, key, spec, headers);
	return 0;
}

int
vary_is_marker(const struct cache_entry *e)
{
	return hl_find(&e->headers, VARY_MARKER) != NULL;
}

int
vary_variant(struct proxy *px, const struct conf_route *rt,
    char key[FLOW_KEY_MAX + 1], const char *spec,
    const struct hlist *headers)
{
	char id[CACHE_VARIANT_MAX];
	size_t base = strcspn(key, "\n");
	struct vary_keying vk;

	vary_keying(px->conf, rt, &vk);
	if (vary_id(spec, headers, &vk, id) == -1)
		return -1;
	snprintf(key + base, FLOW_KEY_MAX + 1 - base, "\n%s", id);
	return 0;
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
