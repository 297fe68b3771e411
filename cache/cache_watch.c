/* SPDX-License-Identifier: MIT */
/*
 * The subscriptions: fill watches and the purge channel. A store or
 * release SPUBLISHes the key on "<prefix>{key}:filled", a shard channel
 * in the key's slot, which only processes waiting for the key subscribe
 * to (struct watch, on the node that owns the slot). Invalidations and
 * purges PUBLISH on "<prefix>purge", which every process subscribes to on
 * one node (in a cluster, a PUBLISH reaches every node). What arrives goes
 * up through the cache's on_fill and on_purge.
 *
 * Calls: cache_op.c (a watch's check of the lock), cache_route.c (the
 * subscriber connections), cache_entry.c and cache_key.c. Called by
 * cache_store.c (a busy lock starts a watch) and cache.c (the routing
 * table's hooks).
 */

#include "cache/cache_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"

#define WATCH_MAGIC		0x57415443u	/* "WATC" */
#define WATCH_LOCK_TTLS		4	/* a watch outlives the lock's PX this */
#define WATCH_MIN_MS		10000	/* many times, and at least this long */

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

static void
subscribe(struct node *n, const char *verb, const char *channel)
{
	const char *argv[] = { verb, channel };

	route_sub_send(n, 2, argv);
}

void
watch_bcast_place(struct cache *c)
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

