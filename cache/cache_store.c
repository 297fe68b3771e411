/*
 * The shared cache in Redis: entries, the refresh lock and the "filled"
 * notifications, over two hiredis async connections on the caller's
 * libevent loop. The command connection pipelines every lookup and lock
 * script; the subscriber connection only listens (a subscribed connection
 * can issue no other commands).
 *
 * Each operation is a struct cache_op. hiredis calls its reply callback
 * exactly once (with NULL on error or disconnect), and that callback is the
 * only place an op is freed. The caller's callback runs at most once: with
 * the reply, or earlier from the op's timer when Redis is slower than
 * [redis] timeout, or never when the caller cancelled the op.
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
#include <hiredis/adapters/libevent.h>

#include "cache/cache_key.h"
#include "common/log.h"
#include "common/util.h"

#define CACHE_MAGIC		0x43414348u	/* "CACH" */
#define OP_MAGIC		0x4341504fu	/* "CAPO" */
#define RECONNECT_MIN_MS	100
#define RECONNECT_MAX_MS	5000
#define KEY_SUFFIX_MAX		16		/* "}:entry", "}:lock" */
#define REDIS_KEY_MAX		(CONF_PREFIX_MAX + 1 + CACHE_KEY_MAX + \
				 KEY_SUFFIX_MAX + CACHE_VARIANT_MAX)
#define OP_ARGS_MAX		20
#define FILL_CHANNEL		"filled"
#define PURGE_CHANNEL		"purge"
#define SCAN_COUNT		"500"	/* keys a purge's SCAN looks at a time */
#define HUNG_TIMEOUTS		5	/* timeouts in a row that drop the connection */

/*
 * acquire: KEYS entry, lock, backoff, last error, hit-for-miss; ARGV
 * token, px, seen generation. Returns {2, entry} when the entry is not the
 * one the caller saw (someone refreshed it: no lock needed; an entry
 * without a readable generation is junk for a refresh to replace, never a
 * change), {4} while the key is remembered as uncacheable (every request
 * goes upstream itself), {3, failure, last error response or false}
 * while the key's refreshes are backing off after upstream failures, {1}
 * when the lock was taken, {0} if busy.
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
	"return {0}\n";

/* renew: KEYS lock; ARGV token, px. 1 renewed, 0 lost. */
static const char script_renew[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
	"  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"end\n"
	"return 0\n";

/*
 * store: KEYS entry, lock, backoff, fails[, marker, variants]; ARGV token,
 * blob, px, channel, key[, marker blob, variant id]. The fence: only the
 * holder of the lock writes. With a marker (a response with Vary), the
 * entry is one variant: the marker goes at the key's own entry and the
 * variant joins the key's set of variants. A success ends any backoff.
 * 1 stored, 0 lost.
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
	"redis.call('PUBLISH', ARGV[4], ARGV[5])\n"
	"return 1\n";

/*
 * invalidate: KEYS entry, variants; ARGV channel, key. Deletes the entry
 * and every variant of it (they share its hash tag), and tells every
 * process to drop its copies. Returns how many entries went.
 */
static const char script_invalidate[] =
	"local n = redis.call('DEL', KEYS[1])\n"
	"for _, v in ipairs(redis.call('SMEMBERS', KEYS[2])) do\n"
	"  n = n + redis.call('DEL', KEYS[1] .. ':' .. v)\n"
	"end\n"
	"redis.call('DEL', KEYS[2])\n"
	"redis.call('PUBLISH', ARGV[1], ARGV[2])\n"
	"return n\n";

/*
 * release: KEYS lock, backoff, fails, last error, hit-for-miss; ARGV
 * token, channel, key, failure, base ms, max ms, after, error response,
 * hit-for-miss ms. Deletes the lock only if it holds our token. Failures
 * are counted fleet-wide; from the after-th in a row, the key's next
 * refresh waits base * 2^(failures - after) ms, at most max, and acquire
 * answers with the upstream's last error response meanwhile. With
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
	"redis.call('PUBLISH', ARGV[2], ARGV[3])\n"
	"return 1\n";

/*
 * soften: KEYS entry, variants; ARGV now ms, channel, key. A soft purge:
 * the entry and its variants become stale now (their fresh-until, at
 * offset 45 of the encoding, is lowered; nothing else changes, so they
 * are served stale while one refresh runs). Returns how many changed.
 */
static const char script_soften[] =
	"local now = tonumber(ARGV[1])\n"
	"local function soften(k)\n"
	"  local e = redis.call('GET', k)\n"
	"  if not e or #e < 61 then return 0 end\n"
	"  if struct.unpack('<i8', e, 46) <= now then return 0 end\n"
	"  redis.call('SET', k, string.sub(e, 1, 45) .. struct.pack('<i8', now)"
	" .. string.sub(e, 54), 'KEEPTTL')\n"
	"  return 1\n"
	"end\n"
	"local n = soften(KEYS[1])\n"
	"for _, v in ipairs(redis.call('SMEMBERS', KEYS[2])) do\n"
	"  n = n + soften(KEYS[1] .. ':' .. v)\n"
	"end\n"
	"redis.call('PUBLISH', ARGV[2], ARGV[3])\n"
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
	SCRIPT_COUNT
};

