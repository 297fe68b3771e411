/* SPDX-License-Identifier: MIT */
/*
 * The upstream pools of a worker (proxy_pool.h): servers, the choice of
 * one, passive health and each server's state, the pools' budgets, and
 * what a reload changes.
 *
 * A server's life:
 *	UP -(max_fails within fail_timeout, or a failed probe)-> DOWN
 *	DOWN -(fail_timeout over, without health_path: its timer)-> UP
 *	DOWN -(health_rise probes passed in a row)-> UP
 *	any -(a reload removes it)-> DRAINING -(its last request ends, and
 *	    no choice holds it)-> freed
 *	DRAINING -(a reload names it again)-> as it was
 *
 * It asks proxy_budget.c (a budget per pool) and proxy_health.c (whose
 * answers come back through on_health).
 */

#include "proxy/proxy_pool.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_health.h"

#define POOL_MAGIC	0x504f4f4cu	/* "POOL" */
#define SERVER_MAGIC	0x53525652u	/* "SRVR" */
#define LABEL_MAX	(CONF_POOL_NAME_MAX + 16)

struct pool_server {
	uint32_t		 magic;
	struct pool		*pool;
	TAILQ_ENTRY(pool_server) link;
	char			 url[CONF_SERVER_URL_MAX];
	int			 weight;
	int			 current;	/* smooth round robin */
	int			 in_flight;	/* this worker's */
	int			 asking;	/* choices it heads (asking a slot) */
	int			 holds;		/* choices and retries that hold it */
	int			 removed;	/* by a reload: draining */
	int			 down;
	int64_t			 down_until_ms;	/* without probes */
	struct event		*back_ev;	/* ... then it is back */
	int64_t			 failed_ms;	/* its last failure */
	int64_t			 window_ms;	/* its failures count from */
	int			 fails;		/* ... this many since */
	int			 rise;		/* probes passed in a row */
	char			 why[POOL_WHY_MAX];
	struct health_check	*check;
	uint64_t		 requests, failures, retries;
	uint64_t		 health_ok, health_failed, taken_out;
};

TAILQ_HEAD(server_list, pool_server);

struct pool {
	uint32_t		 magic;
	struct proxy		*px;
	TAILQ_ENTRY(pool)	 link;
	struct conf_pool	 conf;		/* its settings now */
	struct server_list	 servers;
	int			 retired;	/* a reload removed it */
	int			 holds;		/* fetches that use it */
	struct budget		*budget;
};

static void
label(const struct pool *p, char out[LABEL_MAX])
{
	snprintf(out, LABEL_MAX, "[upstream%s%s]", p->conf.name[0] != '\0' ?
	    " " : "", p->conf.name);
}

/* ---- health ----------------------------------------------------------- */

/* Without health_path, a server out is back once fail_timeout is over:
 * its timer, so that its state is true without a request to look. */
static void
back_arm(struct pool_server *s)
{
	evtimer_del(s->back_ev);
	if (s->down && !s->removed && s->pool->conf.health_path[0] == '\0')
		timer_arm(s->back_ev, MAX(s->down_until_ms - util_now_ms(), 0));
}

/* Out, for why (prefixed with what went wrong, when given). */
static void
take_out(struct pool_server *s, const char *what, const char *why)
{
	char l[LABEL_MAX];

	s->down = 1;
	s->taken_out++;
	s->rise = 0;
	s->down_until_ms = util_now_ms() + s->pool->conf.fail_timeout_ms;
	snprintf(s->why, sizeof(s->why), "%s%s", what, why);
	label(s->pool, l);
	log_warn("upstream %s: server %s is out: %s", l, s->url, s->why);
	back_arm(s);
}

static void
bring_back(struct pool_server *s, const char *why)
{
	char l[LABEL_MAX];

	s->down = 0;
	s->fails = 0;
	s->window_ms = 0;
	s->why[0] = '\0';
	evtimer_del(s->back_ev);
	label(s->pool, l);
	log_info("upstream %s: server %s is back in: %s", l, s->url, why);
}

