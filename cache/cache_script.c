/*
 * The Lua scripts of the lock protocol, the invalidations and the tags
 * (see cache.h), and their loading: each node's command connection loads
 * them all when it comes up, and an op that runs one is sent with EVALSHA
 * (or EVAL, cache_op.c). Every key a script touches is named in KEYS and
 * shares one hash tag, so it runs on one node.
 *
 * Calls nothing in cache/; the op transport finds a script's text in the
 * op (script_use).
 */

#include "cache/cache_int.h"

#include <stdint.h>
#include <string.h>

#include "common/log.h"

#define FILL_ENTRY_MAX		16384	/* a fill carries an entry this long */
#define STRINGIFY(x)		STRINGIFY2(x)
#define STRINGIFY2(x)		#x

/*
 * acquire: KEYS entry, lock, backoff; ARGV token, px, seen generation,
 * holder waited for. Returns {2, entry} when the entry is not the one the
 * caller saw (someone refreshed it: no lock needed; an entry without a
 * readable generation is junk for a refresh to replace, never a change),
 * {5, failure, error response or false} when the holder the caller waited
 * for ("" if none) released the lock after an upstream failure (KEYS[6]:
 * its waiters take its failure instead of the lock), {4} while the key is
 * remembered as uncacheable (every request goes upstream itself), {3,
 * failure, last error response or false} while the key's refreshes are
 * backing off after upstream failures, {1} when the lock was taken (or
 * already is ours: an acquire sent again after a lost connection), {1, 1}
 * when it was taken after the holder waited for released it with no
 * failure (not a takeover: that holder did not die), {0, holder's token}
 * if busy. KEYS[4] and KEYS[5] are the key's last error response and its
 * hit-for-miss mark.
 */
static const char script_acquire[] =
	"local e = redis.call('GET', KEYS[1])\n"
	"local g = e and string.sub(e, 1, " STRINGIFY(ENTRY_LUA_GEN_END) ")\n"
	"if g and g ~= ARGV[3] and string.find(g, '^[0-9a-f]+$') and #g == "
	STRINGIFY(ENTRY_LUA_GEN_END) " then\n"
	"  return {2, e}\n"
	"end\n"
	"local released = 0\n"
	"if ARGV[4] ~= '' then\n"
	"  local f = redis.call('HMGET', KEYS[6], 'token', 'failure', 'error')\n"
	"  if f[1] == ARGV[4] and f[2] then return {5, f[2], f[3]} end\n"
	"  if f[1] == ARGV[4] then released = 1 end\n"
	"end\n"
	"if redis.call('EXISTS', KEYS[5]) == 1 then return {4} end\n"
	"local b = redis.call('GET', KEYS[3])\n"
	"if b then return {3, b, redis.call('GET', KEYS[4])} end\n"
	"if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
	"  return {1, released}\n"
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
 * A fill message's key (the script's argument k, ARGV[i]) gains, after a
 * NUL, '@' and the moment of publishing by Redis's clock,
 * "SECONDS.MICROSECONDS" (a receiver before it takes the message for a
 * key and an entry that does not decode, and reads the entry).
 */
#define FILL_AT(k) \
	"local t = redis.call('TIME')\n" \
	k " = " k " .. '\\0" FILL_AT_MARK "' .. t[1] .. '.' .. t[2]\n"

/*
 * store: KEYS entry, lock, backoff, fails[, marker, variants]; ARGV token,
 * blob, px, fill channel, key[, marker blob, variant id, max variants].
 * The fence: only the holder of the lock writes. With a marker (a response
 * with Vary), the entry is one variant: the marker goes at the key's own
 * entry and the variant joins the key's set of variants, unless the set
 * has max variants already (then the status STORE_FULL: nothing stored,
 * the lock released and the key's waiters told, to fetch their own). A success ends any backoff.
 * The key's waiters hear of it on its shard channel: the key, FILL_AT
 * (when Redis published it, for the receiver's fill_delay), and after a
 * NUL the entry itself when it is one (no marker) of at most
 * FILL_ENTRY_MAX bytes, so that they need not read it. 1 stored, 0 lost.
 */
static const char script_store[] =
	"if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end\n"
	"if KEYS[5] and redis.call('SISMEMBER', KEYS[6], ARGV[7]) == 0 and\n"
	"    redis.call('SCARD', KEYS[6]) >= tonumber(ARGV[8]) then\n"
	"  redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])\n"
	"  redis.call('SPUBLISH', ARGV[4], ARGV[5])\n"
	"  return redis.status_reply('" STORE_FULL "')\n"
	"end\n"
	"redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
	"if KEYS[5] then\n"
	"  redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[3])\n"
	"  redis.call('SADD', KEYS[6], ARGV[7])\n"
	"  if redis.call('PTTL', KEYS[6]) < tonumber(ARGV[3]) then\n"
	"    redis.call('PEXPIRE', KEYS[6], ARGV[3])\n"
	"  end\n"
	"end\n"
	"redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])\n"
	FILL_AT("ARGV[5]")
	"if not KEYS[5] and #ARGV[2] <= " STRINGIFY(FILL_ENTRY_MAX) " then\n"
	"  redis.call('SPUBLISH', ARGV[4], ARGV[5] .. '\\0' .. ARGV[2])\n"
	"else\n"
	"  redis.call('SPUBLISH', ARGV[4], ARGV[5])\n"
	"end\n"
	"return 1\n";