void
watch_sub_up(struct cache *c, struct node *n)
{
	struct watch *w;

	if (!n->sub_up) {
		/* Lost: its watches come back with it; purges move away. */
		if (c->bcast == n && c->mode == REDIS_CLUSTER) {
			c->bcast = NULL;
			watch_bcast_place(c);
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

/*
 * Times a fill from "@SECONDS.MICROSECONDS" (Redis's clock when it
 * published: FILL_AT) to now by ours; on two hosts the difference
 * includes their clocks' offset (below zero counts as 0). Returns how
 * many bytes of msg the mark took (0: none, from an older publisher).
 */
static size_t
fill_timed(struct cache *c, const char *msg, size_t len)
{
	size_t mlen = strnlen(msg, len);
	long long sec, usec;
	int64_t at_us, now_us;
	struct timespec ts;

	if (mlen == 0 || msg[0] != FILL_AT_MARK[0] ||
	    sscanf(msg + 1, "%lld.%lld", &sec, &usec) != 2 ||
	    clock_gettime(CLOCK_REALTIME, &ts) == -1)
		return 0;
	at_us = (int64_t)sec * 1000000 + usec;
	now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	hist_observe(&c->counters.fill_delay,
	    now_us > at_us ? (double)(now_us - at_us) / 1e6 : 0.0);
	return mlen < len ? mlen + 1 : mlen;
}

/* A fill: "key", then FILL_AT's "\0@SECONDS.MICROSECONDS", then
 * "\0entry" (see script_store); an older publisher sends "key" or
 * "key\0entry". An entry that does not decode is as if it had not come:
 * the waiters read it. */
static void
fill_received(struct cache *c, const char *msg, size_t len)
{
	size_t klen = strnlen(msg, len), at = klen + 1;
	struct cache_entry *e = NULL;
	char err[64];

	if (at < len)
		at += fill_timed(c, msg + at, len - at);
	if (at < len)
		e = entry_decode(msg + at, len - at, err, sizeof(err));
	c->on_fill(msg, e, c->fill_arg);
	entry_unref(&e);
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
on_holder_reply(struct cache_op *op, redisReply *reply)
{
	struct cache *c = op->cache;
	struct watch *w = dict_get(c->watches, op->key);

	if (w == NULL)
		return;		/* the wait is over already */
	if (reply == NULL || reply->type != REDIS_REPLY_STRING ||
	    strcmp(reply->str, w->holder) != 0)
		c->on_fill(w->key, NULL, c->fill_arg);
}

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

	if ((op = op_new(c, w->key, on_holder_reply, NULL)) == NULL) {
		c->on_fill(w->key, NULL, c->fill_arg);
		return;
	}
	op_key_name(lock, sizeof(lock), c, w->key, "lock");
	failed |= (op->key = strdup(w->key)) == NULL;
	failed |= op_argstr(op, "GET");
	failed |= op_argstr(op, lock);
	if (op_start(op, failed) == NULL)
		c->on_fill(w->key, NULL, c->fill_arg);
}

/*
 * An error on the subscriber: a SSUBSCRIBE to a node that no longer owns
 * the slot; or, on a node that is down, its refused AUTH (the command
 * connection says that once).
 */
static void
sub_error(struct cache *c, struct node *n, const redisReply *r)
{
	struct watch *w;

	if (n->up)
		log_warn("redis: %s: %s", n->name, r->str);
	else
		log_debug("redis: %s: subscriber: %s", n->name, r->str);
	TAILQ_FOREACH(w, &c->watch_list, link)
		if (w->node == n)
			w->node = NULL;
	route_refresh(c->rt);
}

/* What the purge channel says: subscribed, a maintenance change, a purge. */
static void
purge_channel_says(struct cache *c, struct node *n, const char *kind,
    const redisReply *msg)
{
	if (strcmp(kind, "subscribe") == 0) {
		log_info("redis: subscribed to %s on %s", c->purge_channel,
		    n->name);
		/* Purges may have been missed while unsubscribed. */
		c->on_fill(NULL, NULL, c->fill_arg);
		if (c->on_maint != NULL)
			c->on_maint(c->fill_arg);
	} else if (strcmp(kind, "message") == 0 &&
	    msg->type == REDIS_REPLY_STRING) {
		if (strcmp(msg->str, MAINT_MESSAGE) == 0) {
			if (c->on_maint != NULL)
				c->on_maint(c->fill_arg);
			return;
		}
		c->counters.purges_received++;
		if (c->on_purge != NULL)
			c->on_purge(msg->str, c->fill_arg);
	}
}

void
watch_sub_reply(struct cache *c, struct node *n, const redisReply *r)
{
	const char *kind, *channel;
	const redisReply *msg;
	struct watch *w;

	if (r->type == REDIS_REPLY_ERROR) {
		sub_error(c, n, r);
		return;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_STRING)
		return;
	kind = r->element[0]->str;
	channel = r->element[1]->str;
	msg = r->element[2];
	if (strcmp(channel, c->purge_channel) == 0 &&
	    (strcmp(kind, "subscribe") == 0 || strcmp(kind, "message") == 0)) {
		purge_channel_says(c, n, kind, msg);
	} else if (strcmp(kind, "ssubscribe") == 0) {
		/* Live now: a fill may have come before, so look again. */
		if ((w = watch_of_channel(c, channel)) != NULL)
			watch_check(c, w);
	} else if (strcmp(kind, "smessage") == 0 &&
	    msg->type == REDIS_REPLY_STRING) {
		c->counters.fills_received++;
		if ((w = dict_get(c->watches, msg->str)) != NULL)
			watch_end(c, w);
		fill_received(c, msg->str, msg->len);
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

void
watch_node_gone(struct cache *c, struct node *n)
{
	struct watch *w;

	TAILQ_FOREACH(w, &c->watch_list, link)
		if (w->node == n)
			w->node = NULL;
	if (c->bcast == n)
		c->bcast = NULL;
}

void
watch_map_changed(struct cache *c)
{
	struct watch *w;

	TAILQ_FOREACH(w, &c->watch_list, link)
		watch_place(c, w);
	watch_bcast_place(c);
}

static void
on_watch_expire(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;

	assert(w->magic == WATCH_MAGIC);
	watch_end(w->cache, w);
}

/*
 * The fill normally ends the watch; the timer only ends one whose holder
 * died (its lock expires unannounced), long after any waiter gave up.
 */
void
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
		op_key_name(w->channel, sizeof(w->channel), c, key,
		    FILL_SUFFIX);
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

void
watch_drop(struct cache *c, const char *key)
{
	struct watch *w = dict_get(c->watches, key);

	if (w != NULL)
		watch_end(c, w);
}

int
watch_init(struct cache *c)
{
	TAILQ_INIT(&c->watch_list);
	return (c->watches = dict_new()) != NULL ? 0 : -1;
}

void
watch_free_all(struct cache *c)
{
	struct watch *w;

	while ((w = TAILQ_FIRST(&c->watch_list)) != NULL) {
		w->node = NULL;
		watch_end(c, w);
	}
	dict_free(&c->watches);
}
