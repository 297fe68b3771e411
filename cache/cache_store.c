/* SPDX-License-Identifier: MIT */
/*
 * The entries and their lock: lookup, acquire, renew, store, release and
 * the end of a hit-for-miss (the lock protocol of cache.h), each one op
 * whose reply this file reads. An acquire answered busy makes this
 * process watch the key's fill; one answered too late lets its lock go.
 *
 * Calls: cache_watch.c (watch_add, watch_drop), cache_script.c,
 * cache_op.c, cache_entry.c. Called from outside cache/ only.
 */

#include "cache/cache_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

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
on_get_reply(struct cache_op *op, redisReply *reply)
{
	struct cache_entry *e;

	if (reply == NULL) {
		op->cb.get(CACHE_ERROR, NULL, op->arg);
	} else if (reply->type == REDIS_REPLY_NIL) {
		op->cb.get(CACHE_ABSENT, NULL, op->arg);
	} else if (reply->type == REDIS_REPLY_STRING &&
	    (e = decode(reply)) != NULL) {
		op->cb.get(CACHE_FOUND, e, op->arg);
	} else {
		op->cache->counters.errors++;
		op->cb.get(CACHE_ERROR, NULL, op->arg);
	}
}

/* What an acquire's reply says (script_acquire's first element), or -1. */
static long long
acquire_code(const redisReply *reply)
{
	return reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
	    reply->element[0]->type == REDIS_REPLY_INTEGER ?
	    reply->element[0]->integer : -1;
}

static void
on_acquire_reply(struct cache_op *op, redisReply *reply)
{
	struct cache_entry *e;
	long long code;

	if (reply == NULL) {
		op->cb.lock(LOCK_ERROR, NULL, NULL, op->arg);
		return;
	}
	code = acquire_code(reply);
	/* Busy: wait for the holder's fill; else this process waits no more. */
	if (code == 0)
		watch_add(op->cache, op->key, reply->elements == 2 &&
		    reply->element[1]->type == REDIS_REPLY_STRING ?
		    reply->element[1]->str : "", op->px_ms);
	else
		watch_drop(op->cache, op->key);
	if (code == 1) {
		/* "released": the holder waited for let it go, alive. */
		op->cb.lock(LOCK_ACQUIRED, NULL, reply->elements == 2 &&
		    reply->element[1]->type == REDIS_REPLY_INTEGER &&
		    reply->element[1]->integer == 1 ? "released" : NULL,
		    op->arg);
	} else if (code == 0) {
		op->cb.lock(LOCK_BUSY, NULL, reply->elements == 2 &&
		    reply->element[1]->type == REDIS_REPLY_STRING ?
		    reply->element[1]->str : "", op->arg);
	} else if (code == 5 && reply->elements == 3 &&
	    reply->element[1]->type == REDIS_REPLY_STRING) {
		/* The fetch waited for failed: its error response, if any. */
		e = reply->element[2]->type == REDIS_REPLY_STRING ?
		    decode(reply->element[2]) : NULL;
		op->cb.lock(LOCK_FAILED, e, reply->element[1]->str, op->arg);
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

struct cache_op *
cache_lookup(struct cache *c, const char *key, cache_get_cb *cb, void *arg)
{
	char name[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, key, on_get_reply, arg)) == NULL)
		return NULL;
	op->cb.get = cb;
	op->readonly = 1;
	op_key_name(name, sizeof(name), c, key, "entry");
	failed |= op_argstr(op, "GET");
	failed |= op_argstr(op, name);
	return op_start(op, failed);
}

