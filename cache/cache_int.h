#ifndef CACHE_CACHE_INT_H
#define CACHE_CACHE_INT_H

/*
 * What the files behind cache.h share and nothing outside cache/ sees:
 * the cache object, the operation (a command, or a few in a row, with its
 * timer), the Redis key names, and each layer's face to the layers above
 * it. A file calls only the layers below its own; answers come back up
 * through the function pointers the upper layer registered:
 *
 *	cache.c		   the life cycle; the routing table's hooks
 *	cache_store.c	   lookup, acquire, renew, store, release
 *	cache_purge.c	   invalidate, soften; purges of many keys, by prefix
 *	cache_tag.c	   tags: their sets of keys, purges by tag
 *	cache_lease.c	   the fleet's origin slots (cache_lease.h)
 *	cache_leader.c	   the fleet's leader leases (cache_leader.h)
 *	cache_watch.c	   fill watches and the purge subscription
 *	cache_op.c	   the transport: send, redirect, park, time out
 *	cache_script.c	   the Lua scripts and their loading
 *	cache_route.c	   slot -> node, the nodes' connections (cache_route.h)
 *	cache_slots.c	   the cluster's slot map (cache_route.h)
 *	cache_sentinel.c   asking the sentinels (cache_sentinel.h)
 *	cache_sub.c	   a subscriber connection (cache_sub.h)
 *	cache_adapter.c	   hiredis on the event loop (cache_adapter.h)
 */

#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "cache/cache.h"
#include "cache/cache_key.h"
#include "cache/cache_route.h"
#include "cache/cache_leader.h"
#include "cache/cache_lease.h"

#define CACHE_MAGIC		0x43414348u	/* "CACH" */
#define KEY_SUFFIX_MAX		16		/* "}:entry", "}:filled" */
#define REDIS_KEY_MAX		(CONF_PREFIX_MAX + 1 + CACHE_KEY_MAX + \
				 KEY_SUFFIX_MAX + CACHE_VARIANT_MAX)
#define FILL_SUFFIX		"filled"
#define FILL_AT_MARK		"@"	/* after the key: when it was published */
#define FAILED_SUFFIX		"failed"	/* a failed fetch, for its waiters */
#define PURGE_CHANNEL		"purge"
/* On the purge channel, never a key: the maintenance modes changed. */
#define MAINT_MESSAGE		"\001maintenance"
/* The store script's status reply when a key has max_variants variants:
 * no count an invalidation or a fence returns can be mistaken for it. */
#define STORE_FULL		"FULL"

enum script_id {
	SCRIPT_ACQUIRE,
	SCRIPT_RENEW,
	SCRIPT_STORE,
	SCRIPT_RELEASE,
	SCRIPT_INVALIDATE,
	SCRIPT_SOFTEN,
	SCRIPT_TAG,
	SCRIPT_TAG_TAKE,
	SCRIPT_LEASE_ACQUIRE,	/* cache_lease.c's */
	SCRIPT_LEASE_RENEW,
	SCRIPT_LEASE_RELEASE,
	SCRIPT_LEASE_HELLO,
	SCRIPT_LEADER_CLAIM,	/* cache_leader.c's */
	SCRIPT_LEADER_RESIGN,
	SCRIPT_COUNT,
	SCRIPT_NONE = SCRIPT_COUNT	/* a plain command */
};

struct dict;
struct watch;
struct cache_op;
struct purge;
struct lease_sub;

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

	TAILQ_HEAD(, purge)	 purges;	/* running, in turn order */
	int			 npurges;
	int			 purge_inflight; /* their keys being invalidated */
	int64_t			 tag_window_ms;	/* when the current window began */
	int64_t			 tag_largest[2]; /* this window's and the last's */

	cache_fill_cb		*on_fill;
	cache_purge_cb		*on_purge;
	cache_maint_news_cb	*on_maint;	/* cache_control.c's news */
	struct lease_sub	*freed;		/* cache_lease.c: NULL when off */
	void			*fill_arg;
	int			 closing;
	int64_t			 full_ms;	/* the last "OOM" reply (monotonic
						 * ms), 0 since a store */
	int64_t			 full_logged_ms; /* said at most once a second */
	uint64_t		 full_unsaid;	/* refusals since then */
	struct cache_counters	 counters;
};

/*
 * What an op does with its reply, once: reply is NULL when the op failed
 * (an error reply, a lost node, a timeout). The op is freed after it.
 */
typedef void op_reply_cb(struct cache_op *op, redisReply *reply);
/*
 * The next command of an op of several, before reply counts as the
 * answer: 1 when it sent the next command (the op goes on), 0 when reply
 * is the answer, -1 when the next command could not go (the op fails).
 * It also sees a reply that comes after the caller has had its answer (a
 * timeout; op->finished is set): then only 1 keeps the op.
 */
