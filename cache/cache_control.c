/* SPDX-License-Identifier: MIT */
/*
 * The control plane's side of Redis: what Redis holds for one key, read
 * at once (cache_inspect); the maintenance modes, one hash the whole
 * fleet reads, announced on the purge channel (cache_maint_set, _load);
 * and the soft purge by tag that names every key it reached (a refresh
 * of a tag's entries).
 *
 * Calls: cache_op.c, cache_purge.c and cache_tag.c (the runner and the
 * tag's lister). Called from outside cache/ only.
 */

#include "cache/cache_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define MAINT_KEY		"maintenance"	/* no '/': never a cache key */
#define MAINT_SUFFIX		"routes"
#define INSPECT_KEYS		"6"
#define INSPECT_REPLIES		9

/*
 * inspect: KEYS entry, lock, backoff, fails, hfm, variants. Read only:
 * the entry and its PTTL, the lock and its PTTL, the backoff and its
 * PTTL, the failures in a row, the hit-for-miss mark's PTTL, the
 * variants' ids. (false, not nil, keeps the array whole.)
 */
static const char script_inspect[] =
	"local r = {}\n"
	"r[1] = redis.call('GET', KEYS[1]) or false\n"
	"r[2] = redis.call('PTTL', KEYS[1])\n"
	"r[3] = redis.call('GET', KEYS[2]) or false\n"
	"r[4] = redis.call('PTTL', KEYS[2])\n"
	"r[5] = redis.call('GET', KEYS[3]) or false\n"
	"r[6] = redis.call('PTTL', KEYS[3])\n"
	"r[7] = redis.call('GET', KEYS[4]) or false\n"
	"r[8] = redis.call('PTTL', KEYS[5])\n"
	"r[9] = redis.call('SMEMBERS', KEYS[6])\n"
	"return r\n";

/*
 * maint: KEYS the modes' hash; ARGV route, 1 (avoid) or 0, since ms,
 * purge channel, the news, most routes. Sets or clears the route and
 * tells every process. 1 done, 0 too many routes already.
 */
static const char script_maint[] =
	"if ARGV[2] == '1' then\n"
	"  if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and"
	" redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[6]) then return 0 end\n"
	"  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])\n"
	"else\n"
	"  redis.call('HDEL', KEYS[1], ARGV[1])\n"
	"end\n"
	"redis.call('PUBLISH', ARGV[4], ARGV[5])\n"
	"return 1\n";

static int64_t
reply_int(const redisReply *r)
{
	if (r->type == REDIS_REPLY_INTEGER)
		return r->integer;
	if (r->type == REDIS_REPLY_STRING)
		return strtoll(r->str, NULL, 10);
	return -2;
}

static void
reply_text(const redisReply *r, char *out, size_t outlen)
{
	snprintf(out, outlen, "%.*s", r->type == REDIS_REPLY_STRING ?
	    (int)r->len : 0, r->type == REDIS_REPLY_STRING ? r->str : "");
}

static void
on_inspect_reply(struct cache_op *op, redisReply *reply)
{
	struct cache_inspection in;
	const redisReply *v;
	char err[128];

	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements != INSPECT_REPLIES) {
		if (reply != NULL)
			op->cache->counters.errors++;
		op->cb.inspect(CACHE_ERROR, NULL, op->arg);
		return;
	}
	memset(&in, 0, sizeof(in));
	if (reply->element[0]->type == REDIS_REPLY_STRING &&
	    (in.entry = entry_decode(reply->element[0]->str,
	    reply->element[0]->len, err, sizeof(err))) == NULL)
		log_warn("redis: inspect: unreadable entry: %s", err);
	in.entry_pttl_ms = reply_int(reply->element[1]);
	reply_text(reply->element[2], in.lock_token, sizeof(in.lock_token));
	in.lock_pttl_ms = reply_int(reply->element[3]);
	reply_text(reply->element[4], in.backoff, sizeof(in.backoff));
	in.backoff_pttl_ms = reply_int(reply->element[5]);
	in.failures = reply->element[6]->type == REDIS_REPLY_STRING ?
	    reply_int(reply->element[6]) : 0;
	in.hfm_pttl_ms = reply_int(reply->element[7]);
	v = reply->element[8];
	for (size_t i = 0; v->type == REDIS_REPLY_ARRAY && i < v->elements; i++) {
		if (in.nvariants < CACHE_INSPECT_VARIANTS)
			reply_text(v->element[i], in.variants[in.nvariants],
			    CACHE_VARIANT_MAX);
		in.nvariants++;
	}
	op->cb.inspect(CACHE_FOUND, &in, op->arg);
	entry_unref(&in.entry);
}

