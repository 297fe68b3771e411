/* SPDX-License-Identifier: MIT */
/*
 * struct pass: a request's own fetch, past the cache (proxy_pass.h).
 *
 *	FETCH -> DONE (answered: whole, or its stream ended)
 *	      -> INVALIDATE (a successful write) -> DONE
 *	      -> UNPASS (a shareable answer to a hit-for-miss GET) -> DONE
 *
 * FETCH waits for the origin (through the budget); a long response is
 * streamed to the waiter as it comes, a short one kept whole. What the
 * answer tells the cache is done before the answer goes: RFC 9111 4.4, a
 * successful unsafe request invalidates every stored response of its
 * target (the URL's, and on a route whose keys add parts, every
 * credential's, POST body's and header's), in this process at once and
 * fleet-wide, so that a read the client sends next never finds the old
 * entry; and a GET passed for hit-for-miss that got a shareable answer
 * ends the mark, in Redis before its answer, so that the client's next
 * request takes the lock whatever instance it reaches. Each step is a function returning the next; the
 * callbacks copy what they got and re-enter pass_run(). It asks
 * proxy_origin.c, proxy_stream.c, proxy_purge.c and cache/, and answers
 * through its waiter's ops only.
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>


#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_graphql.h"
#include "common/hlist.h"
#include "common/log.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_origin.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_pass.h"
#include "proxy/proxy_purge.h"
#include "proxy/proxy_response.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_stream.h"
#include "proxy/proxy_tags.h"
#include "upstream/upstream.h"

#define PASS_MAGIC		0x50415353u	/* "PASS" */
#define HEAD_LENGTH_MAX		24	/* a passed HEAD's Content-Length */
#define MUTATION_KEEP_MAX	(1024 * 1024)	/* of a mutation's answer, read
						 * for the objects it returns */

enum pass_step {
	PS_FETCH,		/* the origin's response */
	PS_INVALIDATE,		/* a write's invalidation, before the answer */
	PS_UNPASS,		/* hit-for-miss ended, before the answer */
	PS_DONE,		/* answers, or ends its stream, and frees */
	PS_PARK,		/* not a step: wait for a callback */
};

static const char *const step_names[] = {
	[PS_FETCH] = "FETCH", [PS_INVALIDATE] = "INVALIDATE",
	[PS_UNPASS] = "UNPASS",
	[PS_DONE] = "DONE", [PS_PARK] = "PARK",
};

struct pass {
	uint32_t		 magic;
	uint64_t		 id;		/* for the step trace */
	enum pass_step		 step;
	struct proxy		*px;
	struct pass_args	 a;		/* its strings are its own */
	struct conf_route	 rt;
	int			 routed;
	char			*uri;
	char			*key;
	struct origin_fetch	*fetch;
	struct stream		*stream;	/* its response, streaming */
	struct target_purge	*invalidation;
	struct cache_op		*unpass;	/* ending the hit-for-miss */
	char			 head_length[HEAD_LENGTH_MAX];
	int64_t			 upstream_ms;
	enum outcome		 outcome;
	enum upstream_result	 uerr;
	struct cache_entry	*entry;		/* the answer, when whole */
	int			 mutation;	/* a GraphQL mutation */

	/* What callbacks left for the step they re-enter. */
	struct upstream_response *resp;		/* FETCH: it came */
	int			 invalidated;	/* INVALIDATE: it is in place */
	int			 unpassed;	/* UNPASS: Redis has it */
};

static void pass_run(struct pass *p);
static target_purged_cb on_pass_invalidated;
static fence_cb on_pass_unpassed;

static void
pass_free(struct pass *p)
{
	assert(p->magic == PASS_MAGIC);
	origin_cancel(&p->fetch);
	purge_target_detach(&p->invalidation);	/* it goes on alone */
	cache_op_cancel(&p->unpass);		/* the same */
	stream_free(&p->stream);
	if (p->resp != NULL)
		upstream_response_free(&p->resp);
	entry_unref(&p->entry);
	free(p->uri);
	free(p->key);
	p->magic = 0;
	free(p);
}

/* ---- FETCH ---------------------------------------------------------- */

/* The client caught up with a paused response: it goes on. */
static void
on_pass_resume(void *arg)
{
	struct pass *p = arg;

	assert(p->magic == PASS_MAGIC);
	if (p->fetch != NULL)
		origin_resume(p->fetch);
}

/* A 1xx goes to the client before the answer; a long response streams
 * to it as it comes. */
