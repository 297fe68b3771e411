/*
 * Invalidations and purges: a key's entry and variants deleted (or, soft,
 * made stale), the tags' sets of keys, and purges by prefix (SCAN on every
 * primary) and by tag, each of which invalidates key by key. Every
 * invalidation tells every process, on the purge channel, to drop its
 * copies.
 *
 * Calls: cache_script.c, cache_op.c, cache_route.c (the primaries a purge
 * scans). Called from outside cache/ only.
 */

#include "cache/cache_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define SCAN_COUNT		"500"	/* keys a purge's SCAN looks at a time */
#define INVALIDATE_ROUNDS	3	/* variant lists read again when they grow */

/*
 * Builds an invalidation's next command: SMEMBERS of the key's variants
 * (members NULL), or the script that drops the entry and those variants.
 * The key is in op->key.
 */
static int
invalidate_args(struct cache_op *op, const redisReply *members)
{
	struct cache *c = op->cache;
	const char *key = op->key;
	char name[REDIS_KEY_MAX], variant[CACHE_KEY_MAX + CACHE_VARIANT_MAX + 2];
	char numkeys[24];
	size_t nv = 0;
	int failed = 0;

	op_clear_args(op);
	if (members == NULL) {
		script_use(op, SCRIPT_NONE);
		op_key_name(name, sizeof(name), c, key, "variants");
		failed |= op_argstr(op, "SMEMBERS");
		failed |= op_argstr(op, name);
		return failed ? -1 : 0;
	}
	if (members->type != REDIS_REPLY_ARRAY)
		return -1;
	for (size_t i = 0; i < members->elements; i++)
		if (members->element[i]->type == REDIS_REPLY_STRING &&
		    members->element[i]->len < CACHE_VARIANT_MAX)
			nv++;
	script_use(op, op->soft ? SCRIPT_SOFTEN : SCRIPT_INVALIDATE);
	snprintf(numkeys, sizeof(numkeys), "%zu", 2 + nv);
	failed |= op_argstr(op, numkeys);
	op_key_name(name, sizeof(name), c, key, "entry");
	failed |= op_argstr(op, name);
	op_key_name(name, sizeof(name), c, key, "variants");
	failed |= op_argstr(op, name);
	for (size_t i = 0; i < members->elements; i++) {
		const redisReply *m = members->element[i];

		if (m->type != REDIS_REPLY_STRING || m->len >= CACHE_VARIANT_MAX)
			continue;
		snprintf(variant, sizeof(variant), "%s\n%s", key, m->str);
		op_key_name(name, sizeof(name), c, variant, "entry");
		failed |= op_argstr(op, name);
	}
	failed |= op_argstr(op, c->purge_channel);
	failed |= op_argstr(op, key);
	if (op->soft) {
		char now[24];

		snprintf(now, sizeof(now), "%" PRId64, util_now_ms());
		return failed | op_argstr(op, now) ? -1 : 0;
	}
	for (size_t i = 0; i < members->elements; i++) {
		const redisReply *m = members->element[i];

		if (m->type == REDIS_REPLY_STRING && m->len < CACHE_VARIANT_MAX)
			failed |= op_arg(op, m->str, m->len);
	}
	return failed ? -1 : 0;
}

/*
 * An invalidation's next command: with the variants known, the script
 * that drops them; when a variant joined meanwhile (-1), the set read
 * again. A caller answered already (a timeout) still has the script run
 * after the set read, as one command would.
 */
static int
on_invalidate_step(struct cache_op *op, const redisReply *reply)
{
	if (op->script == SCRIPT_NONE)
		return invalidate_args(op, reply) == -1 ||
		    op_send(op) == -1 ? -1 : 1;
	if (!op->finished && reply->type == REDIS_REPLY_INTEGER &&
	    reply->integer < 0 && ++op->rounds < INVALIDATE_ROUNDS)
		return invalidate_args(op, NULL) == -1 ||
		    op_send(op) == -1 ? -1 : 1;
	return 0;
}

/* Invalidates (soft: softens) key's entry and its variants. */
static struct cache_op *
purge_key(struct cache *c, const char *key, int soft, fence_cb *cb,
    void *arg)
{
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, key, op_fence_reply, arg)) == NULL)
		return NULL;
	op->on_step = on_invalidate_step;
	op->cb.fence = cb;
	op->soft = soft;
	failed |= (op->key = strdup(key)) == NULL;
	failed |= failed || invalidate_args(op, NULL) == -1;
	return op_start(op, failed);
}

