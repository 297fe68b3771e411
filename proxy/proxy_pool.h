#ifndef PROXY_PROXY_POOL_H
#define PROXY_PROXY_POOL_H

/*
 * The upstream pools of a worker ([upstream] and each [upstream NAME]):
 * their servers, which one a request goes to, whether each is in or out,
 * and each pool's origin budget (proxy_budget.h).
 *
 * Choice: least outstanding (the fewest requests in flight from this
 * worker for its weight; ties take turns), or smooth weighted round
 * robin; a server at max_requests_per_server is skipped.
 *
 * Health, in each worker for itself (each has its own connections and
 * its own view, as nginx's workers without a shared zone): a failure
 * (connect, timeout, a reset or bad response, a 5xx) counts against its
 * server; max_fails of them within fail_timeout take it out. Without
 * health_path it is back fail_timeout later; with health_path every
 * server is probed each health_interval (proxy_health.h), a failed probe
 * takes it out and health_rise passed probes in a row bring it back.
 * While every server is out, requests go to the one that failed least
 * recently. Every change of state is one log line.
 *
 * A reload keeps the pools and servers it still names (with their
 * state and figures), adds the new ones, and lets the ones it removed
 * drain: they take no new request, and go once their last one ends.
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

/* A request waiting for a server with room (max_requests_per_server);
 * the caller's, in place until it is woken or leaves. */
struct pool_waiter {
	void			(*cb)(void *arg);
	void			*arg;
	int			 waiting;
	TAILQ_ENTRY(pool_waiter) link;
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
 * A server for a request, not the one whose URL is avoid (NULL, or the
 * one a retry must not go to again). NULL: none may take one now (each
 * is at max_requests_per_server, or avoid is the only one).
 */
struct pool_server *pool_pick(struct pool *p, const char *avoid);
/* A request goes to s; and how it ended (why: the error's text). */
void	pool_begin(struct pool_server *s);
void	pool_end(struct pool_server *s, enum pool_outcome o, const char *why);
/* A request that failed on s goes to another. */
void	pool_count_retry(struct pool_server *s);
const char *pool_server_url(const struct pool_server *s);

/* Waits until a server of p may take a request (one ends): w->cb runs
 * from the loop, for the first waiter each time a request ends; one that
 * finds no room after all waits again first in line (again). pool_unwait:
 * it leaves. */
void	pool_wait(struct pool *p, struct pool_waiter *w, int again);
void	pool_unwait(struct pool *p, struct pool_waiter *w);

/*
 * Figures of every server, for /stats, /metrics and the dashboard: each
 * worker copies its own into its row of shared memory, and the admin
 * listener sums the rows by pool and server.
 */
#define POOL_ROW_MAX	64	/* servers a row shows */
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
	struct pool_figures	 s[POOL_ROW_MAX];
};

/* proxy_upstreams.c: the summed figures as /stats's "upstreams" list
 * (", \"upstreams\": [...]"), and as Prometheus families. */
struct evbuffer;
void	pool_stats_json(const struct pool_row *sum, struct evbuffer *out);
void	pool_metrics(const struct pool_row *sum, struct evbuffer *out);

/* This worker's figures into its row. */
void	pool_publish(struct proxy *px, struct pool_row *row);
/* Adds a row into sum (by pool and server). */
void	pool_rows_add(struct pool_row *sum, const struct pool_row *row);
const char *pool_state_name(enum pool_state s);

#endif
