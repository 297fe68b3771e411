/*
 * Tags that responses name beyond Surrogate-Key: the objects of a stored
 * GraphQL query (graphql = on), and what a successful write's answer
 * purges: its route's purge_header fields and, for a GraphQL mutation,
 * the objects it returns (proxy_tags.h).
 *
 * A GraphQL object with a __typename and an id is the tag "Type:id" (the
 * id escaped as a change feed escapes values: every byte outside A-Z a-z
 * 0-9 - . _ ~ as %XX). A stored response is tagged with its first
 * GRAPHQL_TAGS_MAX distinct objects, "Type:+" for the types of any more
 * (its objects not named one by one), and "Type" for each type it holds
 * within a list. A mutation's answer purges "Type:id" and "Type:+" for
 * each object it returns (past GRAPHQL_TAGS_MAX of them, the type's whole
 * family "Type:*"), and with graphql_purge_lists "Type" too; one that
 * reports errors purges nothing.
 *
 * Calls cache/ (the GraphQL reader, purges by tag). Called by
 * proxy_refresh.c (a store's tags) and proxy_pass.c (a write's purges).
 */

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/cache.h"
#include "cache/cache_graphql.h"
#include "common/hlist.h"
#include "common/log.h"
#include "proxy/proxy.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_tags.h"

#define LIST_SUFFIX	"+"	/* "Type:+": more of Type than were named */
#define TAGS_ROOM	(WRITE_PURGE_MAX + GRAPHQL_TYPES_MAX * 3)
#define HEADER_SEPS	" \t,"

/* Distinct tags, in the order they came. */
struct tags {
	char	 v[TAGS_ROOM][CACHE_TAG_MAX + 1];
	int	 n;
	int	 objects;	/* Type:id tags among them */
	char	 types[GRAPHQL_TYPES_MAX][GRAPHQL_NAME_MAX + 1];
	int	 ntypes;
	int	 lists;		/* a mutation: purge its types' lists */
	int	 mutation;
};

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* "Type:" then the escaped id, into out. 0, or -1 if it is too long. */
static int
object_tag(const char *type, size_t tlen, const char *id, size_t idlen,
    char out[CACHE_TAG_MAX + 1])
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = tlen + 1;

	if (o >= CACHE_TAG_MAX)
		return -1;
	memcpy(out, type, tlen);
	out[tlen] = ':';
	for (size_t i = 0; i < idlen; i++) {
		unsigned char c = (unsigned char)id[i];

		if (o + 3 > CACHE_TAG_MAX)
			return -1;
		if (unreserved(c)) {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '%';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 0xf];
	}
	out[o] = '\0';
	return 0;
}

static void
add(struct tags *t, const char *tag)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->v[i], tag) == 0)
			return;
	if (t->n < TAGS_ROOM && tag[0] != '\0' && strlen(tag) <= CACHE_TAG_MAX)
		snprintf(t->v[t->n++], CACHE_TAG_MAX + 1, "%s", tag);
}

/* "Type" SUFFIX (":+", ":*", or ""). */
static void
add_type_tag(struct tags *t, const char *type, size_t tlen, const char *suffix)
{
	char tag[CACHE_TAG_MAX + 1];

	snprintf(tag, sizeof(tag), "%.*s%s", (int)tlen, type, suffix);
	add(t, tag);
}

/* Notes a type; 1 if it was new. */
static int
note_type(struct tags *t, const char *type, size_t tlen)
{
	for (int i = 0; i < t->ntypes; i++)
		if (strlen(t->types[i]) == tlen &&
		    memcmp(t->types[i], type, tlen) == 0)
			return 0;
	if (t->ntypes == GRAPHQL_TYPES_MAX)
		return 0;
	snprintf(t->types[t->ntypes++], GRAPHQL_NAME_MAX + 1, "%.*s",
	    (int)tlen, type);
	return 1;
}

