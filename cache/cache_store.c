/*
 * The shared cache in Redis: entries, the refresh lock and the
 * notifications, on the caller's libevent loop. The routing table
 * (cache_route.c) gives each command the node that owns its key's slot:
 * the one server in single and sentinel mode, the slot's primary in
 * cluster mode. Each node has a command connection, which pipelines every
 * lookup and lock script, and a subscriber connection (cache_sub.c).
 *
 * Each operation is a struct cache_op. While it waits for a reply, hiredis
 * owns it and calls on_op_reply exactly once (with NULL on error or
 * disconnect); a MOVED, an ASK or (cluster, sentinel) a lost node sends
 * it again or parks it until its node is known, always within its timer.
 * The caller's callback runs at most once: with the reply, or earlier
 * from the op's timer when Redis is slower than [redis] timeout, or never
 * when the caller cancelled the op.
 *
 * Channels: a store or release SPUBLISHes the key on "<prefix>{key}:filled",
 * a shard channel in the key's slot, which only processes waiting for the
 * key subscribe to (struct watch). Invalidations and purges PUBLISH on
 * "<prefix>purge", which every process subscribes to on one node (in a
 * cluster, a PUBLISH reaches every node).
 */

#include "cache/cache.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "cache/cache_key.h"
#include "cache/cache_route.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"

#define CACHE_MAGIC		0x43414348u	/* "CACH" */
#define OP_MAGIC		0x4341504fu	/* "CAPO" */
#define WATCH_MAGIC		0x57415443u	/* "WATC" */
#define OP_ARGS_FIRST		16	/* room for a command's arguments, doubled */
#define KEY_SUFFIX_MAX		16		/* "}:entry", "}:filled" */
#define REDIS_KEY_MAX		(CONF_PREFIX_MAX + 1 + CACHE_KEY_MAX + \
				 KEY_SUFFIX_MAX + CACHE_VARIANT_MAX)
#define FILL_SUFFIX		"filled"
#define FILL_ENTRY_MAX		16384	/* a fill carries an entry this long */
#define STRINGIFY(x)		STRINGIFY2(x)
#define STRINGIFY2(x)		#x
#define PURGE_CHANNEL		"purge"
#define SCAN_COUNT		"500"	/* keys a purge's SCAN looks at a time */
#define REDIRECTS_MAX		5	/* MOVED/ASK one op follows */
#define INVALIDATE_ROUNDS	3	/* variant lists read again when they grow */
#define PARK_RETRY_MS		50	/* parked ops try their node again */
#define WATCH_LOCK_TTLS		4	/* a watch outlives the lock's PX this */
#define WATCH_MIN_MS		10000	/* many times, and at least this long */

/*
 * acquire: KEYS entry, lock, backoff; ARGV token, px, seen generation.
 * Returns {2, entry} when the entry is not the one the caller saw (someone
 * refreshed it: no lock needed; an entry without a readable generation
 * is junk for a refresh to replace, never a change), {4} while the key is
 * remembered as uncacheable (every request goes upstream itself), {3,
 * failure, last error response or false} while the key's refreshes are
 * backing off after upstream failures, {1} when the lock was taken (or
 * already is ours: an acquire sent again after a lost connection), {0,
 * holder's token} if busy. KEYS[4] and KEYS[5] are the key's last error
 * response and its hit-for-miss mark.
 */
static const char script_acquire[] =
	"local e = redis.call('GET', KEYS[1])\n"
	"local g = e and string.sub(e, 1, 32)\n"
	"if g and g ~= ARGV[3] and string.find(g, '^[0-9a-f]+$') and #g == 32 then\n"
	"  return {2, e}\n"
	"end\n"
	"if redis.call('EXISTS', KEYS[5]) == 1 then return {4} end\n"
	"local b = redis.call('GET', KEYS[3])\n"
	"if b then return {3, b, redis.call('GET', KEYS[4])} end\n"
	"if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
	"  return {1}\n"
	"end\n"
	"local l = redis.call('GET', KEYS[2])\n"
	"if l == ARGV[1] then return {1} end\n"
	"return {0, l}\n";

