/*
 * The fleet's origin slots (cache_lease.h): their Lua scripts, the ops
 * that run them, and the subscription to the "freed" shard channel, which
 * follows its slot's owner as the fill watches do (cache_watch.c).
 *
 * Calls: cache_op.c, cache_route.c (the subscriber connections). Called
 * from outside cache/ (the ops), by cache.c (the routing table's hooks)
 * and by cache_script.c (which loads the scripts with the others).
 */

#include "cache/cache_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define LEASE_TAG		"budget"	/* the hash tag of every key */
#define LEASE_KEEP_LEASES	4	/* the sets outlive a lease this often */
#define REAP_MAX		1000	/* dead tickets one acquire drops */
#define STRINGIFY(x)		STRINGIFY2(x)
#define STRINGIFY2(x)		#x

/* Redis's own clock in ms, so that no two instances' clocks disagree;
 * and keep(k, ms): k lives at least ms more (the fleet may be gone). */
#define LUA_PRELUDE							\
	"local t = redis.call('TIME')\n"				\
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
	"local function keep(k, ms)\n"					\
	"  if redis.call('PTTL', k) < ms then redis.call('PEXPIRE', k, ms) end\n" \
	"end\n"

/*
 * acquire: KEYS slots, queue, tickets; ARGV token, ticket, rank, max,
 * lease ms, freed channel. Drops the leases and tickets that expired (and
 * publishes if that frees room); a token that holds a lease already (an
 * acquire sent again) keeps it. Else the ticket is queued with its rank
 * (or its rank and expiry renewed) and gets a slot only if fewer tickets
 * rank ahead of it than there are free slots. {1 granted or 0 queued,
 * leases held, tickets waiting}.
 */
const char lease_script_acquire[] =
	LUA_PRELUDE
	"local lease = tonumber(ARGV[5])\n"
	"local max = tonumber(ARGV[4])\n"
	"local reaped = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
	"local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT',"
	" 0, " STRINGIFY(REAP_MAX) ")\n"
	"for i = 1, #dead do\n"
	"  redis.call('ZREM', KEYS[2], dead[i])\n"
	"  redis.call('ZREM', KEYS[3], dead[i])\n"
	"end\n"
	"local r = 0\n"
	"if redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
	"  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])\n"
	"  r = 1\n"
	"else\n"
	"  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])\n"
	"  redis.call('ZADD', KEYS[3], now + lease, ARGV[2])\n"
	"  local ahead = redis.call('ZRANK', KEYS[2], ARGV[2])\n"
	"  if redis.call('ZCARD', KEYS[1]) + ahead < max then\n"
	"    redis.call('ZREM', KEYS[2], ARGV[2])\n"
	"    redis.call('ZREM', KEYS[3], ARGV[2])\n"
	"    redis.call('ZADD', KEYS[1], now + lease, ARGV[1])\n"
	"    r = 1\n"
	"  end\n"
	"end\n"
	"local held = redis.call('ZCARD', KEYS[1])\n"
	"local queued = redis.call('ZCARD', KEYS[2])\n"
	"for i = 1, 3 do keep(KEYS[i], lease * " STRINGIFY(LEASE_KEEP_LEASES)
	") end\n"
	"if (reaped > 0 or #dead > 0) and held < max and queued > 0 then\n"
	"  redis.call('SPUBLISH', ARGV[6], 'reaped')\n"
	"end\n"
	"return {r, held, queued}\n";

/* renew: KEYS slots; ARGV token, lease ms. 1 renewed, 0 the lease ran
 * out (dropped now if it was still there). */
const char lease_script_renew[] =
	LUA_PRELUDE
	"local s = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
	"if not s then return 0 end\n"
	"if tonumber(s) <= now then\n"
	"  redis.call('ZREM', KEYS[1], ARGV[1])\n"
	"  return 0\n"
	"end\n"
	"redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
	"keep(KEYS[1], tonumber(ARGV[2]) * " STRINGIFY(LEASE_KEEP_LEASES) ")\n"
	"return 1\n";

/*
 * release: KEYS slots, queue, tickets; ARGV token, ticket, freed channel,
 * max. Drops the token's lease and the ticket. The waiters hear of it
 * when a lease went, or when a ticket left while room is free (the
 * tickets behind it may go now). 1 a lease went, 0 none was held.
 */
