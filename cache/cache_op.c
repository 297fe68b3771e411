/* SPDX-License-Identifier: MIT */
/*
 * The command transport: one struct cache_op per operation, sent to the
 * node that owns its key's slot (cache_route.c). While it waits for a
 * reply, hiredis owns it and calls on_op_reply exactly once (with NULL on
 * error or disconnect); a MOVED, an ASK or (cluster, sentinel) a lost node
 * sends it again or parks it until its node is known, always within its
 * timer; a read whose primary is away goes to its replica meanwhile. The
 * op's maker handles the answer through the on_reply (and, for
 * an op of several commands, on_step) it registered: the transport knows
 * no kind of operation. The caller's callback runs at most once: with the
 * reply, or earlier from the op's timer when Redis is slower than [redis]
 * timeout, or never when the caller cancelled the op.
 *
 * An argument given as a buffer (an entry, op_arg_buffer()) is not
 * copied into the op: the command is formatted around it and copied into
 * hiredis's output buffer once (cache_adapter.c).
 *
 * Calls: cache_route.c, cache_key.c (a key's slot), cache_adapter.c
 * (adapter_command). Called by the
 * operations above it (cache_store.c, cache_purge.c, cache_watch.c) and
 * the life cycle (cache.c).
 */

#include "cache/cache_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/cache_adapter.h"
#include "common/log.h"
#include "common/util.h"

#define OP_MAGIC		0x4341504fu	/* "CAPO" */
#define OP_ARGS_FIRST		16	/* room for a command's arguments, doubled */
#define REDIRECTS_MAX		5	/* MOVED/ASK one op follows */
#define PARK_RETRY_MS		50	/* parked ops try their node again */
#define FULL_LOG_MS		1000	/* "Redis is full": said this often */

/*
 * The Redis key of key's entry, lock, ...: "<prefix>{<key>}:<suffix>". A
 * variant "K\nID" is "<prefix>{K}:<suffix>:ID": it keeps K's hash tag.
 */
void
op_key_name(char *out, size_t outlen, const struct cache *c, const char *key,
    const char *suffix)
{
	const char *nl = strchr(key, '\n');

	if (nl == NULL)
		snprintf(out, outlen, "%s{%s}:%s", c->prefix, key, suffix);
	else
		snprintf(out, outlen, "%s{%.*s}:%s:%s", c->prefix,
		    (int)(nl - key), key, suffix, nl + 1);
}

static void
op_free(struct cache_op *op)
{
	assert(op->magic == OP_MAGIC && !op->inflight);
	if (op->parked)
		TAILQ_REMOVE(&op->cache->parked, op, park_link);
	if (op->timer != NULL)
		event_free(op->timer);
	op_clear_args(op);
	free(op->args);
	free(op->arglens);
	free(op->bufs);
	free(op->key);
	free(op->token);
	op->magic = 0;
	free(op);
}

/* Runs the caller's callback once with an error result. */
static void
op_fail(struct cache_op *op)
{
	if (op->finished)
		return;
	op->finished = 1;
	evtimer_del(op->timer);
	op->cache->counters.errors++;
	op->on_reply(op, NULL);
}

/* The op fails now, and goes unless hiredis still holds it. */
static void
op_abort(struct cache_op *op)
{
	op_fail(op);
	if (!op->inflight)
		op_free(op);
}

static void
on_op_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct cache_op *op = arg;
	struct cache *c = op->cache;
	struct node *n = route_node(c->rt, op->slot);

	assert(op->magic == OP_MAGIC);
	if (op->finished)
		return;
	c->counters.timeouts++;
	log_warn("redis: no reply within %" PRId64 "ms", c->timeout_ms);
	op_abort(op);
	if (n != NULL)
		route_node_timeout(n);	/* op may be gone after this */
}

/* Waits for its node (cluster, sentinel): 0, or -1 in single mode. */
static int
op_park(struct cache_op *op)
{
	struct cache *c = op->cache;
	struct timeval tv = util_timeval(PARK_RETRY_MS);

	if (c->mode == REDIS_SINGLE || c->closing)
		return -1;
	assert(!op->parked && !op->inflight);
	op->parked = 1;
	op->park_round = c->park_round;
	TAILQ_INSERT_TAIL(&c->parked, op, park_link);
	if (!evtimer_pending(c->park_ev, NULL))
		evtimer_add(c->park_ev, &tv);
	route_refresh(c->rt);
	return 0;
}

/*
 * Sends every parked op again. Those that park again (their node is still
 * unknown) wait for the next round; ops stay on c->parked until their
 * turn, so a callback that cancels one meanwhile finds it there.
 */