/* renew: KEYS lock; ARGV token, px. 1 renewed, 0 lost. */
static const char script_renew[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
	"  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"end\n"
	"return 0\n";

/*
 * store: KEYS entry, lock, backoff, fails[, marker, variants]; ARGV token,
 * blob, px, fill channel, key[, marker blob, variant id]. The fence: only
 * the holder of the lock writes. With a marker (a response with Vary), the
 * entry is one variant: the marker goes at the key's own entry and the
 * variant joins the key's set of variants. A success ends any backoff.
 * The key's waiters hear of it on its shard channel: the key, and after a
 * NUL the entry itself when it is one (no marker) of at most
 * FILL_ENTRY_MAX bytes, so that they need not read it. 1 stored, 0 lost.
 */
static const char script_store[] =
	"if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end\n"
	"redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
	"if KEYS[5] then\n"
	"  redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[3])\n"
	"  redis.call('SADD', KEYS[6], ARGV[7])\n"
	"  if redis.call('PTTL', KEYS[6]) < tonumber(ARGV[3]) then\n"
	"    redis.call('PEXPIRE', KEYS[6], ARGV[3])\n"
	"  end\n"
	"end\n"
	"redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])\n"
	"if not KEYS[5] and #ARGV[2] <= " STRINGIFY(FILL_ENTRY_MAX) " then\n"
	"  redis.call('SPUBLISH', ARGV[4], ARGV[5] .. '\\0' .. ARGV[2])\n"
	"else\n"
	"  redis.call('SPUBLISH', ARGV[4], ARGV[5])\n"
	"end\n"
	"return 1\n";

/*
 * invalidate: KEYS entry, variants, then the entry of every variant the
 * caller read from the set; ARGV purge channel, key, then those variants'
 * ids. Every key it touches is named in KEYS (they share the hash tag).
 * Deletes them, and the set unless a variant joined it meanwhile (then
 * -1: the caller reads the set again); tells every process to drop its
 * copies. Returns how many entries went.
 */
static const char script_invalidate[] =
	"local n = 0\n"
	"for i = 1, #KEYS do\n"
	"  if i ~= 2 then n = n + redis.call('DEL', KEYS[i]) end\n"
	"end\n"
	"for i = 3, #ARGV do redis.call('SREM', KEYS[2], ARGV[i]) end\n"
	"if redis.call('SCARD', KEYS[2]) > 0 then return -1 end\n"
	"redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
	"return n\n";

/*
 * release: KEYS lock, backoff, fails, last error, hit-for-miss; ARGV
 * token, fill channel, key, failure, base ms, max ms, after, error
 * response, hit-for-miss ms. Deletes the lock only if it holds our token.
 * Failures are counted fleet-wide; from the after-th in a row, the key's
 * next refresh waits base * 2^(failures - after) ms, at most max, and
 * acquire answers with the upstream's last error response meanwhile. With
 * hit-for-miss ms, the key is remembered as uncacheable that long.
 * 1 released, 0 lost.
 */
static const char script_release[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"redis.call('DEL', KEYS[1])\n"
	"local max = tonumber(ARGV[6])\n"
	"local after = tonumber(ARGV[7])\n"
	"if ARGV[4] ~= '' and max > 0 then\n"
	"  local n = redis.call('INCR', KEYS[3])\n"
	"  redis.call('PEXPIRE', KEYS[3], max * 4)\n"
	"  if n >= after then\n"
	"    local d = tonumber(ARGV[5]) * 2 ^ math.min(n - after, 30)\n"
	"    if d > max then d = max end\n"
	"    d = math.floor(d)\n"
	"    redis.call('SET', KEYS[2], ARGV[4], 'PX', d)\n"
	"    if ARGV[8] ~= '' then\n"
	"      redis.call('SET', KEYS[4], ARGV[8], 'PX', d)\n"
	"    else\n"
	"      redis.call('DEL', KEYS[4])\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if tonumber(ARGV[9]) > 0 then\n"
	"  redis.call('SET', KEYS[5], '1', 'PX', ARGV[9])\n"
	"end\n"
	"redis.call('SPUBLISH', ARGV[2], ARGV[3])\n"
	"return 1\n";

/*
 * soften: KEYS entry, variants, then the entry of every variant the caller
 * read from the set; ARGV purge channel, key, now ms. A soft purge: each
 * entry still fresh becomes stale now (its fresh-until, at offset 45 of
 * the encoding, is lowered; nothing else changes, so it is served stale
 * while one refresh runs); every process drops its copies. Returns how
 * many changed.
 */
static const char script_soften[] =
	"local now = tonumber(ARGV[3])\n"
	"local n = 0\n"
	"for i = 1, #KEYS do\n"
	"  local e = i ~= 2 and redis.call('GET', KEYS[i])\n"
	"  if e and #e >= 61 and struct.unpack('<i8', e, 46) > now then\n"
	"    redis.call('SET', KEYS[i], string.sub(e, 1, 45) .."
	" struct.pack('<i8', now) .. string.sub(e, 54), 'KEEPTTL')\n"
	"    n = n + 1\n"
	"  end\n"
	"end\n"
	"redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
	"return n\n";

/* tag: KEYS the tag's set of keys; ARGV key, ms it must live at least. */
static const char script_tag[] =
	"redis.call('SADD', KEYS[1], ARGV[1])\n"
	"if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
	"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"end\n"
	"return 1\n";

enum script_id {
	SCRIPT_ACQUIRE,
	SCRIPT_RENEW,
	SCRIPT_STORE,
	SCRIPT_RELEASE,
	SCRIPT_INVALIDATE,
	SCRIPT_SOFTEN,
	SCRIPT_TAG,
	SCRIPT_COUNT,
	SCRIPT_NONE = SCRIPT_COUNT	/* a plain command */
};

_Static_assert(SCRIPT_COUNT <= ROUTE_SCRIPTS_MAX, "node sha room");

static const char *const script_src[SCRIPT_COUNT] = {
	script_acquire, script_renew, script_store, script_release,
	script_invalidate, script_soften, script_tag,
};

enum op_kind {
	OP_GET,
	OP_ACQUIRE,
	OP_FENCE,		/* renew, store, release */
	OP_INVALIDATE,		/* SMEMBERS, then the script */
	OP_HOLDER,		/* a watch checks who holds the lock */
	OP_TAG_MEMBERS,		/* a purge by tag reads the tag's keys */
};

/* This process waits for a key's fill: subscribed to its shard channel. */
struct watch {
	uint32_t		 magic;
	char			 key[CACHE_KEY_MAX + 1];
	char			 channel[REDIS_KEY_MAX];
	unsigned		 slot;
	struct node		*node;		/* where it is subscribed */
	char			 holder[ENTRY_GEN_LEN + 1];	/* the lock's
						 * token when last found busy */
	struct cache		*cache;
	struct event		*expire;
	TAILQ_ENTRY(watch)	 link;
};

struct cache {
	uint32_t		 magic;
	struct event_base	*base;
	enum redis_mode		 mode;
	char			 prefix[CONF_PREFIX_MAX];
	char			 purge_channel[CONF_PREFIX_MAX + sizeof(PURGE_CHANNEL)];
	int64_t			 timeout_ms;
	struct route		*rt;

	struct node		*bcast;		/* holds the purge subscription */
	struct dict		*watches;	/* key -> struct watch */
	TAILQ_HEAD(, watch)	 watch_list;
	TAILQ_HEAD(, cache_op)	 parked;	/* waiting for their node */
	struct event		*park_ev;
	unsigned		 park_round;	/* on_park_retry's runs */

	cache_fill_cb		*on_fill;
	cache_purge_cb		*on_purge;
	void			*fill_arg;
	int			 closing;
	struct cache_counters	 counters;
};

struct cache_op {
	uint32_t		 magic;
	struct cache		*cache;
	enum op_kind		 kind;
	union {
		cache_get_cb	*get;
		lock_cb		*lock;
		fence_cb	*fence;
	} cb;
	void			*arg;
	int			 finished;	/* caller's callback ran or op cancelled */
	int			 inflight;	/* hiredis holds it */
	int			 parked;
	unsigned		 park_round;	/* c->park_round when parked */
	TAILQ_ENTRY(cache_op)	 park_link;
	struct event		*timer;
	int64_t			 sent_us;	/* when the command was sent */
	unsigned		 slot;
	struct node		*ask;		/* ASK: the next send goes there */
	int			 redirects;
	int			 rounds;	/* invalidate: set reads */
	int			 soft;		/* invalidate: soften instead */
	/* What to send again: a script's numkeys, keys..., args... (EVALSHA
	 * or EVAL in front), or a plain command. */
	enum script_id		 script;
	int			 retried;	/* NOSCRIPT: sent as EVAL */
	int			 nargs;
	int			 cap;
	char			**args;
	size_t			*arglens;
	/* The cache key (acquire: whose fill to wait for when busy, with
	 * the lock's PX; invalidate: whose variants; a watch's check). */
	char			*key;
	int64_t			 px_ms;
};

static int op_send(struct cache_op *op);
static void deliver_members(struct cache_op *op, const redisReply *reply);
static void watch_end(struct cache *c, struct watch *w);
static void watch_check(struct cache *c, struct watch *w);

/*
 * The Redis key of key's entry, lock, ...: "<prefix>{<key>}:<suffix>". A
 * variant "K\nID" is "<prefix>{K}:<suffix>:ID": it keeps K's hash tag.
 */
static void
key_name(char *out, size_t outlen, const struct cache *c, const char *key,
    const char *suffix)
{
	const char *nl = strchr(key, '\n');

	if (nl == NULL)
		snprintf(out, outlen, "%s{%s}:%s", c->prefix, key, suffix);
	else
		snprintf(out, outlen, "%s{%.*s}:%s:%s", c->prefix,
		    (int)(nl - key), key, suffix, nl + 1);
}

/* ---- what the routing table tells us ---- */

static void
on_script_loaded(redisAsyncContext *ac, void *r, void *privdata)
{
	struct node *n = ac->data;
	redisReply *reply = r;
	intptr_t id = (intptr_t)privdata;

	if (n == NULL || reply == NULL)
		return;
	if (reply->type == REDIS_REPLY_STRING && reply->len == 40)
		memcpy(n->sha[id], reply->str, 41);
	else if (reply->type == REDIS_REPLY_ERROR)
		log_warn("redis: SCRIPT LOAD failed: %s", reply->str);
}

static void
on_cmd_up(struct node *n, void *arg)
{
	(void)arg;
	for (intptr_t i = 0; i < SCRIPT_COUNT; i++)
		redisAsyncCommand(n->cmd, on_script_loaded, (void *)i,
		    "SCRIPT LOAD %s", script_src[i]);
}

static void
subscribe(struct node *n, const char *verb, const char *channel)
{
	const char *argv[] = { verb, channel };

	route_sub_send(n, 2, argv);
}

/* The purge subscription, on some node that listens. */
static void
bcast_place(struct cache *c)
{
	if (c->bcast != NULL || (c->bcast = route_broadcast_node(c->rt)) == NULL)
		return;
	subscribe(c->bcast, "SUBSCRIBE", c->purge_channel);
}

/* A watch follows its slot's owner. */
static void
watch_place(struct cache *c, struct watch *w)
{
	struct node *owner = route_node(c->rt, w->slot);

	if (owner == w->node)
		return;
	if (w->node != NULL && w->node->sub_up)
		subscribe(w->node, "SUNSUBSCRIBE", w->channel);
	if ((w->node = owner) != NULL)
		subscribe(owner, "SSUBSCRIBE", w->channel);
}

static void
on_sub_up(struct node *n, void *arg)
{
	struct cache *c = arg;
	struct watch *w;

	assert(c->magic == CACHE_MAGIC);
	if (!n->sub_up) {
		/* Lost: its watches come back with it; purges move away. */
		if (c->bcast == n && c->mode == REDIS_CLUSTER) {
			c->bcast = NULL;
			bcast_place(c);
		}
		return;
	}
	if (c->bcast == n)
		subscribe(n, "SUBSCRIBE", c->purge_channel);
	TAILQ_FOREACH(w, &c->watch_list, link)
		if (w->node == n)
			subscribe(n, "SSUBSCRIBE", w->channel);
}

/* "<prefix>{K}:filled" -> the watch of K, or NULL. */
static struct watch *
watch_of_channel(struct cache *c, const char *channel)
{
	char key[CACHE_KEY_MAX + 1];
	size_t plen = strlen(c->prefix), len = strlen(channel);
	size_t tail = strlen("}:" FILL_SUFFIX);

	if (len <= plen + 1 + tail || len - plen - 1 - tail > CACHE_KEY_MAX)
		return NULL;
	snprintf(key, sizeof(key), "%.*s", (int)(len - plen - 1 - tail),
	    channel + plen + 1);
	return dict_get(c->watches, key);
}

/* A fill: "key", or "key\0entry" (see script_store). An entry that does
 * not decode is as if it had not come: the waiters read it. */
static void
fill_received(struct cache *c, const char *msg, size_t len)
{
	size_t klen = strnlen(msg, len);
	struct cache_entry *e = NULL;
	char err[64];

	if (klen + 1 < len)
		e = entry_decode(msg + klen + 1, len - klen - 1, err,
		    sizeof(err));
	c->on_fill(msg, e, c->fill_arg);
	entry_unref(&e);
}

static void
on_sub_reply(struct node *n, const redisReply *r, void *arg)
{
	struct cache *c = arg;
	const char *kind, *channel;
	struct watch *w;

	assert(c->magic == CACHE_MAGIC);
	if (r->type == REDIS_REPLY_ERROR) {
		/* A SSUBSCRIBE to a node that no longer owns the slot. */
		log_warn("redis: %s: %s", n->name, r->str);
		TAILQ_FOREACH(w, &c->watch_list, link)
			if (w->node == n)
				w->node = NULL;
		route_refresh(c->rt);
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING)
		return;
	kind = r->element[0]->str;
	channel = r->element[1]->str;
	if (strcmp(kind, "subscribe") == 0 &&
	    strcmp(channel, c->purge_channel) == 0) {
		log_info("redis: subscribed to %s on %s", channel, n->name);
		/* Purges may have been missed while unsubscribed. */
		c->on_fill(NULL, NULL, c->fill_arg);
	} else if (strcmp(kind, "message") == 0 &&
	    strcmp(channel, c->purge_channel) == 0 &&
	    r->element[2]->type == REDIS_REPLY_STRING) {
		c->counters.purges_received++;
		if (c->on_purge != NULL)
			c->on_purge(r->element[2]->str, c->fill_arg);
	} else if (strcmp(kind, "ssubscribe") == 0) {
		/* Live now: a fill may have come before, so look again. */
		if ((w = watch_of_channel(c, channel)) != NULL)
			watch_check(c, w);
	} else if (strcmp(kind, "smessage") == 0 &&
	    r->element[2]->type == REDIS_REPLY_STRING) {
		c->counters.fills_received++;
		if ((w = dict_get(c->watches, r->element[2]->str)) != NULL)
			watch_end(c, w);
		fill_received(c, r->element[2]->str, r->element[2]->len);
	} else if (strcmp(kind, "sunsubscribe") == 0 &&
	    (w = watch_of_channel(c, channel)) != NULL && w->node == n) {
		/*
		 * Not asked for by this watch: the slot left n (a migration),
		 * or it is the late answer to an earlier watch of the key.
		 * Subscribe again where the map says; a node that lost the
		 * slot answers MOVED, and the map is read again.
		 */
		subscribe(n, "SSUBSCRIBE", w->channel);
	}
}

static void
on_node_gone(struct node *n, void *arg)
{
	struct cache *c = arg;
	struct watch *w;
	struct cache_op *op;

	assert(c->magic == CACHE_MAGIC);
	TAILQ_FOREACH(w, &c->watch_list, link)
		if (w->node == n)
			w->node = NULL;
	TAILQ_FOREACH(op, &c->parked, park_link)
		if (op->ask == n)
			op->ask = NULL;
	if (c->bcast == n)
		c->bcast = NULL;
}

static void
on_map_changed(void *arg)
{
	struct cache *c = arg;
	struct watch *w;
	struct timeval now = { 0, 0 };

	assert(c->magic == CACHE_MAGIC);
	if (c->closing)
		return;
	TAILQ_FOREACH(w, &c->watch_list, link)
		watch_place(c, w);
	bcast_place(c);
	if (!TAILQ_EMPTY(&c->parked))
		evtimer_add(c->park_ev, &now);
}

static const struct route_hooks hooks = {
	.cmd_up = on_cmd_up,
	.sub_up = on_sub_up,
	.sub_reply = on_sub_reply,
	.node_gone = on_node_gone,
	.map_changed = on_map_changed,
};

/* ---- watches ---- */

static struct cache_op *op_new(struct cache *c, enum op_kind kind,
    const char *key, void *arg);
static struct cache_op *op_start(struct cache_op *op, int failed);
static int op_argstr(struct cache_op *op, const char *s);

/*
 * A watch's subscription is live: if the lock no longer holds the token
 * that made us wait, its holder stored or released before we listened,
 * and the key's flight must look again (else the fill is still to come).
 */
static void
watch_check(struct cache *c, struct watch *w)
{
	char lock[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_HOLDER, w->key, NULL)) == NULL) {
		c->on_fill(w->key, NULL, c->fill_arg);
		return;
	}
	key_name(lock, sizeof(lock), c, w->key, "lock");
	failed |= (op->key = strdup(w->key)) == NULL;
	failed |= op_argstr(op, "GET");
	failed |= op_argstr(op, lock);
	if (op_start(op, failed) == NULL)
		c->on_fill(w->key, NULL, c->fill_arg);
}