/*
 * The fence of an invalidation or a soft purge (KEYS[1] the key's lock,
 * KEYS[2] its failed hash; ARGV[2] the key, ARGV[3] its fill channel): a
 * refresh that holds the key's lock now fetched before the purge, so the
 * lock goes, and the fenced store then refuses its entry (FENCE_LOST):
 * what it fetched is never stored as fresh after the purge. Its token is
 * kept as released (with no failure) for as long as the lock would have
 * lived, so that the key's waiters, woken on the fill channel, take the
 * lock as from a holder that let it go, one of them fetching again.
 */
#define LUA_FENCE \
	"local holder = redis.call('GET', KEYS[1])\n" \
	"if holder then\n" \
	"  local left = redis.call('PTTL', KEYS[1])\n" \
	"  redis.call('DEL', KEYS[1], KEYS[2])\n" \
	"  redis.call('HSET', KEYS[2], 'token', holder)\n" \
	"  redis.call('PEXPIRE', KEYS[2], left > 0 and left or 1)\n" \
	"  local k = ARGV[2]\n" \
	FILL_AT("k") \
	"  redis.call('SPUBLISH', ARGV[3], k)\n" \
	"end\n"

/*
 * invalidate: KEYS lock, failed, entry, variants, then the entry of every
 * variant the caller read from the set; ARGV purge channel, key, fill
 * channel, then those variants' ids. Every key it touches is named in
 * KEYS (they share the hash tag). Deletes them, and the set unless a
 * variant joined it meanwhile (then -1: the caller reads the set again);
 * fences a refresh in flight (LUA_FENCE); tells every process to drop its
 * copies. Returns how many entries went.
 */
static const char script_invalidate[] =
	"local n = 0\n"
	"for i = 5, #KEYS do n = n + redis.call('DEL', KEYS[i]) end\n"
	"n = n + redis.call('DEL', KEYS[3])\n"
	"for i = 4, #ARGV do redis.call('SREM', KEYS[4], ARGV[i]) end\n"
	"if redis.call('SCARD', KEYS[4]) > 0 then return -1 end\n"
	LUA_FENCE
	"redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
	"return n\n";

/*
 * release: KEYS lock, backoff, fails, last error, hit-for-miss, failed;
 * ARGV token, fill channel, key, failure, base ms, max ms, after, error
 * response, hit-for-miss ms, failed ms. Deletes the lock only if it holds
 * our token. The token is kept failed ms, with the failure if any, for
 * the fetch's waiters: acquire answers the failure to those naming our
 * token, and tells one that takes the lock after us that we released it
 * (we did not die). Failures are counted
 * fleet-wide; from the after-th in a row, the key's
 * next refresh waits base * 2^(failures - after) ms, at most max, and
 * acquire answers with the upstream's last error response meanwhile. With
 * hit-for-miss ms, the key is remembered as uncacheable that long. The
 * fill message is the key and FILL_AT. 1 released, 0 lost.
 */