static const char *const script_src[SCRIPT_COUNT] = {
	script_acquire, script_renew, script_store, script_release,
	script_invalidate, script_soften, script_tag,
};

enum op_kind {
	OP_GET,
	OP_ACQUIRE,
	OP_FENCE,		/* renew, store, release */
};

struct cache {
	uint32_t		 magic;
	struct event_base	*base;
	char			 host[CONF_HOST_MAX];
	int			 port;
	char			 unix_path[CONF_PATH_MAX];
	char			 password[CONF_SECRET_MAX];
	int			 db;
	char			 prefix[CONF_PREFIX_MAX];
	char			 channel[CONF_PREFIX_MAX + sizeof(FILL_CHANNEL)];
	char			 purge_channel[CONF_PREFIX_MAX + sizeof(PURGE_CHANNEL)];
	int64_t			 timeout_ms;

	redisAsyncContext	*cmd;		/* NULL while disconnected */
	int			 cmd_up;	/* its set-up was answered */
	int			 cmd_setup;	/* set-up replies still to come */
	int			 cmd_refused;	/* Redis refused its set-up */
	char			 down_reason[CACHE_REASON_MAX];
	struct event		*cmd_retry;
	int64_t			 cmd_backoff_ms;

	redisAsyncContext	*sub;
	int			 sub_up;
	struct event		*sub_retry;
	int64_t			 sub_backoff_ms;

	char			 sha[SCRIPT_COUNT][41];	/* "" until loaded */
	cache_fill_cb		*on_fill;
	cache_fill_cb		*on_purge;
	void			*fill_arg;
	int			 closing;
	int			 timeouts_in_row;
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
	struct event		*timer;
	int64_t			 sent_us;	/* when the command was sent */
	/* For scripts: what to resend as EVAL after a NOSCRIPT reply. */
	enum script_id		 script;
	int			 retried;
	int			 nargs;		/* numkeys, keys..., args... */
	char			*args[OP_ARGS_MAX];
	size_t			 arglens[OP_ARGS_MAX];
};

static void connect_cmd(struct cache *c);
static void connect_sub(struct cache *c);

static void
set_down_reason(struct cache *c, const char *what, const char *detail)
{
	snprintf(c->down_reason, sizeof(c->down_reason), "%s%s%s", what,
	    detail != NULL ? ": " : "", detail != NULL ? detail : "");
}

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

static void
schedule_retry(struct cache *c, struct event *ev, int64_t *backoff_ms)
{
	struct timeval tv = util_timeval(*backoff_ms);

	evtimer_add(ev, &tv);
	*backoff_ms = *backoff_ms * 2 > RECONNECT_MAX_MS ?
	    RECONNECT_MAX_MS : *backoff_ms * 2;
}

static redisAsyncContext *
open_context(struct cache *c, redisConnectCallback *on_conn,
    redisDisconnectCallback *on_disc)
{
	redisAsyncContext *ac;

	if (c->unix_path[0] != '\0')
		ac = redisAsyncConnectUnix(c->unix_path);
	else
		ac = redisAsyncConnect(c->host, c->port);
	if (ac == NULL)
		return NULL;
	if (ac->err) {
		log_warn("redis: cannot connect: %s", ac->errstr);
		set_down_reason(c, "cannot connect", ac->errstr);
		redisAsyncFree(ac);
		return NULL;
	}
	ac->data = c;
	if (redisLibeventAttach(ac, c->base) != REDIS_OK) {
		redisAsyncFree(ac);
		return NULL;
	}
	redisAsyncSetConnectCallback(ac, on_conn);
	redisAsyncSetDisconnectCallback(ac, on_disc);
	return ac;
}

