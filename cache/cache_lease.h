/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_LEASE_H
#define CACHE_CACHE_LEASE_H

/*
 * The fleet's origin slots in Redis ([upstream] max_requests): leases
 * that expire if their holder dies, renewed while a fetch runs, released
 * by token; a queue of waiting tickets, ranked by priority then age; and
 * a "freed" notification that wakes the waiters of every process.
 *
 * Every key shares the hash tag {budget}, so each script runs on one node
 * (in a cluster, the node that owns that slot):
 *   <prefix>{budget}:slots    ZSET token -> lease expiry (Redis time, ms)
 *   <prefix>{budget}:queue    ZSET ticket -> rank (lower goes first; ties
 *                             by the ticket's name, which starts with the
 *                             time it was first queued)
 *   <prefix>{budget}:tickets  ZSET ticket -> expiry: a waiter that died
 *                             leaves the queue after one lease
 *   <prefix>{budget}:server:URL  ZSET token -> lease expiry: the slots
 *                             taken on one server of the pool
 *                             (max_requests_per_server)
 *   <prefix>{budget}:fleet    ZSET instance -> expiry: who is alive
 *   <prefix>{budget}:freed    the shard channel a release publishes on
 * A named pool ([upstream NAME]) has its own slots, queue, tickets and
 * servers, <prefix>{budget}:NAME:slots and so on (pool "" names the
 * default's); the channel and the fleet are shared.
 *
 * acquire  atomically: drops expired leases and tickets (and says so on
 *          the channel), queues the ticket (or refreshes its rank and
 *          expiry), and grants a slot only if fewer than the free slots
 *          rank ahead of it: a freed slot goes to the best waiting ticket
 *          of the fleet, whichever process asks first. With servers
 *          (max_requests_per_server), the slot comes with one on the first
 *          of them, in the asker's order, that has room, and the free
 *          slots are at most the room they have together; a token that
 *          holds a slot already (a retry's) only takes one on a server,
 *          giving up the one it had.
 * renew    extends the leases of a token that still holds them.
 * release  drops the token's leases and its ticket; publishes when a lease
 *          went.
 * hello    this instance is alive; answers how many are.
 */

#include <stdint.h>

#include "cache/cache.h"

#define LEASE_TICKET_MAX		64	/* "<13 digits>:<token>" and room */
#define LEASE_SERVERS_MAX		CONF_SERVERS_MAX	/* one ask names */

enum lease_result {
	LEASE_GRANTED,
	LEASE_QUEUED,		/* no free slot for this ticket's rank */
	LEASE_ERROR,		/* Redis failed or timed out */
};

/* What Redis said of the fleet, with each answer (-1: not known). */
struct lease_figures {
	int64_t		held;		/* leases held, fleet-wide */
	int64_t		queued;		/* tickets waiting, fleet-wide */
	int64_t		instances;	/* instances alive (hello) */
	int		server;		/* granted: the server taken, as an
					 * index of lease_ask's servers (-1:
					 * none) */
};

typedef void lease_cb(enum lease_result r, const struct lease_figures *f,
    void *arg);
/* A slot was freed somewhere in the fleet, or this process may have
 * missed such news (it subscribed again). */
typedef void lease_freed_cb(void *arg);

/* What an acquire asks for. */
struct lease_ask {
	const char	*pool;		/* "": the default pool */
	const char	*token;
	const char	*ticket;	/* its place in the queue */
	int64_t		 rank;		/* lower goes first */
	int		 max;		/* the fleet's slots (0: no cap) */
	int64_t		 lease_ms;
	/* With max_requests_per_server: the servers (their URLs) a slot may
	 * be on, best first, and the one the token gives up, if any. */
	const char	*const *servers;
	int		 nservers;	/* 0..LEASE_SERVERS_MAX */
	int		 server_cap;
	const char	*leave;		/* NULL: none */
};

/* Asks for a slot for a->token, its ticket waiting with its rank while
 * none is free. */
struct cache_op	*lease_acquire(struct cache *c, const struct lease_ask *a,
		    lease_cb *cb, void *arg);
/* FENCE_LOST: the lease expired (its slot may be someone else's). server:
 * the one the token holds a slot on, or NULL. */
struct cache_op	*lease_renew(struct cache *c, const char *pool,
		    const char *token, const char *server, int64_t lease_ms,
		    fence_cb *cb, void *arg);
/* Drops token's leases (server: as for renew) and ticket's place in the
 * queue (max: as asked with); cb may be NULL. FENCE_LOST: no lease was
 * held. */
struct cache_op	*lease_release(struct cache *c, const char *pool,
		    const char *token, const char *ticket, const char *server,
		    int max, fence_cb *cb, void *arg);
/* instance is alive for ttl_ms; cb gets how many are, and the default
 * pool's leases held and tickets waiting now, fleet-wide. */
struct cache_op	*lease_hello(struct cache *c, const char *instance,
		    int64_t ttl_ms, lease_cb *cb, void *arg);
/* Subscribes this process to the freed channel (cb NULL: unsubscribes). */
void		 lease_on_freed(struct cache *c, lease_freed_cb *cb, void *arg);

#endif
