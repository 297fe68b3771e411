/* SPDX-License-Identifier: MIT */
/*
 * struct req: one client request, from its head to its one reply.
 *
 *	RECV -> PASS (uncacheable: its own fetch)  -> DELIVER
 *	     -> JOIN (its key's flight answers it) -> DELIVER
 *	                                           -> PASS (per-user answer)
 *	                                           -> JOIN (its variant's)
 *	     -> DELIVER (a near-cache hit, a refusal)
 *	PASS, JOIN -> DRAIN (a streamed reply, all queued) or CUT (cut short)
 *	DELIVER, DRAIN, CUT -> req_finish(): the one way out
 *
 * Each step is one function that returns the next step, or REQ_PARK to
 * wait for a callback; req_run() drives them. Callbacks (a flight's
 * answer, a stream's pieces, its own fetch) only copy their result into
 * the request and re-enter req_run(). It asks proxy_flight.c,
 * proxy_stream.c, proxy_reply.c, proxy_outcome.c, the near caches and
 * upstream/; nothing below calls it by name.
 */

#include <assert.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_key.h"
#include "common/hlist.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_flight.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_forward.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_jwt.h"
#include "proxy/proxy_hit.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_log.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_origin.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_pass.h"
#include "proxy/proxy_purge.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_reply.h"
#include "proxy/proxy_req.h"
#include "proxy/proxy_response.h"
#include "proxy/proxy_stream.h"
#include "proxy/proxy_vary.h"
#include "upstream/upstream.h"

#define REQ_MAGIC		0x52455155u	/* "REQU" */
#define STREAM_END_CHECK_MS	20	/* an ended stream still being sent */
#define REJECT_REASON_MAX	160	/* of a refusal, in its body */
#define REJECT_TEXT_MAX		(REJECT_REASON_MAX + 48)
#define REQ_POOL_MAX		1024	/* finished requests kept for reuse */

enum req_step {
	REQ_RECV,		/* read the head, decide */
	REQ_PASS,		/* its own fetch, past the cache */
	REQ_JOIN,		/* waits in its key's flight */
	REQ_DELIVER,		/* answers now */
	REQ_DRAIN,		/* a streamed reply, all queued: ends once sent */
	REQ_CUT,		/* a streamed reply that cannot complete */
	REQ_DONE,		/* finished: req is freed */
	REQ_PARK,		/* not a step: wait for a callback */
};

static const char *const step_names[] = {
	[REQ_RECV] = "RECV", [REQ_PASS] = "PASS", [REQ_JOIN] = "JOIN",
	[REQ_DELIVER] = "DELIVER", [REQ_DRAIN] = "DRAIN", [REQ_CUT] = "CUT",
	[REQ_DONE] = "DONE", [REQ_PARK] = "PARK",
};

/* Why a request ends (req_finish). */
enum req_end {
	END_REPLY,		/* its answer is sent now */
	END_STREAMED,		/* its streamed reply has all been sent */
	END_CUT,		/* its streamed reply cannot complete: close */
};

struct req {
	uint32_t		 magic;
	uint64_t		 id;		/* for the step trace */
	struct proxy		*px;
	struct hreq *ev;
	enum req_step		 step;
	int			 route;		/* index, or -1 */
	struct conf_route	 rt;		/* its settings when it began */
	int			 head;
	char			*uri;		/* path[?query], in ev's scratch */
	char			*host;		/* ... */
	char			 key[FLOW_KEY_MAX + 1];
	struct req_key		 rk;		/* how its key was made */
	TAILQ_ENTRY(req)	 link;		/* in px->reqs */
	struct waiter		 waiter;	/* in a flight, or a stream */
	struct pass		*pass;		/* PASS: its own fetch */
	const char		*refusal;	/* the door refused it: why */
	int			 credentials;	/* Authorization or Cookie sent */
	int			 conditional;	/* If-None-Match or If-Modified-Since */
	int			 early_due;	/* its near-cache hit rolled XFetch */
	int			 streaming;	/* its reply is under way */
	int			 stream_status;	/* ... with this status line */
	uint64_t		 streamed;	/* body bytes handed to it */
	struct event		*end_ev;	/* DRAIN: checks the client took it */
	struct event		*gone_ev;	/* PASS, JOIN: its client closes */
	char			 head_length[24];	/* PASS HEAD: origin's */
	int64_t			 t_start_us;
	int64_t			 t_join_us;
	int64_t			 upstream_ms;	/* -1: none run for it */
	int64_t			 waited_us;	/* from joining to its answer */