static int
on_pass_data(const struct upstream_response *resp, struct evbuffer *chunk,
    void *arg)
{
	struct pass *p = arg;
	struct waiter *w = p->a.waiter;
	struct stream *st;

	assert(p->magic == PASS_MAGIC);
	if (chunk != NULL)
		return p->stream != NULL ? stream_data(p->stream, chunk) : 0;
	if (resp->status < 200)
		return w->ops->interim(resp->status, &resp->headers,
		    w->interim_arg);
	if (!stream_wanted(resp, 0) || (st = stream_new(p->px->base,
	    (size_t)p->px->conf->stream_window, 0, on_pass_resume,
	    p)) == NULL)
		return 0;
	if (stream_join(st, w, resp, 1) == -1) {
		stream_free(&st);
		return 0;
	}
	p->stream = st;
	return UPSTREAM_STREAM;
}

/* What a successful answer tells the cache: a write's invalidation (the
 * next step waits for it) and the tags its answer names (a 2xx's: not
 * waited for), or the end of a hit-for-miss mark. A GraphQL mutation's
 * invalidation is of its URL's own key only, not of every query of the
 * endpoint: the objects it returns name what it changed. */
static enum pass_step
answered(struct pass *p, const struct upstream_response *resp)
{
	const struct conf_route *rt = p->routed ? &p->rt : NULL;
	const char *why;
	int objects = 0;

	if (p->key[0] == '\0')
		return PS_DONE;
	if (p->a.write) {
		if (resp->status >= 400)
			return PS_DONE;
		if (rt != NULL && resp->status >= 200 && resp->status < 300)
			objects = write_purge(p->px, rt, p->a.route, p->uri,
			    resp, p->mutation) != -1 && p->mutation;
		p->invalidation = purge_target(p->px, p->key, !objects &&
		    key_has_parts(rt), 0, on_pass_invalidated, p, &why);
		if (p->invalidation == NULL) {
			log_warn("%s: a write could not invalidate its "
			    "target: %s", p->uri, why);
			return PS_DONE;
		}
		STAT_INC(p->px->stats, p->a.route, invalidations);
		return PS_INVALIDATE;
	}
	/* The mark's end is in Redis before the answer: the client's next
	 * request, through any instance, takes the lock and stores. */
	if (p->a.hit_for_miss && resp->status < 500 &&
	    hdr_shareable(&resp->headers, p->a.authorized, rt, &why) &&
	    (p->unpass = lock_unpass(p->px->cache, p->key, on_pass_unpassed,
	    p)) != NULL)
		return PS_UNPASS;
	return PS_DONE;
}

/* FETCH: the response, counted, kept as the answer unless it streamed,
 * and what it tells the cache. */
static enum pass_step
pass_fetched(struct pass *p)
{
	struct upstream_response *resp = p->resp;
	enum pass_step next = PS_DONE;
	const char *cl;

	if (resp == NULL)
		return PS_PARK;
	p->resp = NULL;
	p->upstream_ms = resp->elapsed_ms;
	outcome_count_upstream(p->px->stats, p->a.route, resp);
	if (resp->result != UPSTREAM_OK) {
		log_warn("upstream %s: %s (%s)%s", p->uri,
		    upstream_result_name(resp->result), resp->error,
		    p->stream != NULL ? ", after its head" : "");
		p->outcome = OUT_UPSTREAM_ERROR;
		p->uerr = resp->result;
	} else {
		next = answered(p, resp);
		p->outcome = p->a.kind;
		if (p->stream == NULL && (cl = hl_find(
		    &resp->headers, "Content-Length")) != NULL)
			snprintf(p->head_length, sizeof(p->head_length), "%s",
			    cl);
		if (p->stream == NULL &&
		    (p->entry = response_entry(resp, "", 0, NULL)) == NULL)
			p->outcome = OUT_UNAVAILABLE;
	}
	upstream_response_free(&resp);
	return next;
}

/* ---- DONE ----------------------------------------------------------- */

/* Its answer, through its waiter's ops: a streamed one ends its stream,
 * a whole one is handed over. The pass is freed first: the waiter's
 * request may end in there. */
static void
pass_done(struct pass *p)
{
	struct waiter *w = p->a.waiter;
	struct stream *st = p->stream;
	struct handover h = {
		.kind = HAND_ANSWER,
		.outcome = p->outcome,
		.entry = p->entry,
		.uerr = p->uerr,
		.failure = "",
		.upstream_ms = p->upstream_ms,
	};
	char head_length[HEAD_LENGTH_MAX];
	int ok = p->outcome != OUT_UPSTREAM_ERROR;
	int64_t ms = p->upstream_ms;

	snprintf(head_length, sizeof(head_length), "%s", p->head_length);
	h.head_length = head_length;
	p->stream = NULL;
	p->entry = NULL;	/* the waiter takes it */
	pass_free(p);
	if (st != NULL) {
		stream_end(st, ok, h.outcome, ms);
		stream_free(&st);
	} else {
		w->ops->answer(w, &h);
	}
}