static void
on_health(int ok, const char *why, void *arg)
{
	struct pool_server *s = arg;
	const struct conf_pool *c;

	assert(s->magic == SERVER_MAGIC);
	c = &s->pool->conf;
	if (!ok) {
		s->health_failed++;
		s->failed_ms = util_now_ms();
		s->rise = 0;
		if (!s->down)
			take_out(s, "health check: ", why);
		return;
	}
	s->health_ok++;
	if (s->down && ++s->rise >= c->health_rise)
		bring_back(s, "health checks passed");
}

/* Its health checks, as the pool's settings say now. */
static void
check_again(struct pool_server *s)
{
	const struct conf_pool *c = &s->pool->conf;
	struct health_args a = {
		.url = s->url,
		.path = c->health_path,
		.interval_ms = c->health_interval_ms,
		.timeout_ms = c->health_timeout_ms,
		.connect_timeout_ms = c->connect_timeout_ms,
		.status = c->health_status,
		.cb = on_health,
		.arg = s,
	};

	health_stop(&s->check);
	back_arm(s);
	if (c->health_path[0] == '\0' || s->removed || s->pool->retired)
		return;
	if ((s->check = health_start(s->pool->px, &a)) == NULL)
		log_warn("health checks of %s: out of memory", s->url);
}

/* A failed request: max_fails of them within fail_timeout take s out. */
static void
failed(struct pool_server *s, const char *why)
{
	const struct conf_pool *c = &s->pool->conf;
	int64_t now = util_now_ms();
	char detail[POOL_WHY_MAX];

	s->failures++;
	s->failed_ms = now;
	if (c->max_fails == 0 || s->down)
		return;
	if (s->fails == 0 || now - s->window_ms > c->fail_timeout_ms) {
		s->window_ms = now;
		s->fails = 0;
	}
	if (++s->fails < c->max_fails)
		return;
	snprintf(detail, sizeof(detail), "%d failures in %" PRId64 " ms, the "
	    "last: %s", s->fails, now - s->window_ms, why);
	take_out(s, "", detail);
}

static void
on_back(evutil_socket_t fd, short what, void *arg)
{
	struct pool_server *s = arg;

	assert(s->magic == SERVER_MAGIC);
	if (s->down && !s->removed && s->pool->conf.health_path[0] == '\0')
		bring_back(s, "fail_timeout is over");
}

/* ---- the choice -------------------------------------------------------- */

/* May s take this request (up or not: the caller says)? */
static int
eligible(const struct pool_server *s, const char *avoid, int down)
{
	return (avoid == NULL || strcmp(s->url, avoid) != 0) && !s->removed &&
	    s->down == down;
}

/* Its requests: in flight, and being asked a slot for. */
static int64_t
load(const struct pool_server *s)
{
	return (int64_t)s->in_flight + s->asking;
}

/* a's load is below b's: its requests per weight. */
static int
lighter(const struct pool_server *a, const struct pool_server *b)
{
	return load(a) * b->weight < load(b) * a->weight;
}

static int
same_load(const struct pool_server *a, const struct pool_server *b)
{
	return !lighter(a, b) && !lighter(b, a);
}

/*
 * Smooth weighted round robin among the eligible servers up; with
 * least_outstanding, among those of the lightest load only: the one whose
 * turn it is.
 */
static struct pool_server *
choose_up(struct pool *p, const char *avoid)
{
	struct pool_server *s, *best = NULL, *min = NULL;
	int total = 0;

	if (p->conf.balance == BALANCE_LEAST)
		TAILQ_FOREACH(s, &p->servers, link)
			if (eligible(s, avoid, 0) && (min == NULL ||
			    lighter(s, min)))
				min = s;
	TAILQ_FOREACH(s, &p->servers, link) {
		if (!eligible(s, avoid, 0) || (min != NULL &&
		    !same_load(s, min)))
			continue;
		s->current += s->weight;
		total += s->weight;
		if (best == NULL || s->current > best->current)
			best = s;
	}
	if (best != NULL)
		best->current -= total;
	return best;
}

