/*
 * The fleet's leader leases (cache_leader.h): their scripts and the ops
 * that run them.
 *
 * Calls: cache_op.c. Called from outside cache/ (the ops) and by
 * cache_script.c (which loads the scripts with the others).
 */

#include "cache/cache_int.h"
#include "cache/cache_leader.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LEADER_TAG_MAX		(CONF_CHANGES_NAME_MAX + 8)	/* "leader:NAME" */

/*
 * claim: KEYS lease, status; ARGV value, px, want (1 or 0), status, status
 * px. The lease is the caller's if it holds value already (renewed), or
 * if nobody holds it and the caller wants it (SET NX PX). While it is the
 * caller's, a status that is not "" is written beside it. {1 the
 * caller's or 0, the holder's value or false, the status or false, the
 * lease's PTTL}.
 */
const char leader_script_claim[] =
	"local cur = redis.call('GET', KEYS[1])\n"
	"local mine = 0\n"
	"if cur == ARGV[1] then\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"  mine = 1\n"
	"elseif not cur and ARGV[3] == '1' and\n"
	"    redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
	"  mine = 1\n"
	"  cur = ARGV[1]\n"
	"end\n"
	"if mine == 1 and ARGV[4] ~= '' then\n"
	"  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])\n"
	"end\n"
	"return {mine, cur or false, redis.call('GET', KEYS[2]) or false,\n"
	"  redis.call('PTTL', KEYS[1])}\n";

/* resign: KEYS lease, status; ARGV value. Compare-and-delete: 1 given up,
 * 0 not ours. */
const char leader_script_resign[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"redis.call('DEL', KEYS[1], KEYS[2])\n"
	"return 1\n";

static void
copy_string(char *out, size_t outlen, const redisReply *r)
{
	out[0] = '\0';
	if (r->type == REDIS_REPLY_STRING)
		snprintf(out, outlen, "%.*s", (int)r->len, r->str);
}

static void
on_claim_reply(struct cache_op *op, redisReply *reply)
{
	struct leader_answer a;

	memset(&a, 0, sizeof(a));
	a.r = LEADER_ERROR;
	a.pttl_ms = -2;
	if (reply != NULL && reply->type == REDIS_REPLY_ARRAY &&
	    reply->elements == 4 &&
	    reply->element[0]->type == REDIS_REPLY_INTEGER &&
	    reply->element[3]->type == REDIS_REPLY_INTEGER) {
		a.r = reply->element[0]->integer == 1 ? LEADER_HELD :
		    LEADER_OTHER;
		copy_string(a.holder, sizeof(a.holder), reply->element[1]);
		copy_string(a.status, sizeof(a.status), reply->element[2]);
		a.pttl_ms = reply->element[3]->integer;
	} else if (reply != NULL) {
		op->cache->counters.errors++;
	}
	op->cb.leader(&a, op->arg);
}

/* A new op running script id on name's keys (lease, status). */
static struct cache_op *
leader_op(struct cache *c, const char *name, enum script_id id,
    op_reply_cb *on_reply, void *arg, int *failed)
{
	char tag[LEADER_TAG_MAX], key[REDIS_KEY_MAX];
	struct cache_op *op;

	snprintf(tag, sizeof(tag), "leader:%s", name);
	if ((op = op_new(c, tag, on_reply, arg)) == NULL)
		return NULL;
	script_use(op, id);
	*failed |= op_argstr(op, "2");
	op_key_name(key, sizeof(key), c, tag, "lease");
	*failed |= op_argstr(op, key);
	op_key_name(key, sizeof(key), c, tag, "status");
	*failed |= op_argstr(op, key);
	return op;
}

struct cache_op *
leader_claim(struct cache *c, const char *name, const char *value, int want,
    int64_t px_ms, const char *status, int64_t status_ms, leader_cb *cb,
    void *arg)
{
	char px[24], spx[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = leader_op(c, name, SCRIPT_LEADER_CLAIM, on_claim_reply, arg,
	    &failed)) == NULL)
		return NULL;
	op->cb.leader = cb;
	snprintf(px, sizeof(px), "%" PRId64, px_ms);
	snprintf(spx, sizeof(spx), "%" PRId64, status_ms > 0 ? status_ms : 1);
	failed |= op_argstr(op, value);
	failed |= op_argstr(op, px);
	failed |= op_argstr(op, want ? "1" : "0");
	failed |= op_argstr(op, status != NULL ? status : "");
	failed |= op_argstr(op, spx);
	return op_start(op, failed);
}

struct cache_op *
leader_resign(struct cache *c, const char *name, const char *value,
    fence_cb *cb, void *arg)
{
	struct cache_op *op;
	int failed = 0;

	if ((op = leader_op(c, name, SCRIPT_LEADER_RESIGN, op_fence_reply, arg,
	    &failed)) == NULL)
		return NULL;
	op->cb.fence = cb;
	failed |= op_argstr(op, value);
	return op_start(op, failed);
}