/* ---- the command connection ---- */

static void
on_script_loaded(redisAsyncContext *ac, void *r, void *privdata)
{
	struct cache *c = ac->data;
	redisReply *reply = r;
	intptr_t id = (intptr_t)privdata;

	if (c == NULL || c->magic != CACHE_MAGIC)
		return;
	if (reply != NULL && reply->type == REDIS_REPLY_STRING &&
	    reply->len == 40)
		memcpy(c->sha[id], reply->str, 41);
	else if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
	    !c->cmd_refused)
		log_warn("redis: SCRIPT LOAD failed: %s", reply->str);
}

/* The command connection's set-up was answered: it is usable. */
static void
cmd_ready(struct cache *c)
{
	c->cmd_up = 1;
	c->cmd_backoff_ms = RECONNECT_MIN_MS;
	c->down_reason[0] = '\0';
	c->counters.connects++;
	log_info("redis: connected");
}

/* A password Redis does not ask for is harmless: it serves us all the same. */
static int
auth_not_needed(const char *what, const char *err)
{
	return strcmp(what, "AUTH") == 0 &&
	    (strstr(err, "without any password configured") != NULL ||
	    strstr(err, "no password is set") != NULL);
}

/*
 * AUTH, SELECT or PING on a new connection. An error means Redis will not
 * serve this connection (a wrong or missing password, a bad db): it stays
 * down with the reason and is dropped, to be tried again with backoff.
 */
static void
on_setup_reply(redisAsyncContext *ac, void *r, void *privdata)
{
	struct cache *c = ac->data;
	redisReply *reply = r;
	const char *what = privdata;
	int is_cmd;

	if (c == NULL || c->magic != CACHE_MAGIC || c->closing ||
	    reply == NULL)
		return;		/* a disconnect: its callback handles it */
	is_cmd = ac == c->cmd;
	if (reply->type == REDIS_REPLY_ERROR &&
	    auth_not_needed(what, reply->str)) {
		log_warn("redis: a password is configured but Redis asks for "
		    "none");
	} else if (reply->type == REDIS_REPLY_ERROR) {
		if (is_cmd && c->cmd_refused)
			return;		/* what follows a refusal fails too */
		log_error("redis: %s failed: %s", what, reply->str);
		if (is_cmd) {
			c->cmd_refused = 1;
			c->cmd_up = 0;
			set_down_reason(c, what, reply->str);
			if (strcmp(what, "AUTH") == 0 ||
			    strncmp(reply->str, "NOAUTH", 6) == 0)
				c->counters.auth_failures++;
		}
		redisAsyncDisconnect(ac);
		return;
	}
	if (is_cmd && !c->cmd_refused && --c->cmd_setup == 0)
		cmd_ready(c);
}

static void
on_cmd_connect(const redisAsyncContext *ac, int status)
{
	struct cache *c = ac->data;

	assert(c->magic == CACHE_MAGIC);
	if (status != REDIS_OK) {
		log_warn("redis: connect to %s failed: %s",
		    c->unix_path[0] ? c->unix_path : c->host, ac->errstr);
		set_down_reason(c, "cannot connect", ac->errstr);
		c->cmd = NULL;		/* hiredis frees the context */
		c->cmd_up = 0;
		if (!c->closing)
			schedule_retry(c, c->cmd_retry, &c->cmd_backoff_ms);
	}
	/* Up once the set-up queued in connect_cmd() is answered. */
}

static void
on_cmd_disconnect(const redisAsyncContext *ac, int status)
{
	struct cache *c = ac->data;
	int was_up;

	assert(c->magic == CACHE_MAGIC);
	was_up = c->cmd_up;
	c->cmd = NULL;
	c->cmd_up = 0;
	memset(c->sha, 0, sizeof(c->sha));
	if (c->closing)
		return;
	if (!c->cmd_refused)
		set_down_reason(c, "disconnected",
		    status == REDIS_OK ? NULL : ac->errstr);
	if (was_up) {
		c->counters.disconnects++;
		log_warn("redis: disconnected%s%s", status == REDIS_OK ? "" :
		    ": ", status == REDIS_OK ? "" : ac->errstr);
	}
	schedule_retry(c, c->cmd_retry, &c->cmd_backoff_ms);
}