static void
deliver_holder(struct cache_op *op, const redisReply *reply)
{
	struct cache *c = op->cache;
	struct watch *w = dict_get(c->watches, op->key);

	if (w == NULL)
		return;		/* the wait is over already */
	if (reply == NULL || reply->type != REDIS_REPLY_STRING ||
	    strcmp(reply->str, w->holder) != 0)
		c->on_fill(w->key, NULL, c->fill_arg);
}

static void
watch_end(struct cache *c, struct watch *w)
{
	if (w->node != NULL && w->node->sub_up)
		subscribe(w->node, "SUNSUBSCRIBE", w->channel);
	dict_del(c->watches, w->key);
	TAILQ_REMOVE(&c->watch_list, w, link);
	event_free(w->expire);
	w->magic = 0;
	free(w);
}

static void
on_watch_expire(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;

	assert(w->magic == WATCH_MAGIC);
	watch_end(w->cache, w);
}

/*
 * After a busy lock (holder's token, lock PX): hear of key's fill. The
 * fill normally ends the watch; the timer only ends one whose holder died
 * (its lock expires unannounced), long after any waiter gave up.
 */
static void
watch_add(struct cache *c, const char *key, const char *holder, int64_t px_ms)
{
	struct watch *w = dict_get(c->watches, key);
	int64_t ms = px_ms * WATCH_LOCK_TTLS;
	struct timeval tv = util_timeval(ms > WATCH_MIN_MS ? ms : WATCH_MIN_MS);

	if (w == NULL) {
		if ((w = calloc(1, sizeof(*w))) == NULL)
			return;
		w->magic = WATCH_MAGIC;
		snprintf(w->key, sizeof(w->key), "%s", key);
		key_name(w->channel, sizeof(w->channel), c, key, FILL_SUFFIX);
		w->slot = cache_key_slot(w->channel);
		w->cache = c;
		if ((w->expire = evtimer_new(c->base, on_watch_expire, w)) ==
		    NULL || dict_set(c->watches, w->key, w) == -1) {
			if (w->expire != NULL)
				event_free(w->expire);
			free(w);
			return;
		}
		TAILQ_INSERT_TAIL(&c->watch_list, w, link);
		watch_place(c, w);
	}
	snprintf(w->holder, sizeof(w->holder), "%s", holder);
	evtimer_add(w->expire, &tv);
}