/* Does a come before b after the first? Up: the lighter (least
 * outstanding), then the one whose turn comes first; out: the one that
 * failed least recently. */
static int
before(const struct pool_server *a, const struct pool_server *b, int down)
{
	if (down)
		return a->failed_ms < b->failed_ms;
	if (a->pool->conf.balance == BALANCE_LEAST && !same_load(a, b))
		return lighter(a, b);
	return a->current + a->weight > b->current + b->weight;
}

static int
any_up(const struct pool *p, const char *avoid)
{
	const struct pool_server *s;

	TAILQ_FOREACH(s, &p->servers, link)
		if (eligible(s, avoid, 0))
			return 1;
	return 0;
}

void
pool_choose(struct pool *p, const char *avoid, struct pool_choice *c)
{
	struct pool_server *s, *first = NULL;
	int down = !any_up(p, avoid), n = 0;

	assert(p->magic == POOL_MAGIC);
	pool_choice_drop(c);
	if (!down && (first = choose_up(p, avoid)) != NULL)
		c->s[n++] = first;
	TAILQ_FOREACH(s, &p->servers, link) {
		int i;

		if (s == first || !eligible(s, avoid, down) ||
		    n == CONF_SERVERS_MAX)
			continue;
		for (i = n; i > (first != NULL) && before(s, c->s[i - 1],
		    down); i--)
			c->s[i] = c->s[i - 1];
		c->s[i] = s;
		n++;
	}
	for (int i = 0; i < n; i++)
		c->s[i]->holds++;
	if (n > 0)
		c->s[0]->asking++;
	c->n = n;
}

static void maybe_free(struct pool_server *s);

void
pool_choice_drop(struct pool_choice *c)
{
	struct pool_server *s;

	if (c->n > 0)
		c->s[0]->asking--;
	for (int i = 0; i < c->n; i++) {
		s = c->s[i];
		c->s[i] = NULL;
		assert(s->magic == SERVER_MAGIC && s->holds > 0);
		s->holds--;
		maybe_free(s);
	}
	c->n = 0;
}

struct pool_server *
pool_pick(struct pool *p, const char *avoid)
{
	struct pool_server *s, *best = NULL;

	/* pool_choose()'s first, without ordering the rest. */
	assert(p->magic == POOL_MAGIC);
	if (any_up(p, avoid))
		return choose_up(p, avoid);
	/* Every server is out: the one that failed longest ago. */
	TAILQ_FOREACH(s, &p->servers, link)
		if (eligible(s, avoid, 1) && (best == NULL ||
		    before(s, best, 1)))
			best = s;
	return best;
}

void
pool_hold_server(struct pool_server *s)
{
	assert(s->magic == SERVER_MAGIC);
	s->holds++;
}

void
pool_unhold_server(struct pool_server **sp)
{
	struct pool_server *s = *sp;

	if (s == NULL)
		return;
	*sp = NULL;
	assert(s->magic == SERVER_MAGIC && s->holds > 0);
	s->holds--;
	maybe_free(s);
}

void
pool_begin(struct pool_server *s)
{
	assert(s->magic == SERVER_MAGIC);
	s->in_flight++;
	s->requests++;
}

void
pool_end(struct pool_server *s, enum pool_outcome o, const char *why)
{
	assert(s->magic == SERVER_MAGIC && s->in_flight > 0);
	s->in_flight--;
	switch (o) {
	case POOL_OK:
	case POOL_NEUTRAL:
		break;
	case POOL_5XX:
	case POOL_CONNECT:
	case POOL_TIMEOUT:
	case POOL_BROKEN:
		failed(s, why);
		break;
	}
	maybe_free(s);
}