static void
connect_cmd(struct cache *c)
{
	char db[16];

	c->cmd_setup = 0;
	c->cmd_refused = 0;
	if ((c->cmd = open_context(c, on_cmd_connect, on_cmd_disconnect)) == NULL) {
		schedule_retry(c, c->cmd_retry, &c->cmd_backoff_ms);
		return;
	}
	/* Queued ahead of anything else on this connection. */
	if (c->password[0] != '\0' && redisAsyncCommand(c->cmd,
	    on_setup_reply, "AUTH", "AUTH %s", c->password) == REDIS_OK)
		c->cmd_setup++;
	if (c->db != 0) {
		snprintf(db, sizeof(db), "%d", c->db);
		if (redisAsyncCommand(c->cmd, on_setup_reply, "SELECT",
		    "SELECT %s", db) == REDIS_OK)
			c->cmd_setup++;
	}
	/* Without either, a PING: a Redis that wants a password says so. */
	if (c->cmd_setup == 0 && redisAsyncCommand(c->cmd, on_setup_reply,
	    "PING", "PING") == REDIS_OK)
		c->cmd_setup++;
	for (intptr_t i = 0; i < SCRIPT_COUNT; i++)
		redisAsyncCommand(c->cmd, on_script_loaded, (void *)i,
		    "SCRIPT LOAD %s", script_src[i]);
}

static void
on_cmd_retry(evutil_socket_t fd, short what, void *arg)
{
	struct cache *c = arg;

	assert(c->magic == CACHE_MAGIC);
	if (c->cmd == NULL && !c->closing)
		connect_cmd(c);
}

/* ---- the subscriber connection ---- */

static void
on_message(redisAsyncContext *ac, void *r, void *privdata)
{
	struct cache *c = ac->data;
	redisReply *reply = r;

	if (reply == NULL || c == NULL || c->closing)
		return;		/* disconnect: on_sub_disconnect handles it */
	assert(c->magic == CACHE_MAGIC);
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3)
		return;
	if (strcmp(reply->element[0]->str, "subscribe") == 0) {
		if (strcmp(reply->element[1]->str, c->channel) != 0)
			return;
		c->sub_up = 1;
		c->sub_backoff_ms = RECONNECT_MIN_MS;
		log_info("redis: subscribed to %s", c->channel);
		/* Notifications may have been missed while unsubscribed. */
		c->on_fill(NULL, c->fill_arg);
	} else if (strcmp(reply->element[0]->str, "message") == 0 &&
	    reply->element[2]->type == REDIS_REPLY_STRING) {
		if (strcmp(reply->element[1]->str, c->purge_channel) == 0) {
			c->counters.purges_received++;
			if (c->on_purge != NULL)
				c->on_purge(reply->element[2]->str, c->fill_arg);
			return;
		}
		c->counters.fills_received++;
		c->on_fill(reply->element[2]->str, c->fill_arg);
	}
}

static void
on_sub_connect(const redisAsyncContext *ac, int status)
{
	struct cache *c = ac->data;

	assert(c->magic == CACHE_MAGIC);
	if (status != REDIS_OK) {
		c->sub = NULL;
		c->sub_up = 0;
		if (!c->closing)
			schedule_retry(c, c->sub_retry, &c->sub_backoff_ms);
	}
}

static void
on_sub_disconnect(const redisAsyncContext *ac, int status)
{
	struct cache *c = ac->data;

	assert(c->magic == CACHE_MAGIC);
	c->sub = NULL;
	c->sub_up = 0;
	if (!c->closing)
		schedule_retry(c, c->sub_retry, &c->sub_backoff_ms);
}

static void
connect_sub(struct cache *c)
{
	if ((c->sub = open_context(c, on_sub_connect, on_sub_disconnect)) == NULL) {
		schedule_retry(c, c->sub_retry, &c->sub_backoff_ms);
		return;
	}
	if (c->password[0] != '\0')
		redisAsyncCommand(c->sub, on_setup_reply, "AUTH", "AUTH %s",
		    c->password);
	redisAsyncCommand(c->sub, on_message, NULL, "SUBSCRIBE %s %s",
	    c->channel, c->purge_channel);
}