static void
watch_drop(struct cache *c, const char *key)
{
	struct watch *w = dict_get(c->watches, key);

	if (w != NULL)
		watch_end(c, w);
}

/* ---- life cycle ---- */

static void on_park_retry(evutil_socket_t fd, short what, void *arg);
static void op_free(struct cache_op *op);

struct cache *
cache_new(struct event_base *base, const struct conf *conf,
    cache_fill_cb *on_fill, void *arg)
{
	struct cache *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->magic = CACHE_MAGIC;
	c->base = base;
	c->mode = conf->redis_mode;
	snprintf(c->prefix, sizeof(c->prefix), "%s", conf->redis_prefix);
	snprintf(c->purge_channel, sizeof(c->purge_channel), "%s%s", c->prefix,
	    PURGE_CHANNEL);
	c->timeout_ms = conf->redis_timeout_ms;
	c->on_fill = on_fill;
	c->fill_arg = arg;
	TAILQ_INIT(&c->watch_list);
	TAILQ_INIT(&c->parked);
	if ((c->watches = dict_new()) == NULL ||
	    (c->park_ev = evtimer_new(base, on_park_retry, c)) == NULL ||
	    (c->rt = route_new(base, conf, &hooks, c, &c->counters)) == NULL)
		goto fail;
	bcast_place(c);
	return c;
fail:
	if (c->park_ev != NULL)
		event_free(c->park_ev);
	dict_free(&c->watches);
	free(c);
	return NULL;
}

void
cache_free(struct cache **cp)
{
	struct cache *c = *cp;
	struct cache_op *op;
	struct watch *w;

	if (c == NULL)
		return;
	assert(c->magic == CACHE_MAGIC);
	c->closing = 1;
	/* Ops in flight get their NULL replies here and free themselves. */
	route_free(&c->rt);
	while ((op = TAILQ_FIRST(&c->parked)) != NULL)
		op_free(op);	/* unparks it */
	while ((w = TAILQ_FIRST(&c->watch_list)) != NULL) {
		w->node = NULL;
		watch_end(c, w);
	}
	dict_free(&c->watches);
	event_free(c->park_ev);
	c->magic = 0;
	free(c);
	*cp = NULL;
}

int
cache_is_up(const struct cache *c)
{
	return route_all_up(c->rt);
}

const char *
cache_down_reason(const struct cache *c)
{
	return route_down_reason(c->rt);
}

const char *
cache_mode(const struct cache *c)
{
	switch (c->mode) {
	case REDIS_CLUSTER:
		return "cluster";
	case REDIS_SENTINEL:
		return "sentinel";
	case REDIS_SINGLE:
		break;
	}
	return "single";
}

const struct cache_counters *
cache_counters(struct cache *c)
{
	route_node_states(c->rt, &c->counters);
	return &c->counters;
}

