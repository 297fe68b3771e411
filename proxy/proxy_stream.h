/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_STREAM_H
#define PROXY_PROXY_STREAM_H

/*
 * struct stream: one response fanned out to N waiters as it arrives, a
 * piece at a time by reference, at the pace of the origin and of its
 * fastest client: its source pauses only while every client that takes
 * it as it comes is more than a window behind. A client that falls
 * further behind while another keeps up is detached: fed from the body
 * kept (from the first byte, while all of it fits) at its own pace, or
 * cut alone when none is kept. A waiter that joins late is fed from the
 * kept body the same way. A flight streams its fetch with one; a
 * passed-through request streams its own response with one. It talks to
 * its waiters through their struct waiter_ops only.
 */

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "proxy/proxy_flow.h"
#include "upstream/upstream.h"

struct evbuffer;

/* The stream's clients have caught up: its source may go on. */
typedef void stream_resume_cb(void *arg);

/* A stream whose clients may lag window bytes; recheck: while paused,
 * it looks again every so often (a client that left drains nothing),
 * else only when a client drains. NULL on no memory. */
struct stream *stream_new(struct event_base *base, size_t window,
	    int recheck, stream_resume_cb *resume, void *arg);
/* Frees a stream with no waiters left (stream_end() first); sets *stp to
 * NULL. */
void	stream_free(struct stream **stp);
/* Should a response with this head be streamed as it arrives? A flight
 * (cached) keeps 5xx whole: a stale entry may answer instead. */
int	stream_wanted(const struct upstream_response *resp, int cached);
/* The head of a response that streams: kept, with its body while all
 * of it fits in keep bytes, for waiters that join once the body has
 * begun or fall behind (0: none). */
void	stream_begin(struct stream *st, const struct upstream_response *resp,
	    size_t keep);
/* w's reply starts with resp's head and it gets the body from now on;
 * lead: the fetch is w's own (else collapsed). A sibling's waiter goes
 * first. 0, or -1 when w cannot stream (it is then not in the stream). */
int	stream_join(struct stream *st, struct waiter *w,
	    const struct upstream_response *resp, int lead);
/* Every waiter of list that can stream joins (as stream_join(), the
 * siblings' first) and leaves list; those that cannot stay. Did first
 * (the lead, or NULL) join? */
int	stream_join_all(struct stream *st, struct waiters *list,
	    const struct upstream_response *resp, struct waiter *first);
/* w joins once the body has begun: the head, then the body from its
 * first byte at w's pace, then the rest as it comes. 0, or -1 when not
 * all of it was kept or w cannot stream. */
int	stream_join_late(struct stream *st, struct waiter *w);
/* A piece of the body to every waiter that takes it as it comes:
 * UPSTREAM_PAUSE when the fastest is more than the window behind (resume
 * is called once it has caught up). */
int	stream_data(struct stream *st, struct evbuffer *chunk);
/* w's client took what was queued for it. */
void	stream_drained(struct waiter *w);
/* w leaves the stream unanswered (its client is gone). */
void	stream_leave(struct waiter *w);
/* The body ended, whole only if ok: every waiter's reply ends (one fed
 * at its own pace gets the rest of the kept body first, by reference),
 * the lead's as lead_o after lead_ms of fetching, the others' as
 * OUT_COLLAPSED. */
void	stream_end(struct stream *st, int ok, enum outcome lead_o,
	    int64_t lead_ms);
/* Forgets the head and the body kept: the next response starts anew. */
void	stream_reset(struct stream *st);

#endif
