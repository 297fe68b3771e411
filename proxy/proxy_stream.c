/* SPDX-License-Identifier: MIT */
/*
 * struct stream: one response, its waiters, their window, and the body
 * kept for those fed at their own pace. It calls its waiters' struct
 * waiter_ops and its source's resume callback, and nothing else of the
 * flow.
 *
 * The body goes at the pace of the origin and of the fastest client: the
 * source pauses only while every waiter that takes the body as it comes
 * is more than a window behind. A waiter STREAM_LAG_WINDOWS windows
 * behind while another keeps up holds nobody back: it is detached and
 * fed from the kept body, a window at a time as its client drains, until
 * it has caught up and takes the body as it comes again; with nothing
 * kept (the body is past keep), it is cut alone. A waiter that joins
 * once the body has begun is fed the same way from the first byte.
 */

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/hlist.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_stream.h"

#define STREAM_MAGIC		0x5354524du	/* "STRM" */
#define STREAM_RECHECK_MS	50	/* a paused stream, if no client drains */
#define STREAM_LAG_WINDOWS	2	/* this many windows behind: detached */

/*
 * The body from its first byte, while all of it fits keep. Pieces of it
 * go to clients by reference, each holding the body until it is sent,
 * so that it outlives the stream (and a next response) for them.
 */
struct kept {
	unsigned		 refs;
	struct evbuffer		*body;
};

struct stream {
	uint32_t		 magic;
	struct waiters		 waiters;	/* take the body as it comes */
	struct waiters		 behind;	/* fed from kept, at their pace */
	size_t			 window;	/* bytes a client may lag */
	int			 recheck;	/* paused: look again, as a client
						 * that left drains nothing */
	int			 paused;	/* the fastest client is behind */
	struct event		*recheck_ev;
	stream_resume_cb	*resume;
	void			*arg;
	struct upstream_response *head;		/* for late waiters */
	struct kept		*kept;		/* or NULL */
	size_t			 keep;
	uint64_t		 body_bytes;	/* of the body so far */
};

static void check_resume(struct stream *st);

/* ---- the body kept ------------------------------------------------- */

static struct kept *
kept_new(void)
{
	struct kept *k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	if ((k->body = evbuffer_new()) == NULL) {
		free(k);
		return NULL;
	}
	k->refs = 1;
	return k;
}

static void
kept_unref(struct kept **kp)
{
	struct kept *k = *kp;

	*kp = NULL;
	if (k == NULL || --k->refs > 0)
		return;
	evbuffer_free(k->body);
	free(k);
}

static void
on_piece_sent(const void *data, size_t len, void *arg)
{
	struct kept *k = arg;

	kept_unref(&k);
}

/* len bytes of k's body from off, by reference; NULL on no memory. */
static struct evbuffer *
kept_piece(struct kept *k, uint64_t off, size_t len)
{
	struct evbuffer_iovec *v = NULL;
	struct evbuffer_ptr at;
	struct evbuffer *piece;
	size_t take;
	int i, n;

	if ((piece = evbuffer_new()) == NULL)
		return NULL;
	if (evbuffer_ptr_set(k->body, &at, (size_t)off, EVBUFFER_PTR_SET) == -1)
		goto fail;
	n = evbuffer_peek(k->body, (ev_ssize_t)len, &at, NULL, 0);
	if (n > 0 && (v = calloc((size_t)n, sizeof(*v))) == NULL)
		goto fail;
	n = evbuffer_peek(k->body, (ev_ssize_t)len, &at, v, n);
	for (i = 0; i < n && len > 0; i++) {
		take = MIN(v[i].iov_len, len);	/* the last may run on */
		if (evbuffer_add_reference(piece, v[i].iov_base, take,
		    on_piece_sent, k) == -1)
			goto fail;
		k->refs++;
		len -= take;
	}
	free(v);
	if (len == 0)
		return piece;
fail:
	free(v);
	evbuffer_free(piece);	/* lets go of what it referenced */
	return NULL;
}