void
cache_counters_add(struct cache_counters *dst, const struct cache_counters *src)
{
	dst->commands += src->commands;
	dst->errors += src->errors;
	dst->timeouts += src->timeouts;
	dst->connects += src->connects;
	dst->auth_failures += src->auth_failures;
	dst->disconnects += src->disconnects;
	dst->fills_received += src->fills_received;
	dst->purges_received += src->purges_received;
	dst->moved += src->moved;
	dst->ask += src->ask;
	dst->map_refreshes += src->map_refreshes;
	hist_merge(&dst->command_duration, &src->command_duration);
	for (int i = 0; i < src->nnodes; i++) {
		const struct cache_node_state *s = &src->nodes[i];
		int j;

		for (j = 0; j < dst->nnodes; j++)
			if (strcmp(dst->nodes[j].name, s->name) == 0)
				break;
		if (j < dst->nnodes) {
			dst->nodes[j].up &= s->up;
		} else if (dst->nnodes < CACHE_NODES_MAX) {
			dst->nodes[dst->nnodes++] = *s;
		}
	}
}

/* ---- operations ---- */

static void
op_free(struct cache_op *op)
{
	assert(op->magic == OP_MAGIC && !op->inflight);
	if (op->parked)
		TAILQ_REMOVE(&op->cache->parked, op, park_link);
	if (op->timer != NULL)
		event_free(op->timer);
	for (int i = 0; i < op->nargs; i++)
		free(op->args[i]);
	free(op->args);
	free(op->arglens);
	free(op->key);
	op->magic = 0;
	free(op);
}

/* Runs the caller's callback once with an error result. */
static void
op_fail(struct cache_op *op)
{
	if (op->finished)
		return;
	op->finished = 1;
	evtimer_del(op->timer);
	op->cache->counters.errors++;
	switch (op->kind) {
	case OP_GET:
		op->cb.get(CACHE_ERROR, NULL, op->arg);
		break;
	case OP_ACQUIRE:
		op->cb.lock(LOCK_ERROR, NULL, NULL, op->arg);
		break;
	case OP_FENCE:
	case OP_INVALIDATE:
		if (op->cb.fence != NULL)
			op->cb.fence(FENCE_ERROR, op->arg);
		break;
	case OP_HOLDER:
		deliver_holder(op, NULL);
		break;
	case OP_TAG_MEMBERS:
		deliver_members(op, NULL);
		break;
	}
}

/* The op fails now, and goes unless hiredis still holds it. */
static void
op_abort(struct cache_op *op)
{
	op_fail(op);
	if (!op->inflight)
		op_free(op);
}

static void
on_op_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct cache_op *op = arg;
	struct cache *c = op->cache;
	struct node *n = route_node(c->rt, op->slot);

	assert(op->magic == OP_MAGIC);
	if (op->finished)
		return;
	c->counters.timeouts++;
	log_warn("redis: no reply within %" PRId64 "ms", c->timeout_ms);
	op_abort(op);
	if (n != NULL)
		route_node_timeout(n);	/* op may be gone after this */
}

/* Waits for its node (cluster, sentinel): 0, or -1 in single mode. */
static int
op_park(struct cache_op *op)
{
	struct cache *c = op->cache;
	struct timeval tv = util_timeval(PARK_RETRY_MS);

	if (c->mode == REDIS_SINGLE || c->closing)
		return -1;
	assert(!op->parked && !op->inflight);
	op->parked = 1;
	op->park_round = c->park_round;
	TAILQ_INSERT_TAIL(&c->parked, op, park_link);
	if (!evtimer_pending(c->park_ev, NULL))
		evtimer_add(c->park_ev, &tv);
	route_refresh(c->rt);
	return 0;
}

/*
 * Sends every parked op again. Those that park again (their node is still
 * unknown) wait for the next round; ops stay on c->parked until their
 * turn, so a callback that cancels one meanwhile finds it there.
 */
static void
on_park_retry(evutil_socket_t fd, short what, void *arg)
{
	struct cache *c = arg;
	struct cache_op *op;
	unsigned round;

	assert(c->magic == CACHE_MAGIC);
	round = ++c->park_round;
	while ((op = TAILQ_FIRST(&c->parked)) != NULL &&
	    op->park_round != round) {
		TAILQ_REMOVE(&c->parked, op, park_link);
		op->parked = 0;
		if (op->finished)
			op_free(op);
		else if (op_send(op) == -1)
			op_abort(op);
	}
}
/*
 * Decodes a stored entry. An entry this process cannot read (corrupt, or
 * written by another format version) is returned as an expired stub that
 * keeps its generation, so the lock script still lets a refresh replace it.
 */
static struct cache_entry *
decode(redisReply *reply)
{
	char err[128];
	struct cache_entry *e;

	/* The entry takes the reply's string, body and all, uncopied;
	 * hiredis then frees the rest of the reply. */
	e = entry_decode_take(reply->str, reply->len, err, sizeof(err));
	if (e != NULL) {
		reply->str = NULL;
		reply->len = 0;
		return e;
	}
	log_warn("redis: unreadable entry ignored: %s", err);
	if ((e = entry_new()) == NULL)
		return NULL;
	if (reply->len >= ENTRY_GEN_LEN &&
	    strspn(reply->str, "0123456789abcdef") >= ENTRY_GEN_LEN) {
		memcpy(e->gen, reply->str, ENTRY_GEN_LEN);
		e->gen[ENTRY_GEN_LEN] = '\0';
	}
	return e;
}

static void
deliver_get(struct cache_op *op, redisReply *reply)
{
	struct cache_entry *e;

	if (reply->type == REDIS_REPLY_NIL) {
		op->cb.get(CACHE_ABSENT, NULL, op->arg);
	} else if (reply->type == REDIS_REPLY_STRING &&
	    (e = decode(reply)) != NULL) {
		op->cb.get(CACHE_FOUND, e, op->arg);
	} else {
		op->cache->counters.errors++;
		op->cb.get(CACHE_ERROR, NULL, op->arg);
	}
}

static void
deliver_acquire(struct cache_op *op, redisReply *reply)
{
	struct cache_entry *e;
	long long code = -1;

	if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
	    reply->element[0]->type == REDIS_REPLY_INTEGER)
		code = reply->element[0]->integer;
	/* Busy: wait for the holder's fill; else this process waits no more. */
	if (code == 0)
		watch_add(op->cache, op->key, reply->elements == 2 &&
		    reply->element[1]->type == REDIS_REPLY_STRING ?
		    reply->element[1]->str : "", op->px_ms);
	else
		watch_drop(op->cache, op->key);
	if (code == 1) {
		op->cb.lock(LOCK_ACQUIRED, NULL, NULL, op->arg);
	} else if (code == 0) {
		op->cb.lock(LOCK_BUSY, NULL, NULL, op->arg);
	} else if (code == 2 && reply->elements == 2 &&
	    reply->element[1]->type == REDIS_REPLY_STRING &&
	    (e = decode(reply->element[1])) != NULL) {
		op->cb.lock(LOCK_CHANGED, e, NULL, op->arg);
	} else if (code == 4) {
		op->cb.lock(LOCK_PASS, NULL, NULL, op->arg);
	} else if (code == 3 && reply->elements == 3 &&
	    reply->element[1]->type == REDIS_REPLY_STRING) {
		/* The upstream's last error response, if it sent one. */
		e = reply->element[2]->type == REDIS_REPLY_STRING ?
		    decode(reply->element[2]) : NULL;
		op->cb.lock(LOCK_BACKOFF, e, reply->element[1]->str, op->arg);
	} else {
		op->cache->counters.errors++;
		op->cb.lock(LOCK_ERROR, NULL, NULL, op->arg);
	}
}