/* Sets op up to run the release script on key's lock. 0 or -1. */
static int
release_setup(struct cache_op *op, const char *key, const char *token,
    const struct release_args *ra)
{
	char lock[REDIS_KEY_MAX], backoff[REDIS_KEY_MAX], fails[REDIS_KEY_MAX];
	char lasterr[REDIS_KEY_MAX], hfm[REDIS_KEY_MAX], channel[REDIS_KEY_MAX];
	char gone[REDIS_KEY_MAX], gone_ms[24];
	char base[24], max[24], after[24], hfm_ms[24];
	struct cache *c = op->cache;
	struct evbuffer *err = NULL;
	int failed = 0;

	script_use(op, SCRIPT_RELEASE);
	op_key_name(lock, sizeof(lock), c, key, "lock");
	op_key_name(backoff, sizeof(backoff), c, key, "backoff");
	op_key_name(fails, sizeof(fails), c, key, "fails");
	op_key_name(lasterr, sizeof(lasterr), c, key, "lasterr");
	op_key_name(hfm, sizeof(hfm), c, key, "hfm");
	op_key_name(channel, sizeof(channel), c, key, FILL_SUFFIX);
	op_key_name(gone, sizeof(gone), c, key, FAILED_SUFFIX);
	snprintf(gone_ms, sizeof(gone_ms), "%" PRId64, ra->failed_ms);
	snprintf(base, sizeof(base), "%" PRId64, ra->backoff_base_ms);
	snprintf(max, sizeof(max), "%" PRId64, ra->backoff_max_ms);
	snprintf(after, sizeof(after), "%d", ra->backoff_after);
	snprintf(hfm_ms, sizeof(hfm_ms), "%" PRId64, ra->hit_for_miss_ms);
	if (ra->error != NULL && ((err = evbuffer_new()) == NULL ||
	    entry_encode(ra->error, err) == -1))
		failed = 1;
	failed |= op_argstr(op, "6");
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, backoff);
	failed |= op_argstr(op, fails);
	failed |= op_argstr(op, lasterr);
	failed |= op_argstr(op, hfm);
	failed |= op_argstr(op, gone);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, channel);
	failed |= op_argstr(op, key);
	failed |= op_argstr(op, ra->failure != NULL ? ra->failure : "");
	failed |= op_argstr(op, base);
	failed |= op_argstr(op, max);
	failed |= op_argstr(op, after);
	failed |= err != NULL ? op_arg_buffer(op, err) : op_argstr(op, "");
	failed |= op_argstr(op, hfm_ms);
	failed |= op_argstr(op, gone_ms);
	return failed ? -1 : 0;
}

/*
 * An acquire that Redis answers after its caller stopped waiting (a
 * timeout: Redis stalled; or a cancel) may have taken the lock: nobody
 * fetches behind it, and it would bar the key for px_ms. It is released
 * at once, as by a fetch that stored nothing. 1 while the release runs.
 */
static int
on_acquire_step(struct cache_op *op, const redisReply *reply)
{
	static const struct release_args nothing;

	if (!op->finished || op->script != SCRIPT_ACQUIRE ||
	    acquire_code(reply) != 1)
		return 0;
	log_warn("redis: the lock on %s was taken after its request was "
	    "given up; releasing it", op->key);
	op_clear_args(op);
	op->retried = 0;
	return release_setup(op, op->key, op->token, &nothing) == -1 ||
	    op_send(op) == -1 ? -1 : 1;
}

struct cache_op *
lock_acquire(struct cache *c, const char *key, const char *token,
    int64_t px_ms, const char *seen_gen, const char *waited, lock_cb *cb,
    void *arg)
{
	char entry[REDIS_KEY_MAX], lock[REDIS_KEY_MAX], backoff[REDIS_KEY_MAX];
	char lasterr[REDIS_KEY_MAX], hfm[REDIS_KEY_MAX], px[24];
	char gone[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, key, on_acquire_reply, arg)) == NULL)
		return NULL;
	op->cb.lock = cb;
	op->on_step = on_acquire_step;
	script_use(op, SCRIPT_ACQUIRE);
	op->px_ms = px_ms;
	failed |= (op->key = strdup(key)) == NULL;
	failed |= (op->token = strdup(token)) == NULL;
	op_key_name(entry, sizeof(entry), c, key, "entry");
	op_key_name(lock, sizeof(lock), c, key, "lock");
	op_key_name(backoff, sizeof(backoff), c, key, "backoff");
	op_key_name(lasterr, sizeof(lasterr), c, key, "lasterr");
	op_key_name(hfm, sizeof(hfm), c, key, "hfm");
	op_key_name(gone, sizeof(gone), c, key, FAILED_SUFFIX);
	snprintf(px, sizeof(px), "%" PRId64, px_ms);
	failed |= op_argstr(op, "6");
	failed |= op_argstr(op, entry);
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, backoff);
	failed |= op_argstr(op, lasterr);
	failed |= op_argstr(op, hfm);
	failed |= op_argstr(op, gone);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, px);
	failed |= op_argstr(op, seen_gen);
	failed |= op_argstr(op, waited);
	return op_start(op, failed);
}

struct cache_op *
lock_renew(struct cache *c, const char *key, const char *token,
    int64_t px_ms, fence_cb *cb, void *arg)
{
	char lock[REDIS_KEY_MAX], px[24];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, key, op_fence_reply, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	script_use(op, SCRIPT_RENEW);
	op_key_name(lock, sizeof(lock), c, key, "lock");
	snprintf(px, sizeof(px), "%" PRId64, px_ms);
	failed |= op_argstr(op, "1");
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, token);
	failed |= op_argstr(op, px);
	return op_start(op, failed);
}

