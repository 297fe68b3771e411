/* SPDX-License-Identifier: MIT */
/*
 * proxy/proxy_stream.c: one body fanned out to clients that read at their
 * own pace. A client far behind while another keeps up is detached and
 * fed from the kept body, byte for byte in order, until it catches up;
 * with no body kept it is cut alone; the source pauses only for the
 * fastest; a late joiner gets the body from its first byte; one still
 * behind at the end gets the rest.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/hlist.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_stream.h"
#include "tests/unit/unit.h"

#define WINDOW		1000	/* bytes a client may lag */
#define PIECE		600	/* bytes the source gives at a time */
#define PIECES		40
#define BODY		(PIECE * PIECES)
#define CLIENTS		4

/* A client: what is queued for it, and what it has taken, in order. */
struct fake {
	struct waiter	 w;		/* first: ops get &fake->w */
	struct evbuffer	*queued;
	struct evbuffer	*taken;
	int		 started;
	int		 ended;		/* 1 whole, -1 cut */
	int		 detached, cut;
	int		 refuse;	/* cannot stream (a HEAD) */
};

static struct event_base *base;
static struct fake clients[CLIENTS];
static unsigned char body[BODY];
static int resumed;

static int
on_start(struct waiter *w, const struct upstream_response *resp,
    int collapsed)
{
	struct fake *f = (struct fake *)w;

	if (f->refuse)
		return -1;
	f->started = 1;
	return 0;
}

static size_t
on_data(struct waiter *w, struct evbuffer *chunk)
{
	struct fake *f = (struct fake *)w;

	/* By reference, as a client's connection takes it. */
	if (evbuffer_add_buffer_reference(f->queued, chunk) == -1)
		abort();
	return evbuffer_get_length(f->queued);
}

static size_t
on_backlog(struct waiter *w)
{
	return evbuffer_get_length(((struct fake *)w)->queued);
}

static void
on_lag(struct waiter *w, int cut)
{
	struct fake *f = (struct fake *)w;

	if (cut)
		f->cut++;
	else
		f->detached++;
}

static void
on_end(struct waiter *w, int ok, enum outcome o, int64_t upstream_ms)
{
	((struct fake *)w)->ended = ok ? 1 : -1;
}

static const struct waiter_ops fake_ops = {
	.start = on_start,
	.data = on_data,
	.backlog = on_backlog,
	.lag = on_lag,
	.end = on_end,
};

static void
on_resume(void *arg)
{
	resumed++;
}

static void
fakes_reset(void)
{
	for (int i = 0; i < CLIENTS; i++) {
		if (clients[i].queued != NULL) {
			evbuffer_free(clients[i].queued);
			evbuffer_free(clients[i].taken);
		}
		memset(&clients[i], 0, sizeof(clients[i]));
		clients[i].w.ops = &fake_ops;
		clients[i].queued = evbuffer_new();
		clients[i].taken = evbuffer_new();
	}
	resumed = 0;
}

/* Client i takes everything queued, as its connection would, and says
 * so once it is all sent. */
static void
drain(int i)
{
	struct fake *f = &clients[i];

	if (evbuffer_get_length(f->queued) == 0)
		return;
	evbuffer_remove_buffer(f->queued, f->taken,
	    evbuffer_get_length(f->queued));
	stream_drained(&f->w);
}

/* Did client i take exactly the body's first n bytes? */
static int
took(int i, size_t n)
{
	struct evbuffer *t = clients[i].taken;

	return evbuffer_get_length(t) == n &&
	    memcmp(evbuffer_pullup(t, -1), body, n) == 0;
}

/* Piece k of the body from the source, as upstream/ hands it over. */
static int
give(struct stream *st, int k)
{
	struct evbuffer *chunk = evbuffer_new();
	int r;

	evbuffer_add(chunk, body + (size_t)k * PIECE, PIECE);
	r = stream_data(st, chunk);
	evbuffer_free(chunk);
	return r;
}

static struct stream *
stream_for(size_t keep, int n)
{
	struct upstream_response head = { .status = 200 };
	struct waiters list;
	struct stream *st;

	hl_init(&head.headers);
	TAILQ_INIT(&list);
	st = stream_new(base, WINDOW, 0, on_resume, NULL);
	stream_begin(st, &head, keep);
	for (int i = 0; i < n; i++)
		TAILQ_INSERT_TAIL(&list, &clients[i].w, flight_link);
	stream_join_all(st, &list, &head, &clients[0].w);
	return st;
}