static void
deliver_fence(struct cache_op *op, const redisReply *reply)
{
	if (reply->type != REDIS_REPLY_INTEGER) {
		op->cache->counters.errors++;
		if (op->cb.fence != NULL)
			op->cb.fence(FENCE_ERROR, op->arg);
	} else if (op->cb.fence != NULL) {
		op->cb.fence(reply->integer >= 1 ? FENCE_OK : FENCE_LOST,
		    op->arg);
	}
}

/* "MOVED 3999 127.0.0.1:6381", "ASK ...": the node, or NULL. */
static struct node *
redirect_target(struct cache *c, const char *err, unsigned *slot)
{
	char host[CONF_HOST_MAX];
	const char *addr, *colon;
	unsigned long s;
	char *end;

	if ((addr = strchr(err, ' ')) == NULL)
		return NULL;
	s = strtoul(addr + 1, &end, 10);
	if (*end != ' ' || s >= ROUTE_SLOTS ||
	    (colon = strrchr(end + 1, ':')) == NULL ||
	    (size_t)(colon - end - 1) >= sizeof(host))
		return NULL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - end - 1), end + 1);
	*slot = (unsigned)s;
	return route_node_at(c->rt, host, atoi(colon + 1));
}

/*
 * An error reply that names where to go (MOVED, ASK) or says to wait for
 * the cluster or a new primary: 0 when op was sent again or parked.
 */
static int
redirect(struct cache_op *op, const char *err)
{
	struct cache *c = op->cache;
	struct node *n;
	unsigned slot;

	if (strncmp(err, "MOVED ", 6) == 0 || strncmp(err, "ASK ", 4) == 0) {
		if (++op->redirects > REDIRECTS_MAX ||
		    (n = redirect_target(c, err, &slot)) == NULL)
			return -1;
		if (err[0] == 'M') {
			c->counters.moved++;
			route_moved(c->rt, slot, n);
		} else {
			c->counters.ask++;
			op->ask = n;
		}
		return op_send(op);
	}
	if (strncmp(err, "TRYAGAIN", 8) == 0 ||
	    strncmp(err, "CLUSTERDOWN", 11) == 0 ||
	    strncmp(err, "READONLY", 8) == 0 ||
	    strncmp(err, "MASTERDOWN", 10) == 0 ||
	    strncmp(err, "LOADING", 7) == 0)
		return op_park(op);
	return -1;
}

static int op_invalidate_script(struct cache_op *op, const redisReply *r);

static void
on_op_reply(redisAsyncContext *ac, void *r, void *privdata)
{
	struct cache_op *op = privdata;
	struct node *n = ac->data;
	redisReply *reply = r;

	assert(op->magic == OP_MAGIC);
	op->inflight = 0;
	if (reply != NULL && !op->cache->closing) {
		if (n != NULL)
			n->timeouts_in_row = 0;
		hist_observe(&op->cache->counters.command_duration,
		    (double)(util_mono_us() - op->sent_us) / 1e6);
	}
	if (op->finished && !op->cache->closing && op->kind == OP_INVALIDATE &&
	    op->script == SCRIPT_NONE && reply != NULL &&
	    reply->type == REDIS_REPLY_ARRAY) {
		/* The caller has its answer (a timeout), but the invalidation
		 * still goes through, as it would in one command. */
		if (op_invalidate_script(op, reply) == 0 && op_send(op) == 0)
			return;
	}
	if (op->finished || op->cache->closing) {
		op_free(op);
		return;
	}
	if (reply == NULL) {
		/* The node went away: wait for its successor, if any. */
		if (op_park(op) == -1)
			op_abort(op);
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		if (redirect(op, reply->str) == 0)
			return;
		if (op->script != SCRIPT_NONE && !op->retried &&
		    strncmp(reply->str, "NOSCRIPT", 8) == 0) {
			/* Script cache flushed: resend the source once. */
			op->retried = 1;
			if (n != NULL)
				n->sha[op->script][0] = '\0';
			if (op_send(op) == 0)
				return;
		}
		log_warn("redis: %s", reply->str);
		op_abort(op);
		return;
	}
	if (op->kind == OP_INVALIDATE && op->script == SCRIPT_NONE) {
		/* The variants are known: now the script that drops them. */
		if (op_invalidate_script(op, reply) == -1 || op_send(op) == -1)
			op_abort(op);
		return;
	}
	if (op->kind == OP_INVALIDATE && reply->type == REDIS_REPLY_INTEGER &&
	    reply->integer < 0 && ++op->rounds < INVALIDATE_ROUNDS) {
		/* A variant joined meanwhile: read the set again. */
		if (op_invalidate_script(op, NULL) == -1 || op_send(op) == -1)
			op_abort(op);
		return;
	}
	op->finished = 1;
	evtimer_del(op->timer);
	switch (op->kind) {
	case OP_GET:
		deliver_get(op, reply);
		break;
	case OP_ACQUIRE:
		deliver_acquire(op, reply);
		break;
	case OP_FENCE:
	case OP_INVALIDATE:
		deliver_fence(op, reply);
		break;
	case OP_HOLDER:
		deliver_holder(op, reply);
		break;
	case OP_TAG_MEMBERS:
		deliver_members(op, reply);
		break;
	}
	op_free(op);
}

/* A new op for a command on key's slot; NULL when Redis is down. */
static struct cache_op *
op_new(struct cache *c, enum op_kind kind, const char *key, void *arg)
{
	char name[REDIS_KEY_MAX];
	struct cache_op *op;
	struct timeval tv = util_timeval(c->timeout_ms);

	assert(c->magic == CACHE_MAGIC);
	if (c->closing || !route_usable(c->rt))
		return NULL;
	if ((op = calloc(1, sizeof(*op))) == NULL)
		return NULL;
	op->magic = OP_MAGIC;
	op->cache = c;
	op->kind = kind;
	op->arg = arg;
	op->script = SCRIPT_NONE;
	key_name(name, sizeof(name), c, key, "entry");
	op->slot = cache_key_slot(name);
	if ((op->timer = evtimer_new(c->base, on_op_timeout, op)) == NULL) {
		free(op);
		return NULL;
	}
	evtimer_add(op->timer, &tv);
	c->counters.commands++;
	return op;
}