static void
on_sub_retry(evutil_socket_t fd, short what, void *arg)
{
	struct cache *c = arg;

	assert(c->magic == CACHE_MAGIC);
	if (c->sub == NULL && !c->closing)
		connect_sub(c);
}

/* ---- life cycle ---- */

struct cache *
cache_new(struct event_base *base, const struct conf *conf,
    cache_fill_cb *on_fill, void *arg)
{
	struct cache *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->magic = CACHE_MAGIC;
	c->base = base;
	snprintf(c->host, sizeof(c->host), "%s", conf->redis_host);
	c->port = conf->redis_port;
	snprintf(c->unix_path, sizeof(c->unix_path), "%s", conf->redis_unix);
	snprintf(c->password, sizeof(c->password), "%s", conf->redis_password);
	c->db = conf->redis_db;
	snprintf(c->prefix, sizeof(c->prefix), "%s", conf->redis_prefix);
	snprintf(c->channel, sizeof(c->channel), "%s%s", c->prefix,
	    FILL_CHANNEL);
	snprintf(c->purge_channel, sizeof(c->purge_channel), "%s%s", c->prefix,
	    PURGE_CHANNEL);
	c->timeout_ms = conf->redis_timeout_ms;
	c->on_fill = on_fill;
	c->fill_arg = arg;
	c->cmd_backoff_ms = c->sub_backoff_ms = RECONNECT_MIN_MS;
	set_down_reason(c, "connecting", NULL);
	c->cmd_retry = evtimer_new(base, on_cmd_retry, c);
	c->sub_retry = evtimer_new(base, on_sub_retry, c);
	if (c->cmd_retry == NULL || c->sub_retry == NULL)
		goto fail;
	connect_cmd(c);
	connect_sub(c);
	return c;
fail:
	if (c->cmd_retry != NULL)
		event_free(c->cmd_retry);
	if (c->sub_retry != NULL)
		event_free(c->sub_retry);
	free(c);
	return NULL;
}

void
cache_free(struct cache **cp)
{
	struct cache *c = *cp;

	if (c == NULL)
		return;
	assert(c->magic == CACHE_MAGIC);
	c->closing = 1;
	/* Pending ops get their NULL replies here and free themselves. */
	if (c->cmd != NULL)
		redisAsyncFree(c->cmd);
	if (c->sub != NULL)
		redisAsyncFree(c->sub);
	event_free(c->cmd_retry);
	event_free(c->sub_retry);
	c->magic = 0;
	free(c);
	*cp = NULL;
}

int
cache_is_up(const struct cache *c)
{
	return c->cmd_up;
}

const char *
cache_down_reason(const struct cache *c)
{
	return c->cmd_up ? "" : c->down_reason;
}

const struct cache_counters *
cache_counters(const struct cache *c)
{
	return &c->counters;
}

void
cache_counters_add(struct cache_counters *dst, const struct cache_counters *src)
{
	dst->commands += src->commands;
	dst->errors += src->errors;
	dst->timeouts += src->timeouts;
	dst->connects += src->connects;
	dst->disconnects += src->disconnects;
	dst->auth_failures += src->auth_failures;
	dst->fills_received += src->fills_received;
	dst->purges_received += src->purges_received;
	hist_merge(&dst->command_duration, &src->command_duration);
}

/* ---- operations ---- */

static void
op_free(struct cache_op *op)
{
	assert(op->magic == OP_MAGIC);
	if (op->timer != NULL)
		event_free(op->timer);
	for (int i = 0; i < op->nargs; i++)
		free(op->args[i]);
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
	op->cache->counters.errors++;
	switch (op->kind) {
	case OP_GET:
		op->cb.get(CACHE_ERROR, NULL, op->arg);
		break;
	case OP_ACQUIRE:
		op->cb.lock(LOCK_ERROR, NULL, NULL, op->arg);
		break;
	case OP_FENCE:
		if (op->cb.fence != NULL)
			op->cb.fence(FENCE_ERROR, op->arg);
		break;
	}
}