	/* What callbacks left for the step they re-enter. */
	int			 handed;	/* the flight handed it this: */
	enum hand_kind		 hand_kind;
	const char		*hand_vary;	/* valid in that run only */
	int			 stream_end;	/* 1 whole, -1 cut short */
	int			 slow_cut;	/* ... as its client fell behind */

	struct answer		 answer;
};

static void req_run(struct req *req);
static void watch_client(struct req *req);
static const struct waiter_ops req_waiter_ops;

static struct req *
waiter_req(struct waiter *w)
{
	struct req *req = (struct req *)(void *)((char *)w -
	    offsetof(struct req, waiter));

	assert(req->magic == REQ_MAGIC);
	return req;
}

/* ---- the one way out ---------------------------------------------- */

/* Sends the one reply req gets (not streamed); the body bytes sent. */
static uint64_t
req_reply(struct req *req)
{
	struct cache_entry *e = req->answer.entry;
	char cs[CACHE_STATUS_MAX], text[REJECT_TEXT_MAX];
	struct reply r = {
		.ev = req->ev,
		.rt = &req->rt,
		.cache_status = cs,
		.head_length = req->head_length,
		.head = req->head,
		.conditional = req->conditional,
		.cached = req->answer.pass_kind == OUT_NONE,
		.closing = req->px->draining,
		.record = req->px->access_log != NULL,
		.challenge = req->answer.reject_code == HTTP_UNAUTHORIZED ?
		    jwt_challenge(req->answer.jwt_refused) : NULL,
		.max_decoded = (size_t)req->px->conf->max_entry_bytes,
		.max_file_bytes = req->px->conf->l1_max_bytes,
	};
	uint64_t sent;
	int code;

	if (req->waiter.peer) {
		/* No stream for it: the sibling waits for the entry. */
		hreq_reply(req->ev, HTTP_NOCONTENT, NULL, NULL);
		return 0;
	}
	if (e == NULL) {
		code = outcome_error_code(&req->answer);
		outcome_value(&req->answer, code, cs, sizeof(cs));
		if (req->refusal == NULL)
			return reply_error(&r, code, NULL,
			    outcome_error_text(&req->answer, code));
		snprintf(text, sizeof(text), "%s: %.*s", reply_phrase(code),
		    REJECT_REASON_MAX, req->refusal);
		return reply_error(&r, code, reply_phrase(code), text);
	}
	/* fwd-status: what the upstream said, a 304 for a revalidation. */
	outcome_value(&req->answer, req->answer.upstream_status != 0 ?
	    req->answer.upstream_status : e->status, cs, sizeof(cs));
	sent = reply_entry(&r, e);
	if (r.not_modified)
		STAT_INC(req->px->stats, req->route, not_modified);
	STAT_ADD(req->px->stats, req->route, coding_406, r.not_acceptable);
	STAT_ADD(req->px->stats, req->route, coding_decoded, r.decoded);
	return sent;
}

/* The access-log record of a finished request. */
static void
req_record(struct req *req, uint64_t bytes, int status)
{
	struct hreq *ev = req->ev;
	struct hlist *in = &ev->in;
	const char *client = forward_client(ev);
	int door = req->refusal != NULL;	/* nothing of it was parsed */
	struct access_record r = {
		.client = client != NULL ? client : "-",
		.method = door ? "-" :
		    outcome_method(ev->method),
		.uri = door ? NULL : req->uri != NULL ? req->uri :
		    ev->target,
		.status = status,
		.bytes = bytes,
		.referer = hl_find(in, "Referer"),
		.user_agent = hl_find(in, "User-Agent"),
		.cache = outcome_label(req->answer.outcome),
		.cache_status = door ? NULL : hl_find(
		    &ev->out, "Cache-Status"),
		.route = req->route >= 0 ? req->rt.prefix : NULL,
		.upstream_ms = req->upstream_ms,
		.lock_wait_ms = outcome_waited(req->answer.outcome) ?
		    req->waited_us / 1000 : -1,
		.total_ms = (util_mono_us() - req->t_start_us) / 1000,
		.key = req->answer.key_rule != KEY_RULE_URL ?
		    keyrule_name(req->answer.key_rule) : NULL,
		.proto_major = 1,
		.proto_minor = ev->minor,
	};
	access_log_write(req->px, &r);
}

