#ifndef CACHE_CACHE_H
#define CACHE_CACHE_H

/*
 * The shared cache in Redis: entries, the refresh lock and the "filled"
 * notifications that wake waiters in every process of the fleet.
 *
 * Each operation starts one command on the process's command connection
 * and ends in exactly one callback, unless it is cancelled first: with the
 * result, or with an error when Redis fails, disconnects, or does not
 * answer within [redis] timeout. An operation that cannot even start
 * (Redis is down) returns NULL and calls nothing. A connection is up only
 * once Redis has answered its set-up (AUTH, SELECT, or a PING): a node
 * Redis refuses to serve is down, with the reason.
 *
 * Every key of one cache key (entry, lock, backoff, variants) shares the
 * hash tag {key}, so each script touches one slot: in cluster mode it runs
 * on the node that owns it (cache_route.c), and MOVED, ASK and failovers
 * are followed within [redis] timeout; while a slot's primary cannot be
 * reached, a lookup is read from its replica. The caller never knows
 * which mode runs.
 *
 * Notifications: a store or release publishes on the key's own shard
 * channel (SPUBLISH "<prefix>{key}:filled"; a store of a short entry
 * sends the entry along), which only the processes
 * waiting for that key hear: a lock_acquire answered LOCK_BUSY subscribes
 * this process to the key until the fill arrives, a later acquire of the
 * key is not busy, or (the holder died) several px_ms pass. Once the
 * subscription is live, the fill callback also runs for the key if the
 * lock no longer holds the token that made it wait (the fill came first).
 * Invalidations and purges, which every process must hear, go to one
 * fleet-wide channel.
 *
 * The lock protocol (scripts in cache_script.c, run with EVALSHA):
 *   acquire  atomically: if the entry changed from the generation the
 *            caller saw, return it; else SET lock token NX PX ttl. One
 *            that Redis runs after its caller stopped waiting (a timeout,
 *            a cancel) and that took the lock releases it at once: no
 *            lock bars the key with no fetch behind it.
 *   renew    PEXPIRE the lock only if it still holds our token.
 *   store    write the entry only if the lock still holds our token (a
 *            fetch that lost its lock never overwrites a newer entry),
 *            delete the lock, end any backoff, publish "filled".
 *   release  delete the lock only if it holds our token, publish. After an
 *            upstream failure it also starts a fleet-wide backoff for the
 *            key (next to the lock), doubling while failures continue, and
 *            acquire answers LOCK_BACKOFF until it ends; and it keeps the
 *            failure a while for the fetch's waiters: an acquire naming
 *            the token it waited on answers LOCK_FAILED, not the lock.
 */

#include <stdint.h>

#include <event2/event.h>

#include "cache/cache_entry.h"
#include "cache/cache_key.h"

/* A variant id: what follows '\n' in a variant key "K\nID" (32 hex
 * digits, proxy_vary.c), with its NUL. */
#define CACHE_VARIANT_MAX	33
#include "common/hist.h"
#include "conf/conf.h"

struct cache;
struct cache_op;

enum cache_result {
	CACHE_FOUND,		/* an entry (possibly stale or expired) */
	CACHE_ABSENT,
	CACHE_ERROR,		/* Redis failed or timed out */
};

enum lock_result {
	LOCK_ACQUIRED,
	LOCK_BUSY,		/* someone else holds the lock */
	LOCK_CHANGED,		/* the entry changed: here it is, no lock taken */
	LOCK_BACKOFF,		/* refreshes of the key are backing off */
	LOCK_PASS,		/* the key is uncacheable: fetch, do not lock */
	LOCK_FAILED,		/* the fetch waited for failed: take its failure */
	LOCK_ERROR,
};

enum fence_result {
	FENCE_OK,		/* renewed / stored / released */
	FENCE_LOST,		/* the lock no longer holds our token */
	FENCE_FULL,		/* a store of a variant: the key has max_variants
				 * already; not stored, the lock released */
	FENCE_ERROR,
};

#define CACHE_NODES_MAX		32	/* Redis nodes shown in the figures */
#define CACHE_REASON_MAX	160	/* cache_down_reason(), with its NUL */
#define CACHE_NODE_NAME_MAX	64	/* "host:port" */