static void
on_op_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct cache_op *op = arg;
	struct cache *c = op->cache;

	assert(op->magic == OP_MAGIC);
	if (op->finished)
		return;
	c->counters.timeouts++;
	log_warn("redis: no reply within %" PRId64 "ms", c->timeout_ms);
	op_fail(op);
	/*
	 * A Redis that takes commands but never answers would have them pile
	 * up: after a few timeouts in a row, drop the connection (every op on
	 * it fails now) and reconnect with backoff. op may be gone after this.
	 */
	if (++c->timeouts_in_row >= HUNG_TIMEOUTS && c->cmd != NULL &&
	    !c->closing) {
		log_warn("redis: %d commands in a row timed out; reconnecting",
		    c->timeouts_in_row);
		c->timeouts_in_row = 0;
		redisAsyncFree(c->cmd);
	}
}

/*
 * Decodes a stored entry. An entry this process cannot read (corrupt, or
 * written by another format version) is returned as an expired stub that
 * keeps its generation, so the lock script still lets a refresh replace it.
 */
static struct cache_entry *
decode(const redisReply *reply)
{
	char err[128];
	struct cache_entry *e;

	e = entry_decode(reply->str, reply->len, err, sizeof(err));
	if (e != NULL)
		return e;
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
deliver_get(struct cache_op *op, const redisReply *reply)
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
deliver_acquire(struct cache_op *op, const redisReply *reply)
{
	struct cache_entry *e;
	long long code = -1;

	if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
	    reply->element[0]->type == REDIS_REPLY_INTEGER)
		code = reply->element[0]->integer;
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

static int send_script(struct cache_op *op, int as_eval);

static void
on_op_reply(redisAsyncContext *ac, void *r, void *privdata)
{
	struct cache_op *op = privdata;
	redisReply *reply = r;

	assert(op->magic == OP_MAGIC);
	if (reply != NULL && !op->cache->closing) {
		op->cache->timeouts_in_row = 0;
		hist_observe(&op->cache->counters.command_duration,
		    (double)(util_mono_us() - op->sent_us) / 1e6);
	}
	if (op->finished || op->cache->closing) {
		op_free(op);
		return;
	}
	if (reply == NULL) {
		op_fail(op);
		op_free(op);
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		if (op->kind != OP_GET && !op->retried &&
		    strncmp(reply->str, "NOSCRIPT", 8) == 0) {
			/* Script cache flushed: resend the source once. */
			op->retried = 1;
			op->sent_us = util_mono_us();
			op->cache->sha[op->script][0] = '\0';
			if (send_script(op, 1) == 0)
				return;
		}
		log_warn("redis: %s", reply->str);
		op_fail(op);
		op_free(op);
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
		deliver_fence(op, reply);
		break;
	}
	op_free(op);
}

static struct cache_op *
op_new(struct cache *c, enum op_kind kind, void *arg)
{
	struct cache_op *op;
	struct timeval tv = util_timeval(c->timeout_ms);

	assert(c->magic == CACHE_MAGIC);
	if (!c->cmd_up || c->closing)
		return NULL;
	if ((op = calloc(1, sizeof(*op))) == NULL)
		return NULL;
	op->magic = OP_MAGIC;
	op->cache = c;
	op->kind = kind;
	op->arg = arg;
	if ((op->timer = evtimer_new(c->base, on_op_timeout, op)) == NULL) {
		free(op);
		return NULL;
	}
	evtimer_add(op->timer, &tv);
	op->sent_us = util_mono_us();
	c->counters.commands++;
	return op;
}

static int
op_arg(struct cache_op *op, const void *s, size_t len)
{
	assert(op->nargs < OP_ARGS_MAX);
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

static int
send_script(struct cache_op *op, int as_eval)
{
	struct cache *c = op->cache;
	const char *argv[OP_ARGS_MAX + 2];
	size_t argvlen[OP_ARGS_MAX + 2];

	if (c->cmd == NULL)
		return -1;
	if (as_eval || c->sha[op->script][0] == '\0') {
		argv[0] = "EVAL";
		argv[1] = script_src[op->script];
	} else {
		argv[0] = "EVALSHA";
		argv[1] = c->sha[op->script];
	}
	argvlen[0] = strlen(argv[0]);
	argvlen[1] = strlen(argv[1]);
	for (int i = 0; i < op->nargs; i++) {
		argv[i + 2] = op->args[i];
		argvlen[i + 2] = op->arglens[i];
	}
	if (redisAsyncCommandArgv(c->cmd, on_op_reply, op, op->nargs + 2,
	    argv, argvlen) != REDIS_OK)
		return -1;
	return 0;
}

/* Sends op's script, or frees op and returns NULL when it cannot. */
static struct cache_op *
start_script(struct cache_op *op, int failed)
{
	if (failed || send_script(op, 0) == -1) {
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

	if ((op = op_new(c, OP_GET, arg)) == NULL)
		return NULL;
	op->cb.get = cb;
	key_name(name, sizeof(name), c, key, "entry");
	if (redisAsyncCommand(c->cmd, on_op_reply, op, "GET %s", name) !=
	    REDIS_OK) {
		op_free(op);
		return NULL;
	}
	return op;
}

struct cache_op *
lock_acquire(struct cache *c, const char *key, const char *token,
    int64_t px_ms, const char *seen_gen, lock_cb *cb, void *arg)
{
	char entry[REDIS_KEY_MAX], lock[REDIS_KEY_MAX], backoff[REDIS_KEY_MAX];
	char lasterr[REDIS_KEY_MAX], hfm[REDIS_KEY_MAX], px[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_ACQUIRE, arg)) == NULL)
		return NULL;
	op->cb.lock = cb;
	op->script = SCRIPT_ACQUIRE;
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
	return start_script(op, failed);
}

struct cache_op *
lock_renew(struct cache *c, const char *key, const char *token,
    int64_t px_ms, fence_cb *cb, void *arg)
{
	char lock[REDIS_KEY_MAX], px[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_FENCE, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op->script = SCRIPT_RENEW;
	key_name(lock, sizeof(lock), c, key, "lock");
	snprintf(px, sizeof(px), "%" PRId64, px_ms);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, px);
	return start_script(op, failed);
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
	    (op = op_new(c, OP_FENCE, arg)) == NULL)
		goto fail;
	op->cb.fence = cb;
	op->script = SCRIPT_STORE;
	key_name(entry, sizeof(entry), c, variant != NULL ? variant : key,
	    "entry");
	key_name(lock, sizeof(lock), c, key, "lock");
	key_name(backoff, sizeof(backoff), c, key, "backoff");
	key_name(fails, sizeof(fails), c, key, "fails");
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
	failed |= op_argstr(op, c->channel);
	failed |= op_argstr(op, key);
	if (marker != NULL) {
		failed |= op_arg(op, evbuffer_pullup(mblob, -1),
		    evbuffer_get_length(mblob));
		failed |= op_argstr(op, vid + 1);
		evbuffer_free(mblob);
	}
	evbuffer_free(blob);
	return start_script(op, failed);
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
	char lasterr[REDIS_KEY_MAX], hfm[REDIS_KEY_MAX];
	char base[24], max[24], after[24], hfm_ms[24];
	struct evbuffer *err = NULL;
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_FENCE, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op->script = SCRIPT_RELEASE;
	key_name(lock, sizeof(lock), c, key, "lock");
	key_name(backoff, sizeof(backoff), c, key, "backoff");
	key_name(fails, sizeof(fails), c, key, "fails");
	key_name(lasterr, sizeof(lasterr), c, key, "lasterr");
	key_name(hfm, sizeof(hfm), c, key, "hfm");
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
	failed |= op_argstr(op, c->channel);
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
	return start_script(op, failed);
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
	*opp = NULL;	/* freed when hiredis delivers its reply */
}