void
pool_count_retry(struct pool_server *s)
{
	assert(s->magic == SERVER_MAGIC);
	s->retries++;
}

const char *
pool_server_url(const struct pool_server *s)
{
	return s->url;
}

/* ---- servers and pools ---------------------------------------------------- */

static struct pool_server *
server_new(struct pool *p, const struct conf_server *cs)
{
	struct pool_server *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->magic = SERVER_MAGIC;
	s->pool = p;
	snprintf(s->url, sizeof(s->url), "%s", cs->url);
	s->weight = cs->weight;
	if ((s->back_ev = evtimer_new(p->px->base, on_back, s)) == NULL) {
		free(s);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&p->servers, s, link);
	check_again(s);
	return s;
}

static void
server_free(struct pool_server *s)
{
	assert(s->magic == SERVER_MAGIC && s->in_flight == 0);
	health_stop(&s->check);
	event_free(s->back_ev);
	TAILQ_REMOVE(&s->pool->servers, s, link);
	s->magic = 0;
	free(s);
}

/* A removed server goes once nothing uses it. */
static void
maybe_free(struct pool_server *s)
{
	char l[LABEL_MAX];

	if (!s->removed || s->in_flight > 0 || s->holds > 0)
		return;
	label(s->pool, l);
	log_info("upstream %s: server %s drained, let go", l, s->url);
	server_free(s);
}

/* A reload removed s: it takes no new request, and goes once idle. */
static void
server_remove(struct pool_server *s)
{
	char l[LABEL_MAX];

	s->removed = 1;
	health_stop(&s->check);
	evtimer_del(s->back_ev);
	label(s->pool, l);
	if (s->in_flight > 0) {
		log_info("upstream %s: server %s removed, draining its %d "
		    "request%s in flight", l, s->url, s->in_flight,
		    s->in_flight == 1 ? "" : "s");
	} else {
		log_info("upstream %s: server %s removed", l, s->url);
		if (s->holds == 0)
			server_free(s);
	}
}

/* The server of p at url, draining or not (there is one at most). */
static struct pool_server *
server_find(struct pool *p, const char *url)
{
	struct pool_server *s;

	TAILQ_FOREACH(s, &p->servers, link)
		if (strcmp(s->url, url) == 0)
			return s;
	return NULL;
}

/* A reload names a draining server again: it is back, as it was. */
static void
server_keep(struct pool_server *s)
{
	char l[LABEL_MAX];

	if (!s->removed)
		return;
	s->removed = 0;
	label(s->pool, l);
	log_info("upstream %s: server %s named again, no longer draining",
	    l, s->url);
}

/* Its servers as cp lists them, the others removed. */
static int
pool_apply(struct pool *p, const struct conf_pool *cp)
{
	struct pool_server *s, *next;
	int rc = 0;

	p->conf = *cp;
	for (s = TAILQ_FIRST(&p->servers); s != NULL; s = next) {
		int keep = 0;

		next = TAILQ_NEXT(s, link);
		for (int i = 0; i < cp->nservers && !s->removed; i++)
			keep |= strcmp(cp->servers[i].url, s->url) == 0;
		if (!keep && !s->removed)
			server_remove(s);
	}
	for (int i = 0; i < cp->nservers; i++) {
		if ((s = server_find(p, cp->servers[i].url)) != NULL) {
			server_keep(s);
			s->weight = cp->servers[i].weight;
			check_again(s);
		} else if (server_new(p, &cp->servers[i]) == NULL) {
			rc = -1;
		}
	}
	return rc;
}

static void
pool_free(struct pool *p)
{
	struct pool_server *s;

	assert(p->magic == POOL_MAGIC && p->holds == 0);
	while ((s = TAILQ_FIRST(&p->servers)) != NULL) {
		s->in_flight = 0;	/* a stop: their fetches are gone */
		server_free(s);
	}
	if (p->px->budget == p->budget)
		p->px->budget = NULL;
	budget_free(&p->budget);
	TAILQ_REMOVE(&p->px->pools, p, link);
	p->magic = 0;
	free(p);
}

