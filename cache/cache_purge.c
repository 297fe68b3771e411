/*
 * Invalidations and purges: a key's entry and variants deleted (or, soft,
 * made stale); the runner of purges of many keys (see struct purge), which
 * invalidates key by key, a batch at a time, within one bounded window for
 * every purge of this process; and the purge by prefix (SCAN on every
 * primary). Every invalidation tells every process, on the purge channel,
 * to drop its copies.
 *
 * Calls: cache_script.c, cache_op.c, cache_route.c (the primaries a purge
 * scans). Called from cache_tag.c (the purge by tag) and outside cache/.
 */

#include "cache/cache_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define PURGE_MAGIC		0x50555247u	/* "PURG" */
#define SCAN_COUNT		"500"	/* keys a purge's SCAN looks at a time */
#define INVALIDATE_ROUNDS	3	/* variant lists read again when they grow */
#define PURGE_INFLIGHT_MAX	64	/* keys all purges invalidate at once */
#define PURGES_MAX		64	/* purges running at once; more wait */
#define ITEMS_FIRST		64	/* a batch's room, doubled as it grows */

/* The fence's keys (the lock, its failed hash) and the key's own. */
static int
fence_and_entry_keys(struct cache_op *op, const char *key)
{
	struct cache *c = op->cache;
	char name[REDIS_KEY_MAX];
	int failed = 0;

	op_key_name(name, sizeof(name), c, key, "lock");
	failed |= op_argstr(op, name);
	op_key_name(name, sizeof(name), c, key, FAILED_SUFFIX);
	failed |= op_argstr(op, name);
	op_key_name(name, sizeof(name), c, key, "entry");
	failed |= op_argstr(op, name);
	op_key_name(name, sizeof(name), c, key, "variants");
	return failed | op_argstr(op, name);
}

/*
 * Builds an invalidation's next command: SMEMBERS of the key's variants
 * (members NULL), or the script that drops the entry and those variants
 * (soft: makes them stale) and fences a refresh in flight. The key is in
 * op->key.
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
	snprintf(numkeys, sizeof(numkeys), "%zu", 4 + nv);
	failed |= op_argstr(op, numkeys);
	failed |= fence_and_entry_keys(op, key);
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
	op_key_name(name, sizeof(name), c, key, FILL_SUFFIX);
	failed |= op_argstr(op, name);
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

/* ---- the runner ---- */

static void pump(struct cache *c);

static void
batch_clear(struct purge *pg)
{
	for (int i = 0; i < pg->nitems; i++)
		free(pg->items[i].key);
	pg->nitems = 0;
	pg->sent = 0;
}

static void
purge_free(struct purge *pg)
{
	assert(pg->magic == PURGE_MAGIC && pg->inflight == 0);
	batch_clear(pg);
	free(pg->items);
	pg->magic = 0;
	free(pg);
}

static void
purge_end(struct purge *pg, int ok)
{
	struct cache *c = pg->cache;

	TAILQ_REMOVE(&c->purges, pg, link);
	c->npurges--;
	pg->cb(pg->purged, ok, pg->arg);
	purge_free(pg);
}

/* pg's batch is done (or failed): its lister records it and sends for the
 * next, or the purge is over. */
static void
next_batch(struct purge *pg)
{
	int rc;

	assert(pg->inflight == 0 && !pg->listing);
	rc = pg->list(pg);
	batch_clear(pg);
	if (rc == 1)
		pg->listing = 1;
	else
		purge_end(pg, rc == 0 && !pg->failed);
}

static void
on_item_done(enum fence_result r, void *arg)
{
	struct purge_item *it = arg;
	struct purge *pg = it->pg;
	struct cache *c = pg->cache;

	assert(pg->magic == PURGE_MAGIC && it->state == ITEM_SENT);
	pg->inflight--;
	c->purge_inflight--;
	if (r == FENCE_ERROR) {
		it->state = ITEM_FAILED;
		pg->failed = 1;
	} else {
		it->state = ITEM_DONE;
		if (pg->visit != NULL) {
			pg->visit(it->key, pg->arg);	/* reached, as it is */
			pg->purged++;
		} else if (r == FENCE_OK) {
			pg->purged++;
		}
	}
	if (pg->inflight == 0 && (pg->failed || pg->sent == pg->nitems))
		next_batch(pg);
	pump(c);
}