/* The invalidate and soften scripts: key's entry and its variants. */
static struct cache_op *
purge_key(struct cache *c, const char *key, int soft, fence_cb *cb,
    void *arg)
{
	char entry[REDIS_KEY_MAX], variants[REDIS_KEY_MAX], now[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_FENCE, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op->script = soft ? SCRIPT_SOFTEN : SCRIPT_INVALIDATE;
	key_name(entry, sizeof(entry), c, key, "entry");
	key_name(variants, sizeof(variants), c, key, "variants");
	failed |= op_argstr(op, "2");
	failed |= op_argstr(op, entry);
	failed |= op_argstr(op, variants);
	if (soft) {
		snprintf(now, sizeof(now), "%" PRId64, util_now_ms());
		failed |= op_argstr(op, now);
	}
	failed |= op_argstr(op, c->purge_channel);
	failed |= op_argstr(op, key);
	return start_script(op, failed);
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

int
cache_tag(struct cache *c, const char *key, const char *tag,
    int64_t expire_at_ms)
{
	char set[REDIS_KEY_MAX], name[CACHE_TAG_MAX + 8], px[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, OP_FENCE, NULL)) == NULL)
		return -1;
	op->cb.fence = NULL;
	op->script = SCRIPT_TAG;
	snprintf(name, sizeof(name), "tag:%s", tag);
	key_name(set, sizeof(set), c, name, "keys");
	expire_at_ms -= util_now_ms();
	snprintf(px, sizeof(px), "%" PRId64, expire_at_ms > 0 ? expire_at_ms : 1);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, set);
	failed |= op_argstr(op, key);
	failed |= op_argstr(op, px);
	return start_script(op, failed) != NULL ? 0 : -1;
}