const char lease_script_release[] =
	"local n = redis.call('ZREM', KEYS[1], ARGV[1])\n"
	"local q = redis.call('ZREM', KEYS[2], ARGV[2])\n"
	"redis.call('ZREM', KEYS[3], ARGV[2])\n"
	"if n > 0 or (q > 0 and redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4])"
	" and redis.call('ZCARD', KEYS[2]) > 0) then\n"
	"  redis.call('SPUBLISH', ARGV[3], 'freed')\n"
	"end\n"
	"return n\n";

/* hello: KEYS fleet; ARGV instance, ttl ms. How many are alive. */
const char lease_script_hello[] =
	LUA_PRELUDE
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
	"redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
	"keep(KEYS[1], tonumber(ARGV[2]))\n"
	"return redis.call('ZCARD', KEYS[1])\n";

/* ---- the ops ------------------------------------------------------- */

static long long
element_int(const redisReply *reply, size_t i)
{
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements <= i ||
	    reply->element[i]->type != REDIS_REPLY_INTEGER)
		return -1;
	return reply->element[i]->integer;
}

static void
on_acquire_slot_reply(struct cache_op *op, redisReply *reply)
{
	struct lease_figures f = { -1, -1, -1 };
	long long code;

	if (reply == NULL) {
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	code = element_int(reply, 0);
	f.held = element_int(reply, 1);
	f.queued = element_int(reply, 2);
	if (code != 0 && code != 1) {
		op->cache->counters.errors++;
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	op->cb.lease(code == 1 ? LEASE_GRANTED : LEASE_QUEUED, &f, op->arg);
}

static void
on_hello_reply(struct cache_op *op, redisReply *reply)
{
	struct lease_figures f = { -1, -1, -1 };

	if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
		if (reply != NULL)
			op->cache->counters.errors++;
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	f.instances = reply->integer;
	op->cb.lease(LEASE_GRANTED, &f, op->arg);
}

/* A new op on the budget's slot that runs script id with its nkeys keys
 * (the names of suffixes, after "POOL:" for a named pool), or NULL;
 * *failed says if an argument failed. */
static struct cache_op *
slot_op(struct cache *c, op_reply_cb *on_reply, void *arg, enum script_id id,
    const char *pool, const char *const *suffixes, int nkeys, int *failed)
{
	char name[REDIS_KEY_MAX], n[8], suffix[REDIS_KEY_MAX];
	struct cache_op *op;

	if ((op = op_new(c, LEASE_TAG, on_reply, arg)) == NULL)
		return NULL;
	script_use(op, id);
	snprintf(n, sizeof(n), "%d", nkeys);
	*failed |= op_argstr(op, n);
	for (int i = 0; i < nkeys; i++) {
		snprintf(suffix, sizeof(suffix), "%s%s%s", pool, pool[0] != '\0' ?
		    ":" : "", suffixes[i]);
		op_key_name(name, sizeof(name), c, LEASE_TAG, suffix);
		*failed |= op_argstr(op, name);
	}
	return op;
}

static const char *const queue_keys[] = { "slots", "queue", "tickets" };

static int
arg_int(struct cache_op *op, int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return op_argstr(op, text);
}

struct cache_op *
lease_acquire(struct cache *c, const char *pool, const char *token,
    const char *ticket, int64_t rank, int max, int64_t lease_ms, lease_cb *cb,
    void *arg)
{
	char channel[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, on_acquire_slot_reply, arg, SCRIPT_LEASE_ACQUIRE,
	    pool, queue_keys, 3, &failed)) == NULL)
		return NULL;
	op->cb.lease = cb;
	op_key_name(channel, sizeof(channel), c, LEASE_TAG, "freed");
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, ticket);
	failed |= arg_int(op, rank);
	failed |= arg_int(op, max);
	failed |= arg_int(op, lease_ms);
	failed |= op_argstr(op, channel);
	return op_start(op, failed);
}

struct cache_op *
lease_renew(struct cache *c, const char *pool, const char *token,
    int64_t lease_ms, fence_cb *cb, void *arg)
{
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, op_fence_reply, arg, SCRIPT_LEASE_RENEW, pool,
	    queue_keys, 1, &failed)) == NULL)
		return NULL;
	op->cb.fence = cb;
	failed |= op_argstr(op, token);
	failed |= arg_int(op, lease_ms);
	return op_start(op, failed);
}

