/* SPDX-License-Identifier: MIT */
/*
 * The routing table: slot -> node, the nodes' connections, and how the
 * table is learnt (the configured address, CLUSTER SLOTS, or the
 * sentinels). See cache_route.h.
 *
 * A node that cannot be reached says so once ("lost", or the first failed
 * connect); its further failed connects log at debug until it is back,
 * or until the map lets it go.
 *
 * Cluster mode: CLUSTER SLOTS is asked of one connected node at a time,
 * read by cache_slots.c into a map and applied here. A primary keeps the
 * first replica named, which takes its reads while it cannot be reached
 * (route_replica). A node the map no longer names (a dead primary once
 * its replica took over, a seed that is not a primary) is let go. How
 * often: soon after a change is noticed (a lost node, a failed connect, a
 * MOVED, CLUSTERDOWN, a command parked for its node), then less often
 * while reads find nothing new: the gap doubles from ROUTE_REFRESH_MIN_MS
 * up to REFRESH_MAX_MS, or only up to REFRESH_DOWN_MAX_MS while a primary
 * cannot be reached, so that its replica's promotion is read within that.
 * One question is out at a time per process (route_refresh), and the map
 * is read every REFRESH_PERIOD_MS as a safety net.
 *
 * Calls: cache_slots.c (reading the cluster's map), cache_sentinel.c
 * (sentinel mode), cache_sub.c (the subscriber connections),
 * cache_adapter.c (the command connections), cache_route_view.c. Called by
 * the layers of cache_int.h, which hear of its news through struct
 * route_hooks.
 */

#include "cache/cache_route.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "cache/cache_adapter.h"
#include "cache/cache_sentinel.h"
#include "cache/cache_slots.h"
#include "common/log.h"
#include "common/util.h"

#define NODE_MAGIC		0x4e4f4445u	/* "NODE" */
#define RECONNECT_MIN_MS	100
#define RECONNECT_MAX_MS	5000
#define REFRESH_PERIOD_MS	10000	/* cluster: the map is read anyway */
#define HUNG_TIMEOUTS		5	/* timeouts in a row that drop a node */
#define REFRESH_MAX_MS		1000	/* the map's gap while all are reachable */
#define REFRESH_DOWN_MAX_MS	200	/* ... while a primary is not */

static void node_reason(struct node *n, const char *what, const char *detail);
static void on_role(redisAsyncContext *ac, void *r, void *privdata);


static void node_connect(struct node *n);
static void open_sub(struct node *n);
static void start_refresh(struct route *rt);

/* ---- slots ---- */

struct node *
route_node(struct route *rt, unsigned slot)
{
	assert(slot < ROUTE_SLOTS);
	return rt->slots[slot];
}

static void
recount(struct route *rt)
{
	rt->covered = 1;
	for (int i = 0; i < rt->nnodes; i++)
		rt->nodes[i]->slots = 0;
	for (int s = 0; s < ROUTE_SLOTS; s++) {
		if (rt->slots[s] != NULL)
			rt->slots[s]->slots++;
		else
			rt->covered = 0;
	}
}

static void
map_all(struct route *rt, struct node *n)
{
	for (int s = 0; s < ROUTE_SLOTS; s++)
		rt->slots[s] = n;
	recount(rt);
}

/* ---- nodes ---- */

static void
schedule(struct event *ev, int64_t *backoff_ms)
{
	struct timeval tv = util_timeval(*backoff_ms);

	evtimer_add(ev, &tv);
	*backoff_ms = *backoff_ms * 2 > RECONNECT_MAX_MS ?
	    RECONNECT_MAX_MS : *backoff_ms * 2;
}

static void
on_node_retry(evutil_socket_t fd, short what, void *arg)
{
	struct node *n = arg;

	assert(n->magic == NODE_MAGIC);
	if (n->cmd == NULL && !n->rt->closing)
		node_connect(n);
}

static void
on_sub_retry(evutil_socket_t fd, short what, void *arg)
{
	struct node *n = arg;

	assert(n->magic == NODE_MAGIC);
	if (n->sub == NULL && !n->rt->closing)
		open_sub(n);
}