/* The purge whose turn it is to send a key: it goes to the end of the
 * line. NULL when none has a key waiting. */
static struct purge *
next_turn(struct cache *c)
{
	struct purge *pg;

	TAILQ_FOREACH(pg, &c->purges, link) {
		if (pg->failed || pg->listing || pg->sent == pg->nitems)
			continue;
		TAILQ_REMOVE(&c->purges, pg, link);
		TAILQ_INSERT_TAIL(&c->purges, pg, link);
		return pg;
	}
	return NULL;
}

/* Invalidates waiting keys, taking turns, while the window has room. */
static void
pump(struct cache *c)
{
	struct purge *pg;
	struct purge_item *it;

	while (!c->closing && c->purge_inflight < PURGE_INFLIGHT_MAX &&
	    (pg = next_turn(c)) != NULL) {
		it = &pg->items[pg->sent++];
		if (purge_key(c, it->key, pg->soft, on_item_done, it) != NULL) {
			it->state = ITEM_SENT;
			pg->inflight++;
			c->purge_inflight++;
			continue;
		}
		it->state = ITEM_FAILED;
		pg->failed = 1;
		if (pg->inflight == 0)
			next_batch(pg);		/* may end it */
	}
}

struct purge *
purge_new(struct cache *c, int soft, purge_list_fn *list, purge_cb *cb,
    void *arg)
{
	struct purge *pg;

	if ((pg = calloc(1, sizeof(*pg))) == NULL)
		return NULL;
	pg->magic = PURGE_MAGIC;
	pg->cache = c;
	pg->soft = soft;
	pg->list = list;
	pg->cb = cb;
	pg->arg = arg;
	return pg;
}

enum purge_start
purge_run(struct purge *pg)
{
	struct cache *c = pg->cache;

	if (c->npurges >= PURGES_MAX) {
		purge_free(pg);
		return PURGE_BUSY;
	}
	if (pg->list(pg) != 1) {
		purge_free(pg);
		return PURGE_DOWN;
	}
	pg->listing = 1;
	TAILQ_INSERT_TAIL(&c->purges, pg, link);
	c->npurges++;
	return PURGE_STARTED;
}

int
purge_add(struct purge *pg, const char *key, size_t len)
{
	struct purge_item *it;

	if (pg->nitems == pg->cap) {
		int cap = pg->cap == 0 ? ITEMS_FIRST : pg->cap * 2;

		if ((it = realloc(pg->items, (size_t)cap * sizeof(*it))) ==
		    NULL)
			return -1;
		pg->items = it;
		pg->cap = cap;
	}
	it = &pg->items[pg->nitems];
	if ((it->key = malloc(len + 1)) == NULL)
		return -1;
	memcpy(it->key, key, len);
	it->key[len] = '\0';
	it->pg = pg;
	it->state = ITEM_WAITING;
	pg->nitems++;
	return 0;
}

void
purge_listed(struct purge *pg, int more)
{
	assert(pg->magic == PURGE_MAGIC && pg->listing);
	pg->listing = 0;
	if (more == -1)
		pg->failed = 1;
	else if (more == 0)
		pg->last = 1;
	if (pg->failed || pg->nitems == 0)
		next_batch(pg);
	else
		pump(pg->cache);
}

static void
purge_unheard(int64_t purged, int ok, void *arg)
{
	(void)purged;
	(void)ok;
	(void)arg;
}

void
cache_purge_forget(struct cache *c, void *arg)
{
	struct purge *pg;

	TAILQ_FOREACH(pg, &c->purges, link) {
		if (pg->arg == arg) {
			pg->cb = purge_unheard;
			pg->visit = NULL;
		}
	}
}

void
purge_free_all(struct cache *c)
{
	struct purge *pg;

	assert(c->closing);
	while ((pg = TAILQ_FIRST(&c->purges)) != NULL) {
		TAILQ_REMOVE(&c->purges, pg, link);
		pg->inflight = 0;	/* their ops went without a word */
		purge_free(pg);
	}
	c->npurges = 0;
}

/* ---- the purge by prefix ---- */

static int list_scan(struct purge *pg);