static void
req_free(struct req *req)
{
	struct proxy *px = req->px;

	if (req->end_ev != NULL)
		event_free(req->end_ev);
	if (req->gone_ev != NULL)
		event_free(req->gone_ev);
	TAILQ_REMOVE(&px->reqs, req, link);
	px->nrequests--;
	px->npeers -= req->waiter.peer;
	entry_unref(&req->answer.entry);
	key_release(&req->rk);
	req->magic = 0;
	/* Kept for the next: a request costs no allocation of its own. */
	if (px->nreq_pool < REQ_POOL_MAX) {
		TAILQ_INSERT_HEAD(&px->req_pool, req, link);
		px->nreq_pool++;
	} else {
		free(req);
	}
}

/* Counts req and writes its access record (a sibling's: its sibling). */
static void
req_account(struct req *req, uint64_t bytes, int status)
{
	if (req->waiter.peer)
		return;
	if (req->px->access_log != NULL || LOGL_DEBUG <= log_current_level)
		req_record(req, bytes, status);
	outcome_count(req->px->stats, req->route, &req->answer, req->waited_us);
}

/*
 * Every request ends here, once: its reply is sent (or, streamed, ended:
 * whole, or cut with its connection closed so that a cut body can never
 * pass for a whole one), its fetch cancelled, it leaves its flight or
 * stream, it is counted and logged, and freed. A second call while the
 * first runs does nothing.
 */
static void
req_finish(struct req *req, enum req_end why)
{
	struct hreq *ev = req->ev;
	int gone = hreq_gone(ev);
	uint64_t bytes;

	assert(req->magic == REQ_MAGIC);
	if (req->step == REQ_DONE)
		return;
	req->step = REQ_DONE;
	if (req->gone_ev != NULL)
		event_del(req->gone_ev);
	pass_cancel(&req->pass);
	stream_leave(&req->waiter);
	flight_leave(&req->waiter);
	if (why == END_REPLY) {
		req->waited_us = util_mono_us() - req->t_join_us;
		if (req->streaming) {
			req->answer.outcome = OUT_UNAVAILABLE;
			why = END_CUT;
		} else {
			/* A client that left: its record says what it would
			 * have been answered, nothing sent. */
			if (gone)
				req_account(req, 0, outcome_code(&req->answer));
			bytes = req_reply(req);
			if (!gone)
				req_account(req, bytes, ev->status);
			req_free(req);
			return;
		}
	}
	/* The record names the status the stream began with. */
	req_account(req, req->streamed, req->stream_status);
	req_free(req);
	if (why == END_STREAMED)
		hreq_end(ev);
	else
		hreq_abort(ev);	/* cut: it must not pass for whole */
}

/* ---- streaming: the reply goes out as the response arrives ------- */

/* What was queued for the client has been sent. */
static void
on_stream_written(void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC && req->streaming);
	if (req->end_ev != NULL)
		event_active(req->end_ev, EV_TIMEOUT, 0);
	else
		stream_drained(&req->waiter);
}

static void
on_stream_end_check(evutil_socket_t fd, short what, void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC && req->step == REQ_DRAIN);
	req_run(req);
}

static int
on_waiter_start(struct waiter *w, const struct upstream_response *resp,
    int collapsed)
{
	struct req *req = waiter_req(w);
	char cs[CACHE_STATUS_MAX];
	struct reply r = {
		.ev = req->ev,
		.rt = &req->rt,
		.cache_status = cs,
		.closing = req->px->draining,
	};
	/* Passed through, or fetched for the cache (collapsed: another's
	 * fetch); what it becomes once it ends is not known yet. */
	struct answer so_far = {
		.outcome = req->answer.pass_kind != OUT_NONE ? req->answer.pass_kind :
		    collapsed ? OUT_COLLAPSED : OUT_FETCHED,
		.pass_kind = req->answer.pass_kind,
		.jwt_refused = req->answer.jwt_refused,
	};

	assert(!req->streaming);
	/* A client that does not take the response's coding gets the
	 * entry, decoded, once it is whole (proxy_coding.h); a sibling
	 * worker takes it as it came, for its own clients. */
	if (hreq_gone(req->ev) || req->head ||
	    (req->answer.pass_kind == OUT_NONE && !req->waiter.peer &&
	    !coding_takes(&req->ev->in, &resp->headers)))
		return -1;
	req->streaming = 1;
	if (req->waiter.peer) {
		reply_peer_head(req->ev, resp);
		return 0;
	}
	outcome_value(&so_far, resp->status, cs, sizeof(cs));
	reply_stream_head(&r, resp);
	req->stream_status = resp->status;
	req->waited_us = util_mono_us() - req->t_join_us;	/* its wait */
	return 0;
}