void
route_node_drop(struct node *n)
{
	struct route *rt = n->rt;
	redisAsyncContext *ac = n->cmd;

	assert(n->magic == NODE_MAGIC);
	for (int i = 0; i < rt->nnodes; i++) {
		if (rt->nodes[i] == n) {
			rt->nodes[i] = rt->nodes[--rt->nnodes];
			break;
		}
	}
	for (int s = 0; s < ROUTE_SLOTS; s++)
		if (rt->slots[s] == n)
			rt->slots[s] = NULL;
	if (!rt->closing)
		rt->hooks->node_gone(n, rt->arg);
	sub_close(&n->sub);
	event_free(n->retry);
	event_free(n->sub_retry);
	n->magic = 0;
	free(n);
	/* Its pending commands get their NULL replies now, and may be sent
	 * again elsewhere: the node is out of the table already. */
	if (ac != NULL) {
		ac->data = NULL;
		redisAsyncFree(ac);
	}
}

struct node *
route_node_at(struct route *rt, const char *host, int port)
{
	struct node *n;

	for (int i = 0; i < rt->nnodes; i++) {
		n = rt->nodes[i];
		if (n->port == port && strcmp(n->host, host) == 0)
			return n;
	}
	if (rt->nnodes == ROUTE_NODES_MAX || rt->closing)
		return NULL;
	if ((n = calloc(1, sizeof(*n))) == NULL)
		return NULL;
	n->magic = NODE_MAGIC;
	n->rt = rt;
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->port = port;
	if (host[0] == '\0')
		snprintf(n->name, sizeof(n->name), "unix:%.*s",
		    (int)sizeof(n->name) - 6, rt->unix_path);
	else if (strchr(host, ':') != NULL)
		snprintf(n->name, sizeof(n->name), "[%s]:%d", host, port);
	else
		snprintf(n->name, sizeof(n->name), "%s:%d", host, port);
	n->backoff_ms = n->sub_backoff_ms = RECONNECT_MIN_MS;
	n->retry = evtimer_new(rt->base, on_node_retry, n);
	n->sub_retry = evtimer_new(rt->base, on_sub_retry, n);
	if (n->retry == NULL || n->sub_retry == NULL) {
		if (n->retry != NULL)
			event_free(n->retry);
		if (n->sub_retry != NULL)
			event_free(n->sub_retry);
		free(n);
		return NULL;
	}
	rt->nodes[rt->nnodes++] = n;
	node_reason(n, "connecting", NULL);
	node_connect(n);
	return n;
}

static void
node_is_up(struct node *n)
{
	n->up = 1;
	n->backoff_ms = RECONNECT_MIN_MS;
	n->rt->hooks->map_changed(n->rt->arg);
}

static void
node_reason(struct node *n, const char *what, const char *detail)
{
	snprintf(n->down_reason, sizeof(n->down_reason), "%s%s%s", what,
	    detail != NULL ? ": " : "", detail != NULL ? detail : "");
}

/* A password Redis does not ask for is harmless: it serves us all the same. */
static int
auth_not_needed(const char *what, const char *err)
{
	return strcmp(what, "AUTH") == 0 && adapter_auth_not_needed(err);
}

/*
 * Redis will not serve this connection: the node is down with the reason
 * ("auth failed: WRONGPASS ..." when it refused who we are), logged once
 * while it stays the same however often the reconnects meet it.
 */
static void
refused(struct node *n, const char *what, const char *err)
{
	int auth = strcmp(what, "AUTH") == 0 || adapter_auth_refused(err);
	char reason[CACHE_REASON_MAX];

	snprintf(reason, sizeof(reason), "%s: %s", auth ? "auth failed" : what,
	    err);
	if (strcmp(reason, n->down_reason) != 0)
		log_error("redis: %s: %s (%s refused); retrying with backoff%s",
		    n->name, reason, what, auth ? " (check [redis] username "
		    "and password or password_file)" : "");
	else
		log_debug("redis: %s: still %s", n->name, reason);
	snprintf(n->down_reason, sizeof(n->down_reason), "%s", reason);
	n->refused = 1;
	n->up = 0;
	if (auth)
		n->rt->counters->auth_failures++;
}

/* Its set-up answered: a node is up (a sentinel's primary once ROLE says
 * so). */
