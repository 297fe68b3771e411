/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_BUDGET_INT_H
#define PROXY_PROXY_BUDGET_INT_H

/*
 * What the origin budget's two files share: proxy_budget.c, a ticket's
 * life (its rank, its ask, the slot it holds, the local share), and
 * proxy_budget_fleet.c, the budget's own (its timers, the fleet's news,
 * its figures), which asks the first. Nothing else includes it.
 */

#include <limits.h>
#include <stdint.h>
#include <sys/queue.h>

#include "cache/cache_lease.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy_budget.h"

#define BUDGET_MAGIC		0x42444754u	/* "BDGT" */
#define TICKET_MAGIC		0x544b4554u	/* "TKET" */
#define RANK_SPAN		INT64_C(1000000)	/* ranks of one class */
#define RANK_MOVING		INT64_C(-2)	/* holds its pool slot already */
#define RANK_AGED		INT64_C(-1)	/* waited AGE_FIRST_MS: oldest first */
#define AGE_FIRST_MS		1000	/* at most; half queue_timeout if less */
#define RENEW_DIVISOR		3	/* a held lease: renewed this often */
#define RECHECK_DIVISOR		4	/* a waiting ticket: asks again */
#define LOCAL_POLL_MS		50	/* Redis down: the share, looked at */
#define HELLO_MS		2000	/* this instance says it is alive */
#define HELLO_MISSES		3	/* ... and is counted this long after */
#define INSTANCE_MAX		(HOST_NAME_MAX + 48)

enum ticket_state {
	T_WAITING,
	T_MOVING,		/* holds its pool slot, asks for a server's */
	T_HELD,
	T_SHED,
};

/* Where a held slot came from. */
enum source {
	FROM_NONE,		/* not held */
	FROM_REDIS,		/* a lease, renewed while held */
	FROM_LOCAL,		/* the local share */
	FROM_NOWHERE,		/* the budget was turned off */
};

struct budget_ticket {
	uint32_t		 magic;
	struct budget		*b;
	enum ticket_state	 state;
	struct budget_args	 a;
	enum source		 slot;		/* its pool slot */
	enum source		 at_from;	/* its server slot */
	int			 at;		/* its server: an index of names */
	int			 local_col;	/* its local slots' columns, -1 */
	int			 server_col;
	int			 in_redis;	/* Redis may know it: release */
	int			 leaving;	/* its ask gives up server */
	int			 queued;	/* in b->queue */
	int			 waited;	/* was told to queue, once */
	int			 lost;		/* its lease ran out */
	int64_t			 wait_ms;	/* its deadline, from its ask */
	char			 token[UTIL_TOKEN_HEX + 1];
	char			 name[LEASE_TICKET_MAX];	/* in the queue */
	char			 server[CONF_SERVER_URL_MAX];	/* at's URL */
	const char		*names[CONF_SERVERS_MAX];	/* the asker's */
	int			 nnames;
	struct cache_op		*op;		/* acquire or renew */
	struct event		*timer;		/* deadline, then renewals */
	struct event		*notify;	/* tells its asker, deferred */
	int64_t			 asked_us;
	TAILQ_ENTRY(budget_ticket) link;	/* in b->queue while it asks */
};

struct budget {
	uint32_t		 magic;
	struct proxy		*px;
	const struct conf_pool	*cp;		/* its pool's settings */
	struct budget		*main;		/* the default pool's (or itself) */
	LIST_HEAD(, budget)	 others;	/* main: the other pools' */
	LIST_ENTRY(budget)	 other;
	TAILQ_HEAD(, budget_ticket) queue;
	int			 nqueued;
	int			 nheld;
	int			 nlocal;
	int			 releasing;	/* release ops on their way */
	int			 degraded;	/* Redis did not answer last */
	int			 rewake;	/* a slot was freed while the best
						 * ticket's ask was under way */
	int64_t			 refresh_due_us; /* tickets ask again */
	struct event		*recheck_ev;
	struct event		*hello_ev;
	struct cache_op		*hello_op;
	int			 listening;	/* to the freed channel */
	int64_t			 instances;	/* alive, as Redis last said */
	struct lease_figures	 fleet;		/* its last answer */
	int64_t			 fleet_ms;	/* when it came */
	void			(*on_counts)(void *);	/* held or queued moved */
	void			*counts_arg;
	char			 instance[INSTANCE_MAX];
};

static inline int
max_requests(const struct budget *b)
{
	return b->cp->max_requests;
}

/* max_requests_per_server: each server's own cap, fleet-wide. */
static inline int
server_cap(const struct budget *b)
{
	return b->cp->max_requests_per_server;
}

/* Is there a budget at all? */
static inline int
enabled(const struct budget *b)
{
	return max_requests(b) > 0 || server_cap(b) > 0;
}

static inline int64_t
lease_ms(const struct budget *b)
{
	return b->cp->slot_lease_ms;
}

static inline int64_t
queue_timeout_ms(const struct budget *b)
{
	return b->cp->queue_timeout_ms;
}

static inline int64_t
instances(const struct budget *b)
{
	return b->main->instances > 0 ? b->main->instances : 1;
}

/* The local share of this instance. */
static inline int64_t
local_share(const struct budget *b)
{
	const struct conf_pool *c = b->cp;
	int64_t n = instances(b);

	if (c->local_share > 0)
		return c->local_share;
	return (c->max_requests + n - 1) / n;
}

/* ... and of each server's cap. */
static inline int64_t
server_share(const struct budget *b)
{
	return (server_cap(b) + instances(b) - 1) / instances(b);
}

/* proxy_budget.c, for proxy_budget_fleet.c */
void	ticket_ask(struct budget_ticket *t);
/* The best waiting tickets ask, while slots may be free. */
void	budget_pump(struct budget *b);
void	budget_recheck_arm(struct budget *b);

#endif