/* One Redis node as this process sees it. */
struct cache_node_state {
	char		name[CACHE_NODE_NAME_MAX];	/* "" ends the list */
	int		up;		/* its command connection is up */
	int		slots;		/* hash slots it owns (cluster), or 16384 */
};

struct cache_counters {
	uint64_t	commands;
	uint64_t	errors;		/* error replies, timeouts, disconnects */
	uint64_t	timeouts;
	uint64_t	connects;
	uint64_t	disconnects;
	uint64_t	fills_received;
	uint64_t	purges_received;
	uint64_t	auth_failures;	/* AUTH refused, or NOAUTH */
	uint64_t	moved;		/* MOVED redirects followed */
	uint64_t	ask;		/* ASK redirects followed */
	uint64_t	map_refreshes;	/* slot maps read, primaries looked up */
	uint64_t	replica_reads;	/* reads sent to a replica (cluster) */
	uint64_t	oom;		/* writes Redis refused at maxmemory
					 * ("OOM ..."; also errors) */
	int		full;		/* processes that see Redis full */
	struct hist	command_duration;	/* command sent to reply read */
	struct hist	fill_delay;	/* a fill's publish (Redis's clock, in
					 * the message) to its receipt here */
	uint64_t	tag_members_pruned;	/* dropped: their entries went */
	int64_t		tag_set_largest;	/* members, in the last minute or two */
	int		nnodes;
	struct cache_node_state nodes[CACHE_NODES_MAX];
};

/* The callback gets its own reference to e (NULL unless FOUND/CHANGED). */
typedef void cache_get_cb(enum cache_result r, struct cache_entry *e, void *arg);
/* text: with LOCK_BACKOFF, the failure that started it, and e the
 * upstream's last error response, if it sent one; with LOCK_FAILED, the
 * failure of the fetch waited for, and e its error response, if any; with
 * LOCK_BUSY, the holder's token; with LOCK_ACQUIRED, "released" when the
 * holder waited for released the lock (NULL: it expired, or none was
 * waited for). Else NULL. */
typedef void lock_cb(enum lock_result r, struct cache_entry *e,
    const char *text, void *arg);
typedef void fence_cb(enum fence_result r, void *arg);
/* A "filled" notification for key arrived (from any process), with the
 * entry stored when it was short enough to come along (else NULL; the
 * callback takes a reference of its own to keep it). */
typedef void cache_fill_cb(const char *key, struct cache_entry *e, void *arg);
/* A purge of key from any process (NULL: some may have been missed). */
typedef void cache_purge_cb(const char *key, void *arg);

struct cache	*cache_new(struct event_base *base, const struct conf *c,
		    cache_fill_cb *on_fill, void *arg);
void		 cache_free(struct cache **cp);
/* Is every node that owns slots connected? */
/* A reload's [redis] credentials (username, password and the sentinel
 * ones, files read): used from the next connection on; a node that is down
 * tries them at once. */
void		 cache_credentials(struct cache *c, const struct conf *conf);
int		 cache_is_up(const struct cache *c);
/* Is Redis full: did it refuse a write for maxmemory ("OOM") within the
 * last CACHE_FULL_MS, with no store taken since? Entries are not stored
 * meanwhile (with noeviction), though lookups still answer. */
#define CACHE_FULL_MS		5000
int		 cache_is_full(const struct cache *c);
/* "single", "cluster" or "sentinel". */
const char	*cache_mode(const struct cache *c);
/* Why Redis is not usable ("" while it is). */
const char	*cache_down_reason(const struct cache *c);
/* Also fills in the per-node states. */
const struct cache_counters *cache_counters(struct cache *c);
/* Adds every counter of src into dst (the workers' figures summed); a
 * node is up in dst only if it is up in every worker. */
void		 cache_counters_add(struct cache_counters *dst,
		    const struct cache_counters *src);

struct cache_op	*cache_lookup(struct cache *c, const char *key,
		    cache_get_cb *cb, void *arg);
/* seen_gen: the generation the caller saw ("" when it saw no entry);
 * waited: the holder whose fetch it waited for (a LOCK_BUSY's token), or
 * "": if that fetch failed, the answer is LOCK_FAILED, not the lock. */