static void
node_ready(struct node *n)
{
	struct route *rt = n->rt;

	rt->counters->connects++;
	log_info("redis: connected to %s", n->name);
	n->down_reason[0] = '\0';
	n->quiet = 0;
	if (rt->mode == REDIS_SENTINEL) {
		redisAsyncCommand(n->cmd, on_role, NULL, "ROLE");
		return;
	}
	node_is_up(n);
	if (rt->mode == REDIS_CLUSTER && (!rt->covered || rt->again))
		route_refresh(rt);
}

/*
 * AUTH, SELECT or PING on a new connection. An error means Redis will not
 * serve this connection (a wrong or missing password, a bad db): it stays
 * down with the reason and is dropped, to be tried again with backoff.
 */
static void
on_setup_reply(redisAsyncContext *ac, void *r, void *privdata)
{
	struct node *n = ac->data;
	redisReply *reply = r;
	const char *what = privdata;

	if (n == NULL || reply == NULL || n->rt->closing)
		return;		/* a disconnect: its callback handles it */
	assert(n->magic == NODE_MAGIC);
	if (reply->type == REDIS_REPLY_ERROR &&
	    auth_not_needed(what, reply->str)) {
		log_warn("redis: %s: a password is configured but Redis asks "
		    "for none", n->name);
	} else if (reply->type == REDIS_REPLY_ERROR) {
		if (n->refused)
			return;		/* what follows a refusal fails too */
		refused(n, what, reply->str);
		redisAsyncDisconnect(ac);
		return;
	}
	if (!n->refused && --n->setup == 0)
		node_ready(n);
}

/* sentinel: a primary must say so before it gets commands. */
static void
on_role(redisAsyncContext *ac, void *r, void *privdata)
{
	struct node *n = ac->data;
	redisReply *reply = r;

	if (n == NULL || reply == NULL)
		return;
	assert(n->magic == NODE_MAGIC);
	if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
	    reply->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(reply->element[0]->str, "master") == 0) {
		log_info("redis: %s confirmed as the primary", n->name);
		node_is_up(n);
		return;
	}
	log_warn("redis: %s is not a primary (ROLE); asking the sentinels",
	    n->name);
	redisAsyncDisconnect(ac);
	route_refresh(n->rt);
}

static void
on_cmd_connect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->data;

	if (n == NULL)
		return;
	assert(n->magic == NODE_MAGIC);
	if (status != REDIS_OK) {
		if (n->quiet)
			log_debug("redis: connect to %s failed: %s", n->name,
			    ac->errstr);
		else
			log_warn("redis: connect to %s failed: %s", n->name,
			    ac->errstr);
		n->quiet = 1;
		node_reason(n, "cannot connect", ac->errstr);
		n->cmd = NULL;		/* hiredis frees the context */
		n->up = 0;
		if (!n->rt->closing) {
			schedule(n->retry, &n->backoff_ms);
			if (n->rt->mode != REDIS_SINGLE)
				route_refresh(n->rt);
		}
		return;
	}
	/* Up once the set-up queued in node_connect() is answered. */
}

static void
on_cmd_disconnect(const redisAsyncContext *ac, int status)
{
	struct node *n = ac->data;

	if (n == NULL)
		return;
	assert(n->magic == NODE_MAGIC);
	n->cmd = NULL;
	n->up = 0;
	memset(n->sha, 0, sizeof(n->sha));
	if (n->rt->closing)
		return;
	if (!n->refused)
		node_reason(n, "disconnected", status == REDIS_OK ? NULL :
		    ac->errstr);
	n->rt->counters->disconnects++;
	if (n->refused)		/* ours, and said once (refused()) */
		log_debug("redis: closed %s", n->name);
	else
		log_warn("redis: lost %s%s%s", n->name, status == REDIS_OK ?
		    "" : ": ", status == REDIS_OK ? "" : ac->errstr);
	n->quiet = 1;
	schedule(n->retry, &n->backoff_ms);
	if (n->rt->mode != REDIS_SINGLE)
		route_refresh(n->rt);
}