struct cache_op *
cache_invalidate(struct cache *c, const char *key, fence_cb *cb, void *arg)
{
	return purge_key(c, key, 0, cb, arg);
}

struct cache_op *
cache_soften(struct cache *c, const char *key, fence_cb *cb, void *arg)
{
	return purge_key(c, key, 1, cb, arg);
}

/* The cache key of a tag's set of keys: its own hash tag. */
static void
tag_key(char out[CACHE_TAG_MAX + 8], const char *tag)
{
	snprintf(out, CACHE_TAG_MAX + 8, "tag:%.*s", CACHE_TAG_MAX, tag);
}

int
cache_tag(struct cache *c, const char *key, const char *tag,
    int64_t expire_at_ms)
{
	char name[CACHE_TAG_MAX + 8], set[REDIS_KEY_MAX], px[24];
	struct cache_op *op;
	int failed = 0;

	tag_key(name, tag);
	if ((op = op_new(c, name, op_fence_reply, NULL)) == NULL)
		return -1;
	op->cb.fence = NULL;
	script_use(op, SCRIPT_TAG);
	op_key_name(set, sizeof(set), c, name, "keys");
	expire_at_ms -= util_now_ms();
	snprintf(px, sizeof(px), "%" PRId64, expire_at_ms > 0 ? expire_at_ms : 1);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, set);
	failed |= op_argstr(op, key);
	failed |= op_argstr(op, px);
	return op_start(op, failed) != NULL ? 0 : -1;
}

/*
 * A purge by prefix: on every primary in turn, SCAN for the entries whose
 * key starts with it, and invalidate each, until that node's cursor comes
 * back to 0. It owns itself and reports once. It names its nodes by
 * address, so a node that leaves the map meanwhile fails it.
 */
struct purge {
	struct cache	*cache;
	char		 pattern[REDIS_KEY_MAX * 2];
	size_t		 head;		/* strlen("<prefix>{") */
	int		 soft;		/* mark stale instead of deleting */
	int		 pending;	/* a tag's purges not yet answered */
	int		 ok;
	int64_t		 found;
	char		 nodes[CACHE_NODES_MAX][CACHE_NODE_NAME_MAX];
	int		 nnodes;
	int		 at;		/* the node being scanned */
	purge_cb	*cb;
	void		*arg;
};

static void purge_scan(struct purge *pg, const char *cursor);

static void
purge_end(struct purge *pg, int ok)
{
	pg->cb(ok ? pg->found : -1, pg->arg);
	free(pg);
}

static void
on_purge_scan(redisAsyncContext *ac, void *r, void *privdata)
{
	struct purge *pg = privdata;
	redisReply *reply = r, *keys;
	char key[REDIS_KEY_MAX];

	if (pg->cache->closing) {
		free(pg);	/* nobody is left to tell */
		return;
	}
	if (reply == NULL ||
	    reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    reply->element[1]->type != REDIS_REPLY_ARRAY) {
		if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
			log_warn("redis: purge: %s", reply->str);
		purge_end(pg, 0);
		return;
	}
	keys = reply->element[1];
	for (size_t i = 0; i < keys->elements; i++) {
		const char *k = keys->element[i]->str;
		size_t len = keys->element[i]->len, tail = strlen("}:entry");

		if (len <= pg->head + tail || len - pg->head >= sizeof(key))
			continue;
		/* "<prefix>{K}:entry" -> K */
		snprintf(key, sizeof(key), "%.*s", (int)(len - pg->head - tail),
		    k + pg->head);
		if (purge_key(pg->cache, key, pg->soft, NULL, NULL) != NULL)
			pg->found++;
	}
	if (strcmp(reply->element[0]->str, "0") != 0) {
		purge_scan(pg, reply->element[0]->str);
	} else if (++pg->at < pg->nnodes) {
		purge_scan(pg, "0");
	} else {
		purge_end(pg, 1);
	}
}

static void
purge_scan(struct purge *pg, const char *cursor)
{
	struct node *nodes[CACHE_NODES_MAX], *n = NULL;
	int count = route_primaries(pg->cache->rt, nodes, CACHE_NODES_MAX);

	for (int i = 0; i < count && n == NULL; i++)
		if (strcmp(nodes[i]->name, pg->nodes[pg->at]) == 0)
			n = nodes[i];
	if (n == NULL || n->cmd == NULL || redisAsyncCommand(n->cmd,
	    on_purge_scan, pg, "SCAN %s MATCH %s COUNT %s", cursor,
	    pg->pattern, SCAN_COUNT) != REDIS_OK)
		purge_end(pg, 0);
}