typedef int op_step_cb(struct cache_op *op, const redisReply *reply);

struct cache_op {
	uint32_t		 magic;
	struct cache		*cache;
	op_reply_cb		*on_reply;	/* its maker's, from op_new() */
	op_step_cb		*on_step;	/* NULL: one command */
	union {
		cache_get_cb	*get;
		lock_cb		*lock;
		fence_cb	*fence;
		lease_cb	*lease;
		leader_cb	*leader;
		cache_inspect_cb *inspect;
		cache_maint_cb	*maint;
	} cb;				/* the caller's */
	void			*arg;
	int			 finished;	/* caller's callback ran or op cancelled */
	int			 inflight;	/* hiredis holds it */
	int			 parked;
	unsigned		 park_round;	/* c->park_round when parked */
	TAILQ_ENTRY(cache_op)	 park_link;
	struct event		*timer;
	int64_t			 sent_us;	/* when the command was sent */
	unsigned		 slot;
	int			 readonly;	/* a replica may answer it */
	struct node		*ask;		/* ASK: the next send goes there */
	int			 redirects;
	/* What to send again: a script's numkeys, keys..., args... (EVALSHA
	 * or EVAL in front), or a plain command. */
	enum script_id		 script;
	const char		*src;		/* its text (script_use) */
	int			 retried;	/* NOSCRIPT: sent as EVAL */
	int			 nargs;
	int			 cap;
	char			**args;		/* NULL where bufs has it */
	size_t			*arglens;
	struct evbuffer		**bufs;		/* op_arg_buffer()'s, or NULL */
	/* Its maker's own; the transport never reads them. The cache key
	 * (acquire: whose fill to wait for when busy, with the lock's PX
	 * and the token, to let go a lock taken too late; invalidate: whose
	 * variants; a watch's check), and an invalidation's set reads and
	 * softness. */
	char			*key;
	char			*token;
	int64_t			 px_ms;
	int			 rounds;
	int			 soft;
};

/*
 * A purge of many keys, by prefix or by tag: its lister names the keys a
 * batch at a time, the runner (cache_purge.c) invalidates each batch's
 * keys, every running purge taking turns within PURGE_INFLIGHT_MAX keys in
 * flight, and asks the lister for the next batch only once the last one
 * is done (or failed: then the purge ends, unanswered keys left for a
 * retry). It owns itself and reports once, never from inside the call
 * that started it.
 */
enum item_state { ITEM_WAITING, ITEM_SENT, ITEM_DONE, ITEM_FAILED };

struct purge_item {
	struct purge		*pg;
	char			*key;
	enum item_state		 state;
};

/* Sends the command for pg's next batch; pg's items are still the last
 * batch's, each DONE, FAILED or never sent (pg->failed). 1 sent, 0 the
 * purge is over, -1 it could not go. */
typedef int purge_list_fn(struct purge *pg);

struct purge {
	uint32_t		 magic;
	struct cache		*cache;
	TAILQ_ENTRY(purge)	 link;
	purge_list_fn		*list;
	int			 soft;		/* mark stale instead of deleting */
	cache_visit_cb		*visit;		/* soft: told every key reached */
	int			 failed;
	int			 last;		/* the lister has named every key */
	int			 listing;	/* its command is in flight */
	int64_t			 purged;	/* keys whose entries changed */
	struct purge_item	*items;		/* the batch */
	int			 nitems;
	int			 cap;
	int			 sent;		/* items[0..sent) went out */
	int			 inflight;
	/* The lister's: what it looks for (a SCAN pattern, a tag), where it
	 * is (a node, a set), its cursor, and a prefix purge's nodes. */
	char			 what[REDIS_KEY_MAX * 2];
	size_t			 head;
	int			 at;
	char			 cursor[24];
	int			 snapped;
	char			 nodes[CACHE_NODES_MAX][CACHE_NODE_NAME_MAX];
	int			 nnodes;
	purge_cb		*cb;
	void			*arg;
};

/* ---- cache_op.c ---- */

/* "<prefix>{<key>}:<suffix>", or for a variant "K\nID"
 * "<prefix>{K}:<suffix>:ID". */
void		 op_key_name(char *out, size_t outlen, const struct cache *c,
		    const char *key, const char *suffix);
/* A new op for a command on key's slot; NULL when Redis is down. */
struct cache_op	*op_new(struct cache *c, const char *key,
		    op_reply_cb *on_reply, void *arg);