static void
node_connect(struct node *n)
{
	struct route *rt = n->rt;
	char db[16];

	n->cmd = adapter_connect(rt->base, n->host, n->port, rt->unix_path, n,
	    on_cmd_connect, on_cmd_disconnect);
	if (n->cmd == NULL) {
		schedule(n->retry, &n->backoff_ms);
		return;
	}
	/* Queued ahead of anything else on this connection; it is up once
	 * they are answered (on_setup_reply). */
	n->setup = 0;
	n->refused = 0;
	if (adapter_auth(n->cmd, &rt->auth, on_setup_reply, "AUTH") == REDIS_OK)
		n->setup++;
	if (rt->db != 0) {
		snprintf(db, sizeof(db), "%d", rt->db);
		if (redisAsyncCommand(n->cmd, on_setup_reply, "SELECT",
		    "SELECT %s", db) == REDIS_OK)
			n->setup++;
	}
	/* A cluster connection may read from a replica (route_replica). */
	if (rt->mode == REDIS_CLUSTER && redisAsyncCommand(n->cmd,
	    on_setup_reply, "READONLY", "READONLY") == REDIS_OK)
		n->setup++;
	/* Without any, a PING: a Redis that wants a password says so. */
	if (n->setup == 0 && redisAsyncCommand(n->cmd, on_setup_reply,
	    "PING", "PING") == REDIS_OK)
		n->setup++;
	rt->hooks->cmd_up(n, rt->arg);
}

void
route_node_timeout(struct node *n)
{
	/*
	 * A node that takes commands but never answers would have them pile
	 * up: after a few timeouts in a row, drop the connection (every
	 * command on it fails or moves now) and reconnect with backoff.
	 */
	redisAsyncContext *ac = n->cmd;

	if (++n->timeouts_in_row >= HUNG_TIMEOUTS && ac != NULL &&
	    !n->rt->closing) {
		log_warn("redis: %s: %d commands in a row timed out; "
		    "reconnecting", n->name, n->timeouts_in_row);
		n->timeouts_in_row = 0;
		redisAsyncFree(ac);
		/* hiredis says so (on_cmd_disconnect) only of a context it
		 * saw connected: the rest is done here, or n->cmd would
		 * point at what was freed. */
		if (n->cmd == ac) {
			n->cmd = NULL;
			n->up = 0;
			schedule(n->retry, &n->backoff_ms);
		}
	}
}

/* ---- subscriber connections ---- */

static void
on_node_sub_up(void *arg)
{
	struct node *n = arg;

	assert(n->magic == NODE_MAGIC);
	n->sub_up = 1;
	n->sub_backoff_ms = RECONNECT_MIN_MS;
	n->rt->hooks->sub_up(n, n->rt->arg);
}

static void
on_node_sub_reply(const void *r, void *arg)
{
	struct node *n = arg;

	assert(n->magic == NODE_MAGIC);
	if (r == NULL) {
		sub_close(&n->sub);
		n->sub_up = 0;
		if (!n->rt->closing)
			schedule(n->sub_retry, &n->sub_backoff_ms);
		n->rt->hooks->sub_up(n, n->rt->arg);	/* lost: move away */
		return;
	}
	n->rt->hooks->sub_reply(n, r, n->rt->arg);
}

static void
open_sub(struct node *n)
{
	n->sub = sub_open(n->rt->base, n->host[0] != '\0' ? n->host : NULL,
	    n->port, n->rt->unix_path, n->rt->auth.user, n->rt->auth.pass,
	    on_node_sub_up, on_node_sub_reply, n);
	if (n->sub == NULL)
		schedule(n->sub_retry, &n->sub_backoff_ms);
}

int
route_sub_send(struct node *n, int argc, const char **argv)
{
	if (n->sub == NULL) {
		/* Everything wanted is sent once it is up (the sub_up hook). */
		if (!evtimer_pending(n->sub_retry, NULL))
			open_sub(n);
		return -1;
	}
	if (!n->sub_up)
		return -1;	/* the sub_up hook will send it */
	return sub_send(n->sub, argc, argv);
}

/* ---- sentinel: who is the primary ---- */

/* What the sentinels name (an answer, or a +switch-master). */
static void
on_primary(const char *host, int port, void *arg)
{
	struct route *rt = arg;
	struct node *n, *old = rt->slots[0];

	assert(rt->magic == ROUTE_MAGIC);
	if (old != NULL && old->port == port && strcmp(old->host, host) == 0)
		return;
	log_info("redis: the sentinels name %s:%d as primary of %s", host,
	    port, rt->master_name);
	if ((n = route_node_at(rt, host, port)) == NULL)
		return;
	map_all(rt, n);
	if (old != NULL && old != n)
		route_node_drop(old);
	rt->hooks->map_changed(rt->arg);
}