static void
t_a_stalled_client_is_fed_from_the_kept_body_and_catches_up(void)
{
	struct stream *st;
	int k, paused = 0;

	fakes_reset();
	st = stream_for(BODY, 3);
	for (k = 0; k < PIECES / 2; k++) {
		paused |= give(st, k) & UPSTREAM_PAUSE;
		drain(1);
		drain(2);	/* client 0 takes nothing */
	}
	CHECK(!paused);
	CHECK(clients[0].detached == 1 && clients[0].cut == 0);
	CHECK(clients[0].w.behind && took(1, (size_t)k * PIECE));
	/* It reads at last: a window at a time from the kept body. */
	for (int n = 0; clients[0].w.behind && n < BODY / WINDOW + 2; n++)
		drain(0);
	CHECK(!clients[0].w.behind);
	drain(0);
	CHECK(took(0, (size_t)k * PIECE));
	for (; k < PIECES; k++) {
		CHECK(give(st, k) == 0);
		drain(0);
		drain(1);
		drain(2);
	}
	stream_end(st, 1, OUT_STORED, 0);
	for (int i = 0; i < 3; i++)
		CHECK(clients[i].ended == 1 && took(i, BODY));
	stream_reset(st);
	stream_free(&st);
}

static void
t_a_stalled_client_with_no_body_kept_is_cut_alone(void)
{
	struct stream *st;
	int k;

	fakes_reset();
	st = stream_for(2 * PIECE, 3);	/* the body passes what is kept */
	for (k = 0; k < PIECES; k++) {
		CHECK(give(st, k) == 0);
		drain(1);
		drain(2);
	}
	CHECK(clients[0].cut == 1 && clients[0].ended == -1);
	stream_end(st, 1, OUT_FETCHED, 0);
	CHECK(clients[1].ended == 1 && took(1, BODY));
	CHECK(clients[2].ended == 1 && took(2, BODY));
	stream_reset(st);
	stream_free(&st);
}

static void
t_the_source_pauses_only_for_the_fastest(void)
{
	struct stream *st;
	int r;

	fakes_reset();
	st = stream_for(BODY, 2);
	CHECK(give(st, 0) == 0);
	r = give(st, 1);	/* neither reads: both behind */
	CHECK(r == UPSTREAM_PAUSE);
	CHECK(clients[0].detached == 0 && clients[1].detached == 0);
	drain(1);		/* the fastest caught up */
	CHECK(resumed == 1);
	stream_end(st, 0, OUT_FETCHED, 0);
	CHECK(clients[0].ended == -1 && clients[1].ended == -1);
	stream_reset(st);
	stream_free(&st);
}

static void
t_a_late_joiner_gets_the_body_from_its_first_byte(void)
{
	struct stream *st;
	int k;

	fakes_reset();
	st = stream_for(BODY, 1);
	for (k = 0; k < 10; k++) {
		CHECK(give(st, k) == 0);
		drain(0);
	}
	CHECK(stream_join_late(st, &clients[1].w) == 0);
	clients[2].refuse = 1;
	CHECK(stream_join_late(st, &clients[2].w) == -1);
	CHECK(clients[1].w.behind);
	for (; k < 30; k++) {
		CHECK(give(st, k) == 0);
		drain(0);
		drain(1);
	}
	CHECK(!clients[1].w.behind);	/* caught up: as it comes */
	stream_end(st, 1, OUT_STORED, 0);
	drain(1);
	CHECK(took(0, 30 * PIECE) && took(1, 30 * PIECE));
	CHECK(clients[1].ended == 1 && clients[1].detached == 0);
	stream_reset(st);
	stream_free(&st);
}

static void
t_a_client_still_behind_at_the_end_gets_the_rest(void)
{
	struct stream *st;
	int k;

	fakes_reset();
	st = stream_for(BODY, 2);
	for (k = 0; k < PIECES; k++) {
		give(st, k);
		drain(1);
	}
	CHECK(clients[0].w.behind);
	stream_end(st, 1, OUT_STORED, 0);
	stream_reset(st);	/* what is queued keeps the body */
	stream_free(&st);
	CHECK(clients[0].ended == 1);
	drain(0);
	CHECK(took(0, BODY) && took(1, BODY));
}

int
main(void)
{
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (unsigned char)(i * 7 + i / 251);
	base = event_base_new();
	RUN(t_a_stalled_client_is_fed_from_the_kept_body_and_catches_up);
	RUN(t_a_stalled_client_with_no_body_kept_is_cut_alone);
	RUN(t_the_source_pauses_only_for_the_fastest);
	RUN(t_a_late_joiner_gets_the_body_from_its_first_byte);
	RUN(t_a_client_still_behind_at_the_end_gets_the_rest);
	fakes_reset();
	for (int i = 0; i < CLIENTS; i++) {
		evbuffer_free(clients[i].queued);
		evbuffer_free(clients[i].taken);
	}
	event_base_free(base);
	return unit_exit();
}