int
cache_purge_prefix(struct cache *c, const char *prefix, int soft,
    purge_cb *cb, void *arg)
{
	struct node *nodes[CACHE_NODES_MAX];
	struct purge *pg;
	size_t n;
	int count;

	if (c->closing || !route_all_up(c->rt))
		return -1;
	if ((pg = calloc(1, sizeof(*pg))) == NULL)
		return -1;
	pg->cache = c;
	pg->soft = soft;
	pg->cb = cb;
	pg->arg = arg;
	count = route_primaries(c->rt, nodes, CACHE_NODES_MAX);
	for (int i = 0; i < count; i++)
		snprintf(pg->nodes[i], sizeof(pg->nodes[i]), "%s",
		    nodes[i]->name);
	pg->nnodes = count;
	n = (size_t)snprintf(pg->pattern, sizeof(pg->pattern), "%s{", c->prefix);
	pg->head = n;
	/* The prefix, glob-escaped, then anything, then the entry suffix. */
	for (const char *p = prefix; *p != '\0' && n + 12 < sizeof(pg->pattern);
	    p++) {
		if (strchr("*?[]\\", *p) != NULL)
			pg->pattern[n++] = '\\';
		pg->pattern[n++] = *p;
	}
	snprintf(pg->pattern + n, sizeof(pg->pattern) - n, "*}:entry");
	/* Reports through the loop, never from inside this call. */
	purge_scan(pg, "0");
	return 0;
}

/* One key of a tag purge is done: the purge answers once all are. */
static void
on_tag_key_purged(enum fence_result r, void *arg)
{
	struct purge *pg = arg;

	if (r == FENCE_ERROR)
		pg->ok = 0;
	if (--pg->pending == 0)
		purge_end(pg, pg->ok);
}

/* A purge by tag: the tag's set, on its own node, lists its keys. */
static void
on_members_reply(struct cache_op *op, redisReply *reply)
{
	struct purge *pg = op->arg;
	char name[CACHE_TAG_MAX + 8], set[REDIS_KEY_MAX];

	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
		purge_end(pg, 0);
		return;
	}
	pg->ok = 1;
	pg->pending = 1;	/* until every key is under way */
	for (size_t i = 0; i < reply->elements; i++) {
		const redisReply *m = reply->element[i];

		if (m->type == REDIS_REPLY_STRING && m->len <= CACHE_KEY_MAX +
		    CACHE_VARIANT_MAX && purge_key(pg->cache, m->str, pg->soft,
		    on_tag_key_purged, pg) != NULL) {
			pg->found++;
			pg->pending++;
		}
	}
	/* A hard purge leaves nothing for the set to name. */
	if (!pg->soft) {
		struct cache_op *del;

		tag_key(name, pg->pattern);
		if ((del = op_new(pg->cache, name, op_fence_reply, NULL)) !=
		    NULL) {
			del->cb.fence = NULL;
			op_key_name(set, sizeof(set), pg->cache, name, "keys");
			(void)op_start(del, op_argstr(del, "DEL") |
			    op_argstr(del, set));
		}
	}
	on_tag_key_purged(FENCE_OK, pg);	/* the one for the loop */
}

int
cache_purge_tag(struct cache *c, const char *tag, int soft, purge_cb *cb,
    void *arg)
{
	char name[CACHE_TAG_MAX + 8], set[REDIS_KEY_MAX];
	struct cache_op *op;
	struct purge *pg;

	if (strlen(tag) > CACHE_TAG_MAX || (pg = calloc(1, sizeof(*pg))) == NULL)
		return -1;
	pg->cache = c;
	pg->soft = soft;
	pg->cb = cb;
	pg->arg = arg;
	snprintf(pg->pattern, sizeof(pg->pattern), "%s", tag);	/* the tag */
	tag_key(name, tag);
	if ((op = op_new(c, name, on_members_reply, pg)) == NULL) {
		free(pg);
		return -1;
	}
	op_key_name(set, sizeof(set), c, name, "keys");
	if (op_start(op, op_argstr(op, "SMEMBERS") | op_argstr(op, set)) ==
	    NULL) {
		free(pg);
		return -1;
	}
	return 0;
}

void
cache_on_purge(struct cache *c, cache_purge_cb *on_purge)
{
	c->on_purge = on_purge;
}