static void
on_answered(int ok, void *arg)
{
	struct route *rt = arg;

	assert(rt->magic == ROUTE_MAGIC);
	rt->refreshing = 0;
	if (!ok)
		rt->again = 1;
	if (rt->again) {
		rt->again = 0;
		route_refresh(rt);
	}
}

static void
on_listening(void *arg)
{
	struct route *rt = arg;

	assert(rt->magic == ROUTE_MAGIC);
	route_refresh(rt);
}

static const struct sentinel_hooks sentinel_hooks = {
	.primary = on_primary,
	.answered = on_answered,
	.listening = on_listening,
};

static void
refresh_sentinel(struct route *rt)
{
	if (sentinel_ask(rt->sentinel) == -1)
		rt->again = 1;
	else
		rt->refreshing = 1;
}

/* ---- cluster: the slot map ---- */

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

/* A map read: every slot to its primary's node, each primary with its
 * first replica, and the nodes it does not name let go. */
static void
apply_map(struct route *rt, const struct slot_map *map)
{
	int owners = 0, changed;

	memcpy(rt->before, rt->slots, sizeof(rt->slots));
	memset(rt->slots, 0, sizeof(rt->slots));
	for (int i = 0; i < rt->nnodes; i++)
		rt->nodes[i]->replica_port = 0;
	for (int i = 0; i < map->nranges; i++) {
		const struct slot_range *r = &map->ranges[i];
		struct node *n = route_node_at(rt, r->primary.host,
		    r->primary.port);

		if (n == NULL)
			continue;	/* more nodes than the table holds */
		owners++;
		for (int s = r->lo; s <= r->hi; s++)
			rt->slots[s] = n;
		if (r->replica.port != 0) {
			snprintf(n->replica_host, sizeof(n->replica_host), "%s",
			    r->replica.host);
			n->replica_port = r->replica.port;
		}
	}
	recount(rt);
	changed = memcmp(rt->before, rt->slots, sizeof(rt->slots)) != 0;
	rt->refresh_gap_ms = next_gap(rt, changed);
	if (owners > 0)
		drop_unnamed(rt);
}