struct cache_op *
cache_inspect(struct cache *c, const char *key, cache_inspect_cb *cb,
    void *arg)
{
	static const char *const suffixes[] = { "entry", "lock", "backoff",
	    "fails", "hfm", "variants" };
	char name[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, key, on_inspect_reply, arg)) == NULL)
		return NULL;
	op->cb.inspect = cb;
	script_use(op, SCRIPT_NONE);
	failed |= op_argstr(op, "EVAL");
	failed |= op_argstr(op, script_inspect);
	failed |= op_argstr(op, INSPECT_KEYS);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		op_key_name(name, sizeof(name), c, key, suffixes[i]);
		failed |= op_argstr(op, name);
	}
	return op_start(op, failed);
}

/* ---- maintenance modes ---- */

struct cache_op *
cache_maint_set(struct cache *c, const char *route, int avoid, fence_cb *cb,
    void *arg)
{
	char name[REDIS_KEY_MAX], since[24], most[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, MAINT_KEY, op_fence_reply, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	script_use(op, SCRIPT_NONE);
	op_key_name(name, sizeof(name), c, MAINT_KEY, MAINT_SUFFIX);
	snprintf(since, sizeof(since), "%" PRId64, util_now_ms());
	snprintf(most, sizeof(most), "%d", CACHE_MAINT_MAX);
	failed |= op_argstr(op, "EVAL");
	failed |= op_argstr(op, script_maint);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, name);
	failed |= op_argstr(op, route);
	failed |= op_argstr(op, avoid ? "1" : "0");
	failed |= op_argstr(op, since);
	failed |= op_argstr(op, c->purge_channel);
	failed |= op_argstr(op, MAINT_MESSAGE);
	failed |= op_argstr(op, most);
	return op_start(op, failed);
}

static void
on_maint_reply(struct cache_op *op, redisReply *reply)
{
	struct cache_maint list[CACHE_MAINT_MAX];
	int n = 0;

	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
		if (reply != NULL)
			op->cache->counters.errors++;
		op->cb.maint(NULL, 0, 0, op->arg);
		return;
	}
	for (size_t i = 0; i + 1 < reply->elements && n < CACHE_MAINT_MAX;
	    i += 2) {
		if (reply->element[i]->type != REDIS_REPLY_STRING)
			continue;
		reply_text(reply->element[i], list[n].route,
		    sizeof(list[n].route));
		list[n].since_ms = reply_int(reply->element[i + 1]);
		n++;
	}
	op->cb.maint(list, n, 1, op->arg);
}

struct cache_op *
cache_maint_load(struct cache *c, cache_maint_cb *cb, void *arg)
{
	char name[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, MAINT_KEY, on_maint_reply, arg)) == NULL)
		return NULL;
	op->cb.maint = cb;
	script_use(op, SCRIPT_NONE);
	op_key_name(name, sizeof(name), c, MAINT_KEY, MAINT_SUFFIX);
	failed |= op_argstr(op, "HGETALL");
	failed |= op_argstr(op, name);
	return op_start(op, failed);
}

void
cache_on_maint(struct cache *c, cache_maint_news_cb *news)
{
	c->on_maint = news;
}

/* ---- a refresh of a tag's entries ---- */

enum purge_start
cache_soften_tag_each(struct cache *c, const char *tag, cache_visit_cb *visit,
    purge_cb *cb, void *arg)
{
	struct purge *pg = tag_purge_new(c, tag, 1, cb, arg);

	if (pg == NULL)
		return PURGE_DOWN;
	pg->visit = visit;
	return purge_run(pg);
}
