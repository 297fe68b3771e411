#ifndef CACHE_CACHE_ROUTE_H
#define CACHE_CACHE_ROUTE_H

/*
 * The routing table: which Redis node owns each of the 16384 hash slots,
 * and one command connection (hiredis async) and one subscriber connection
 * (cache_sub.c) per node. Private to cache/.
 *
 *   single    one node, given by [redis] address, owns every slot.
 *   cluster   the slot map comes from CLUSTER SLOTS, asked of any node
 *             that answers (the seeds first; read by cache_slots.c); MOVED, ASK
 *             and a lost node are the three events that change it
 *             (route_moved, route_refresh), and it is read again now and
 *             then all the same. While a slot's primary cannot be
 *             reached, reads go to a replica the map names for it
 *             (route_replica; every cluster connection is READONLY).
 *   sentinel  one node owns every slot: the primary the sentinels name
 *             (SENTINEL get-master-addr-by-name), confirmed with ROLE and
 *             followed through +switch-master. While none is known, no
 *             node is usable.
 *
 * Nodes are freed when a map refresh drops them: nobody keeps a node
 * pointer across a return to the event loop except through the hooks.
 */

#include <stdint.h>

#include <event2/event.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "cache/cache.h"
#include "cache/cache_adapter.h"
#include "cache/cache_key.h"
#include "cache/cache_sub.h"
#include "conf/conf.h"

#define ROUTE_SLOTS		CACHE_KEY_SLOTS
#define ROUTE_SCRIPTS_MAX	14
#define ROUTE_NODES_MAX		CACHE_NODES_MAX

struct route;

struct node {
	uint32_t		 magic;
	struct route		*rt;
	char			 host[CONF_HOST_MAX];	/* "" for the unix socket */
	int			 port;
	char			 name[CACHE_NODE_NAME_MAX];	/* host:port */

	redisAsyncContext	*cmd;		/* NULL while disconnected */
	int			 up;		/* connected (and, for sentinel,
						 * confirmed primary) */
	int			 timeouts_in_row;
	int			 setup;		/* set-up replies still to come */
	int			 refused;	/* Redis refused its set-up */
	char			 down_reason[CACHE_REASON_MAX];	/* when down */
	struct event		*retry;
	int64_t			 backoff_ms;
	char			 sha[ROUTE_SCRIPTS_MAX][41];	/* "" until loaded */

	struct sub		*sub;		/* NULL until wanted */
	int			 sub_up;
	struct event		*sub_retry;
	int64_t			 sub_backoff_ms;

	int			 slots;		/* owned in the current map */
	/* cluster: the first replica the map names for this primary (port
	 * 0: none); connected only once it is wanted (route_replica). */
	char			 replica_host[CONF_HOST_MAX];
	int			 replica_port;
	int			 quiet;		/* unreachable and said so: further
						 * failed connects log at debug */
};

/* What the cache hears from the table. */
struct route_hooks {
	void	(*cmd_up)(struct node *n, void *arg);	/* queue setup commands */
	void	(*sub_up)(struct node *n, void *arg);	/* (re)subscribe */
	void	(*sub_reply)(struct node *n, const redisReply *r, void *arg);
	void	(*node_gone)(struct node *n, void *arg);	/* about to be freed */
	void	(*map_changed)(void *arg);	/* owners may have moved */
};

#define ROUTE_MAGIC		0x524f5554u	/* "ROUT" */
#define ROUTE_REFRESH_MIN_MS	100	/* between two reads of the map */

/* The table; its fields are for cache_route.c and cache_route_view.c
 * only. */
struct route {
	uint32_t		 magic;
	struct event_base	*base;
	enum redis_mode		 mode;
	char			 unix_path[CONF_PATH_MAX];
	struct adapter_auth	 auth;		/* [redis] username, password */
	int			 db;
	char			 master_name[CONF_NAME_MAX];
	int			 nseeds;
	struct conf_hostport	 seeds[CONF_REDIS_ADDRS_MAX];
	const struct route_hooks *hooks;
	void			*arg;
	struct cache_counters	*counters;
	int			 closing;

	struct node		*nodes[ROUTE_NODES_MAX];
	int			 nnodes;
	struct node		*slots[ROUTE_SLOTS];
	struct node		*before[ROUTE_SLOTS];	/* the map a read replaced */
	int			 covered;	/* every slot has a node */

	/* Reading the map (cluster) or asking for the primary (sentinel). */
	struct event		*refresh_ev;
	struct event		*period_ev;	/* cluster: the map read anyway */
	int			 refreshing;	/* a question is out */
	int			 again;		/* ask again when it is answered */
	int64_t			 last_refresh_ms;
	int64_t			 refresh_gap_ms;	/* REFRESH_MIN_MS..MAX_MS */
	int			 next_seed;
	int64_t			 refresh_backoff_ms;

	struct sentinel		*sentinel;	/* sentinel mode */
};

struct route	*route_new(struct event_base *base, const struct conf *conf,
		    const struct route_hooks *hooks, void *arg,
		    struct cache_counters *counters);
void		 route_free(struct route **rtp);

/* The node owning slot, or NULL when none is known. */
struct node	*route_node(struct route *rt, unsigned slot);
/* The node at host:port, created (and connecting) if new; NULL if full. */
struct node	*route_node_at(struct route *rt, const char *host, int port);
/* A MOVED: slot is at n now; the whole map is refreshed soon. */
void		 route_moved(struct route *rt, unsigned slot, struct node *n);
/* Something changed (a lost node, CLUSTERDOWN, READONLY): ask again,
 * after the gap since the last question (one at a time). */
void		 route_refresh(struct route *rt);
/* Where a read of slot goes while its primary is not up: the replica the
 * map names, once connected (asked for here: NULL until then). */
struct node	*route_replica(struct route *rt, unsigned slot);
/* Frees n: out of the table, its connections closed. */
void		 route_node_drop(struct node *n);
/* Sends a command on n's subscriber connection, opening it if needed. */
int		 route_sub_send(struct node *n, int argc, const char **argv);
/* A command on n timed out; after a few in a row the connection drops. */
void		 route_node_timeout(struct node *n);
/* A reload's credentials (data nodes and sentinels): connections made
 * from now on use them, and a node or sentinel feed that is down tries
 * them at once. Connections up stay as they are. */
void		 route_credentials(struct route *rt, const struct conf *conf);

/* ---- cache_route_view.c: the table as the rest of cache/ reads it ---- */

/* Can commands be sent at all (some node up)? */
int		 route_usable(const struct route *rt);
/* Is some node that owns slots unreachable? */
int		 route_owner_down(const struct route *rt);
/* Is every node that owns slots connected? */
int		 route_all_up(const struct route *rt);
/* The nodes that own slots, at most max. */
int		 route_primaries(struct route *rt, struct node **out, int max);
/* A connected node to hold fleet-wide subscriptions, or NULL. */
struct node	*route_broadcast_node(struct route *rt);
/* Fills the per-node figures of cc. */
void		 route_node_states(const struct route *rt,
		    struct cache_counters *cc);
/* Why a node that owns slots is down ("" when all are up). */
const char *route_down_reason(const struct route *rt);

#endif