static size_t
on_waiter_backlog(struct waiter *w)
{
	return reply_backlog(waiter_req(w)->ev);
}

static size_t
on_waiter_data(struct waiter *w, struct evbuffer *chunk)
{
	struct req *req = waiter_req(w);
	struct evbuffer *buf;

	assert(req->streaming);
	if (hreq_gone(req->ev))
		return 0;
	if ((buf = evbuffer_new()) == NULL ||
	    evbuffer_add_buffer_reference(buf, chunk) == -1) {
		if (buf != NULL)
			evbuffer_free(buf);
		return 0;	/* the end will find it short */
	}
	req->streamed += evbuffer_get_length(buf);
	hreq_chunk(req->ev, buf, on_stream_written, req);
	evbuffer_free(buf);
	return reply_backlog(req->ev);
}

/* Its client fell behind the others of its stream. */
static void
on_waiter_lag(struct waiter *w, int cut)
{
	struct req *req = waiter_req(w);

	req->slow_cut = cut;
	STAT_ADD(req->px->stats, req->route, stream_detached, !cut);
	STAT_ADD(req->px->stats, req->route, stream_cut_slow, cut);
	log_info("%s: a client fell behind the others: %s", req->uri,
	    cut ? "cut, as the body is not kept" : "fed from the body kept");
}

static void
on_waiter_end(struct waiter *w, int ok, enum outcome o, int64_t upstream_ms)
{
	struct req *req = waiter_req(w);

	req->pass = NULL;	/* a pass whose stream ends is gone */
	req->answer.outcome = o;
	if (upstream_ms >= 0)
		req->upstream_ms = upstream_ms;
	req->stream_end = ok ? 1 : -1;
	req_run(req);
}

/* ---- the flight's answers ----------------------------------------- */

static void
on_waiter_answer(struct waiter *w, const struct handover *h)
{
	struct req *req = waiter_req(w);

	req->pass = NULL;	/* a pass that answers is gone */
	req->handed = 1;
	req->hand_kind = h->kind;
	req->hand_vary = h->vary;
	if (h->head_length != NULL)
		snprintf(req->head_length, sizeof(req->head_length), "%s",
		    h->head_length);
	if (h->kind == HAND_PASS)
		req->answer.hit_for_miss = h->hit_for_miss;
	if (h->kind == HAND_ANSWER) {
		req->answer.outcome = h->outcome;
		req->answer.entry = h->entry;
		req->answer.uerr = h->uerr;
		req->answer.not_forwarded = h->not_forwarded;
		req->answer.not_stored = h->not_stored;
		snprintf(req->answer.failure, sizeof(req->answer.failure), "%s",
		    h->failure);
		if (h->upstream_ms >= 0)
			req->upstream_ms = h->upstream_ms;
		if (h->upstream_status != 0)
			req->answer.upstream_status = h->upstream_status;
	}
	req_run(req);
}

static void
on_waiter_forward(struct waiter *w, struct hlist *dst, int flags)
{
	struct req *req = waiter_req(w);

	forward_headers(req->ev, req->px->conf, req->host, req->rt.key_host,
	    dst, flags);
}

static const struct waiter_ops req_waiter_ops = {
	.answer = on_waiter_answer,
	.forward = on_waiter_forward,
	.start = on_waiter_start,
	.data = on_waiter_data,
	.backlog = on_waiter_backlog,
	.lag = on_waiter_lag,
	.end = on_waiter_end,
	.interim = reply_interim,	/* with the waiter's interim_arg */
};

/* ---- PASS: its own fetch, past the cache (proxy_pass.c) ------------ */

