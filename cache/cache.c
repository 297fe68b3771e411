/* SPDX-License-Identifier: MIT */
/*
 * The shared cache in Redis (cache.h): the object, its life cycle and its
 * figures. The routing table (cache_route.c) gives each command the node
 * that owns its key's slot: the one server in single and sentinel mode,
 * the slot's primary in cluster mode. Each node has a command connection,
 * which pipelines every lookup and lock script (cache_op.c), and a
 * subscriber connection (cache_sub.c) for the notifications
 * (cache_watch.c). The table's news reaches the layers through the hooks
 * set here.
 *
 * Calls: cache_watch.c, cache_script.c, cache_op.c, cache_route.c,
 * cache_purge.c, cache_tag.c. The operations themselves are in
 * cache_store.c, cache_purge.c and cache_tag.c.
 */

#include "cache/cache_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dict.h"
#include "common/util.h"

static void
on_sub_up(struct node *n, void *arg)
{
	struct cache *c = arg;

	assert(c->magic == CACHE_MAGIC);
	watch_sub_up(c, n);
	lease_sub_up(c, n);
}

static void
on_sub_reply(struct node *n, const redisReply *r, void *arg)
{
	struct cache *c = arg;

	assert(c->magic == CACHE_MAGIC);
	if (lease_sub_reply(c, n, r) == 0)
		watch_sub_reply(c, n, r);
}

static void
on_node_gone(struct node *n, void *arg)
{
	struct cache *c = arg;

	assert(c->magic == CACHE_MAGIC);
	watch_node_gone(c, n);
	lease_node_gone(c, n);
	op_node_gone(c, n);
}

static void
on_map_changed(void *arg)
{
	struct cache *c = arg;

	assert(c->magic == CACHE_MAGIC);
	if (c->closing)
		return;
	watch_map_changed(c);
	lease_map_changed(c);
	op_park_retry(c);
}

static const struct route_hooks hooks = {
	.cmd_up = script_load,
	.sub_up = on_sub_up,
	.sub_reply = on_sub_reply,
	.node_gone = on_node_gone,
	.map_changed = on_map_changed,
};

struct cache *
cache_new(struct event_base *base, const struct conf *conf,
    cache_fill_cb *on_fill, void *arg)
{
	struct cache *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->magic = CACHE_MAGIC;
	c->base = base;
	c->mode = conf->redis_mode;
	snprintf(c->prefix, sizeof(c->prefix), "%s", conf->redis_prefix);
	snprintf(c->purge_channel, sizeof(c->purge_channel), "%s%s", c->prefix,
	    PURGE_CHANNEL);
	c->timeout_ms = conf->redis_timeout_ms;
	c->on_fill = on_fill;
	c->fill_arg = arg;
	TAILQ_INIT(&c->purges);
	if (watch_init(c) == -1 || op_park_init(c) == -1 ||
	    (c->rt = route_new(base, conf, &hooks, c, &c->counters)) == NULL)
		goto fail;
	watch_bcast_place(c);
	return c;
fail:
	op_park_free(c);
	dict_free(&c->watches);
	free(c);
	return NULL;
}

void
cache_free(struct cache **cp)
{
	struct cache *c = *cp;

	if (c == NULL)
		return;
	assert(c->magic == CACHE_MAGIC);
	c->closing = 1;
	/* Ops in flight get their NULL replies here and free themselves. */
	route_free(&c->rt);
	op_park_free(c);
	purge_free_all(c);
	watch_free_all(c);
	lease_free(c);
	c->magic = 0;
	free(c);
	*cp = NULL;
}

void
cache_credentials(struct cache *c, const struct conf *conf)
{
	assert(c->magic == CACHE_MAGIC);
	route_credentials(c->rt, conf);
}

int
cache_is_up(const struct cache *c)
{
	return route_all_up(c->rt);
}

int
cache_is_full(const struct cache *c)
{
	return c->full_ms != 0 &&
	    util_mono_us() / 1000 - c->full_ms < CACHE_FULL_MS;
}

const char *
cache_down_reason(const struct cache *c)
{
	return route_down_reason(c->rt);
}

const char *
cache_mode(const struct cache *c)
{
	switch (c->mode) {
	case REDIS_CLUSTER:
		return "cluster";
	case REDIS_SENTINEL:
		return "sentinel";
	case REDIS_SINGLE:
		break;
	}
	return "single";
}

const struct cache_counters *
cache_counters(struct cache *c)
{
	route_node_states(c->rt, &c->counters);
	tag_figures(c);
	c->counters.full = cache_is_full(c);
	return &c->counters;
}

void
cache_counters_add(struct cache_counters *dst, const struct cache_counters *src)
{
	dst->commands += src->commands;
	dst->errors += src->errors;
	dst->timeouts += src->timeouts;
	dst->connects += src->connects;
	dst->auth_failures += src->auth_failures;
	dst->disconnects += src->disconnects;
	dst->fills_received += src->fills_received;
	dst->purges_received += src->purges_received;
	dst->moved += src->moved;
	dst->ask += src->ask;
	dst->map_refreshes += src->map_refreshes;
	dst->tag_members_pruned += src->tag_members_pruned;
	if (src->tag_set_largest > dst->tag_set_largest)
		dst->tag_set_largest = src->tag_set_largest;
	dst->replica_reads += src->replica_reads;
	dst->oom += src->oom;
	dst->full += src->full;
	hist_merge(&dst->command_duration, &src->command_duration);
	hist_merge(&dst->fill_delay, &src->fill_delay);
	for (int i = 0; i < src->nnodes; i++) {
		const struct cache_node_state *s = &src->nodes[i];
		int j;

		for (j = 0; j < dst->nnodes; j++)
			if (strcmp(dst->nodes[j].name, s->name) == 0)
				break;
		if (j < dst->nnodes) {
			dst->nodes[j].up &= s->up;
		} else if (dst->nnodes < CACHE_NODES_MAX) {
			dst->nodes[dst->nnodes++] = *s;
		}
	}
}
