/*
 * Tags (Surrogate-Key, Cache-Tag): each tag's keys, in a sorted set on the
 * tag's own hash tag scored by when each key's entry expires (Redis's
 * clock), and the purges by tag. A store files its key and drops a few
 * keys whose entries are gone, so a set stays near its live keys however
 * long the tag is used. Every command touches at most TAG_BATCH members.
 *
 * A hard purge renames the set to the tag's snapshot (O(1)), takes
 * TAG_BATCH keys of it at a time and takes them out only once they are
 * invalidated; a purge that fails half-way, or a process that dies, leaves
 * the rest in the snapshot, and the next purge of the tag finishes it
 * first. A soft purge only reads (SCAN) every set of the tag. The set an
 * older version kept (a plain set, "keys") is purged the same way.
 *
 * In a cluster the tag's sets live on the tag's node and each key's entry
 * on its own: a set is read there, each key invalidated where it lives.
 *
 * Calls: cache_purge.c (the runner, the invalidations), cache_script.c,
 * cache_op.c. Called from outside cache/ only.
 */

#include "cache/cache_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define TAG_BATCH		500	/* keys a purge takes from a set at once */
#define TAG_BATCH_STR		"500"
#define TAG_PRUNE_MAX		"16"	/* gone keys a store drops at most */
#define TAG_WINDOW_MS		60000	/* the largest set is this recent */
#define TAG_SETS		3	/* what a soft purge scans, in order */

/* The tag's sets, in the order a soft purge reads them: the plain set an
 * older version kept, a hard purge's snapshot, the keys by expiry. */
static const char *const tag_sets[TAG_SETS] = { "keys", "purging", "members" };
static const int tag_set_sorted[TAG_SETS] = { 0, 1, 1 };

/* The cache key of a tag's sets: its own hash tag. */
static void
tag_key(char out[CACHE_TAG_MAX + 8], const char *tag)
{
	snprintf(out, CACHE_TAG_MAX + 8, "tag:%.*s", CACHE_TAG_MAX, tag);
}

/* The largest set a store met, in this window and the last. */
static void
tag_window(struct cache *c, int64_t members)
{
	int64_t now = util_now_ms();

	if (now - c->tag_window_ms >= TAG_WINDOW_MS) {
		c->tag_largest[1] = now - c->tag_window_ms < 2 * TAG_WINDOW_MS ?
		    c->tag_largest[0] : 0;
		c->tag_largest[0] = 0;
		c->tag_window_ms = now;
	}
	if (members > c->tag_largest[0])
		c->tag_largest[0] = members;
	c->counters.tag_set_largest = c->tag_largest[0] > c->tag_largest[1] ?
	    c->tag_largest[0] : c->tag_largest[1];
}

void
tag_figures(struct cache *c)
{
	tag_window(c, 0);
}

/* A store's tag script: {members now, members dropped}. */
static void
on_tag_reply(struct cache_op *op, redisReply *reply)
{
	struct cache *c = op->cache;

	if (reply == NULL)
		return;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    reply->element[0]->type != REDIS_REPLY_INTEGER ||
	    reply->element[1]->type != REDIS_REPLY_INTEGER) {
		c->counters.errors++;
		return;
	}
	tag_window(c, reply->element[0]->integer);
	c->counters.tag_members_pruned += (uint64_t)reply->element[1]->integer;
}

/* Files key under tag (cache_tag). 0 or -1. */
static int
tag_file(struct cache *c, const char *key, const char *tag,
    int64_t expire_at_ms)
{
	char name[CACHE_TAG_MAX + 8], set[REDIS_KEY_MAX], px[24], grace[24];
	struct cache_op *op;
	int failed = 0;

	tag_key(name, tag);
	if ((op = op_new(c, name, on_tag_reply, NULL)) == NULL)
		return -1;
	script_use(op, SCRIPT_TAG);
	op_key_name(set, sizeof(set), c, name, "members");
	expire_at_ms -= util_now_ms();
	snprintf(px, sizeof(px), "%" PRId64, expire_at_ms > 0 ? expire_at_ms : 1);
	/* A key is dropped once its entry has been gone longer than a
	 * command may take: the store ran before the tag, maybe slower. */
	snprintf(grace, sizeof(grace), "%" PRId64, c->timeout_ms);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, set);
	failed |= op_argstr(op, key);
	failed |= op_argstr(op, px);
	failed |= op_argstr(op, grace);
	failed |= op_argstr(op, TAG_PRUNE_MAX);
	return op_start(op, failed) != NULL ? 0 : -1;
}

int
cache_tag_family(const char *tag, char out[CACHE_TAG_MAX + 1])
{
	size_t n = strcspn(tag, ":");

	if (tag[n] != ':' || n + 2 > CACHE_TAG_MAX)
		return -1;
	snprintf(out, CACHE_TAG_MAX + 1, "%.*s:" CACHE_TAG_FAMILY, (int)n, tag);
	return strcmp(out, tag) == 0 ? -1 : 0;
}

int
cache_tag(struct cache *c, const char *key, const char *tag,
    int64_t expire_at_ms)
{
	char family[CACHE_TAG_MAX + 1];

	if (cache_tag_family(tag, family) == 0 &&
	    tag_file(c, key, family, expire_at_ms) == -1)
		return -1;
	return tag_file(c, key, tag, expire_at_ms);
}

/* Adds a listing's members (every other element of a sorted set's SCAN:
 * step 2) to the batch. 0, or -1 on no memory. */