/* ---- the stream ------------------------------------------------------ */

static void
on_recheck(evutil_socket_t fd, short what, void *arg)
{
	struct stream *st = arg;

	assert(st->magic == STREAM_MAGIC);
	check_resume(st);	/* a client that left drains nothing */
}

struct stream *
stream_new(struct event_base *base, size_t window, int recheck,
    stream_resume_cb *resume, void *arg)
{
	struct stream *st;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	if ((st->recheck_ev = evtimer_new(base, on_recheck, st)) == NULL) {
		free(st);
		return NULL;
	}
	st->magic = STREAM_MAGIC;
	TAILQ_INIT(&st->waiters);
	TAILQ_INIT(&st->behind);
	st->window = window;
	st->recheck = recheck;
	st->resume = resume;
	st->arg = arg;
	return st;
}

void
stream_free(struct stream **stp)
{
	struct stream *st = *stp;

	if (st == NULL)
		return;
	assert(st->magic == STREAM_MAGIC && TAILQ_EMPTY(&st->waiters) &&
	    TAILQ_EMPTY(&st->behind));
	stream_reset(st);
	event_free(st->recheck_ev);
	st->magic = 0;
	free(st);
	*stp = NULL;
}

int
stream_wanted(const struct upstream_response *resp, int cached)
{
	const char *cl = hl_find(&resp->headers, "Content-Length");
	/* Its digits were checked on the upstream side. */
	long long len = cl != NULL ? strtoll(cl, NULL, 10) : -1;

	/* No body, or an answer a flight may replace (a 5xx by a stale
	 * entry, a 304 by the stored body); and a short body comes whole. */
	if (resp->status < 200 || resp->status == 204 || resp->status == 304 ||
	    (cached && resp->status >= 500))
		return 0;
	return len < 0 || len > STREAM_MIN_BYTES;
}

void
stream_begin(struct stream *st, const struct upstream_response *resp,
    size_t keep)
{
	assert(st->magic == STREAM_MAGIC && st->head == NULL);
	st->body_bytes = 0;
	if (keep == 0)
		return;
	if ((st->head = calloc(1, sizeof(*st->head))) == NULL ||
	    (st->kept = kept_new()) == NULL) {
		free(st->head);
		st->head = NULL;
		return;		/* a late waiter gets none */
	}
	hl_init(&st->head->headers);
	st->head->status = resp->status;
	hdr_copy(&resp->headers, &st->head->headers, 0);
	st->keep = keep;
}

void
stream_reset(struct stream *st)
{
	assert(TAILQ_EMPTY(&st->behind));
	upstream_response_free(&st->head);
	kept_unref(&st->kept);	/* pieces still queued keep it */
	st->keep = 0;
	st->body_bytes = 0;
}

/* A sibling worker's waiter goes first, so that each piece reaches the
 * sibling before this worker's own clients, and its clients get it while
 * these do. */
static void
add_waiter(struct stream *st, struct waiter *w, int lead)
{
	if (w->peer)
		TAILQ_INSERT_HEAD(&st->waiters, w, stream_link);
	else
		TAILQ_INSERT_TAIL(&st->waiters, w, stream_link);
	w->stream = st;
	w->lead = lead;
}

int
stream_join(struct stream *st, struct waiter *w,
    const struct upstream_response *resp, int lead)
{
	assert(st->magic == STREAM_MAGIC && w->stream == NULL);
	if (w->ops->start(w, resp, !lead) == -1)
		return -1;
	w->fed = st->body_bytes;
	w->behind = 0;
	add_waiter(st, w, lead);
	return 0;
}