static void
on_park_retry(evutil_socket_t fd, short what, void *arg)
{
	struct cache *c = arg;
	struct cache_op *op;
	unsigned round;

	assert(c->magic == CACHE_MAGIC);
	round = ++c->park_round;
	while ((op = TAILQ_FIRST(&c->parked)) != NULL &&
	    op->park_round != round) {
		TAILQ_REMOVE(&c->parked, op, park_link);
		op->parked = 0;
		if (op->finished)
			op_free(op);
		else if (op_send(op) == -1)
			op_abort(op);
	}
}

int
op_park_init(struct cache *c)
{
	TAILQ_INIT(&c->parked);
	c->park_ev = evtimer_new(c->base, on_park_retry, c);
	return c->park_ev != NULL ? 0 : -1;
}

void
op_park_free(struct cache *c)
{
	struct cache_op *op;

	while ((op = TAILQ_FIRST(&c->parked)) != NULL)
		op_free(op);	/* unparks it */
	if (c->park_ev != NULL)
		event_free(c->park_ev);
	c->park_ev = NULL;
}

void
op_park_retry(struct cache *c)
{
	struct timeval now = { 0, 0 };

	if (!TAILQ_EMPTY(&c->parked))
		evtimer_add(c->park_ev, &now);
}

void
op_node_gone(struct cache *c, struct node *n)
{
	struct cache_op *op;

	TAILQ_FOREACH(op, &c->parked, park_link)
		if (op->ask == n)
			op->ask = NULL;
}

/* "MOVED 3999 127.0.0.1:6381", "ASK ...": the node, or NULL. */
static struct node *
redirect_target(struct cache *c, const char *err, unsigned *slot)
{
	char host[CONF_HOST_MAX];
	const char *addr, *colon;
	unsigned long s;
	char *end;

	if ((addr = strchr(err, ' ')) == NULL)
		return NULL;
	s = strtoul(addr + 1, &end, 10);
	if (*end != ' ' || s >= ROUTE_SLOTS ||
	    (colon = strrchr(end + 1, ':')) == NULL ||
	    (size_t)(colon - end - 1) >= sizeof(host))
		return NULL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - end - 1), end + 1);
	*slot = (unsigned)s;
	return route_node_at(c->rt, host, atoi(colon + 1));
}

/*
 * An error reply that names where to go (MOVED, ASK) or says to wait for
 * the cluster or a new primary: 0 when op was sent again or parked.
 */
static int
redirect(struct cache_op *op, const char *err)
{
	struct cache *c = op->cache;
	struct node *n;
	unsigned slot;

	if (strncmp(err, "MOVED ", 6) == 0 || strncmp(err, "ASK ", 4) == 0) {
		if (++op->redirects > REDIRECTS_MAX ||
		    (n = redirect_target(c, err, &slot)) == NULL)
			return -1;
		if (err[0] == 'M') {
			c->counters.moved++;
			route_moved(c->rt, slot, n);
		} else {
			c->counters.ask++;
			op->ask = n;
		}
		return op_send(op);
	}
	if (strncmp(err, "TRYAGAIN", 8) == 0 ||
	    strncmp(err, "CLUSTERDOWN", 11) == 0 ||
	    strncmp(err, "READONLY", 8) == 0 ||
	    strncmp(err, "MASTERDOWN", 10) == 0 ||
	    strncmp(err, "LOADING", 7) == 0)
		return op_park(op);
	return -1;
}

/* An error reply from n: followed, waited out, sent again as EVAL, or
 * the op fails. */
/*
 * Redis refused a write at maxmemory (noeviction, or nothing it may
 * evict): counted, the cache is full (cache_is_full()), and said at most
 * once every FULL_LOG_MS with how many more it refused meanwhile, not once
 * a request.
 */
static void
refused_full(struct cache *c)
{
	int64_t now = util_mono_us() / 1000;

	c->counters.oom++;
	c->full_ms = now > 0 ? now : 1;
	if (c->full_logged_ms != 0 && now - c->full_logged_ms < FULL_LOG_MS) {
		c->full_unsaid++;
		return;
	}
	log_warn("redis: full: a write refused at maxmemory (OOM), %" PRIu64
	    " more since the last line; nothing is stored until Redis has "
	    "room (see maxmemory-policy in corral(8))", c->full_unsaid);
	c->full_logged_ms = now;
	c->full_unsaid = 0;
}

static void
on_error_reply(struct cache_op *op, struct node *n, const char *err)
{
	if (redirect(op, err) == 0)
		return;
	if (strncmp(err, "OOM ", 4) == 0) {
		refused_full(op->cache);
		op_abort(op);
		return;
	}
	if (op->script != SCRIPT_NONE && !op->retried &&
	    strncmp(err, "NOSCRIPT", 8) == 0) {
		/* Script cache flushed: resend the source once. */
		op->retried = 1;
		if (n != NULL)
			n->sha[op->script][0] = '\0';
		if (op_send(op) == 0)
			return;
	}
	log_warn("redis: %s", err);
	op_abort(op);
}