static void
on_purge_scan(redisAsyncContext *ac, void *r, void *privdata)
{
	struct purge *pg = privdata;
	redisReply *reply = r, *keys;
	size_t tail = strlen("}:entry");

	if (pg->cache->closing)
		return;		/* purge_free_all frees it */
	if (reply == NULL ||
	    reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    reply->element[1]->type != REDIS_REPLY_ARRAY) {
		if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
			log_warn("redis: purge: %s", reply->str);
		purge_listed(pg, -1);
		return;
	}
	keys = reply->element[1];
	for (size_t i = 0; i < keys->elements; i++) {
		const redisReply *k = keys->element[i];

		/* "<prefix>{K}:entry" -> K */
		if (k->type != REDIS_REPLY_STRING ||
		    k->len <= pg->head + tail || k->len - pg->head > CACHE_KEY_MAX)
			continue;
		if (purge_add(pg, k->str + pg->head, k->len - pg->head - tail) ==
		    -1) {
			purge_listed(pg, -1);
			return;
		}
	}
	snprintf(pg->cursor, sizeof(pg->cursor), "%s", reply->element[0]->str);
	if (strcmp(pg->cursor, "0") == 0)
		pg->at++;
	purge_listed(pg, pg->at < pg->nnodes);
}

/* The next SCAN, on the node being scanned; it names its nodes by
 * address, so a node that leaves the map meanwhile fails the purge. */
static int
list_scan(struct purge *pg)
{
	struct node *nodes[CACHE_NODES_MAX], *n = NULL;
	int count;

	if (pg->failed || pg->last)
		return 0;
	count = route_primaries(pg->cache->rt, nodes, CACHE_NODES_MAX);
	for (int i = 0; i < count && n == NULL; i++)
		if (strcmp(nodes[i]->name, pg->nodes[pg->at]) == 0)
			n = nodes[i];
	if (n == NULL || n->cmd == NULL || redisAsyncCommand(n->cmd,
	    on_purge_scan, pg, "SCAN %s MATCH %s COUNT %s", pg->cursor,
	    pg->what, SCAN_COUNT) != REDIS_OK)
		return -1;
	return 1;
}

/* A new purge of every key starting with prefix, not yet running. */
static struct purge *
prefix_purge_new(struct cache *c, const char *prefix, int soft,
    purge_cb *cb, void *arg)
{
	struct node *nodes[CACHE_NODES_MAX];
	struct purge *pg;
	size_t n;
	int count;

	if (c->closing || !route_all_up(c->rt))
		return NULL;
	if ((pg = purge_new(c, soft, list_scan, cb, arg)) == NULL)
		return NULL;
	count = route_primaries(c->rt, nodes, CACHE_NODES_MAX);
	for (int i = 0; i < count; i++)
		snprintf(pg->nodes[i], sizeof(pg->nodes[i]), "%s",
		    nodes[i]->name);
	pg->nnodes = count;
	snprintf(pg->cursor, sizeof(pg->cursor), "0");
	n = (size_t)snprintf(pg->what, sizeof(pg->what), "%s{", c->prefix);
	pg->head = n;
	/* The prefix, glob-escaped, then anything, then the entry suffix. */
	for (const char *p = prefix; *p != '\0' && n + 12 < sizeof(pg->what);
	    p++) {
		if (strchr("*?[]\\", *p) != NULL)
			pg->what[n++] = '\\';
		pg->what[n++] = *p;
	}
	snprintf(pg->what + n, sizeof(pg->what) - n, "*}:entry");
	return pg;
}

enum purge_start
cache_purge_prefix(struct cache *c, const char *prefix, int soft,
    purge_cb *cb, void *arg)
{
	struct purge *pg = prefix_purge_new(c, prefix, soft, cb, arg);

	/* Reports through the loop, never from inside this call. */
	return pg != NULL ? purge_run(pg) : PURGE_DOWN;
}

enum purge_start
cache_soften_prefix_each(struct cache *c, const char *prefix,
    cache_visit_cb *visit, purge_cb *cb, void *arg)
{
	struct purge *pg = prefix_purge_new(c, prefix, 1, cb, arg);

	if (pg == NULL)
		return PURGE_DOWN;
	pg->visit = visit;
	return purge_run(pg);
}

void
cache_on_purge(struct cache *c, cache_purge_cb *on_purge)
{
	c->on_purge = on_purge;
}
