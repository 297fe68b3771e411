/*
 * The cluster's slot map (cache_route.h): CLUSTER SLOTS, asked of one
 * connected node at a time and read into the routing table. Each range
 * names its primary, then its replicas; a primary keeps the first replica
 * named, which takes its reads while it cannot be reached (route_replica).
 * A node the map no longer names (a dead primary once its replica took
 * over, a seed that is not a primary) is let go.
 *
 * How often: soon after a change is noticed (a lost node, a failed
 * connect, a MOVED, CLUSTERDOWN, a command parked for its node), then
 * less often while reads find nothing new: the gap doubles from
 * ROUTE_REFRESH_MIN_MS up to REFRESH_MAX_MS, or only up to
 * REFRESH_DOWN_MAX_MS while a primary cannot be reached, so that its
 * replica's promotion is read within that. One question is out at a
 * time per process (cache_route.c's route_refresh), which also reads the
 * map every REFRESH_PERIOD_MS as a safety net.
 *
 * Calls: cache_route.c (the nodes). Called by cache_route.c and
 * cache_op.c (route_replica).
 */

#include "cache/cache_route.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "common/log.h"

#define REFRESH_MAX_MS		1000	/* the gap while all are reachable */
#define REFRESH_DOWN_MAX_MS	200	/* ... while a primary is not */
#define PORT_MAX		65535

static int
reply_int(const redisReply *r, long long *out)
{
	if (r->type == REDIS_REPLY_INTEGER) {
		*out = r->integer;
		return 0;
	}
	return -1;
}

/* A node of a CLUSTER SLOTS range: [host, port, id, ...]. Host "" or
 * "?" means the node asked. 0 or -1. */
static int
node_addr(const redisReply *m, const char *asked, const char **host,
    int *port)
{
	long long p;

	if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
	    m->element[0]->type != REDIS_REPLY_STRING ||
	    reply_int(m->element[1], &p) == -1 || p <= 0 || p > PORT_MAX)
		return -1;
	*host = m->element[0]->str;
	if (**host == '\0' || strcmp(*host, "?") == 0)
		*host = asked;
	*port = (int)p;
	return 0;
}

/* Every range is [lo, hi, primary, replica...] with a usable primary. */
static int
reply_valid(const redisReply *reply, const char *asked)
{
	const char *host;
	int port;

	if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0)
		return -1;
	for (size_t i = 0; i < reply->elements; i++) {
		const redisReply *e = reply->element[i];
		long long lo, hi;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    reply_int(e->element[0], &lo) == -1 ||
		    reply_int(e->element[1], &hi) == -1 ||
		    lo < 0 || hi >= ROUTE_SLOTS || lo > hi ||
		    node_addr(e->element[2], asked, &host, &port) == -1)
			return -1;
	}
	return 0;
}

/* Does the map name n: as a primary, or as the replica of one? */
static int
named(const struct route *rt, const struct node *n)
{
	if (n->slots > 0)
		return 1;
	for (int i = 0; i < rt->nnodes; i++) {
		const struct node *p = rt->nodes[i];

		if (p->slots > 0 && p->replica_port == n->port &&
		    strcmp(p->replica_host, n->host) == 0)
			return 1;
	}
	return 0;
}

static void
drop_unnamed(struct route *rt)
{
	for (int i = rt->nnodes - 1; i >= 0; i--) {
		struct node *n = rt->nodes[i];

		if (named(rt, n))
			continue;
		log_info("redis: %s is not in the slot map: let go", n->name);
		route_node_drop(n);
		i = rt->nnodes;	/* the array moved: start over */
	}
}

/* A read that changed the map: the next soon; else a longer gap. */
static int64_t
next_gap(const struct route *rt, int changed)
{
	int64_t most = route_owner_down(rt) ? REFRESH_DOWN_MAX_MS :
	    REFRESH_MAX_MS;
	int64_t gap = changed ? ROUTE_REFRESH_MIN_MS : rt->refresh_gap_ms * 2;

	return gap > most ? most : gap;
}

