/* SPDX-License-Identifier: MIT */
/*
 * The routing table as the rest of cache/ reads it (cache_route.h):
 * whether commands can go, which nodes own slots, their states and why
 * one is down. Reads the table; changes nothing, calls nothing of
 * cache_route.c.
 */

#include "cache/cache_route.h"

#include <stdio.h>

#include "cache/cache_sentinel.h"

int
route_usable(const struct route *rt)
{
	for (int i = 0; i < rt->nnodes; i++)
		if (rt->nodes[i]->up && rt->nodes[i]->slots > 0)
			return 1;
	return 0;
}

int
route_owner_down(const struct route *rt)
{
	if (!rt->covered)
		return 1;
	for (int i = 0; i < rt->nnodes; i++)
		if (rt->nodes[i]->slots > 0 && !rt->nodes[i]->up)
			return 1;
	return 0;
}

int
route_all_up(const struct route *rt)
{
	return !route_owner_down(rt);
}

int
route_primaries(struct route *rt, struct node **out, int max)
{
	int n = 0;

	for (int i = 0; i < rt->nnodes && n < max; i++)
		if (rt->nodes[i]->slots > 0)
			out[n++] = rt->nodes[i];
	return n;
}

struct node *
route_broadcast_node(struct route *rt)
{
	struct node *best = NULL;

	/* The slot-0 owner while it listens; else any that owns slots. */
	if (rt->slots[0] != NULL && (rt->slots[0]->up ||
	    rt->mode != REDIS_CLUSTER))
		return rt->slots[0];
	for (int i = 0; i < rt->nnodes; i++) {
		struct node *n = rt->nodes[i];

		if (n->slots > 0 && n->up)
			return n;
		if (n->slots > 0 && best == NULL)
			best = n;
	}
	return best;
}

void
route_node_states(const struct route *rt, struct cache_counters *cc)
{
	cc->nnodes = 0;
	for (int i = 0; i < rt->nnodes && cc->nnodes < CACHE_NODES_MAX; i++) {
		const struct node *n = rt->nodes[i];
		struct cache_node_state *st = &cc->nodes[cc->nnodes];

		/* A cluster's: its replicas read from, and a node not let go
		 * yet, with 0 slots. */
		if (n->slots == 0 && rt->mode == REDIS_SENTINEL)
			continue;
		snprintf(st->name, sizeof(st->name), "%s", n->name);
		st->up = n->up;
		st->slots = n->slots;
		cc->nnodes++;
	}
	if (cc->nnodes < CACHE_NODES_MAX)
		cc->nodes[cc->nnodes].name[0] = '\0';
}

const char *
route_down_reason(const struct route *rt)
{
	for (int i = 0; i < rt->nnodes; i++) {
		const struct node *n = rt->nodes[i];

		if (!n->up && (n->slots > 0 || rt->mode != REDIS_CLUSTER))
			return n->down_reason[0] != '\0' ? n->down_reason :
			    "connecting";
	}
	if (route_usable(rt))
		return "";
	/* sentinel: why the sentinels did not say (their AUTH refused...) */
	if (rt->sentinel != NULL && sentinel_reason(rt->sentinel)[0] != '\0')
		return sentinel_reason(rt->sentinel);
	return "no primary known";
}