static int
op_arg(struct cache_op *op, const void *s, size_t len)
{
	if (op->nargs == op->cap) {
		int cap = op->cap == 0 ? OP_ARGS_FIRST : op->cap * 2;
		char **args = realloc(op->args, (size_t)cap * sizeof(*args));
		size_t *lens;

		if (args == NULL)
			return -1;
		op->args = args;
		if ((lens = realloc(op->arglens, (size_t)cap *
		    sizeof(*lens))) == NULL)
			return -1;
		op->arglens = lens;
		op->cap = cap;
	}
	if ((op->args[op->nargs] = malloc(len + 1)) == NULL)
		return -1;
	memcpy(op->args[op->nargs], s, len);
	op->args[op->nargs][len] = '\0';
	op->arglens[op->nargs] = len;
	op->nargs++;
	return 0;
}

static int
op_argstr(struct cache_op *op, const char *s)
{
	return op_arg(op, s, strlen(s));
}

static void
op_clear_args(struct cache_op *op)
{
	for (int i = 0; i < op->nargs; i++)
		free(op->args[i]);
	op->nargs = 0;
}

/* Sends op to its slot's node (or where an ASK said), or parks it. */
static int
op_send(struct cache_op *op)
{
	struct cache *c = op->cache;
	struct node *n = op->ask != NULL ? op->ask : route_node(c->rt, op->slot);
	const char **argv;
	size_t *argvlen;
	int argc = 0, rc;

	if (n == NULL || !n->up || n->cmd == NULL)
		return op_park(op);
	if ((argv = calloc((size_t)op->nargs + 2, sizeof(*argv))) == NULL ||
	    (argvlen = calloc((size_t)op->nargs + 2, sizeof(*argvlen))) ==
	    NULL) {
		free(argv);
		return -1;
	}
	if (op->script != SCRIPT_NONE) {
		if (op->retried || n->sha[op->script][0] == '\0') {
			argv[0] = "EVAL";
			argv[1] = script_src[op->script];
		} else {
			argv[0] = "EVALSHA";
			argv[1] = n->sha[op->script];
		}
		argvlen[0] = strlen(argv[0]);
		argvlen[1] = strlen(argv[1]);
		argc = 2;
	}
	for (int i = 0; i < op->nargs; i++, argc++) {
		argv[argc] = op->args[i];
		argvlen[argc] = op->arglens[i];
	}
	if (op->ask != NULL) {
		redisAsyncCommand(n->cmd, NULL, NULL, "ASKING");
		op->ask = NULL;		/* once */
	}
	rc = redisAsyncCommandArgv(n->cmd, on_op_reply, op, argc, argv,
	    argvlen);
	free(argv);
	free(argvlen);
	if (rc != REDIS_OK)
		return -1;
	op->inflight = 1;
	op->sent_us = util_mono_us();
	return 0;
}

/* Sends a new op, or frees it and returns NULL when it cannot. */
static struct cache_op *
op_start(struct cache_op *op, int failed)
{
	if (failed || op_send(op) == -1) {
		op_free(op);
		return NULL;
	}
	return op;
}

struct cache_op *
cache_lookup(struct cache *c, const char *key, cache_get_cb *cb, void *arg)
{
	char name[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_GET, key, arg)) == NULL)
		return NULL;
	op->cb.get = cb;
	key_name(name, sizeof(name), c, key, "entry");
	failed |= op_argstr(op, "GET");
	failed |= op_argstr(op, name);
	return op_start(op, failed);
}

struct cache_op *
lock_acquire(struct cache *c, const char *key, const char *token,
    int64_t px_ms, const char *seen_gen, lock_cb *cb, void *arg)
{
	char entry[REDIS_KEY_MAX], lock[REDIS_KEY_MAX], backoff[REDIS_KEY_MAX];
	char lasterr[REDIS_KEY_MAX], hfm[REDIS_KEY_MAX], px[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_ACQUIRE, key, arg)) == NULL)
		return NULL;
	op->cb.lock = cb;
	op->script = SCRIPT_ACQUIRE;
	op->px_ms = px_ms;
	failed |= (op->key = strdup(key)) == NULL;
	key_name(entry, sizeof(entry), c, key, "entry");
	key_name(lock, sizeof(lock), c, key, "lock");
	key_name(backoff, sizeof(backoff), c, key, "backoff");
	key_name(lasterr, sizeof(lasterr), c, key, "lasterr");
	key_name(hfm, sizeof(hfm), c, key, "hfm");
	snprintf(px, sizeof(px), "%" PRId64, px_ms);
	failed |= op_argstr(op, "5");
	failed |= op_argstr(op, entry);
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, backoff);
	failed |= op_argstr(op, lasterr);
	failed |= op_argstr(op, hfm);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, px);
	failed |= op_argstr(op, seen_gen);
	return op_start(op, failed);
}

struct cache_op *
lock_renew(struct cache *c, const char *key, const char *token,
    int64_t px_ms, fence_cb *cb, void *arg)
{
	char lock[REDIS_KEY_MAX], px[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_FENCE, key, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op->script = SCRIPT_RENEW;
	key_name(lock, sizeof(lock), c, key, "lock");
	snprintf(px, sizeof(px), "%" PRId64, px_ms);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, px);
	return op_start(op, failed);
}