static void
on_op_reply(redisAsyncContext *ac, void *r, void *privdata)
{
	struct cache_op *op = privdata;
	struct node *n = ac->data;
	redisReply *reply = r;
	int rc;

	assert(op->magic == OP_MAGIC);
	op->inflight = 0;
	if (reply != NULL && !op->cache->closing) {
		if (n != NULL)
			n->timeouts_in_row = 0;
		hist_observe(&op->cache->counters.command_duration,
		    (double)(util_mono_us() - op->sent_us) / 1e6);
	}
	/* The caller has its answer (a timeout), but an op of several
	 * commands may still go through, as it would in one. */
	if (op->finished && !op->cache->closing && reply != NULL &&
	    op->on_step != NULL && op->on_step(op, reply) == 1)
		return;
	if (op->finished || op->cache->closing) {
		op_free(op);
		return;
	}
	if (reply == NULL) {
		/* The node went away: wait for its successor, if any. */
		if (op_park(op) == -1)
			op_abort(op);
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		on_error_reply(op, n, reply->str);
		return;
	}
	if (op->on_step != NULL && (rc = op->on_step(op, reply)) != 0) {
		if (rc == -1)
			op_abort(op);
		return;
	}
	op->finished = 1;
	evtimer_del(op->timer);
	op->on_reply(op, reply);
	op_free(op);
}

struct cache_op *
op_new(struct cache *c, const char *key, op_reply_cb *on_reply, void *arg)
{
	char name[REDIS_KEY_MAX];
	struct cache_op *op;
	struct timeval tv = util_timeval(c->timeout_ms);

	assert(c->magic == CACHE_MAGIC);
	if (c->closing || !route_usable(c->rt))
		return NULL;
	if ((op = calloc(1, sizeof(*op))) == NULL)
		return NULL;
	op->magic = OP_MAGIC;
	op->cache = c;
	op->on_reply = on_reply;
	op->arg = arg;
	op->script = SCRIPT_NONE;
	op_key_name(name, sizeof(name), c, key, "entry");
	op->slot = cache_key_slot(name);
	if ((op->timer = evtimer_new(c->base, on_op_timeout, op)) == NULL) {
		free(op);
		return NULL;
	}
	evtimer_add(op->timer, &tv);
	c->counters.commands++;
	return op;
}

/* Room for one more argument. 0 or -1. */
static int
arg_room(struct cache_op *op)
{
	int cap = op->cap == 0 ? OP_ARGS_FIRST : op->cap * 2;
	char **args;
	size_t *lens;
	struct evbuffer **bufs;

	if (op->nargs < op->cap)
		return 0;
	if ((args = realloc(op->args, (size_t)cap * sizeof(*args))) == NULL)
		return -1;
	op->args = args;
	if ((lens = realloc(op->arglens, (size_t)cap * sizeof(*lens))) == NULL)
		return -1;
	op->arglens = lens;
	if ((bufs = realloc(op->bufs, (size_t)cap * sizeof(*bufs))) == NULL)
		return -1;
	op->bufs = bufs;
	op->cap = cap;
	return 0;
}

int
op_arg(struct cache_op *op, const void *s, size_t len)
{
	if (arg_room(op) == -1 ||
	    (op->args[op->nargs] = malloc(len + 1)) == NULL)
		return -1;
	memcpy(op->args[op->nargs], s, len);
	op->args[op->nargs][len] = '\0';
	op->arglens[op->nargs] = len;
	op->bufs[op->nargs] = NULL;
	op->nargs++;
	return 0;
}

int
op_arg_buffer(struct cache_op *op, struct evbuffer *buf)
{
	if (arg_room(op) == -1) {
		evbuffer_free(buf);
		return -1;
	}
	op->args[op->nargs] = NULL;
	op->arglens[op->nargs] = evbuffer_get_length(buf);
	op->bufs[op->nargs] = buf;
	op->nargs++;
	return 0;
}

int
op_argstr(struct cache_op *op, const char *s)
{
	return op_arg(op, s, strlen(s));
}

void
op_clear_args(struct cache_op *op)
{
	for (int i = 0; i < op->nargs; i++) {
		free(op->args[i]);
		if (op->bufs[i] != NULL)
			evbuffer_free(op->bufs[i]);
	}
	op->nargs = 0;
}