/* Appends an argument. 0 or -1. */
int		 op_arg(struct cache_op *op, const void *s, size_t len);
int		 op_argstr(struct cache_op *op, const char *s);
/* Appends buf as an argument, without copying it: op owns buf from now
 * on, even on failure (-1). For large arguments (an entry): sent, it is
 * copied once, into hiredis's output buffer (adapter_command()). */
int		 op_arg_buffer(struct cache_op *op, struct evbuffer *buf);
void		 op_clear_args(struct cache_op *op);
/* Sends op to its slot's node (or where an ASK said), or parks it. 0 or
 * -1. */
int		 op_send(struct cache_op *op);
/* Sends a new op, or frees it and returns NULL when it cannot (failed:
 * building it went wrong already). */
struct cache_op	*op_start(struct cache_op *op, int failed);
/* The on_reply of an op whose caller waits with a fence_cb (cb.fence,
 * which may be NULL): an integer, 1 or more (a count) for FENCE_OK, less
 * for FENCE_LOST. FENCE_FULL is the store's alone (cache_store.c). */
void		 op_fence_reply(struct cache_op *op, redisReply *reply);
/* The parked ops' queue and its timer. 0 or -1. */
int		 op_park_init(struct cache *c);
/* Frees every parked op and the timer. */
void		 op_park_free(struct cache *c);
/* Parked ops try their nodes again now (the map changed). */
void		 op_park_retry(struct cache *c);
/* n is about to be freed: no parked op is sent there. */
void		 op_node_gone(struct cache *c, struct node *n);

/* ---- cache_purge.c ---- */

/* A new purge that lists with list, not yet running; NULL on no memory. */
struct purge	*purge_new(struct cache *c, int soft, purge_list_fn *list,
		    purge_cb *cb, void *arg);
/* Sends its first listing: PURGE_STARTED, or PURGE_DOWN (pg freed). */
enum purge_start purge_run(struct purge *pg);
/* The lister's reply names key (len bytes): one more of the batch. 0, or
 * -1 on no memory. */
int		 purge_add(struct purge *pg, const char *key, size_t len);
/* The lister's reply is in: more 1 when batches follow, 0 when that was
 * the last, -1 when it failed. */
void		 purge_listed(struct purge *pg, int more);
/* Frees every purge (the cache closes: nobody is told). */
void		 purge_free_all(struct cache *c);

/* ---- cache_tag.c ---- */

/* A new purge of tag's keys (not yet running); NULL when it cannot be. */
struct purge	*tag_purge_new(struct cache *c, const char *tag, int soft,
		    purge_cb *cb, void *arg);

/* Brings the figure of the largest tag set up to date. */
void		 tag_figures(struct cache *c);

/* ---- cache_script.c ---- */

/* Loads every script on n's command connection (its cmd_up hook). */
void		 script_load(struct node *n, void *arg);
/* op runs script id from now on (SCRIPT_NONE: a plain command). */
void		 script_use(struct cache_op *op, enum script_id id);

/* ---- cache_watch.c ---- */

int		 watch_init(struct cache *c);
/* Ends every watch. */
void		 watch_free_all(struct cache *c);
/* After a busy lock (holder's token, lock PX): hear of key's fill. */
void		 watch_add(struct cache *c, const char *key, const char *holder,
		    int64_t px_ms);
/* This process waits for key's fill no more. */
void		 watch_drop(struct cache *c, const char *key);
/* The purge subscription, on some node that listens. */
void		 watch_bcast_place(struct cache *c);
/* The routing table's news: a subscriber connection came up or was lost,
 * it got a reply or push, n is about to go, the owners may have moved. */
void		 watch_sub_up(struct cache *c, struct node *n);
void		 watch_sub_reply(struct cache *c, struct node *n,
		    const redisReply *r);
void		 watch_node_gone(struct cache *c, struct node *n);
void		 watch_map_changed(struct cache *c);

/* ---- cache_lease.c ---- */

/* The origin slots' scripts (see cache_lease.h), loaded with the others. */
extern const char lease_script_acquire[];
extern const char lease_script_renew[];
extern const char lease_script_release[];
extern const char lease_script_hello[];
/* The freed channel's subscription follows the routing table's news as
 * the watches do; lease_sub_reply() is 1 when r was the channel's. */
void		 lease_sub_up(struct cache *c, struct node *n);
int		 lease_sub_reply(struct cache *c, struct node *n,
		    const redisReply *r);
void		 lease_node_gone(struct cache *c, struct node *n);
void		 lease_map_changed(struct cache *c);
/* Ends the subscription. */
void		 lease_free(struct cache *c);

/* ---- cache_leader.c ---- */

/* The leader leases' scripts (see cache_leader.h), loaded with the others. */
extern const char leader_script_claim[];
extern const char leader_script_resign[];

#endif