struct cache_op *
cache_store(struct cache *c, const char *key, const char *token,
    const struct cache_entry *e, int64_t expire_at_ms,
    const char *variant, const struct cache_entry *marker, fence_cb *cb,
    void *arg)
{
	char entry[REDIS_KEY_MAX], lock[REDIS_KEY_MAX], px[24];
	char backoff[REDIS_KEY_MAX], fails[REDIS_KEY_MAX];
	char mkey[REDIS_KEY_MAX], variants[REDIS_KEY_MAX];
	char channel[REDIS_KEY_MAX];
	char base[CACHE_KEY_MAX + 1];	/* the key a variant belongs to */
	struct evbuffer *blob, *mblob = NULL;
	const char *vid = variant != NULL ? strchr(variant, '\n') : NULL;
	struct cache_op *op;
	int64_t ttl = expire_at_ms - util_now_ms();
	int failed = 0;

	assert(strcmp(e->gen, token) == 0);
	assert((marker == NULL) == (vid == NULL));
	if ((blob = evbuffer_new()) == NULL)
		return NULL;
	if (marker != NULL && ((mblob = evbuffer_new()) == NULL ||
	    entry_encode(marker, mblob) == -1))
		goto fail;
	if (entry_encode(e, blob) == -1 ||
	    (op = op_new(c, OP_FENCE, key, arg)) == NULL)
		goto fail;
	op->cb.fence = cb;
	op->script = SCRIPT_STORE;
	key_name(entry, sizeof(entry), c, variant != NULL ? variant : key,
	    "entry");
	key_name(lock, sizeof(lock), c, key, "lock");
	key_name(backoff, sizeof(backoff), c, key, "backoff");
	key_name(fails, sizeof(fails), c, key, "fails");
	key_name(channel, sizeof(channel), c, key, FILL_SUFFIX);
	snprintf(px, sizeof(px), "%" PRId64, ttl > 0 ? ttl : 1);
	failed |= op_argstr(op, marker != NULL ? "6" : "4");
	failed |= op_argstr(op, entry);
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, backoff);
	failed |= op_argstr(op, fails);
	if (marker != NULL) {
		snprintf(base, sizeof(base), "%.*s", (int)(vid - variant),
		    variant);
		key_name(variants, sizeof(variants), c, base, "variants");
		key_name(mkey, sizeof(mkey), c, base, "entry");
		failed |= op_argstr(op, mkey);
		failed |= op_argstr(op, variants);
	}
	failed |= op_argstr(op, token);
	failed |= op_arg(op, evbuffer_pullup(blob, -1),
	    evbuffer_get_length(blob));
	failed |= op_argstr(op, px);
	failed |= op_argstr(op, channel);
	failed |= op_argstr(op, key);
	if (marker != NULL) {
		failed |= op_arg(op, evbuffer_pullup(mblob, -1),
		    evbuffer_get_length(mblob));
		failed |= op_argstr(op, vid + 1);
		evbuffer_free(mblob);
	}
	evbuffer_free(blob);
	return op_start(op, failed);
fail:
	if (mblob != NULL)
		evbuffer_free(mblob);
	evbuffer_free(blob);
	return NULL;
}

struct cache_op *
lock_release(struct cache *c, const char *key, const char *token,
    const struct release_args *ra, fence_cb *cb, void *arg)
{
	char lock[REDIS_KEY_MAX], backoff[REDIS_KEY_MAX], fails[REDIS_KEY_MAX];
	char lasterr[REDIS_KEY_MAX], hfm[REDIS_KEY_MAX], channel[REDIS_KEY_MAX];
	char base[24], max[24], after[24], hfm_ms[24];
	struct evbuffer *err = NULL;
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_FENCE, key, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op->script = SCRIPT_RELEASE;
	key_name(lock, sizeof(lock), c, key, "lock");
	key_name(backoff, sizeof(backoff), c, key, "backoff");
	key_name(fails, sizeof(fails), c, key, "fails");
	key_name(lasterr, sizeof(lasterr), c, key, "lasterr");
	key_name(hfm, sizeof(hfm), c, key, "hfm");
	key_name(channel, sizeof(channel), c, key, FILL_SUFFIX);
	snprintf(base, sizeof(base), "%" PRId64, ra->backoff_base_ms);
	snprintf(max, sizeof(max), "%" PRId64, ra->backoff_max_ms);
	snprintf(after, sizeof(after), "%d", ra->backoff_after);
	snprintf(hfm_ms, sizeof(hfm_ms), "%" PRId64, ra->hit_for_miss_ms);
	if (ra->error != NULL && ((err = evbuffer_new()) == NULL ||
	    entry_encode(ra->error, err) == -1))
		failed = 1;
	failed |= op_argstr(op, "5");
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, backoff);
	failed |= op_argstr(op, fails);
	failed |= op_argstr(op, lasterr);
	failed |= op_argstr(op, hfm);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, channel);
	failed |= op_argstr(op, key);
	failed |= op_argstr(op, ra->failure != NULL ? ra->failure : "");
	failed |= op_argstr(op, base);
	failed |= op_argstr(op, max);
	failed |= op_argstr(op, after);
	failed |= err != NULL ? op_arg(op, evbuffer_pullup(err, -1),
	    evbuffer_get_length(err)) : op_argstr(op, "");
	failed |= op_argstr(op, hfm_ms);
	if (err != NULL)
		evbuffer_free(err);
	return op_start(op, failed);
}

void
cache_op_cancel(struct cache_op **opp)
{
	struct cache_op *op = *opp;

	if (op == NULL)
		return;
	assert(op->magic == OP_MAGIC);
	op->finished = 1;
	evtimer_del(op->timer);
	*opp = NULL;
	if (!op->inflight)
		op_free(op);	/* parked; else freed when hiredis replies */
}

/*
 * Builds an invalidation's next command: SMEMBERS of the key's variants
 * (members NULL), or the script that drops the entry and those variants.
 * The key is in op->key.
 */
static int
op_invalidate_script(struct cache_op *op, const redisReply *members)
{
	struct cache *c = op->cache;
	const char *key = op->key;
	char name[REDIS_KEY_MAX], variant[CACHE_KEY_MAX + CACHE_VARIANT_MAX + 2];
	char numkeys[24];
	size_t nv = 0;
	int failed = 0;

	op_clear_args(op);
	if (members == NULL) {
		op->script = SCRIPT_NONE;
		key_name(name, sizeof(name), c, key, "variants");
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
	op->script = op->soft ? SCRIPT_SOFTEN : SCRIPT_INVALIDATE;
	snprintf(numkeys, sizeof(numkeys), "%zu", 2 + nv);
	failed |= op_argstr(op, numkeys);
	key_name(name, sizeof(name), c, key, "entry");
	failed |= op_argstr(op, name);
	key_name(name, sizeof(name), c, key, "variants");
	failed |= op_argstr(op, name);
	for (size_t i = 0; i < members->elements; i++) {
		const redisReply *m = members->element[i];

		if (m->type != REDIS_REPLY_STRING || m->len >= CACHE_VARIANT_MAX)
			continue;
		snprintf(variant, sizeof(variant), "%s\n%s", key, m->str);
		key_name(name, sizeof(name), c, variant, "entry");
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

/* Invalidates (soft: softens) key's entry and its variants. */
static struct cache_op *
purge_key(struct cache *c, const char *key, int soft, fence_cb *cb,
    void *arg)
{
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_INVALIDATE, key, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op->soft = soft;
	failed |= (op->key = strdup(key)) == NULL;
	failed |= failed || op_invalidate_script(op, NULL) == -1;
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
	if ((op = op_new(c, OP_FENCE, name, NULL)) == NULL)
		return -1;
	op->cb.fence = NULL;
	op->script = SCRIPT_TAG;
	key_name(set, sizeof(set), c, name, "keys");
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
deliver_members(struct cache_op *op, const redisReply *reply)
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
		if ((del = op_new(pg->cache, OP_FENCE, name, NULL)) != NULL) {
			del->cb.fence = NULL;
			key_name(set, sizeof(set), pg->cache, name, "keys");
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
	if ((op = op_new(c, OP_TAG_MEMBERS, name, pg)) == NULL) {
		free(pg);
		return -1;
	}
	key_name(set, sizeof(set), c, name, "keys");
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
