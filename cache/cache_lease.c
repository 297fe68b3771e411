/* SPDX-License-Identifier: MIT */
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
 * acquire: KEYS slots, queue, tickets, then the servers a slot may be
 * taken on, best first (max_requests_per_server), then the server the
 * token gives up (a retry goes elsewhere), if any; ARGV token, ticket,
 * rank, max (0: the pool has no cap), lease ms, freed channel, a server's
 * cap, how many servers. Drops the leases and tickets that expired (and
 * publishes if that frees room). A token that holds a slot already (an
 * acquire sent again, or a retry's) keeps it, and takes a slot on the
 * first of the servers with room if it holds none there. Else the ticket
 * is queued with its rank (or its rank and expiry renewed) and gets a slot
 * only if fewer tickets rank ahead of it than there are free slots: of the
 * pool, and on the servers together; its server slot is on the first of
 * them with room. {1 granted or 0 queued, leases held, tickets waiting,
 * the server taken (1..n, 0: none)}.
 */
const char lease_script_acquire[] =
	LUA_PRELUDE
	"local lease = tonumber(ARGV[5])\n"
	"local max = tonumber(ARGV[4])\n"
	"local cap = tonumber(ARGV[7])\n"
	"local n = tonumber(ARGV[8])\n"
	"local reaped = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
	"for i = 4, 3 + n do\n"
	"  reaped = reaped + redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)\n"
	"end\n"
	"if #KEYS > 3 + n then\n"
	"  reaped = reaped + redis.call('ZREM', KEYS[4 + n], ARGV[1])\n"
	"end\n"
	"local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT',"
	" 0, " STRINGIFY(REAP_MAX) ")\n"
	"for i = 1, #dead do\n"
	"  redis.call('ZREM', KEYS[2], dead[i])\n"
	"  redis.call('ZREM', KEYS[3], dead[i])\n"
	"end\n"
	"local room, first, mine = 0, 0, 0\n"
	"for i = 1, n do\n"
	"  local left = cap - redis.call('ZCARD', KEYS[3 + i])\n"
	"  if redis.call('ZSCORE', KEYS[3 + i], ARGV[1]) then mine = i end\n"
	"  if left > 0 then\n"
	"    room = room + left\n"
	"    if first == 0 then first = i end\n"
	"  end\n"
	"end\n"
	"if mine > 0 then first = mine end\n"
	"local r, at = 0, 0\n"
	"if redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
	"  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])\n"
	"  at = first\n"
	"  if n == 0 or at > 0 then r = 1 end\n"
	"else\n"
	"  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])\n"
	"  redis.call('ZADD', KEYS[3], now + lease, ARGV[2])\n"
	"  local ahead = redis.call('ZRANK', KEYS[2], ARGV[2])\n"
	"  local free = max == 0 or redis.call('ZCARD', KEYS[1]) + ahead < max\n"
	"  if free and (n == 0 or ahead < room) then\n"
	"    redis.call('ZREM', KEYS[2], ARGV[2])\n"
	"    redis.call('ZREM', KEYS[3], ARGV[2])\n"
	"    redis.call('ZADD', KEYS[1], now + lease, ARGV[1])\n"
	"    r = 1\n"
	"    at = first\n"
	"  end\n"
	"end\n"
	"if at > 0 then\n"
	"  redis.call('ZADD', KEYS[3 + at], now + lease, ARGV[1])\n"
	"end\n"
	"local held = redis.call('ZCARD', KEYS[1])\n"
	"local queued = redis.call('ZCARD', KEYS[2])\n"
	"for i = 1, #KEYS do keep(KEYS[i], lease * " STRINGIFY(LEASE_KEEP_LEASES)
	") end\n"
	"if reaped > 0 or #dead > 0 then\n"
	"  if (max == 0 or held < max) and queued > 0 then\n"
	"    redis.call('SPUBLISH', ARGV[6], 'reaped')\n"
	"  end\n"
	"end\n"
	"return {r, held, queued, at}\n";

/* renew: KEYS slots, and the server the token holds a slot on (if any);
 * ARGV token, lease ms. 1 renewed, 0 the lease ran out (dropped now if it
 * was still there). */
const char lease_script_renew[] =
	LUA_PRELUDE
	"local s = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
	"if not s then return 0 end\n"
	"if tonumber(s) <= now or (KEYS[2] and\n"
	"    not redis.call('ZSCORE', KEYS[2], ARGV[1])) then\n"
	"  for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end\n"
	"  return 0\n"
	"end\n"
	"for i = 1, #KEYS do\n"
	"  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[2]), ARGV[1])\n"
	"  keep(KEYS[i], tonumber(ARGV[2]) * " STRINGIFY(LEASE_KEEP_LEASES) ")\n"
	"end\n"
	"return 1\n";

/*
 * release: KEYS slots, queue, tickets, and the server the token holds a
 * slot on (if any); ARGV token, ticket, freed channel, max. Drops the
 * token's leases and the ticket. The waiters hear of it when a lease went,
 * or when a ticket left while room is free (the tickets behind it may go
 * now). 1 a lease went, 0 none was held.
 */
const char lease_script_release[] =
	"local n = redis.call('ZREM', KEYS[1], ARGV[1])\n"
	"if KEYS[4] then redis.call('ZREM', KEYS[4], ARGV[1]) end\n"
	"local q = redis.call('ZREM', KEYS[2], ARGV[2])\n"
	"redis.call('ZREM', KEYS[3], ARGV[2])\n"
	"local max = tonumber(ARGV[4])\n"
	"if n > 0 or (q > 0 and (max == 0 or redis.call('ZCARD', KEYS[1]) < max)"
	" and redis.call('ZCARD', KEYS[2]) > 0) then\n"
	"  redis.call('SPUBLISH', ARGV[3], 'freed')\n"
	"end\n"
	"return n\n";

/* hello: KEYS fleet, and the default pool's slots and tickets; ARGV
 * instance, ttl ms. {instances alive, leases held, tickets waiting}: the
 * live ones (an expired lease or ticket is not counted), so that the
 * figures an idle fleet reports are Redis's of now, not of its last
 * acquire. */
const char lease_script_hello[] =
	LUA_PRELUDE
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
	"redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
	"keep(KEYS[1], tonumber(ARGV[2]))\n"
	"return {redis.call('ZCARD', KEYS[1]),\n"
	"  redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf'),\n"
	"  redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')}\n";

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
	struct lease_figures f = { -1, -1, -1, 0 };
	long long code, at;

	if (reply == NULL) {
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	code = element_int(reply, 0);
	f.held = element_int(reply, 1);
	f.queued = element_int(reply, 2);
	at = element_int(reply, 3);
	if ((code != 0 && code != 1) || at < 0 || at > LEASE_SERVERS_MAX) {
		op->cache->counters.errors++;
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	f.server = (int)at - 1;
	op->cb.lease(code == 1 ? LEASE_GRANTED : LEASE_QUEUED, &f, op->arg);
}

static void
on_hello_reply(struct cache_op *op, redisReply *reply)
{
	struct lease_figures f = { -1, -1, -1, 0 };

	if (reply == NULL) {
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	f.instances = element_int(reply, 0);
	f.held = element_int(reply, 1);
	f.queued = element_int(reply, 2);
	if (f.instances < 0 || f.held < 0 || f.queued < 0) {
		op->cache->counters.errors++;
		op->cb.lease(LEASE_ERROR, &f, op->arg);
		return;
	}
	op->cb.lease(LEASE_GRANTED, &f, op->arg);
}

/* A new op on the budget's slot that runs script id with nkeys keys (its
 * arguments follow them), or NULL. */
static struct cache_op *
slot_op(struct cache *c, op_reply_cb *on_reply, void *arg, enum script_id id,
    int nkeys, int *failed)
{
	char n[8];
	struct cache_op *op;

	if ((op = op_new(c, LEASE_TAG, on_reply, arg)) == NULL)
		return NULL;
	script_use(op, id);
	snprintf(n, sizeof(n), "%d", nkeys);
	*failed |= op_argstr(op, n);
	return op;
}

/* One key of pool's: its slots, queue or tickets, or a server's slots
 * (server:URL); the default pool's have no "POOL:". */
static int
pool_key(struct cache_op *op, const char *pool, const char *what,
    const char *server)
{
	char name[REDIS_KEY_MAX], suffix[REDIS_KEY_MAX];

	snprintf(suffix, sizeof(suffix), "%s%s%s%s%s", pool, pool[0] != '\0' ?
	    ":" : "", what, server != NULL ? ":" : "", server != NULL ? server :
	    "");
	op_key_name(name, sizeof(name), op->cache, LEASE_TAG, suffix);
	return op_argstr(op, name);
}

static int
queue_keys(struct cache_op *op, const char *pool)
{
	return pool_key(op, pool, "slots", NULL) |
	    pool_key(op, pool, "queue", NULL) |
	    pool_key(op, pool, "tickets", NULL);
}

static int
arg_int(struct cache_op *op, int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return op_argstr(op, text);
}

struct cache_op *
lease_acquire(struct cache *c, const struct lease_ask *a, lease_cb *cb,
    void *arg)
{
	char channel[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0, n = a->nservers;

	assert(n >= 0 && n <= LEASE_SERVERS_MAX);
	if ((op = slot_op(c, on_acquire_slot_reply, arg, SCRIPT_LEASE_ACQUIRE,
	    3 + n + (a->leave != NULL), &failed)) == NULL)
		return NULL;
	op->cb.lease = cb;
	failed |= queue_keys(op, a->pool);
	for (int i = 0; i < n; i++)
		failed |= pool_key(op, a->pool, "server", a->servers[i]);
	if (a->leave != NULL)
		failed |= pool_key(op, a->pool, "server", a->leave);
	op_key_name(channel, sizeof(channel), c, LEASE_TAG, "freed");
	failed |= op_argstr(op, a->token);
	failed |= op_argstr(op, a->ticket);
	failed |= arg_int(op, a->rank);
	failed |= arg_int(op, a->max);
	failed |= arg_int(op, a->lease_ms);
	failed |= op_argstr(op, channel);
	failed |= arg_int(op, a->server_cap);
	failed |= arg_int(op, n);
	return op_start(op, failed);
}

struct cache_op *
lease_renew(struct cache *c, const char *pool, const char *token,
    const char *server, int64_t lease_ms, fence_cb *cb, void *arg)
{
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, op_fence_reply, arg, SCRIPT_LEASE_RENEW,
	    1 + (server != NULL), &failed)) == NULL)
		return NULL;
	op->cb.fence = cb;
	failed |= pool_key(op, pool, "slots", NULL);
	if (server != NULL)
		failed |= pool_key(op, pool, "server", server);
	failed |= op_argstr(op, token);
	failed |= arg_int(op, lease_ms);
	return op_start(op, failed);
}

struct cache_op *
lease_release(struct cache *c, const char *pool, const char *token,
    const char *ticket, const char *server, int max, fence_cb *cb, void *arg)
{
	char channel[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, op_fence_reply, arg, SCRIPT_LEASE_RELEASE,
	    3 + (server != NULL), &failed)) == NULL)
		return NULL;
	op->cb.fence = cb;
	failed |= queue_keys(op, pool);
	if (server != NULL)
		failed |= pool_key(op, pool, "server", server);
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
	struct cache_op *op;
	int failed = 0;

	if ((op = slot_op(c, on_hello_reply, arg, SCRIPT_LEASE_HELLO, 3,
	    &failed)) == NULL)
		return NULL;
	op->cb.lease = cb;
	failed |= pool_key(op, "", "fleet", NULL);
	failed |= pool_key(op, "", "slots", NULL);
	failed |= pool_key(op, "", "tickets", NULL);
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
