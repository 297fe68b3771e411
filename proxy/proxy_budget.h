/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_BUDGET_H
#define PROXY_PROXY_BUDGET_H

/*
 * The origin budget ([upstream] max_requests): every request to the
 * origin (a cold miss, a stale or early refresh, a pass-through, a
 * hit-for-miss, a POST) first takes a slot, a lease in Redis shared by
 * the whole fleet (cache/cache_lease.h), and gives it back when its fetch
 * ends; fetches ask it through origin_fetch() (below). Without a free
 * slot it waits, at most queue_timeout, woken when a slot is freed
 * anywhere in the fleet. A freed slot goes to the best
 * waiting request of the fleet: a cold miss first (the one with the most
 * waiters first), then a stale refresh, an early refresh, pass-through
 * traffic, and last the refreshes and warm-ups an operator asked for
 * (POST /refresh, /warm), so that no client's request ever waits behind
 * them; the oldest first within a rank.
 *
 * While Redis is unavailable, each instance allows itself a local share:
 * local_share, or max_requests divided by the instances Redis last saw
 * alive (rounded up), split among its workers through shared memory.
 *
 * With max_requests and max_requests_per_server 0 there is no budget:
 * budget_ask() answers NULL and the fetch goes at once.
 *
 * Each upstream pool ([upstream], [upstream NAME]) has its own budget:
 * its max_requests, queue and leases (proxy_pool.c makes them). The
 * default pool's is px->budget, the main one: it says this instance is
 * alive and hears of freed slots for all of them.
 *
 * A pool's max_requests_per_server is part of its budget: a slot then
 * comes with a slot on one server, taken in the same Redis script, on the
 * first server with room in the order the asker gives (its balance), so
 * that a request whose preferred server is full goes to another rather
 * than waiting; it waits only while every server is full (or the pool).
 * The server slot is renewed and released with the pool's. A fetch that
 * fails and may go to another server moves its ticket (budget_move): the
 * pool's slot is kept, the server's given back, and one on another server
 * taken. While Redis is unavailable the local share applies to each
 * server's cap too: max_requests_per_server divided by the instances
 * alive, rounded up.
 */

#include <stdint.h>

#include "conf/conf.h"
#include "upstream/upstream.h"

/* The caps whose local share a worker may hold slots of at once (a
 * pool's, and one per server of it), each in a column of its row named
 * by the cap's identity, so that the workers sum the same cap whatever
 * their columns (a reload may leave them with other pools). */
#define BUDGET_COLUMNS		(CONF_POOLS_MAX * (1 + CONF_SERVERS_MAX))

struct conf;
struct proxy;
struct budget;
struct budget_ticket;

/* What a request to the origin is, best first. */
enum budget_class {
	BUDGET_MISS,		/* a client waits: a cold or expired miss */
	BUDGET_STALE,		/* a refresh while stale is served */
	BUDGET_EARLY,		/* a refresh before the entry goes stale */
	BUDGET_PASS,		/* pass-through, uncacheable, unsafe methods */
	BUDGET_OPERATOR,	/* POST /refresh, /warm: no client waits */
	BUDGET_CLASSES
};

enum budget_answer {
	BUDGET_GRANTED,		/* fetch now; budget_done() once it ends */
	BUDGET_TIMEOUT,		/* no slot within queue_timeout */
};

typedef void budget_cb(enum budget_answer a, void *arg);
/* How many clients wait for this request's fetch right now. */
typedef int budget_weight_cb(void *arg);
/* With max_requests_per_server: the servers a ticket may take a slot on
 * now, best first, as their URLs in names (at most max of them; each
 * valid until the next call for the same ticket, or its end); how many (0:
 * none). */
typedef int budget_servers_cb(void *arg, const char **names, int max);

struct budget_args {
	enum budget_class	 cls;
	int			 route;		/* for counters, or -1 */
	budget_weight_cb	*weight;	/* NULL: 1 */
	void			*weight_arg;
	budget_servers_cb	*servers;	/* called with arg */
	budget_cb		*cb;
	void			*arg;
};

/* The figures of one worker (and, summed, of an instance). */
struct budget_gauges {
	int64_t		held;		/* slots its fetches hold */
	int64_t		queued;		/* its requests waiting for one */
	int64_t		oldest_ms;	/* how long the oldest has waited */
	int64_t		local_held;	/* of held, from the local share */
	int64_t		share;		/* the local share in effect */
	/* As Redis last said (-1: not known). */
	int64_t		fleet_held;
	int64_t		fleet_queued;
	int64_t		instances;
};

/* A worker's row in the memory the workers share: the local-share slots
 * it holds, by cap (id: a hash of the pool's name, and of the server's URL
 * for a server's cap; 0: a free column). */
struct budget_slot {
	_Atomic uint64_t	id[BUDGET_COLUMNS];
	_Atomic int64_t		local[BUDGET_COLUMNS];
	struct budget_gauges	g;	/* copied every PUBLISH_MS */
};

/* A pool's budget, its settings read from *cp (which must outlive it).
 * main: the default pool's budget, or NULL for that one itself. NULL: no
 * memory. */
struct budget *budget_new(struct proxy *px, struct budget *main,
	    const struct conf_pool *cp);
/* After every ticket is done (budget_idle); the main one last. Sets *bp
 * to NULL. */
void	budget_free(struct budget **bp);
/* No ticket waits or holds a slot, and no release is under way. */
int	budget_idle(const struct budget *b);
/* fn(arg) runs each time the slots b holds or the requests it queues
 * change (the default pool's are published by the budget itself). */
void	budget_on_counts(struct budget *b, void (*fn)(void *), void *arg);

/*
 * Asks for a slot. NULL: go ahead now (no budget: max_requests and
 * max_requests_per_server 0, or no memory to queue with). Else a ticket whose cb runs once, never inside this call, with
 * GRANTED or TIMEOUT; the caller then (or before: it gives up) ends it
 * with budget_done(), which gives the slot back.
 */
struct budget_ticket *budget_ask(struct budget *b, const struct budget_args *a);
/* Gives the slot back, or leaves the queue; cb will not run. Sets *tp to
 * NULL. */
void	budget_done(struct budget_ticket **tp);
/* The server a granted ticket holds a slot on: its index in the names of
 * the last servers call; -1: none (no max_requests_per_server when it was
 * granted: the asker chooses). */
int	budget_server(const struct budget_ticket *t);
/* A granted ticket's server failed and the fetch may go to another: the
 * server's slot goes back and the ticket asks for one on another (the
 * servers callback names them), keeping the pool's; cb runs once more,
 * never inside this call: GRANTED, or TIMEOUT after wait_ms without room.
 * Only for a ticket that holds a server slot (budget_server() >= 0). */
void	budget_move(struct budget_ticket *t, int64_t wait_ms);
/* Slot releases still on their way to Redis, every pool's (a stop waits
 * for them). */
int	budget_pending(const struct proxy *px);
/* This worker's figures of one budget (px->budget: for its row). */
void	budget_publish(const struct budget *b, struct budget_gauges *g);
/* Adds src into dst (workers summed; the fleet's: the largest seen). */
void	budget_gauges_add(struct budget_gauges *dst,
	    const struct budget_gauges *src);
/* The master: a worker died; its local-share slots are free. */
void	budget_forget(struct budget_slot *bs);

#endif