/* A pool's budget moved: its row's figures, as the siblings read them. */
static void
on_budget_counts(void *arg)
{
	struct pool *p = arg;
	struct proxy *px = p->px;

	assert(p->magic == POOL_MAGIC);
	if (px->slots != NULL)
		pool_publish(px, &px->slots[px->slot].pools);
}

static struct pool *
pool_new(struct proxy *px, const struct conf_pool *cp)
{
	struct pool *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->magic = POOL_MAGIC;
	p->px = px;
	p->conf = *cp;
	TAILQ_INIT(&p->servers);
	TAILQ_INSERT_TAIL(&px->pools, p, link);
	p->budget = budget_new(px, px->budget, &p->conf);
	if (p->budget == NULL || pool_apply(p, cp) == -1) {
		pool_free(p);
		return NULL;
	}
	budget_on_counts(p->budget, on_budget_counts, p);
	if (px->budget == NULL)
		px->budget = p->budget;		/* the default pool's */
	return p;
}

/* A removed pool goes once nothing uses it (its budget's last release
 * answered: else at the next reload, or the stop). */
static void
pool_reap(struct pool *p)
{
	char l[LABEL_MAX];

	if (!p->retired || p->holds > 0 || !budget_idle(p->budget))
		return;
	label(p, l);
	log_info("upstream %s drained, let go", l);
	pool_free(p);
}

int
pools_start(struct proxy *px)
{
	for (int i = 0; i < px->conf->npools; i++)
		if (pool_new(px, &px->conf->pools[i]) == NULL)
			return -1;
	return 0;
}

int
pools_reload(struct proxy *px, const struct conf *new)
{
	struct pool *p, *next;
	char l[LABEL_MAX];
	int rc = 0;

	for (p = TAILQ_FIRST(&px->pools); p != NULL; p = next) {
		const struct conf_pool *cp;
		struct pool_server *s, *snext;

		next = TAILQ_NEXT(p, link);
		if ((cp = conf_pool_find(new, p->conf.name)) != NULL) {
			if (p->retired) {	/* named again while it drains */
				p->retired = 0;
				label(p, l);
				log_info("upstream %s named again, no longer "
				    "draining", l);
			}
			rc |= pool_apply(p, cp);
			continue;
		}
		if (p->retired) {
			pool_reap(p);
			continue;
		}
		p->retired = 1;
		label(p, l);
		log_info("upstream %s removed", l);
		for (s = TAILQ_FIRST(&p->servers); s != NULL; s = snext) {
			snext = TAILQ_NEXT(s, link);
			if (!s->removed)
				server_remove(s);
		}
		pool_reap(p);
	}
	for (int i = 1; i < new->npools; i++) {
		TAILQ_FOREACH(p, &px->pools, link)
			if (strcmp(p->conf.name, new->pools[i].name) == 0)
				break;
		if (p == NULL && pool_new(px, &new->pools[i]) == NULL)
			rc = -1;
	}
	return rc;
}

void
pools_stop(struct proxy *px)
{
	struct pool *p;

	/* The default pool's budget, the main one, goes last. */
	while ((p = TAILQ_LAST(&px->pools, pool_list)) != NULL) {
		p->holds = 0;
		pool_free(p);
	}
}

struct pool *
pool_get(struct proxy *px, const char *name)
{
	struct pool *p;

	if (name != NULL && name[0] != '\0')
		TAILQ_FOREACH(p, &px->pools, link)
			if (!p->retired && strcmp(p->conf.name, name) == 0)
				return p;
	return TAILQ_FIRST(&px->pools);
}

const struct conf_pool *
pool_conf(const struct pool *p)
{
	return &p->conf;
}

struct budget *
pool_budget(const struct pool *p)
{
	return p->budget;
}

