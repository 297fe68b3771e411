/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_H
#define PROXY_PROXY_H

/*
 * The proxy: one per process and event loop. proxy_life.c starts, drains,
 * reloads and stops it; proxy_http.c owns its listeners, proxy_conn.c
 * its connections;
 * the flow files (proxy_flow.h names them) the life of each request;
 * proxy_admin.c the admin endpoints. Nothing here includes hiredis or
 * curl.
 */

#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_l2.h"
#include "conf/conf.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_pool.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_tls.h"
#include "upstream/upstream.h"

#define PROXY_MAGIC	0x50525859u	/* "PRXY" */

struct cache;
struct upstream;
struct dict;
struct l1;
struct l2;

/*
 * What one worker shows the admin listener of every worker. The slots of
 * all workers live in memory the master maps before it forks them: a
 * worker's counters are kept in its slot directly; its gauges are copied
 * there every PUBLISH_MS.
 */
#define PUBLISH_MS	100

/*
 * Peer streaming (proxy_peer.c), with more than one worker: the keys a
 * worker asks the lock for or fetches under it right now, as hashes of
 * their flight keys, so that a sibling whose requests find the lock busy
 * can ask for the response as it streams instead of waiting until it is
 * stored. Only
 * the worker itself writes its row (0: free); it is cleared when the
 * worker starts and when it dies. A hash is only a hint: a wrong one
 * costs an answer "no stream" and the usual wait.
 */
#define PEER_FETCHES_MAX	64

/*
 * The instance's own lock on a key, for when Redis cannot lock it (the
 * key's node is away, or Redis is down): one worker fetches, its siblings
 * take the entry from the shared near cache (proxy_peer.c's peer_claim).
 * A key's claim lives in one cell of one row, by its hash; any worker
 * sets it (compare-and-swap) and its holder clears it. A cell holds the
 * top half of the key's hash and the holder's pid; one whose pid is no
 * running worker's is free.
 */
#define PEER_CLAIMS_MAX		64

struct peer_row {
	_Atomic uint64_t	 fetching[PEER_FETCHES_MAX];
	_Atomic uint64_t	 claims[PEER_CLAIMS_MAX];
};

struct worker_slot {
	pid_t			 pid;		/* 0: not running */
	int			 ready;		/* listening, Redis answered or
						 * timed out (proxy_service.c) */
	int64_t			 heartbeat_us;	/* its loop last ran (monotonic) */
	struct stats		 stats;
	struct cache_counters	 cache;
	struct upstream_counters upstream;
	int			 redis_up;
	char			 redis_down[CACHE_REASON_MAX];	/* why not */
	int64_t			 connections;
	int64_t			 admin_connections;	/* both kinds */
	int64_t			 admin_outside;	/* from outside admin_allow */
	uint64_t		 admin_refused;	/* over admin_max_connections,
						 * or ADMIN_OUTSIDE_MAX */
	int64_t			 requests;	/* in progress */
	int64_t			 flights;
	int64_t			 refreshes;
	int64_t			 upstream_fetches;	/* in progress */
	int64_t			 decoded_bytes;	/* queued to clients, unsent */
	int64_t			 decoded_kept;	/* kept with entries */
	int64_t			 decoding;	/* decoded as clients take them */
	int64_t			 l1_bytes;
	int64_t			 l1_entries;
	uint64_t		 l1_rejected;
	int64_t			 body_files;	/* bodies kept in files for
						 * sendfile, and their bytes */
	int64_t			 body_file_bytes;
	struct peer_row		 peer;
	struct budget_slot	 budget;	/* the origin budget's */
	struct pool_row		 pools;		/* its upstream servers */
	/* The change feeds' rows: slot 0's runners write them (its own
	 * slot's), every worker reads them there. */
	struct feed_row		 feeds[CONF_CHANGES_MAX];
	struct tls_counters	 tls;		/* its handshakes */
	int64_t			 tls_not_after;	/* its certificate's, or 0 */
};

/* Everything the admin listener reports, summed over the workers. */
struct proxy_figures {
	const struct stats	*stats;
	struct cache_counters	 cache;
	struct upstream_counters upstream;
	int			 workers;
	int			 redis_up;	/* workers whose Redis is up */
	char			 redis_down[CACHE_REASON_MAX];	/* a down one's reason */
	int64_t			 connections;
	int64_t			 admin_connections;
	int64_t			 admin_outside;
	uint64_t		 admin_refused;
	int64_t			 requests;
	int64_t			 flights;
	int64_t			 refreshes;
	int64_t			 upstream_fetches;
	int64_t			 decoded_bytes;
	int64_t			 decoded_kept;
	int64_t			 decoding;
	int64_t			 l1_bytes;
	int64_t			 l1_entries;
	uint64_t		 l1_rejected;
	int64_t			 body_files;
	int64_t			 body_file_bytes;
	struct l2_counters	 l2;		/* the instance's, not summed */
	struct budget_gauges	 budget;	/* the origin budget's */
	struct pool_row		 pools;		/* by pool and server */
	struct tls_counters	 tls;
	int64_t			 tls_not_after;	/* the soonest, or 0: no TLS */
};
struct access_log;
struct control;
struct feeds;
struct maint;
struct jwt_state;
struct req;
struct flight;
struct refresh;
struct conn;
struct evconnlistener;
struct tls;