/*
 * Sends a command with op_arg_buffer() arguments: formatted here (RESP),
 * the small parts copied, the buffers referenced, and queued through
 * adapter_command(), which copies it into hiredis's output buffer once.
 * The head it is given ends where the first buffer begins.
 */
static int
send_buffers(redisAsyncContext *ac, struct cache_op *op, int argc,
    const char **argv, const size_t *argvlen)
{
	struct evbuffer *head = evbuffer_new(), *rest = evbuffer_new(), *to;
	const char *flat;
	int rc = REDIS_ERR, i, failed;

	if (head == NULL || rest == NULL)
		goto out;
	to = head;
	failed = evbuffer_add_printf(to, "*%d\r\n", argc) == -1;
	for (i = 0; i < argc; i++) {
		const struct evbuffer *buf = i >= argc - op->nargs ?
		    op->bufs[i - (argc - op->nargs)] : NULL;

		failed |= evbuffer_add_printf(to, "$%zu\r\n", argvlen[i]) == -1;
		if (buf != NULL) {
			to = rest;
			failed |= evbuffer_add_buffer_reference(to,
			    (struct evbuffer *)buf) == -1;
		} else
			failed |= evbuffer_add(to, argv[i], argvlen[i]) == -1;
		failed |= evbuffer_add(to, "\r\n", 2) == -1;
	}
	flat = failed ? NULL : (const char *)evbuffer_pullup(head, -1);
	if (flat != NULL)
		rc = adapter_command(ac, on_op_reply, op, flat,
		    evbuffer_get_length(head), rest);
out:
	if (head != NULL)
		evbuffer_free(head);
	if (rest != NULL)
		evbuffer_free(rest);
	return rc;
}

int
op_send(struct cache_op *op)
{
	struct cache *c = op->cache;
	struct node *n = op->ask != NULL ? op->ask : route_node(c->rt, op->slot);
	struct node *r;
	const char **argv;
	size_t *argvlen;
	int argc = 0, rc, bufs = 0;

	/* A read while the slot's primary is away: its replica answers. */
	if ((n == NULL || !n->up) && op->readonly && op->ask == NULL &&
	    (r = route_replica(c->rt, op->slot)) != NULL) {
		n = r;
		c->counters.replica_reads++;
	}
	if (n == NULL || !n->up || n->cmd == NULL)
		return op_park(op);
	if ((argv = calloc((size_t)op->nargs + 2, sizeof(*argv))) == NULL ||
	    (argvlen = calloc((size_t)op->nargs + 2, sizeof(*argvlen))) ==
	    NULL) {
		free(argv);
		return -1;
	}
	if (op->script != SCRIPT_NONE) {
		if (op->retried || n->sha[op->script][0] == '\0') {
			argv[0] = "EVAL";
			argv[1] = op->src;
		} else {
			argv[0] = "EVALSHA";
			argv[1] = n->sha[op->script];
		}
		argvlen[0] = strlen(argv[0]);
		argvlen[1] = strlen(argv[1]);
		argc = 2;
	}
	for (int i = 0; i < op->nargs; i++, argc++) {
		argv[argc] = op->args[i];
		argvlen[argc] = op->arglens[i];
		bufs |= op->bufs[i] != NULL;
	}
	if (op->ask != NULL) {
		redisAsyncCommand(n->cmd, NULL, NULL, "ASKING");
		op->ask = NULL;		/* once */
	}
	rc = bufs ? send_buffers(n->cmd, op, argc, argv, argvlen) :
	    redisAsyncCommandArgv(n->cmd, on_op_reply, op, argc, argv, argvlen);
	free(argv);
	free(argvlen);
	if (rc != REDIS_OK)
		return -1;
	op->inflight = 1;
	op->sent_us = util_mono_us();
	return 0;
}

void
op_fence_reply(struct cache_op *op, redisReply *reply)
{
	if (reply != NULL && reply->type == REDIS_REPLY_INTEGER) {
		if (op->cb.fence != NULL)
			op->cb.fence(reply->integer >= 1 ? FENCE_OK :
			    FENCE_LOST, op->arg);
		return;
	}
	if (reply != NULL)
		op->cache->counters.errors++;
	if (op->cb.fence != NULL)
		op->cb.fence(FENCE_ERROR, op->arg);
}

struct cache_op *
op_start(struct cache_op *op, int failed)
{
	if (failed || op_send(op) == -1) {
		op_free(op);
		return NULL;
	}
	return op;
}

void
cache_op_cancel(struct cache_op **opp)
{
	struct cache_op *op = *opp;

	if (op == NULL)
		return;
	assert(op->magic == OP_MAGIC);
	op->finished = 1;
	evtimer_del(op->timer);
	*opp = NULL;
	if (!op->inflight)
		op_free(op);	/* parked; else freed when hiredis replies */
}