/* One CLUSTER SLOTS reply, from the node asked: the new map. */
static int
apply_slots(struct route *rt, const redisReply *reply, const char *asked)
{
	int owners = 0, changed;

	if (reply_valid(reply, asked) == -1)
		return -1;
	memcpy(rt->before, rt->slots, sizeof(rt->slots));
	memset(rt->slots, 0, sizeof(rt->slots));
	for (int i = 0; i < rt->nnodes; i++)
		rt->nodes[i]->replica_port = 0;
	for (size_t i = 0; i < reply->elements; i++) {
		const redisReply *e = reply->element[i];
		const char *host;
		int port;
		struct node *n;

		(void)node_addr(e->element[2], asked, &host, &port);
		if ((n = route_node_at(rt, host, port)) == NULL)
			continue;	/* more nodes than the table holds */
		owners++;
		for (long long s = e->element[0]->integer;
		    s <= e->element[1]->integer; s++)
			rt->slots[s] = n;
		if (e->elements > 3 && node_addr(e->element[3], asked, &host,
		    &port) == 0) {
			snprintf(n->replica_host, sizeof(n->replica_host), "%s",
			    host);
			n->replica_port = port;
		}
	}
	route_recount(rt);
	changed = memcmp(rt->before, rt->slots, sizeof(rt->slots)) != 0;
	rt->refresh_gap_ms = next_gap(rt, changed);
	if (owners > 0)
		drop_unnamed(rt);
	return 0;
}

static void
on_slots(redisAsyncContext *ac, void *r, void *privdata)
{
	struct route *rt = privdata;
	struct node *n = ac->data;
	redisReply *reply = r;
	char asked[CONF_HOST_MAX];

	if (rt->closing)
		return;
	assert(rt->magic == ROUTE_MAGIC);
	rt->refreshing = 0;
	snprintf(asked, sizeof(asked), "%s", n != NULL ? n->host : "");
	if (reply == NULL || apply_slots(rt, reply, asked) == -1) {
		if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
			log_warn("redis: CLUSTER SLOTS: %s", reply->str);
		route_refresh(rt);	/* another node, a little later */
		return;
	}
	rt->counters->map_refreshes++;
	rt->refresh_backoff_ms = ROUTE_REFRESH_MIN_MS;
	log_debug("redis: slot map read: %d nodes%s", rt->nnodes,
	    rt->covered ? "" : ", some slots without a node");
	rt->hooks->map_changed(rt->arg);
	if (rt->again) {
		rt->again = 0;
		route_refresh(rt);
	}
}

void
slots_ask(struct route *rt)
{
	struct node *n = NULL;

	for (int i = 0; i < rt->nnodes && n == NULL; i++) {
		struct node *c = rt->nodes[(rt->next_seed + i) % rt->nnodes];

		if (c->up)
			n = c;
	}
	rt->next_seed++;
	if (n == NULL) {
		/* Nobody to ask: (re)connect the seeds; each asks on connect. */
		for (int i = 0; i < rt->nseeds; i++)
			route_node_at(rt, rt->seeds[i].host, rt->seeds[i].port);
		rt->again = 1;
		return;
	}
	if (redisAsyncCommand(n->cmd, on_slots, rt, "CLUSTER SLOTS") ==
	    REDIS_OK)
		rt->refreshing = 1;
}

struct node *
route_replica(struct route *rt, unsigned slot)
{
	struct node *p = route_node(rt, slot), *r;
	char host[CONF_HOST_MAX];

	if (rt->mode != REDIS_CLUSTER || p == NULL || p->up ||
	    p->replica_port == 0)
		return NULL;
	snprintf(host, sizeof(host), "%s", p->replica_host);
	if ((r = route_node_at(rt, host, p->replica_port)) == NULL)
		return NULL;
	return r->up && r->cmd != NULL ? r : NULL;
}