struct cache_op	*lock_acquire(struct cache *c, const char *key,
		    const char *token, int64_t px_ms, const char *seen_gen,
		    const char *waited, lock_cb *cb, void *arg);
struct cache_op	*lock_renew(struct cache *c, const char *key,
		    const char *token, int64_t px_ms, fence_cb *cb, void *arg);
/*
 * Stores e (whose gen must equal token) under key's lock; Redis drops it
 * at expire_at_ms. For a response with Vary, variant is "key\nID": e goes
 * there and marker (the Vary it varies on) at key itself, unless key has
 * max_variants variants already (FENCE_FULL). Otherwise both are NULL.
 */
struct cache_op	*cache_store(struct cache *c, const char *key,
		    const char *token, const struct cache_entry *e,
		    int64_t expire_at_ms, const char *variant,
		    const struct cache_entry *marker, int max_variants,
		    fence_cb *cb, void *arg);
/* What a release records besides freeing the lock. */
struct release_args {
	/* NULL, or what went wrong upstream ("503", "timeout", ...): from
	 * the backoff_after-th failure in a row, fleet-wide, it starts or
	 * extends the key's backoff (base, doubling, at most max; max 0
	 * turns backoff off), answered meanwhile with error, the upstream's
	 * own response (NULL: it sent none). */
	const char		*failure;
	const struct cache_entry *error;
	int64_t			 backoff_base_ms;
	int64_t			 backoff_max_ms;
	int			 backoff_after;
	/* > 0: the key's response is not shareable; for this long every
	 * acquire answers LOCK_PASS (hit-for-miss, fleet-wide). */
	int64_t			 hit_for_miss_ms;
	/* > 0, with a failure: for this long, an acquire that names this
	 * token as the holder it waited for answers LOCK_FAILED with the
	 * failure and error (the fetch's waiters are answered, not retry). */
	int64_t			 failed_ms;
};

struct cache_op	*lock_release(struct cache *c, const char *key,
		    const char *token, const struct release_args *ra,
		    fence_cb *cb, void *arg);
/* A response of key's was shareable after all: its hit-for-miss ends,
 * and acquire answers as usual again (FENCE_LOST: there was none). cb may
 * be NULL. */
struct cache_op	*lock_unpass(struct cache *c, const char *key, fence_cb *cb,
		    void *arg);
/* Deletes key's entry and its variants, and tells every process (the
 * purge callback) to drop its copies. cb may be NULL. */
struct cache_op	*cache_invalidate(struct cache *c, const char *key,
		    fence_cb *cb, void *arg);
/* Gets the number of keys whose entries went (or, soft, became stale),
 * and ok 0 when Redis failed before every key was reached. */
typedef void purge_cb(int64_t purged, int ok, void *arg);
enum purge_start {
	PURGE_STARTED,		/* cb will run, later */
	PURGE_DOWN,		/* Redis is down: cb will not run */
	PURGE_BUSY,		/* PURGES_MAX purges run already: try later */
};
/* A soft purge: key's entry and variants become stale now (served stale
 * while one refresh runs: no stampede), and every process drops its
 * copies. cb may be NULL. */
struct cache_op	*cache_soften(struct cache *c, const char *key, fence_cb *cb,
		    void *arg);
/* Records that key was stored with tag (Surrogate-Key, Cache-Tag) until
 * expire_at_ms, in the tag's own set, which drops a few keys whose entries
 * are gone on the way; and, for a tag "P:x", in its family's set too,
 * "P:*", so that a purge of the family reaches every tag that begins
 * "P:" (a change feed's broad purges, changes.h). Nobody is told the
 * result. 0 or -1. */
#define CACHE_TAG_MAX		128
#define CACHE_TAG_FAMILY	"*"	/* "P:" CACHE_TAG_FAMILY */
int		 cache_tag(struct cache *c, const char *key, const char *tag,
		    int64_t expire_at_ms);
/* The family of tag ("orders:42": "orders:*") into out: 0, or -1 when it
 * has none (no ':', or it is one). */
int		 cache_tag_family(const char *tag, char out[CACHE_TAG_MAX + 1]);
/*
 * Invalidates (soft: softens) every key starting with prefix (SCAN on
 * every primary), a batch at a time: all running purges share a bounded
 * number of keys in flight, so that requests' commands still get through.
 */