static void
on_object(const char *type, size_t tlen, const char *id, size_t idlen,
    int listed, void *arg)
{
	struct tags *t = arg;
	char tag[CACHE_TAG_MAX + 1];
	int fits = object_tag(type, tlen, id, idlen, tag) == 0;
	int before = t->n;

	if (note_type(t, type, tlen) && t->mutation)
		add_type_tag(t, type, tlen, ":" LIST_SUFFIX);
	if (t->mutation && t->lists)
		add_type_tag(t, type, tlen, "");
	else if (!t->mutation && listed)
		add_type_tag(t, type, tlen, "");
	if (fits && t->objects < GRAPHQL_TAGS_MAX) {
		add(t, tag);
		t->objects += t->n > before;
		return;
	}
	/* Past the bound (or an id too long to name): the type as a whole. */
	add_type_tag(t, type, tlen, t->mutation ? ":" CACHE_TAG_FAMILY :
	    ":" LIST_SUFFIX);
}

int
graphql_response_tags(const char *body, size_t len,
    void (*fn)(const char *tag, void *arg), void *arg)
{
	static struct tags t;	/* large: off the stack; one loop */

	memset(&t, 0, sizeof(t));
	if (graphql_objects(body, len, on_object, &t) <= 0)
		return 0;
	for (int i = 0; i < t.n; i++)
		fn(t.v[i], arg);
	return t.n;
}

/* ---- a write's purges ------------------------------------------------ */

/* The tags of rt's purge_header fields in headers: the one place this
 * file reads a response's header. */
static void
header_tags(const struct conf_route *rt, const struct hlist *headers,
    struct tags *t)
{
	char names[CONF_PURGE_HEADER_MAX], tag[CACHE_TAG_MAX + 1];
	const struct hfield *h;

	snprintf(names, sizeof(names), "%s", rt->purge_header);
	HL_FOREACH(h, headers) {
		size_t nlen = strlen(h->key);
		const char *p = strcasestr(names, h->key);

		if (p == NULL || (p != names && p[-1] != ' ') ||
		    (p[nlen] != '\0' && p[nlen] != ','))
			continue;
		for (p = h->value; *(p += strspn(p, HEADER_SEPS)) != '\0';) {
			size_t n = strcspn(p, HEADER_SEPS);

			if (n <= CACHE_TAG_MAX && t->n < WRITE_PURGE_MAX) {
				snprintf(tag, sizeof(tag), "%.*s", (int)n, p);
				add(t, tag);
			}
			p += n;
		}
	}
}

static void
on_write_purged(int64_t purged, int ok, void *arg)
{
	(void)purged;
	(void)arg;
	if (!ok)
		log_warn("a write's tag purge did not reach every entry (redis "
		    "failed)");
}

/* A mutation's objects: 0 (none when it reports errors: it changed
 * nothing we can vouch for), or -1 when its body is not there whole. */
static int
mutation_tags(const struct conf_route *rt, struct evbuffer *body,
    int partial, struct tags *t)
{
	size_t len = evbuffer_get_length(body);
	const char *text = len > 0 ? (const char *)evbuffer_pullup(body, -1) :
	    NULL;

	if (partial || text == NULL)
		return -1;
	if (graphql_errors(text, len))
		return 0;
	t->mutation = 1;
	t->lists = rt->graphql_purge_lists;
	return graphql_objects(text, len, on_object, t) < 0 ? -1 : 0;
}

int
write_purge(struct proxy *px, const struct conf_route *rt, int route,
    const char *uri, const struct upstream_response *resp, int mutation)
{
	static struct tags t;	/* large: off the stack; one loop */
	int rc = 0;

	memset(&t, 0, sizeof(t));
	if (rt->purge_header[0] != '\0')
		header_tags(rt, &resp->headers, &t);
	if (mutation && mutation_tags(rt, resp->body, resp->body_partial, &t) ==
	    -1)
		rc = -1;
	for (int i = 0; i < t.n; i++) {
		if (cache_purge_tag(px->cache, t.v[i], 1, on_write_purged,
		    NULL) != PURGE_STARTED)
			log_warn("%s: a write could not purge tag %s (redis "
			    "unavailable, or too many purges run)", uri,
			    t.v[i]);
		else
			STAT_INC(px->stats, route, write_tag_purges);
	}
	if (t.n > 0)
		log_info("%s: the write's answer purged %d tag%s", uri, t.n,
		    t.n == 1 ? "" : "s");
	return rc == -1 ? -1 : t.n;
}