static int
pass_begin(struct req *req)
{
	struct evbuffer *in = req->ev->body;
	int unsafe = forward_unsafe(req->ev->method);
	struct pass_args a = {
		.waiter = &req->waiter,
		.method = outcome_method(req->ev->method),
		.body_len = evbuffer_get_length(in),
		.route = req->route,
		.rt = req->route >= 0 ? &req->rt : NULL,
		.uri = req->uri,
		.key = req->key,
		.kind = req->answer.pass_kind,
		.unsafe = unsafe,
		/* A cached POST that passed is a GET's like. */
		.write = unsafe && req->waiter.spec == NULL,
		.hit_for_miss = req->answer.hit_for_miss,
		.authorized = key_authorized(req->route >= 0 ? &req->rt : NULL,
		    (&req->ev->in)),
	};

	a.body = a.body_len > 0 ? evbuffer_pullup(in, -1) : NULL;
	req->pass = pass_start(req->px, &a);
	return req->pass != NULL ? 0 : -1;
}

/* ---- the steps ------------------------------------------------------ */

/* A streamed reply's end, as its stream reported it. */
static enum req_step
stream_ended(struct req *req)
{
	if (req->stream_end > 0)
		return REQ_DRAIN;
	if (!req->slow_cut)	/* else said already */
		log_warn("%s: the response was cut short after %" PRIu64
		    " bytes; closing the client's connection", req->uri,
		    req->streamed);
	return REQ_CUT;
}

static enum req_step
req_pass(struct req *req)
{
	if (req->stream_end != 0)
		return stream_ended(req);
	if (req->handed) {
		req->handed = 0;
		return REQ_DELIVER;
	}
	if (req->pass != NULL)
		return REQ_PARK;
	if (req->answer.pass_kind == OUT_NONE)
		req->answer.pass_kind = OUT_BYPASS;
	/* Once a stop begins, nothing new goes upstream. */
	if (req->px->draining || pass_begin(req) == -1) {
		req->answer.outcome = OUT_UNAVAILABLE;
		return REQ_DELIVER;
	}
	watch_client(req);
	return REQ_PARK;
}

static enum req_step
req_join(struct req *req)
{
	if (req->stream_end != 0)
		return stream_ended(req);
	if (req->waiter.flight != NULL || req->waiter.stream != NULL)
		return REQ_PARK;
	if (req->handed) {
		req->handed = 0;
		if (req->hand_kind == HAND_ANSWER)
			return REQ_DELIVER;
		if (req->hand_kind == HAND_PASS)
			return REQ_PASS;
		/* Its key varies: on to its own variant. */
		if (vary_variant(req->px, &req->rt, req->key, req->hand_vary,
		    (&req->ev->in)) == -1) {
			req->answer.outcome = OUT_UNAVAILABLE;
			return REQ_DELIVER;
		}
		req->hand_vary = NULL;
	}
	req->t_join_us = util_mono_us();
	watch_client(req);
	if (flight_join(req->px, &req->waiter, req->key, req->uri, req->route,
	    &req->rt, req->early_due) == -1) {
		req->answer.outcome = OUT_UNAVAILABLE;
		return REQ_DELIVER;
	}
	return REQ_PARK;	/* req may be answered and gone already */
}

/* A streamed reply ends once its client has taken all of it: libevent
 * ends a reply (and may close the connection) as soon as its own buffer
 * is empty, so that nothing queued below is lost. */
static enum req_step
req_drain(struct req *req)
{
	if (req->end_ev == NULL && (req->end_ev = evtimer_new(req->px->base,
	    on_stream_end_check, req)) == NULL)
		return REQ_CUT;
	if (reply_backlog(req->ev) > 0) {
		timer_arm(req->end_ev, STREAM_END_CHECK_MS);
		return REQ_PARK;
	}
	req_finish(req, END_STREAMED);
	return REQ_DONE;
}

/*
 * A copy in this process's memory answers without a Redis round trip:
 * fresh, or stale while its refresh runs (proxy_hit.h). When early
 * refresh may be due, the flight refreshes without drawing again.
 */
static int
near_hit(struct req *req, const struct conf_route *rt)
{
	enum hit_kind k = hit_near(req->px, &req->waiter, req->key, req->uri,
	    req->route, rt, &req->answer.entry);

	req->early_due = k == HIT_EARLY;
	if (k != HIT_FRESH && k != HIT_STALE)
		return 0;
	req->answer.outcome = k == HIT_STALE ? OUT_STALE : OUT_HIT;
	STAT_INC(req->px->stats, req->route, near_hits);
	return 1;
}