int
stream_join_all(struct stream *st, struct waiters *list,
    const struct upstream_response *resp, struct waiter *first)
{
	struct waiter *w, *next;
	int siblings, led = 0;

	for (siblings = 1; siblings >= 0; siblings--) {
		for (w = TAILQ_FIRST(list); w != NULL; w = next) {
			next = TAILQ_NEXT(w, flight_link);
			if (!w->peer != !siblings ||
			    stream_join(st, w, resp, w == first) == -1)
				continue;
			TAILQ_REMOVE(list, w, flight_link);
			w->flight = NULL;
			led |= w == first;
		}
	}
	return led;
}

/* w, out of the stream's lists, ends: whole only if ok. */
static void
end_waiter(struct waiter *w, int ok, enum outcome lead_o, int64_t lead_ms)
{
	w->stream = NULL;
	w->behind = 0;
	w->ops->end(w, ok, w->lead ? lead_o : OUT_COLLAPSED,
	    w->lead ? lead_ms : -1);
}

/* w, out of the stream's lists, is too far behind to be fed: cut. */
static void
cut_off(struct waiter *w)
{
	w->ops->lag(w, 1);
	end_waiter(w, 0, OUT_FETCHED, -1);
}

/*
 * w, behind, has taken what it was given (or just joined): the next
 * window of the kept body, by reference. Once it has all of the body so
 * far, it takes the body as it comes again.
 */
static void
feed(struct stream *st, struct waiter *w)
{
	uint64_t left = st->body_bytes - w->fed;
	struct evbuffer *piece;

	assert(w->behind && st->kept != NULL);
	if (left > 0 && (piece = kept_piece(st->kept, w->fed,
	    (size_t)MIN(left, st->window))) != NULL) {
		w->fed += evbuffer_get_length(piece);
		(void)w->ops->data(w, piece);
		evbuffer_free(piece);
	}	/* out of memory: it waits for the end */
	if (w->fed < st->body_bytes)
		return;
	TAILQ_REMOVE(&st->behind, w, stream_link);
	w->behind = 0;
	add_waiter(st, w, w->lead);
}

int
stream_join_late(struct stream *st, struct waiter *w)
{
	assert(st->magic == STREAM_MAGIC && w->stream == NULL);
	if (st->head == NULL || st->kept == NULL ||
	    w->ops->start(w, st->head, 1) == -1)
		return -1;
	w->stream = st;
	w->lead = 0;
	w->fed = 0;
	w->behind = 1;
	TAILQ_INSERT_TAIL(&st->behind, w, stream_link);
	feed(st, w);
	return 0;
}

/* The body so far, while all of it fits; once it does not, the waiters
 * fed from it are cut. */
static void
keep_body(struct stream *st, struct evbuffer *chunk)
{
	struct waiter *w;

	if (st->kept == NULL || (evbuffer_get_length(st->kept->body) +
	    evbuffer_get_length(chunk) <= st->keep &&
	    evbuffer_add_buffer_reference(st->kept->body, chunk) == 0))
		return;
	kept_unref(&st->kept);	/* no longer from the start */
	while ((w = TAILQ_FIRST(&st->behind)) != NULL) {
		TAILQ_REMOVE(&st->behind, w, stream_link);
		cut_off(w);
	}
}

/* The backlog of the fastest waiter that takes the body as it comes. */
static size_t
fastest(const struct stream *st)
{
	struct waiter *w;
	size_t low = SIZE_MAX;

	TAILQ_FOREACH(w, &st->waiters, stream_link)
		low = MIN(low, w->ops->backlog(w));
	return low;
}

/* Another keeps up: those that owed more than STREAM_LAG_WINDOWS before
 * the piece of len bytes just queued leave the live body, to be fed from
 * the kept one, or are cut with none kept. */
static void
detach_laggards(struct stream *st, size_t len)
{
	struct waiter *w, *next;

	for (w = TAILQ_FIRST(&st->waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, stream_link);
		if (w->ops->backlog(w) <= st->window * STREAM_LAG_WINDOWS + len)
			continue;
		TAILQ_REMOVE(&st->waiters, w, stream_link);
		if (st->kept == NULL) {
			cut_off(w);
			continue;
		}
		TAILQ_INSERT_TAIL(&st->behind, w, stream_link);
		w->behind = 1;
		w->ops->lag(w, 0);
	}
}