static void
on_slots(redisAsyncContext *ac, void *r, void *privdata)
{
	struct route *rt = privdata;
	struct node *n = ac->data;
	redisReply *reply = r;
	struct slot_map map;
	int ok;

	if (rt->closing)
		return;
	assert(rt->magic == ROUTE_MAGIC);
	rt->refreshing = 0;
	if ((ok = reply != NULL && slots_read(reply, n != NULL ? n->host : "",
	    &map) == 0))
		apply_map(rt, &map);
	slots_free(&map);
	if (!ok) {
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

/* Asks a connected node for CLUSTER SLOTS, or (none is) reconnects the
 * seeds, each of which asks once connected: rt->refreshing while out. */
static void
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

/* ---- asking again ---- */

static void
start_refresh(struct route *rt)
{
	rt->last_refresh_ms = (util_mono_us() / 1000);
	if (rt->mode == REDIS_CLUSTER)
		slots_ask(rt);
	else if (rt->mode == REDIS_SENTINEL)
		refresh_sentinel(rt);
	if (!rt->refreshing && rt->again) {
		/* Nobody to ask yet: try again after a backoff. */
		rt->again = 0;
		schedule(rt->refresh_ev, &rt->refresh_backoff_ms);
	}
}

static void
on_refresh(evutil_socket_t fd, short what, void *arg)
{
	struct route *rt = arg;

	assert(rt->magic == ROUTE_MAGIC);
	if (rt->closing)
		return;
	if (rt->refreshing) {
		rt->again = 1;
		return;
	}
	start_refresh(rt);
}

void
route_refresh(struct route *rt)
{
	int64_t wait;
	struct timeval tv;

	if (rt->mode == REDIS_SINGLE || rt->closing)
		return;
	if (rt->refreshing) {
		rt->again = 1;
		return;
	}
	if (evtimer_pending(rt->refresh_ev, NULL))
		return;
	/* Always through the loop, never from inside the caller. */
	wait = rt->last_refresh_ms + rt->refresh_gap_ms -
	    (util_mono_us() / 1000);
	tv = util_timeval(wait > 0 ? wait : 0);
	evtimer_add(rt->refresh_ev, &tv);
}

/* cluster: the safety net, should every sign of a change be missed. */
static void
on_period(evutil_socket_t fd, short what, void *arg)
{
	struct route *rt = arg;

	assert(rt->magic == ROUTE_MAGIC);
	route_refresh(rt);
}

void
route_moved(struct route *rt, unsigned slot, struct node *n)
{
	assert(slot < ROUTE_SLOTS);
	if (rt->slots[slot] != NULL)
		rt->slots[slot]->slots--;
	rt->slots[slot] = n;
	n->slots++;
	route_refresh(rt);
}

/* ---- life cycle ---- */

struct route *
route_new(struct event_base *base, const struct conf *conf,
    const struct route_hooks *hooks, void *arg,
    struct cache_counters *counters)
{
	struct timeval period = util_timeval(REFRESH_PERIOD_MS);
	struct route *rt;
	struct node *n;

	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return NULL;
	rt->magic = ROUTE_MAGIC;
	rt->base = base;
	rt->mode = conf->redis_mode;
	snprintf(rt->unix_path, sizeof(rt->unix_path), "%s", conf->redis_unix);
	adapter_auth_set(&rt->auth, conf->redis_username, conf->redis_password);
	snprintf(rt->master_name, sizeof(rt->master_name), "%s",
	    conf->redis_master_name);
	rt->db = conf->redis_db;
	rt->nseeds = conf->redis_naddrs;
	memcpy(rt->seeds, conf->redis_addrs, sizeof(rt->seeds));
	rt->hooks = hooks;
	rt->arg = arg;
	rt->counters = counters;
	rt->refresh_backoff_ms = rt->refresh_gap_ms = ROUTE_REFRESH_MIN_MS;
	rt->refresh_ev = evtimer_new(base, on_refresh, rt);
	if (rt->refresh_ev == NULL)
		goto fail;
	switch (rt->mode) {
	case REDIS_SINGLE:
		if ((n = route_node_at(rt, conf->redis_host,
		    conf->redis_port)) == NULL)
			goto fail;
		map_all(rt, n);
		break;
	case REDIS_CLUSTER:
		rt->period_ev = event_new(base, -1, EV_PERSIST, on_period, rt);
		if (rt->period_ev == NULL || evtimer_add(rt->period_ev,
		    &period) == -1)
			goto fail;
		for (int i = 0; i < rt->nseeds; i++)
			route_node_at(rt, rt->seeds[i].host, rt->seeds[i].port);
		break;
	case REDIS_SENTINEL:
		if ((rt->sentinel = sentinel_new(base, conf, &sentinel_hooks,
		    rt, counters)) == NULL)
			goto fail;
		route_refresh(rt);
		break;
	}
	return rt;
fail:
	route_free(&rt);
	return NULL;
}

void
route_free(struct route **rtp)
{
	struct route *rt = *rtp;

	if (rt == NULL)
		return;
	assert(rt->magic == ROUTE_MAGIC);
	rt->closing = 1;
	while (rt->nnodes > 0)
		route_node_drop(rt->nodes[rt->nnodes - 1]);
	sentinel_free(&rt->sentinel);
	if (rt->refresh_ev != NULL)
		event_free(rt->refresh_ev);
	if (rt->period_ev != NULL)
		event_free(rt->period_ev);
	rt->magic = 0;
	free(rt);
	*rtp = NULL;
}

void
route_credentials(struct route *rt, const struct conf *conf)
{
	if (rt->sentinel != NULL)
		sentinel_credentials(rt->sentinel, conf);
	if (!adapter_auth_set(&rt->auth, conf->redis_username,
	    conf->redis_password))
		return;
	log_info("redis: new credentials%s%s", conf->redis_username[0] != '\0' ?
	    " for user " : "", conf->redis_username);
	for (int i = 0; i < rt->nnodes; i++) {
		struct node *n = rt->nodes[i];

		/* A node waiting out its backoff tries them now. */
		n->backoff_ms = n->sub_backoff_ms = RECONNECT_MIN_MS;
		if (n->cmd == NULL && evtimer_pending(n->retry, NULL)) {
			evtimer_del(n->retry);
			node_connect(n);
		}
		if (n->sub == NULL && evtimer_pending(n->sub_retry, NULL)) {
			evtimer_del(n->sub_retry);
			open_sub(n);
		}
	}
}