/* A store's reply: the fence's, or the status STORE_FULL (a variant the
 * key has no room for). */
static void
on_store_reply(struct cache_op *op, redisReply *reply)
{
	if (reply != NULL && reply->type == REDIS_REPLY_INTEGER &&
	    reply->integer >= 1)
		op->cache->full_ms = 0;		/* it has room again */
	if (reply != NULL && reply->type == REDIS_REPLY_STATUS &&
	    strcmp(reply->str, STORE_FULL) == 0) {
		if (op->cb.fence != NULL)
			op->cb.fence(FENCE_FULL, op->arg);
		return;
	}
	op_fence_reply(op, reply);
}

/* A variant's store also names its key's marker and set of variants. */
static int
marker_keys(struct cache_op *op, struct cache *c, const char *variant,
    const char *vid)
{
	char mkey[REDIS_KEY_MAX], variants[REDIS_KEY_MAX];
	char base[CACHE_KEY_MAX + 1];	/* the key a variant belongs to */
	int failed = 0;

	snprintf(base, sizeof(base), "%.*s", (int)(vid - variant), variant);
	op_key_name(variants, sizeof(variants), c, base, "variants");
	op_key_name(mkey, sizeof(mkey), c, base, "entry");
	failed |= op_argstr(op, mkey);
	failed |= op_argstr(op, variants);
	return failed;
}

/* ... and the marker itself (op's now), the variant's id, the most the
 * key may have. */
static int
marker_args(struct cache_op *op, struct evbuffer *mblob, const char *vid,
    int max_variants)
{
	char most[16];
	int failed = 0;

	failed |= op_arg_buffer(op, mblob);
	failed |= op_argstr(op, vid + 1);
	snprintf(most, sizeof(most), "%d", max_variants);
	failed |= op_argstr(op, most);
	return failed;
}

struct cache_op *
cache_store(struct cache *c, const char *key, const char *token,
    const struct cache_entry *e, int64_t expire_at_ms,
    const char *variant, const struct cache_entry *marker, int max_variants,
    fence_cb *cb, void *arg)
{
	char entry[REDIS_KEY_MAX], lock[REDIS_KEY_MAX], px[24];
	char backoff[REDIS_KEY_MAX], fails[REDIS_KEY_MAX];
	char channel[REDIS_KEY_MAX];
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
	    (op = op_new(c, key, on_store_reply, arg)) == NULL)
		goto fail;
	op->cb.fence = cb;
	script_use(op, SCRIPT_STORE);
	op_key_name(entry, sizeof(entry), c, variant != NULL ? variant : key,
	    "entry");
	op_key_name(lock, sizeof(lock), c, key, "lock");
	op_key_name(backoff, sizeof(backoff), c, key, "backoff");
	op_key_name(fails, sizeof(fails), c, key, "fails");
	op_key_name(channel, sizeof(channel), c, key, FILL_SUFFIX);
	snprintf(px, sizeof(px), "%" PRId64, ttl > 0 ? ttl : 1);
	failed |= op_argstr(op, marker != NULL ? "6" : "4");
	failed |= op_argstr(op, entry);
	failed |= op_argstr(op, lock);
	failed |= op_argstr(op, backoff);
	failed |= op_argstr(op, fails);
	if (marker != NULL)
		failed |= marker_keys(op, c, variant, vid);
	failed |= op_argstr(op, token);
	failed |= op_arg_buffer(op, blob);	/* op's now, as mblob below */
	failed |= op_argstr(op, px);
	failed |= op_argstr(op, channel);
	failed |= op_argstr(op, key);
	if (marker != NULL)
		failed |= marker_args(op, mblob, vid, max_variants);
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
	struct cache_op *op;

	if ((op = op_new(c, key, op_fence_reply, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	return op_start(op, release_setup(op, key, token, ra) == -1);
}

struct cache_op *
lock_unpass(struct cache *c, const char *key, fence_cb *cb, void *arg)
{
	char hfm[REDIS_KEY_MAX];
	struct cache_op *op;
	int failed = 0;

	if ((op = op_new(c, key, op_fence_reply, arg)) == NULL)
		return NULL;
	op->cb.fence = cb;
	op_key_name(hfm, sizeof(hfm), c, key, "hfm");
	failed |= op_argstr(op, "DEL");
	failed |= op_argstr(op, hfm);
	return op_start(op, failed);
}
