/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_POOL_H
#define PROXY_PROXY_POOL_H

/*
 * The upstream pools of a worker ([upstream] and each [upstream NAME]):
 * their servers, which one a request goes to, whether each is in or out,
 * and each pool's origin budget (proxy_budget.h).
 *
 * Choice: least outstanding (the fewest requests in flight from this
 * worker for its weight, those being asked a slot for counted; ties take
 * turns), or smooth weighted round robin. The choice is an order of the
 * servers: the first goes, unless max_requests_per_server (the pool's
 * budget, proxy_budget.h) finds it full, when the next with room does.
 *
 * Health, in each worker for itself (each has its own connections and
 * its own view, as nginx's workers without a shared zone): a failure
 * (connect, timeout, a reset or bad response, a 5xx) counts against its
 * server; max_fails of them within fail_timeout take it out. Without
 * health_path it is back fail_timeout later (a timer); with health_path
 * every server is probed each health_interval (proxy_health.h), a failed
 * probe takes it out and health_rise passed probes in a row bring it
 * back. While every server is out, requests go to the one that failed
 * least recently (a failed probe counts). Every change of state is one
 * log line of the worker whose view changed.
 *
 * A reload keeps the pools and servers it still names (with their
 * state and figures), adds the new ones, and lets the ones it removed
 * drain: they take no new request, and go once their last one ends (a
 * log line says so). One it names again while it drains is back, as it
 * was.
 */

#include <stdint.h>
#include <sys/queue.h>

#include "conf/conf.h"

struct proxy;
struct pool;
struct pool_server;
struct budget;

/* How a request to a server ended, for its health. */
enum pool_outcome {
	POOL_OK,		/* a response below 500 */
	POOL_5XX,		/* a response 500..599 */
	POOL_CONNECT,		/* could not connect */
	POOL_TIMEOUT,		/* timed out */
	POOL_BROKEN,		/* reset, or no valid response */
	POOL_NEUTRAL,		/* cancelled or too big: not the server's fault */
};

/* The servers a request may go to, best first, held while the request
 * asks for a slot on one (a reload cannot free them meanwhile, and the
 * first counts as busy for least outstanding). Zeroed to begin. */
struct pool_choice {
	struct pool_server	*s[CONF_SERVERS_MAX];
	int			 n;
};

/* px's pools from px->conf. 0 or -1 (no memory). */
int	pools_start(struct proxy *px);
/* After a reload: the pools and servers of new, the others draining. 0,
 * or -1 when memory ran out (some pools keep their old settings). */
int	pools_reload(struct proxy *px, const struct conf *new);
/* Frees every pool (their fetches are gone). */
void	pools_stop(struct proxy *px);

/* The pool named name ("" or NULL: the default; a name no longer in the
 * configuration: the default). Never NULL once started. */
struct pool *pool_get(struct proxy *px, const char *name);
/* Its settings as they are now, and its origin budget. */
const struct conf_pool *pool_conf(const struct pool *p);
struct budget	*pool_budget(const struct pool *p);
/* A fetch holds its pool while it lives (a removed pool drains). */
void	pool_hold(struct pool *p);
void	pool_release(struct pool *p);

/*
 * The servers a request may go to now, not the one whose URL is avoid
 * (NULL, or the one a retry must not go to again), best first: those up,
 * in the order of the pool's balance (which counts this as the first's
 * turn); while none is up, those out, the one that failed least recently
 * first. c->n is 0 when avoid was the only one. What c held before is
 * let go first.
 */
void	pool_choose(struct pool *p, const char *avoid, struct pool_choice *c);
/* Lets go of the servers c holds. */
void	pool_choice_drop(struct pool_choice *c);
/* The first of pool_choose()'s order, or NULL. */
struct pool_server *pool_pick(struct pool *p, const char *avoid);
/* A request goes to s; and how it ended (why: the error's text). */
void	pool_begin(struct pool_server *s);
void	pool_end(struct pool_server *s, enum pool_outcome o, const char *why);
/* Keeps s (a reload cannot free it) until pool_unhold_server(). */
void	pool_hold_server(struct pool_server *s);
void	pool_unhold_server(struct pool_server **sp);
/* A request that failed on s was sent to another. */
void	pool_count_retry(struct pool_server *s);
const char *pool_server_url(const struct pool_server *s);

/*
 * Figures of every server, for /stats, /metrics and the dashboard: each
 * worker copies its own into its row of shared memory, and the admin
 * listener sums the rows by pool and server. A row has room for every
 * server the configuration may name and as many draining; those past it
 * are left out, and counted.
 */
#define POOL_ROW_MAX	(2 * CONF_POOLS_MAX * CONF_SERVERS_MAX)
#define POOL_WHY_MAX	96

enum pool_state {
	POOL_UP,
	POOL_DOWN,
	POOL_DRAINING,		/* removed by a reload, requests in flight */
};

struct pool_figures {
	char		 pool[CONF_POOL_NAME_MAX];
	char		 server[CONF_SERVER_URL_MAX];
	enum pool_state	 state;		/* summed: the worst */
	int		 workers_down;	/* summed: how many have it out */
	char		 why[POOL_WHY_MAX];	/* why it is out */
	int64_t		 in_flight;
	int		 weight;
	uint64_t	 requests;
	uint64_t	 failures;
	uint64_t	 retries;	/* requests that failed here and went on */
	uint64_t	 health_ok;	/* probes passed */
	uint64_t	 health_failed;
	uint64_t	 taken_out;	/* times it went out */
	int64_t		 budget_held;	/* its pool's slots held (the first
					 * server's row carries them) */
	int64_t		 budget_queued;
};

struct pool_row {
	int			 n;
	int			 left_out;	/* servers it had no room for */
	struct pool_figures	 s[POOL_ROW_MAX];
};

/* proxy_upstreams.c: the summed figures as /stats's "upstreams" list
 * (", \"upstreams\": [...]"), and as Prometheus families. */
struct evbuffer;
void	pool_stats_json(const struct pool_row *sum, struct evbuffer *out);
void	pool_metrics(const struct pool_row *sum, struct evbuffer *out);

/* This worker's figures into its row. */
void	pool_publish(struct proxy *px, struct pool_row *row);
/* Adds a row into sum (by pool and server; left_out: the most of any
 * row's, and those sum had no room for). */
void	pool_rows_add(struct pool_row *sum, const struct pool_row *row);
const char *pool_state_name(enum pool_state s);

#endif