void
pool_hold(struct pool *p)
{
	assert(p->magic == POOL_MAGIC);
	p->holds++;
}

void
pool_release(struct pool *p)
{
	assert(p->magic == POOL_MAGIC && p->holds > 0);
	p->holds--;
	pool_reap(p);
}

/* ---- figures ----------------------------------------------------------- */

const char *
pool_state_name(enum pool_state st)
{
	switch (st) {
	case POOL_UP:
		return "up";
	case POOL_DOWN:
		return "down";
	case POOL_DRAINING:
		return "draining";
	}
	return "?";
}

static void
server_figures(const struct pool_server *s, struct pool_figures *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->pool, sizeof(f->pool), "%s", s->pool->conf.name);
	snprintf(f->server, sizeof(f->server), "%s", s->url);
	f->state = s->removed ? POOL_DRAINING : s->down ? POOL_DOWN : POOL_UP;
	f->workers_down = s->down && !s->removed;
	if (s->down)
		snprintf(f->why, sizeof(f->why), "%s", s->why);
	f->in_flight = s->in_flight;
	f->weight = s->weight;
	f->requests = s->requests;
	f->failures = s->failures;
	f->retries = s->retries;
	f->health_ok = s->health_ok;
	f->health_failed = s->health_failed;
	f->taken_out = s->taken_out;
}

void
pool_publish(struct proxy *px, struct pool_row *row)
{
	const struct pool *p;
	const struct pool_server *s;
	struct budget_gauges g;
	int n = 0, left_out = 0;

	TAILQ_FOREACH(p, &px->pools, link) {
		int first = 1;

		budget_publish(p->budget, &g);
		TAILQ_FOREACH(s, &p->servers, link) {
			if (n == POOL_ROW_MAX) {
				left_out++;
				continue;
			}
			server_figures(s, &row->s[n]);
			if (first) {
				row->s[n].budget_held = g.held;
				row->s[n].budget_queued = g.queued;
			}
			first = 0;
			n++;
		}
	}
	row->n = n;
	row->left_out = left_out;
}

/* The worse of two states, for an instance's workers. */
static enum pool_state
worse(enum pool_state a, enum pool_state b)
{
	return a == POOL_DOWN || b == POOL_DOWN ? POOL_DOWN :
	    a == POOL_DRAINING || b == POOL_DRAINING ? POOL_DRAINING : POOL_UP;
}

void
pool_rows_add(struct pool_row *sum, const struct pool_row *row)
{
	int n = MIN(row->n, POOL_ROW_MAX);

	sum->left_out = MAX(sum->left_out, row->left_out);
	for (int i = 0; i < n; i++) {
		struct pool_figures f = row->s[i], *t = NULL;

		/* Another worker may be rewriting it: never past its end. */
		f.pool[sizeof(f.pool) - 1] = '\0';
		f.server[sizeof(f.server) - 1] = '\0';
		f.why[sizeof(f.why) - 1] = '\0';
		for (int j = 0; j < sum->n && t == NULL; j++)
			if (strcmp(sum->s[j].pool, f.pool) == 0 &&
			    strcmp(sum->s[j].server, f.server) == 0)
				t = &sum->s[j];
		if (t == NULL) {
			if (sum->n < POOL_ROW_MAX)
				sum->s[sum->n++] = f;
			else
				sum->left_out++;
			continue;
		}
		if (t->why[0] == '\0' && f.why[0] != '\0')
			snprintf(t->why, sizeof(t->why), "%s", f.why);
		t->state = worse(t->state, f.state);
		t->workers_down += f.workers_down;
		t->in_flight += f.in_flight;
		t->requests += f.requests;
		t->failures += f.failures;
		t->retries += f.retries;
		t->health_ok += f.health_ok;
		t->health_failed += f.health_failed;
		t->taken_out += f.taken_out;
		t->budget_held += f.budget_held;
		t->budget_queued += f.budget_queued;
	}
}