static int
add_members(struct purge *pg, const redisReply *a, size_t from, size_t step)
{
	for (size_t i = from; i < a->elements; i += step) {
		const redisReply *m = a->element[i];

		if (m->type != REDIS_REPLY_STRING ||
		    m->len > CACHE_KEY_MAX + CACHE_VARIANT_MAX)
			continue;	/* never invalidated; taken all the same */
		if (purge_add(pg, m->str, m->len) == -1)
			return -1;
	}
	return 0;
}

/* ---- a hard purge: take a batch, invalidate it, take it out ---- */

/* {0, dropped}: no key left; {1 or 2, dropped, keys...}: a batch (2: the
 * set became the snapshot now). */
static void
on_take_reply(struct cache_op *op, redisReply *reply)
{
	struct purge *pg = op->arg;
	long long status;

	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements < 2 ||
	    reply->element[0]->type != REDIS_REPLY_INTEGER ||
	    reply->element[1]->type != REDIS_REPLY_INTEGER) {
		if (reply != NULL)
			op->cache->counters.errors++;
		purge_listed(pg, -1);
		return;
	}
	status = reply->element[0]->integer;
	op->cache->counters.tag_members_pruned +=
	    (uint64_t)reply->element[1]->integer;
	if (status == 2)
		pg->snapped = 1;
	if (add_members(pg, reply, 2, 1) == -1) {
		purge_listed(pg, -1);
		return;
	}
	purge_listed(pg, status != 0);
}

/*
 * Takes the last batch's invalidated keys out of the tag's sets and the
 * next batch: none after a failure (the keys not done stay for a retry).
 */
static int
list_take(struct purge *pg)
{
	struct cache *c = pg->cache;
	char name[CACHE_TAG_MAX + 8], set[REDIS_KEY_MAX], grace[24];
	struct cache_op *op;
	int done = 0, failed = 0;

	for (int i = 0; i < pg->nitems; i++)
		done += pg->items[i].state == ITEM_DONE;
	if (pg->last || (pg->failed && done == 0))
		return 0;
	tag_key(name, pg->what);
	if ((op = op_new(c, name, on_take_reply, pg)) == NULL)
		return -1;
	script_use(op, SCRIPT_TAG_TAKE);
	failed |= op_argstr(op, "3");
	op_key_name(set, sizeof(set), c, name, "members");
	failed |= op_argstr(op, set);
	op_key_name(set, sizeof(set), c, name, "purging");
	failed |= op_argstr(op, set);
	op_key_name(set, sizeof(set), c, name, "keys");
	failed |= op_argstr(op, set);
	snprintf(grace, sizeof(grace), "%" PRId64, c->timeout_ms);
	failed |= op_argstr(op, pg->snapped ? "0" : "1");
	failed |= op_argstr(op, pg->failed ? "0" : TAG_BATCH_STR);
	failed |= op_argstr(op, grace);
	for (int i = 0; i < pg->nitems; i++)
		if (pg->items[i].state == ITEM_DONE)
			failed |= op_argstr(op, pg->items[i].key);
	return op_start(op, failed) != NULL ? 1 : -1;
}

/* ---- a soft purge: read every set of the tag ---- */

static void
on_scan_reply(struct cache_op *op, redisReply *reply)
{
	struct purge *pg = op->arg;

	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements != 2 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    reply->element[1]->type != REDIS_REPLY_ARRAY) {
		if (reply != NULL)
			op->cache->counters.errors++;
		purge_listed(pg, -1);
		return;
	}
	if (add_members(pg, reply->element[1], 0,
	    tag_set_sorted[pg->at] ? 2 : 1) == -1) {
		purge_listed(pg, -1);
		return;
	}
	snprintf(pg->cursor, sizeof(pg->cursor), "%s", reply->element[0]->str);
	if (strcmp(pg->cursor, "0") == 0)
		pg->at++;
	purge_listed(pg, pg->at < TAG_SETS);
}

static int
list_scan(struct purge *pg)
{
	struct cache *c = pg->cache;
	char name[CACHE_TAG_MAX + 8], set[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if (pg->failed || pg->last)
		return 0;
	tag_key(name, pg->what);
	if ((op = op_new(c, name, on_scan_reply, pg)) == NULL)
		return -1;
	op_key_name(set, sizeof(set), c, name, tag_sets[pg->at]);
	failed |= op_argstr(op, tag_set_sorted[pg->at] ? "ZSCAN" : "SSCAN");
	failed |= op_argstr(op, set);
	failed |= op_argstr(op, pg->cursor);
	failed |= op_argstr(op, "COUNT");
	failed |= op_argstr(op, TAG_BATCH_STR);
	return op_start(op, failed) != NULL ? 1 : -1;
}

struct purge *
tag_purge_new(struct cache *c, const char *tag, int soft, purge_cb *cb,
    void *arg)
{
	struct purge *pg;

	if (strlen(tag) > CACHE_TAG_MAX ||
	    (pg = purge_new(c, soft, soft ? list_scan : list_take, cb, arg)) ==
	    NULL)
		return NULL;
	snprintf(pg->what, sizeof(pg->what), "%s", tag);
	snprintf(pg->cursor, sizeof(pg->cursor), "0");
	return pg;
}

enum purge_start
cache_purge_tag(struct cache *c, const char *tag, int soft, purge_cb *cb,
    void *arg)
{
	struct purge *pg = tag_purge_new(c, tag, soft, cb, arg);

	return pg != NULL ? purge_run(pg) : PURGE_DOWN;
}