/* The public and admin listening sockets, made by http_bind() before any
 * worker is forked (-1: none), one for each of listen's addresses. */
struct listen_socks {
	int			 pub[CONF_LISTEN_MAX];
	int			 npub;
	int			 admin;
};

/* A listener of this process: one of listen's addresses, or the admin's. */
struct listener {
	struct proxy		*px;
	struct evconnlistener	*lev;		/* NULL once closed */
	int			 tls;		/* its connections are HTTPS */
};

struct proxy {
	uint32_t		 magic;
	struct event_base	*base;
	const struct conf	*conf;
	struct cache		*cache;
	struct upstream		*upstream;
	struct listen_socks	 socks;		/* until its listener takes each */
	struct listener		 pub[CONF_LISTEN_MAX];	/* closed once draining */
	int			 npub;
	struct listener		 admin;		/* stats and control */
	struct tls		*tls;		/* the tls listeners', or NULL */
	int			 accept_paused;	/* at max_connections */
	int			 accept_failing; /* accept() failed: backing off */
	int			 accept_listening; /* the listener is enabled */
	int			 accept_delay_ms; /* the next backoff */
	int			 accept_failures; /* since the last log line */
	int64_t			 accept_logged_ms;
	struct event		*accept_ev;	/* ends a backoff */
	int			 admin_conns;	/* open on it, accept to close */
	int			 admin_outside;	/* ... from outside admin_allow */
	int			 admin_unlogged; /* refusals not yet logged */
	int64_t			 admin_logged_ms;
	struct dict		*flights;	/* key -> struct flight */
	struct dict		*refreshes;	/* key -> struct refresh (locked) */
	TAILQ_HEAD(, req)	 reqs;		/* every live request */
	TAILQ_HEAD(, req)	 req_pool;	/* finished ones, kept for reuse */
	int			 nreq_pool;
	TAILQ_HEAD(, flight)	 flight_list;	/* every live flight */
	TAILQ_HEAD(, refresh)	 refresh_list;	/* every live refresh */
	struct dict		*vary;		/* key -> what its responses vary on */
	TAILQ_HEAD(, conn)	 conn_list;	/* every connection (proxy_conn.c) */
	int			 nconn;		/* ... how many */
	int			 nclients;	/* of those, public and peer ones */
	struct lingers		*lingers;	/* refused ones, closing (proxy_linger.h) */
	struct access_log	*access_log;	/* NULL when off */
	int			 draining;	/* stopping: finish what is running */
	int			 abandoned;	/* past the stop deadline */
	struct event		*drain_ev;
	int64_t			 drain_deadline_us;
	int			 nrequests;	/* requests in progress */
	int			 npeers;	/* of those, siblings' (proxy_peer.c) */
	int			 nrefreshes;	/* refreshes in progress */
	uint64_t		 machine_ids;	/* the last id a request, flight,
						 * refresh or origin fetch took,
						 * for the step trace */
	struct stats		*stats;		/* this worker's, in its slot */
	struct worker_slot	*slots;		/* every worker's */
	int			 nslots;
	int			 slot;		/* this worker's */
	struct event		*publish_ev;
	struct l1		*l1;		/* the near cache */
	struct l2		*l2;		/* the instance's (NULL: none) */
	int64_t			 started_ms;
	struct evconnlistener	*peer_lev;	/* workers > 1: its siblings ask */
	struct upstream		*peers;		/* ... and it asks them */
	pid_t			 master_pid;	/* names the peer sockets */
	struct budget		*budget;	/* the default pool's budget */
	TAILQ_HEAD(pool_list, pool) pools;	/* proxy_pool.c; default first */
	struct control		*control;	/* refreshes asked (proxy_control.c) */
	struct maint		*maint;		/* routes in maintenance */
	struct jwt_state	*jwt;		/* claims keys (proxy_jwt.c) */
	struct feeds		*feeds;		/* slot 0: the change feeds */
};

/* proxy_life.c: slots[slot] is this worker's (nslots 1: the only one);
 * l2 the near cache the workers share (NULL: none); socks the listening
 * sockets, which its listeners close when it stops. */
int	proxy_start(struct proxy *px, struct event_base *base,
	    const struct conf *conf, const struct listen_socks *socks,
	    struct worker_slot *slots, int nslots, int slot, struct l2 *l2,
	    char *err, size_t errlen);
void	proxy_stop(struct proxy *px);
/* Stops accepting, lets requests in progress finish for shutdown_timeout,
 * then releases every lock still held and answers the rest with 503; the
 * event loop exits when nothing is left. A second call exits at once. */
void	proxy_drain(struct proxy *px);
/* Loads path and, if it has no errors, makes it the running configuration
 * (*confp is replaced and the old one freed). Settings that need a restart
 * (listeners, [redis]) keep their running values. 0 or -1. */
int	proxy_reload(struct proxy *px, struct conf **confp, const char *path);
/* Loads path for a reload: the new configuration, or NULL with every
 * error logged. Keys that need a restart keep their values in running,
 * and those the file changed are pending (logged unless quiet). */
struct conf *proxy_conf_load(const char *path, const struct conf *running,
	    int quiet);
/* Room for conf_restart_pending()'s names, and for its text. */
#define RESTART_KEYS_MAX	32
#define RESTART_TEXT_MAX	512

#endif