/* Decides how the request is served. */
static enum req_step
recv_decide(struct req *req, const char *path)
{
	struct proxy *px = req->px;
	const struct conf_route *rt = req->route >= 0 ? &req->rt : NULL;
	const char *query = req->ev->query;
	/* Only the key_host routes key on the client's Host; the others on
	 * the upstream's, so that every name of the fleet shares entries. */
	int keyed = rt != NULL && rt->key_host;
	const char *host = keyed ? req->host : px->conf->upstream_authority;

	if (!conf_host_allowed(px->conf, req->host, keyed)) {
		log_info("rejected %s: host %s is not served", req->uri,
		    req->host);
		req->answer.reject_code = HTTP_MISDIRECTED;
		req->answer.outcome = OUT_REJECTED;
		return REQ_DELIVER;
	}
	switch (key_decide(px, req->route, rt, req->ev, host, path, query,
	    req->credentials, &req->rk, req->key, &req->answer)) {
	case DECIDE_PASS:
		return REQ_PASS;
	case DECIDE_FAIL:
		req->answer.outcome = OUT_UNAVAILABLE;
		return REQ_DELIVER;
	case DECIDE_REFUSED:
		return REQ_DELIVER;	/* 401: its answer says so */
	case DECIDE_CACHE:
		break;
	}
	req->waiter.spec = &req->rk.spec;
	if (vary_key(px, rt, req->key, (&req->ev->in)) == -1) {
		req->answer.outcome = OUT_UNAVAILABLE;
		return REQ_DELIVER;
	}
	return near_hit(req, rt) ? REQ_DELIVER : REQ_JOIN;
}

static enum req_step
req_recv_head(struct req *req)
{
	struct proxy *px = req->px;
	const struct conf_route *rt;
	const char *path;

	if (forward_target(req->ev, &req->host, &req->uri, &path) == -1) {
		req->answer.outcome = OUT_UNAVAILABLE;
		return REQ_DELIVER;
	}
	rt = conf_route_match(px->conf, path);
	req->route = rt != NULL ? (int)(rt - px->conf->routes) : -1;
	if (rt != NULL)
		req->rt = *rt;	/* a reload does not change it midway */
	req->head = req->ev->method == HM_HEAD;
	STAT_INC(px->stats, req->route, requests);
	log_debug("req %llu: %s %s", (unsigned long long)req->id,
	    outcome_method(req->ev->method), req->uri);
	forward_note(req->ev, &req->credentials, &req->conditional);
	return recv_decide(req, path);
}

static void
req_run(struct req *req)
{
	enum req_step next;

	for (;;) {
		assert(req->magic == REQ_MAGIC);
		switch (req->step) {
		case REQ_RECV:
			next = req_recv_head(req);
			break;
		case REQ_PASS:
			next = req_pass(req);
			break;
		case REQ_JOIN:
			next = req_join(req);
			break;
		case REQ_DRAIN:
			next = req_drain(req);
			break;
		case REQ_DELIVER:
			req_finish(req, END_REPLY);
			return;
		case REQ_CUT:
			req_finish(req, END_CUT);
			return;
		case REQ_DONE:
		case REQ_PARK:
		default:
			return;
		}
		if (next == REQ_PARK || next == REQ_DONE)
			return;		/* DONE: req is gone */
		log_step("req", req->id, step_names[req->step],
		    step_names[next]);
		req->step = next;
	}
}

/* ---- its client leaves --------------------------------------------- */

/*
 * The client closed its connection before its answer (libevent keeps the
 * request, detached). Work that only it wanted ends now: its own fetch
 * while it waits for an origin slot, or a safe one under way (an unsafe
 * one that went goes on: its write, and its invalidation, stand); its
 * seat in a flight, so that the flight's rank counts only who waits, and
 * a flight nobody waits for drops a fetch not yet sent. A reply under
 * way ends as its stream does.
 */
static void
on_client_closed(evutil_socket_t fd, short what, void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC);
	if (req->streaming || (req->step != REQ_PASS && req->step != REQ_JOIN))
		return;
	if (req->step == REQ_PASS && (req->pass == NULL ||
	    !pass_stoppable(req->pass)))
		return;
	req->answer.outcome = OUT_GONE;
	req_finish(req, END_REPLY);
}