/*
 * Judged on what each owed before this piece (a piece larger than the
 * window is owed whole by all at first): a waiter far behind is detached
 * while another keeps up; the source pauses once the fastest owes more
 * than the window, this piece included.
 */
int
stream_data(struct stream *st, struct evbuffer *chunk)
{
	size_t len = evbuffer_get_length(chunk), low = SIZE_MAX, owed;
	struct waiter *w;

	assert(st->magic == STREAM_MAGIC);
	keep_body(st, chunk);
	st->body_bytes += len;
	TAILQ_FOREACH(w, &st->waiters, stream_link) {
		owed = w->ops->backlog(w);
		low = MIN(low, owed);
		(void)w->ops->data(w, chunk);
		w->fed += len;
	}
	if (low <= st->window)
		detach_laggards(st, len);
	if (TAILQ_EMPTY(&st->waiters))
		return 0;	/* none to pace it: on to the end, kept */
	if (fastest(st) <= st->window)
		return 0;
	st->paused = 1;		/* the fastest is behind too */
	if (st->recheck)
		timer_arm(st->recheck_ev, STREAM_RECHECK_MS);
	return UPSTREAM_PAUSE;
}

/* The source goes on once the fastest waiter has caught up to half a
 * window, or none is left to pace it. */
static void
check_resume(struct stream *st)
{
	if (!st->paused)
		return;
	if (!TAILQ_EMPTY(&st->waiters) && fastest(st) > st->window / 2) {
		if (st->recheck)
			timer_arm(st->recheck_ev, STREAM_RECHECK_MS);
		return;
	}
	st->paused = 0;
	evtimer_del(st->recheck_ev);
	st->resume(st->arg);
}

void
stream_drained(struct waiter *w)
{
	struct stream *st = w->stream;

	if (st == NULL)
		return;
	assert(st->magic == STREAM_MAGIC);
	if (w->behind)
		feed(st, w);
	check_resume(st);
}

void
stream_leave(struct waiter *w)
{
	if (w->stream == NULL)
		return;
	if (w->behind)
		TAILQ_REMOVE(&w->stream->behind, w, stream_link);
	else
		TAILQ_REMOVE(&w->stream->waiters, w, stream_link);
	w->stream = NULL;
	w->behind = 0;
}

/* A waiter behind gets the rest of the kept body at once, by reference,
 * and ends with the others. */
static void
end_behind(struct stream *st, struct waiter *w, int ok, enum outcome lead_o,
    int64_t lead_ms)
{
	struct evbuffer *rest;

	if (ok && w->fed < st->body_bytes) {
		if ((rest = kept_piece(st->kept, w->fed,
		    (size_t)(st->body_bytes - w->fed))) == NULL)
			ok = 0;		/* out of memory: cut short */
		else
			(void)w->ops->data(w, rest);
		if (rest != NULL)
			evbuffer_free(rest);
	}
	end_waiter(w, ok, lead_o, lead_ms);
}

void
stream_end(struct stream *st, int ok, enum outcome lead_o, int64_t lead_ms)
{
	struct waiter *w;

	assert(st->magic == STREAM_MAGIC);
	evtimer_del(st->recheck_ev);
	st->paused = 0;
	while ((w = TAILQ_FIRST(&st->behind)) != NULL) {
		TAILQ_REMOVE(&st->behind, w, stream_link);
		end_behind(st, w, ok, lead_o, lead_ms);
	}
	while ((w = TAILQ_FIRST(&st->waiters)) != NULL) {
		TAILQ_REMOVE(&st->waiters, w, stream_link);
		end_waiter(w, ok, lead_o, lead_ms);
	}
}