/*
 * A purge by prefix: SCAN for the entries whose key starts with it, and
 * invalidate each, until the cursor comes back to 0. It owns itself and
 * reports once. The replies of one connection arrive in order, so the
 * invalidations of a batch finish before the next SCAN's reply.
 */
struct purge {
	struct cache	*cache;
	char		 pattern[REDIS_KEY_MAX * 2];
	size_t		 head;		/* strlen("<prefix>{") */
	int		 soft;		/* mark stale instead of deleting */
	int64_t		 found;
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
	if (strcmp(reply->element[0]->str, "0") == 0)
		purge_end(pg, 1);
	else
		purge_scan(pg, reply->element[0]->str);
}

static void
purge_scan(struct purge *pg, const char *cursor)
{
	struct cache *c = pg->cache;

	if (!c->cmd_up || redisAsyncCommand(c->cmd, on_purge_scan, pg,
	    "SCAN %s MATCH %s COUNT %s", cursor, pg->pattern, SCAN_COUNT) !=
	    REDIS_OK)
		purge_end(pg, 0);
}

int
cache_purge_prefix(struct cache *c, const char *prefix, int soft,
    purge_cb *cb, void *arg)
{
	struct purge *pg;
	size_t n;

	if (!c->cmd_up || c->closing)
		return -1;
	if ((pg = calloc(1, sizeof(*pg))) == NULL)
		return -1;
	pg->cache = c;
	pg->soft = soft;
	pg->cb = cb;
	pg->arg = arg;
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

/* A purge by tag: the tag's set lists the keys stored with it. */
static void
on_purge_members(redisAsyncContext *ac, void *r, void *privdata)
{
	struct purge *pg = privdata;
	redisReply *reply = r;

	if (pg->cache->closing) {
		free(pg);
		return;
	}
	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
		if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
			log_warn("redis: purge: %s", reply->str);
		purge_end(pg, 0);
		return;
	}
	for (size_t i = 0; i < reply->elements; i++) {
		const redisReply *m = reply->element[i];

		if (m->type == REDIS_REPLY_STRING && m->len <= CACHE_KEY_MAX +
		    CACHE_VARIANT_MAX && purge_key(pg->cache, m->str, pg->soft,
		    NULL, NULL) != NULL)
			pg->found++;
	}
	/* A hard purge leaves nothing for the set to name. */
	if (!pg->soft)
		redisAsyncCommand(pg->cache->cmd, NULL, NULL, "DEL %s",
		    pg->pattern);
	purge_end(pg, 1);
}

int
cache_purge_tag(struct cache *c, const char *tag, int soft, purge_cb *cb,
    void *arg)
{
	char name[CACHE_TAG_MAX + 8];
	struct purge *pg;

	if (!c->cmd_up || c->closing || strlen(tag) > CACHE_TAG_MAX)
		return -1;
	if ((pg = calloc(1, sizeof(*pg))) == NULL)
		return -1;
	pg->cache = c;
	pg->soft = soft;
	pg->cb = cb;
	pg->arg = arg;
	snprintf(name, sizeof(name), "tag:%s", tag);
	key_name(pg->pattern, sizeof(pg->pattern), c, name, "keys");
	if (redisAsyncCommand(c->cmd, on_purge_members, pg, "SMEMBERS %s",
	    pg->pattern) != REDIS_OK) {
		free(pg);
		return -1;
	}
	return 0;
}

void
cache_on_purge(struct cache *c, cache_fill_cb *on_purge)
{
	c->on_purge = on_purge;
}