static const char script_release[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
	"redis.call('DEL', KEYS[1])\n"
	"if tonumber(ARGV[10]) > 0 then\n"
	"  redis.call('DEL', KEYS[6])\n"
	"  redis.call('HSET', KEYS[6], 'token', ARGV[1])\n"
	"  if ARGV[4] ~= '' then\n"
	"    redis.call('HSET', KEYS[6], 'failure', ARGV[4])\n"
	"    if ARGV[8] ~= '' then redis.call('HSET', KEYS[6], 'error', ARGV[8]) end\n"
	"  end\n"
	"  redis.call('PEXPIRE', KEYS[6], ARGV[10])\n"
	"end\n"
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
	FILL_AT("ARGV[3]")
	"redis.call('SPUBLISH', ARGV[2], ARGV[3])\n"
	"return 1\n";

/*
 * soften: KEYS lock, failed, entry, variants, then the entry of every
 * variant the caller read from the set; ARGV purge channel, key, fill
 * channel, now ms. A soft purge: each entry still fresh becomes stale now
 * (its fresh-until, ENTRY_LUA_FRESH in the encoding, is lowered; nothing
 * else changes, so it is served stale while one refresh runs); a refresh
 * in flight is fenced (LUA_FENCE); every process drops its copies.
 * Returns how many changed.
 */
static const char script_soften[] =
	"local now = tonumber(ARGV[4])\n"
	"local n = 0\n"
	"for i = 3, #KEYS do\n"
	"  local e = i ~= 4 and redis.call('GET', KEYS[i])\n"
	"  if e and #e >= " STRINGIFY(ENTRY_LUA_TIMES_END) " and"
	" struct.unpack('<i8', e, " STRINGIFY(ENTRY_LUA_FRESH) ") > now then\n"
	"    redis.call('SET', KEYS[i], string.sub(e, 1, "
	STRINGIFY(ENTRY_LUA_BEFORE_FRESH) ") .. struct.pack('<i8', now) .."
	" string.sub(e, " STRINGIFY(ENTRY_LUA_AFTER_FRESH) "), 'KEEPTTL')\n"
	"    n = n + 1\n"
	"  end\n"
	"end\n"
	LUA_FENCE
	"redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
	"return n\n";

/* Redis's clock in ms, for the tag scripts (they run effects-replicated). */
#define LUA_NOW \
	"local t = redis.call('TIME')\n" \
	"local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

/*
 * tag: KEYS the tag's keys, scored by when their entries expire; ARGV key,
 * ms its entry lives, grace ms, most keys to drop. Files the key (again:
 * a new expiry) and drops at most that many keys whose entries have been
 * gone longer than the grace. Returns {keys now, keys dropped}.
 */
static const char script_tag[] =
	LUA_NOW
	"local px = tonumber(ARGV[2])\n"
	"redis.call('ZADD', KEYS[1], now + px, ARGV[1])\n"
	"local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf',"
	" now - tonumber(ARGV[3]), 'LIMIT', 0, tonumber(ARGV[4]))\n"
	"if #old > 0 then redis.call('ZREM', KEYS[1], unpack(old)) end\n"
	"if redis.call('PTTL', KEYS[1]) < px then\n"
	"  redis.call('PEXPIRE', KEYS[1], px)\n"
	"end\n"
	"return {redis.call('ZCARD', KEYS[1]), #old}\n";

/*
 * tag_take: KEYS the tag's keys, a hard purge's snapshot of them, the
 * plain set an older version kept; ARGV 1 when the keys may become the
 * snapshot, batch, grace ms, then the keys invalidated since the last
 * call. Takes those out, then names the next batch: from the plain set,
 * else from the snapshot (when there is none, the keys become it, with
 * RENAME, once per purge), whose keys gone longer than the grace are
 * dropped instead. Returns {0, dropped} when no key is left (or batch is
 * 0), else {1, dropped, keys...}, 2 first when the snapshot was made now.
 */
static const char script_tag_take[] =
	"local n = tonumber(ARGV[2])\n"
	"if #ARGV > 3 then\n"
	"  redis.call('ZREM', KEYS[2], unpack(ARGV, 4))\n"
	"  redis.call('SREM', KEYS[3], unpack(ARGV, 4))\n"
	"end\n"
	"if n == 0 then return {0, 0} end\n"
	"local m = redis.call('SRANDMEMBER', KEYS[3], n)\n"
	"if #m > 0 then return {1, 0, unpack(m)} end\n"
	"local status = 1\n"
	"if redis.call('EXISTS', KEYS[2]) == 0 then\n"
	"  if ARGV[1] ~= '1' or redis.call('EXISTS', KEYS[1]) == 0 then\n"
	"    return {0, 0}\n"
	"  end\n"
	"  redis.call('RENAME', KEYS[1], KEYS[2])\n"
	"  status = 2\n"
	"end\n"
	LUA_NOW
	"local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf',"
	" now - tonumber(ARGV[3]), 'LIMIT', 0, n)\n"
	"if #old > 0 then redis.call('ZREM', KEYS[2], unpack(old)) end\n"
	"if #old == n then return {status, #old} end\n"
	"return {status, #old,"
	" unpack(redis.call('ZRANGE', KEYS[2], 0, n - #old - 1))}\n";

_Static_assert(SCRIPT_COUNT <= ROUTE_SCRIPTS_MAX, "node sha room");

static const char *const script_src[SCRIPT_COUNT] = {
	script_acquire, script_renew, script_store, script_release,
	script_invalidate, script_soften, script_tag, script_tag_take,
	lease_script_acquire, lease_script_renew, lease_script_release,
	lease_script_hello, leader_script_claim, leader_script_resign,
};

static void
on_script_loaded(redisAsyncContext *ac, void *r, void *privdata)
{
	struct node *n = ac->data;
	redisReply *reply = r;
	intptr_t id = (intptr_t)privdata;

	if (n == NULL || reply == NULL || n->refused)
		return;		/* after a refused set-up: said once there */
	if (reply->type == REDIS_REPLY_STRING && reply->len == 40)
		memcpy(n->sha[id], reply->str, 41);
	else if (reply->type == REDIS_REPLY_ERROR)
		log_warn("redis: SCRIPT LOAD failed: %s", reply->str);
}

void
script_load(struct node *n, void *arg)
{
	(void)arg;
	for (intptr_t i = 0; i < SCRIPT_COUNT; i++)
		redisAsyncCommand(n->cmd, on_script_loaded, (void *)i,
		    "SCRIPT LOAD %s", script_src[i]);
}

void
script_use(struct cache_op *op, enum script_id id)
{
	op->script = id;
	op->src = id != SCRIPT_NONE ? script_src[id] : NULL;
}