static void
pass_run(struct pass *p)
{
	enum pass_step next;

	for (;;) {
		assert(p->magic == PASS_MAGIC);
		switch (p->step) {
		case PS_FETCH:
			next = pass_fetched(p);
			break;
		case PS_INVALIDATE:
			next = p->invalidated ? PS_DONE : PS_PARK;
			break;
		case PS_UNPASS:
			next = p->unpassed ? PS_DONE : PS_PARK;
			break;
		case PS_DONE:
			pass_done(p);	/* p is gone */
			return;
		case PS_PARK:
		default:
			return;
		}
		if (next == PS_PARK)
			return;
		log_step("pass", p->id, step_names[p->step], step_names[next]);
		p->step = next;
	}
}

/* ---- callbacks: each copies its result and re-enters pass_run() ---- */

static void
on_pass_fetched(struct upstream_response *resp, void *arg)
{
	struct pass *p = arg;

	assert(p->magic == PASS_MAGIC && p->step == PS_FETCH);
	p->fetch = NULL;
	p->resp = resp;
	pass_run(p);
}

static void
on_pass_invalidated(int64_t purged, int ok, void *arg)
{
	struct pass *p = arg;

	assert(p->magic == PASS_MAGIC && p->step == PS_INVALIDATE);
	p->invalidation = NULL;
	p->invalidated = 1;
	if (!ok)
		log_warn("%s: a write's invalidation did not reach every "
		    "entry of its target (redis failed)", p->uri);
	pass_run(p);
}

static void
on_pass_unpassed(enum fence_result r, void *arg)
{
	struct pass *p = arg;

	(void)r;		/* failed: the mark lapses at its ttl */
	assert(p->magic == PASS_MAGIC && p->step == PS_UNPASS);
	p->unpass = NULL;
	p->unpassed = 1;
	pass_run(p);
}

/* ---- the face ------------------------------------------------------- */

struct pass *
pass_start(struct proxy *px, const struct pass_args *a)
{
	struct waiter *w = a->waiter;
	struct hlist headers;
	struct origin_args oa = {
		.cls = BUDGET_PASS,
		.route = a->route,
		.pool = a->rt != NULL ? a->rt->upstream : "",
	};
	struct upstream_request ur = {
		.method = a->method,
		.body = a->body,
		.body_len = a->body_len,
		.max_body_bytes = PASS_BODY_MAX,
		.on_data = on_pass_data,
		.keep_body = 0,	/* a streamed body goes to its client only */
		/* RFC 9110 9.2.2: only these may go to a second server. */
		.replayable = strcmp(a->method, "GET") == 0 ||
		    strcmp(a->method, "HEAD") == 0,
	};
	struct pass *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->magic = PASS_MAGIC;
	p->id = ++px->machine_ids;
	p->step = PS_FETCH;
	p->px = px;
	p->a = *a;
	p->upstream_ms = -1;
	if ((p->routed = a->rt != NULL))
		p->rt = *a->rt;
	if ((p->uri = strdup(a->uri)) == NULL ||
	    (p->key = strdup(a->key)) == NULL) {
		pass_free(p);
		return NULL;
	}
	oa.target = p->uri;
	ur.data_arg = p;
	/* A GraphQL mutation's answer is read for the objects it returns. */
	if (p->routed && p->rt.graphql && a->write && a->body != NULL &&
	    strcmp(a->method, "POST") == 0 &&
	    graphql_is_mutation(a->body, a->body_len)) {
		p->mutation = 1;
		ur.keep_body = MUTATION_KEEP_MAX;
	}
	hl_init(&headers);
	w->ops->forward(w, &headers, HDR_DROP_HOST | HDR_DROP_LENGTH);
	ur.headers = &headers;
	p->fetch = origin_fetch(px, &oa, &ur, on_pass_fetched, p);
	hl_free(&headers);
	if (p->fetch == NULL) {
		pass_free(p);
		return NULL;
	}
	return p;
}

int
pass_stoppable(const struct pass *p)
{
	assert(p->magic == PASS_MAGIC);
	if (p->fetch == NULL)
		return 0;	/* its answer is on its way */
	return !p->a.unsafe || !origin_sent(p->fetch);
}

void
pass_cancel(struct pass **pp)
{
	struct pass *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	pass_free(p);
}