/*
 * While it waits (for its flight, or its own fetch's origin slot), its
 * client's socket is watched for a close (EV_CLOSED: the peer's FIN seen
 * by epoll without reading what may be queued behind the request).
 */
static void
watch_client(struct req *req)
{
	int fd = hreq_fd(req->ev);

	if (req->gone_ev != NULL || fd < 0 || req->waiter.peer)
		return;
	if ((req->gone_ev = event_new(req->px->base, fd, EV_CLOSED,
	    on_client_closed, req)) != NULL)
		event_add(req->gone_ev, NULL);
}

/* ---- entry points --------------------------------------------------- */

static struct req *
req_new(struct proxy *px, struct hreq *ev, enum req_step step)
{
	struct req *req;

	assert(px->magic == PROXY_MAGIC);
	if ((req = TAILQ_FIRST(&px->req_pool)) != NULL) {
		TAILQ_REMOVE(&px->req_pool, req, link);
		px->nreq_pool--;
		memset(req, 0, sizeof(*req));
	} else if ((req = calloc(1, sizeof(*req))) == NULL) {
		log_error("out of memory for a request; answering 503");
		hreq_reply(ev, HTTP_SERVUNAVAIL, NULL, NULL);
		return NULL;
	}
	req->magic = REQ_MAGIC;
	req->id = ++px->machine_ids;
	req->px = px;
	req->ev = ev;
	req->step = step;
	req->route = -1;
	req->upstream_ms = -1;
	req->t_start_us = req->t_join_us = util_mono_us();
	req->waiter.ops = &req_waiter_ops;
	req->waiter.headers = &ev->in;
	req->waiter.interim_arg = ev;

	TAILQ_INSERT_TAIL(&px->reqs, req, link);
	px->nrequests++;
	return req;
}

void
req_recv(struct proxy *px, struct hreq *ev)
{
	struct req *req;

	if ((req = req_new(px, ev, REQ_RECV)) != NULL)
		req_run(req);
}

void
req_refused(struct proxy *px, struct hreq *ev, int status,
    const char *reason)
{
	struct req *req;

	log_info("rejected a request from %s: %d %s", hreq_client(ev), status,
	    reason);
	STAT_INC(px->stats, -1, requests);
	if ((req = req_new(px, ev, REQ_DELIVER)) == NULL)
		return;
	req->refusal = reason;
	req->answer.outcome = OUT_REJECTED;
	req->answer.reject_code = status;
	req_run(req);
}

void
req_peer_recv(struct proxy *px, struct hreq *ev, const char *key)
{
	struct req *req;

	if ((req = req_new(px, ev, REQ_JOIN)) == NULL)
		return;
	req->waiter.peer = 1;	/* it takes a stream or a 204 */
	px->npeers++;
	snprintf(req->key, sizeof(req->key), "%s", key);
	if ((req->uri = hreq_strndup(ev, ev->target,
	    strlen(ev->target))) == NULL ||
	    flight_attach_peer(px, &req->waiter, req->key) == -1)
		req->step = REQ_DELIVER;	/* a 204 now */
	req_run(req);
}

void
req_abandon_passes(struct proxy *px)
{
	struct req *req, *next;

	for (req = TAILQ_FIRST(&px->reqs); req != NULL; req = next) {
		next = TAILQ_NEXT(req, link);
		if (req->pass == NULL)
			continue;
		req->answer.outcome = OUT_UNAVAILABLE;
		req_finish(req, END_REPLY);
	}
}

void
req_remap(struct proxy *px, const struct conf *old, const struct conf *new)
{
	struct req *req;

	TAILQ_FOREACH(req, &px->reqs, link)
		if (req->route >= 0)
			req->route = conf_route_index(new,
			    old->routes[req->route].prefix);
}

void
req_shutdown_all(struct proxy *px)
{
	struct req *req;

	while ((req = TAILQ_FIRST(&px->reqs)) != NULL) {
		req->answer.outcome = OUT_UNAVAILABLE;
		req_finish(req, END_REPLY);
	}
	while ((req = TAILQ_FIRST(&px->req_pool)) != NULL) {
		TAILQ_REMOVE(&px->req_pool, req, link);
		free(req);
	}
	px->nreq_pool = 0;
}