struct cache_op *
lease_release(struct cache *c, const char *pool, const char *token,
    const char *ticket, int max, fence_cb *cb, void *arg)
{
	char channel[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, op_fence_reply, arg, SCRIPT_LEASE_RELEASE, pool,
	    queue_keys, 3, &failed)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op_key_name(channel, sizeof(channel), c, LEASE_TAG, "freed");
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, ticket);
	failed |= op_argstr(op, channel);
	failed |= arg_int(op, max);
	return op_start(op, failed);
}

struct cache_op *
lease_hello(struct cache *c, const char *instance, int64_t ttl_ms, lease_cb *cb,
    void *arg)
{
	static const char *const fleet[] = { "fleet" };
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, on_hello_reply, arg, SCRIPT_LEASE_HELLO, "", fleet,
	    1, &failed)) == NULL)
		return NULL;
	op->cb.lease = cb;
	failed |= op_argstr(op, instance);
	failed |= arg_int(op, ttl_ms);
	return op_start(op, failed);
}

/* ---- the freed channel ---------------------------------------------- */

struct lease_sub {
	char			 channel[REDIS_KEY_MAX];
	unsigned		 slot;
	struct node		*node;		/* where it is subscribed */
	lease_freed_cb		*cb;
	void			*arg;
};

static void
channel_send(struct node *n, const char *verb, const char *channel)
{
	const char *argv[] = { verb, channel };

	route_sub_send(n, 2, argv);
}

/* The subscription follows its slot's owner. */
static void
sub_place(struct cache *c, struct lease_sub *s)
{
	struct node *owner = route_node(c->rt, s->slot);

	if (owner == s->node)
		return;
	if (s->node != NULL && s->node->sub_up)
		channel_send(s->node, "SUNSUBSCRIBE", s->channel);
	if ((s->node = owner) != NULL)
		channel_send(owner, "SSUBSCRIBE", s->channel);
}

void
lease_on_freed(struct cache *c, lease_freed_cb *cb, void *arg)
{
	struct lease_sub *s = c->freed;

	if (cb == NULL) {
		lease_free(c);
		return;
	}
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return;		/* waiters re-check on their timer */
		op_key_name(s->channel, sizeof(s->channel), c, LEASE_TAG,
		    "freed");
		s->slot = cache_key_slot(s->channel);
		c->freed = s;
	}
	s->cb = cb;
	s->arg = arg;
	sub_place(c, s);
}

void
lease_sub_up(struct cache *c, struct node *n)
{
	struct lease_sub *s = c->freed;

	if (s != NULL && s->node == n && n->sub_up)
		channel_send(n, "SSUBSCRIBE", s->channel);
}

int
lease_sub_reply(struct cache *c, struct node *n, const redisReply *r)
{
	struct lease_sub *s = c->freed;
	const char *kind;

	if (s == NULL)
		return 0;
	if (r->type == REDIS_REPLY_ERROR) {
		if (s->node == n)	/* placed again once the map is read */
			s->node = NULL;
		return 0;		/* the watches hear of it too */
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    strcmp(r->element[1]->str, s->channel) != 0)
		return 0;
	kind = r->element[0]->str;
	if (strcmp(kind, "smessage") == 0 || strcmp(kind, "ssubscribe") == 0) {
		/* Subscribed again: a release may have gone unheard. */
		if (s->cb != NULL)
			s->cb(s->arg);
	} else if (strcmp(kind, "sunsubscribe") == 0 && s->node == n) {
		channel_send(n, "SSUBSCRIBE", s->channel);	/* not asked for */
	}
	return 1;
}

void
lease_node_gone(struct cache *c, struct node *n)
{
	if (c->freed != NULL && c->freed->node == n)
		c->freed->node = NULL;
}

void
lease_map_changed(struct cache *c)
{
	if (c->freed != NULL)
		sub_place(c, c->freed);
}

void
lease_free(struct cache *c)
{
	struct lease_sub *s = c->freed;

	if (s == NULL)
		return;
	if (!c->closing && s->node != NULL && s->node->sub_up)
		channel_send(s->node, "SUNSUBSCRIBE", s->channel);
	c->freed = NULL;
	free(s);
}