enum purge_start cache_purge_prefix(struct cache *c, const char *prefix,
		    int soft, purge_cb *cb, void *arg);
/* The same for every key stored with tag. A hard purge takes the keys out
 * of the tag's set as their entries go: one that fails half-way leaves the
 * rest for a retry. */
enum purge_start cache_purge_tag(struct cache *c, const char *tag, int soft,
		    purge_cb *cb, void *arg);
/* The purges started with arg go on, but their cb will not run (their
 * starter is gone). */
void		 cache_purge_forget(struct cache *c, void *arg);
/*
 * The same soft purges (cache_purge_prefix, cache_purge_tag with soft)
 * that also call visit with every key they reached, whether its entry
 * became stale or was stale or gone already: what a refresh of many keys
 * lists (purged counts the keys visited).
 */
typedef void cache_visit_cb(const char *key, void *arg);
enum purge_start cache_soften_prefix_each(struct cache *c, const char *prefix,
		    cache_visit_cb *visit, purge_cb *cb, void *arg);
enum purge_start cache_soften_tag_each(struct cache *c, const char *tag,
		    cache_visit_cb *visit, purge_cb *cb, void *arg);

/* cache_control.c: what Redis holds for one key, all read at once. */
#define CACHE_INSPECT_VARIANTS	32	/* variant ids shown at most */
#define CACHE_TOKEN_MAX		64	/* a lock's token, as read */
#define CACHE_FAILURE_MAX	32	/* a backoff's failure, as read */
struct cache_inspection {
	struct cache_entry *entry;	/* the key's (the callback's), or NULL */
	int64_t		 entry_pttl_ms;	/* Redis drops it then; -2: none */
	char		 lock_token[CACHE_TOKEN_MAX];	/* "": no lock */
	int64_t		 lock_pttl_ms;
	char		 backoff[CACHE_FAILURE_MAX];	/* "": none */
	int64_t		 backoff_pttl_ms;
	int64_t		 failures;	/* in a row, fleet-wide */
	int64_t		 hfm_pttl_ms;	/* hit-for-miss left; -2: none */
	int		 nvariants;	/* of the key, at most the ids below */
	char		 variants[CACHE_INSPECT_VARIANTS][CACHE_VARIANT_MAX];
};
typedef void cache_inspect_cb(enum cache_result r, struct cache_inspection *in,
    void *arg);
/* FOUND (an entry or not: in->entry), or ERROR. */
struct cache_op	*cache_inspect(struct cache *c, const char *key,
		    cache_inspect_cb *cb, void *arg);

/*
 * Maintenance modes, fleet-wide: the routes (path prefixes) whose
 * requests must not reach the origin, kept in one Redis hash (so that a
 * restarted or new instance finds them) and announced on the purge
 * channel. Every process hears of a change, and of a resubscription
 * (when it may have missed one), through the callback it registered; it
 * then reads them all again.
 */
#define CACHE_MAINT_MAX		32	/* routes in maintenance at once */
struct cache_maint {
	char		 route[CONF_ROUTE_PREFIX_MAX];
	int64_t		 since_ms;
};
/* The routes in maintenance (n of them), or ok 0 when Redis failed. */
typedef void cache_maint_cb(const struct cache_maint *list, int n, int ok,
    void *arg);
typedef void cache_maint_news_cb(void *arg);
/* route in maintenance (avoid) or not, from now, everywhere. FENCE_LOST:
 * CACHE_MAINT_MAX routes are in maintenance already. */
struct cache_op	*cache_maint_set(struct cache *c, const char *route, int avoid,
		    fence_cb *cb, void *arg);
struct cache_op	*cache_maint_load(struct cache *c, cache_maint_cb *cb,
		    void *arg);
void		 cache_on_maint(struct cache *c, cache_maint_news_cb *news);

/* Who hears of purges from any process: key, or NULL after resubscribing. */
void		 cache_on_purge(struct cache *c, cache_purge_cb *on_purge);

/* The callback will not run. Sets *op to NULL. */
void		 cache_op_cancel(struct cache_op **op);

#endif
