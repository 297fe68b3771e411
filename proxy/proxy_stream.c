/*
 * struct stream: one response, its waiters, their window, and what a late
 * waiter is replayed. It calls its waiters' struct waiter_ops and its
 * source's resume callback, and nothing else of the flow.
 */

#include <assert.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "proxy/proxy_hdr.h"
#include "proxy/proxy_stream.h"

#define STREAM_MAGIC		0x5354524du	/* "STRM" */
#define STREAM_RECHECK_MS	50	/* a paused stream, if no client drains */

struct stream {
	uint32_t		 magic;
	struct waiters		 waiters;	/* replies under way */
	size_t			 window;	/* bytes a client may lag */
	int			 recheck;	/* paused: look again, as a client
						 * that left drains nothing */
	int			 paused;	/* a client is behind */
	struct event		*recheck_ev;
	stream_resume_cb	*resume;
	void			*arg;
	struct upstream_response *head;		/* for late waiters, and */
	struct evbuffer		*replay;	/* the body while all is kept */
	size_t			 keep;
};

static void
on_recheck(evutil_socket_t fd, short what, void *arg)
{
	struct stream *st = arg;

	assert(st->magic == STREAM_MAGIC);
	if (st->paused)
		stream_drained(st);	/* a client that left drains nothing */
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
	assert(st->magic == STREAM_MAGIC && TAILQ_EMPTY(&st->waiters));
	stream_reset(st);
	event_free(st->recheck_ev);
	st->magic = 0;
	free(st);
	*stp = NULL;
}

int
stream_wanted(const struct upstream_response *resp, int cached)
{
	const char *cl = evhttp_find_header(&resp->headers, "Content-Length");
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
	if (keep == 0)
		return;
	if ((st->head = calloc(1, sizeof(*st->head))) == NULL ||
	    (st->replay = evbuffer_new()) == NULL) {
		free(st->head);
		st->head = NULL;
		return;		/* a late waiter gets none */
	}
	TAILQ_INIT(&st->head->headers);
	st->head->status = resp->status;
	hdr_copy(&resp->headers, &st->head->headers, 0);
	st->keep = keep;
}

void
stream_reset(struct stream *st)
{
	upstream_response_free(&st->head);
	if (st->replay != NULL)
		evbuffer_free(st->replay);
	st->replay = NULL;
	st->keep = 0;
}

int
stream_replayable(const struct stream *st)
{
	return st->head != NULL && st->replay != NULL;
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

/* A copy of src's bytes (src holds references, which cannot be
 * referenced again), or NULL. */
static struct evbuffer *
copy_of(struct evbuffer *src)
{
	int n = evbuffer_peek(src, -1, NULL, NULL, 0);
	struct evbuffer_iovec *v = NULL;
	struct evbuffer *dst;

	if ((dst = evbuffer_new()) == NULL)
		return NULL;
	if (n > 0 && (v = calloc((size_t)n, sizeof(*v))) == NULL)
		goto fail;
	n = evbuffer_peek(src, -1, NULL, v, n);
	for (int i = 0; i < n; i++)
		if (evbuffer_add(dst, v[i].iov_base, v[i].iov_len) == -1)
			goto fail;
	free(v);
	return dst;
fail:
	free(v);
	evbuffer_free(dst);
	return NULL;
}

int
stream_join_late(struct stream *st, struct waiter *w)
{
	struct evbuffer *sofar;

	assert(st->magic == STREAM_MAGIC);
	if (!stream_replayable(st) || (sofar = copy_of(st->replay)) == NULL)
		return -1;
	if (stream_join(st, w, st->head, 0) == -1) {
		evbuffer_free(sofar);
		return -1;
	}
	(void)w->ops->data(w, sofar);
	evbuffer_free(sofar);
	return 0;
}

/* The body so far, while all of it is kept. */
static void
keep_body(struct stream *st, struct evbuffer *chunk)
{
	if (st->replay == NULL)
		return;
	if (evbuffer_get_length(st->replay) + evbuffer_get_length(chunk) >
	    st->keep || evbuffer_add_buffer_reference(st->replay, chunk) == -1) {
		evbuffer_free(st->replay);	/* no longer from the start */
		st->replay = NULL;
	}
}

int
stream_data(struct stream *st, struct evbuffer *chunk)
{
	struct waiter *w;
	size_t most = 0, queued;

	assert(st->magic == STREAM_MAGIC);
	keep_body(st, chunk);
	TAILQ_FOREACH(w, &st->waiters, stream_link) {
		queued = w->ops->data(w, chunk);
		most = MAX(most, queued);
	}
	if (most <= st->window)
		return 0;
	st->paused = 1;
	if (st->recheck)
		timer_arm(st->recheck_ev, STREAM_RECHECK_MS);
	return UPSTREAM_PAUSE;
}

/* The source goes on once every client has caught up to half a window. */
void
stream_drained(struct stream *st)
{
	size_t low = st->window / 2;
	struct waiter *w;

	assert(st->magic == STREAM_MAGIC);
	if (!st->paused)
		return;
	TAILQ_FOREACH(w, &st->waiters, stream_link) {
		if (w->ops->backlog(w) > low) {
			if (st->recheck)
				timer_arm(st->recheck_ev, STREAM_RECHECK_MS);
			return;
		}
	}
	st->paused = 0;
	evtimer_del(st->recheck_ev);
	st->resume(st->arg);
}

void
stream_leave(struct waiter *w)
{
	if (w->stream == NULL)
		return;
	TAILQ_REMOVE(&w->stream->waiters, w, stream_link);
	w->stream = NULL;
}

void
stream_end(struct stream *st, int ok, enum outcome lead_o, int64_t lead_ms)
{
	struct waiter *w;

	assert(st->magic == STREAM_MAGIC);
	evtimer_del(st->recheck_ev);
	st->paused = 0;
	while ((w = TAILQ_FIRST(&st->waiters)) != NULL) {
		TAILQ_REMOVE(&st->waiters, w, stream_link);
		w->stream = NULL;
		w->ops->end(w, ok, w->lead ? lead_o : OUT_COLLAPSED,
		    w->lead ? lead_ms : -1);
	}
}
