/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_FLOW_H
#define PROXY_PROXY_FLOW_H

/*
 * The request flow's shared words: what an answer is, what a flight hands
 * a request, and the waiter a request joins a flight or a stream with.
 * Types and limits only; each machine's face is its own header.
 *
 *	proxy_req.c	struct req: one client request, accept to reply
 *	proxy_flight.c	struct flight: one key's requests in this process
 *	proxy_refresh.c	struct refresh: one fetch, its lock and its store
 *	proxy_stream.c	struct stream: one response fanned out to N clients
 *	proxy_reply.c	every reply head a client gets
 *	proxy_outcome.c	what an answer is called: Cache-Status, counters
 *
 * Calls run one way, down: a request asks a flight, a flight asks a
 * refresh and a stream, a refresh asks cache/ and upstream/. Answers come
 * back up through the callbacks a request registers when it joins
 * (struct waiter_ops), never through a call by name.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_key.h"
#include "cache/cache_keyrule.h"
#include "common/util.h"
#include "upstream/upstream.h"

struct hlist;

#define FLOW_KEY_MAX		(CACHE_KEY_MAX + 1 + CACHE_VARIANT_MAX)
#define VARY_MARKER		"X-Corral-Vary-Marker"	/* never from upstream */
#define VARY_SPEC_MAX		512
#define FAILURE_MAX		16	/* "503", "timeout", ... */
#define FAILURE_ORIGIN_BUSY	"origin-busy"	/* not sent: no origin slot */
#define PASS_BODY_MAX		((size_t)1 << 30)	/* responses not stored */
/* A response longer than this (or of unknown length) is streamed to its
 * clients as it arrives; a shorter one is answered whole. */
#define STREAM_MIN_BYTES	(64 * 1024)

struct cache_entry;
struct evbuffer;
struct flight;
struct stream;

/* What a request was answered with; decides Cache-Status and counters. */
enum outcome {
	OUT_NONE,
	OUT_HIT,		/* fresh entry */
	OUT_STALE,		/* stale entry, refresh in the background */
	OUT_STORED,		/* fetched for this request and stored */
	OUT_FETCHED,		/* fetched for this request, not stored */
	OUT_COLLAPSED,		/* answered by another request's fetch */
	OUT_WAIT_TIMEOUT,	/* waited lock_wait: 504, nothing fetched */
	OUT_DEGRADED,		/* Redis unavailable: fetched directly */
	OUT_BYPASS,		/* not cacheable: passed through */
	OUT_METHOD,		/* not GET or HEAD: passed through */
	OUT_UPSTREAM_ERROR,	/* the upstream failed: 502 or 504 */
	OUT_STALE_ERROR,	/* the upstream failed: stale served instead */
	OUT_BACKOFF,		/* the key's refreshes back off: its last error */
	OUT_REJECTED,		/* malformed or over a limit: 4xx */
	OUT_UNAVAILABLE,	/* shutting down, or out of memory: 503 */
	OUT_GONE,		/* its client left before its answer */
};

/* A request's answer: what proxy_outcome.c names and counts. */
struct answer {
	enum outcome		 outcome;
	struct cache_entry	*entry;		/* owned; NULL: made up */
	enum upstream_result	 uerr;
	int			 not_forwarded;	/* a backoff answered: no fetch */
	char			 failure[FAILURE_MAX];	/* what the upstream did */
	int			 upstream_status;	/* fwd-status, if not the entry's */
	enum outcome		 pass_kind;	/* OUT_BYPASS, OUT_METHOD or NONE */
	int			 hit_for_miss;	/* passed: the key is uncacheable */
	const char		*not_stored;	/* fetched, not stored: why (a
						 * static token), or NULL */
	int			 reject_code;	/* OUT_REJECTED */
	enum key_rule		 key_rule;	/* what made its key */
	const char		*jwt_refused;	/* claims: why its token was
						 * refused (a static detail:
						 * proxy_jwt.h), or NULL */
};

/*
 * What a request's key holds besides its URL, that its fetch must send
 * alike (proxy_key.c): the method and body of a cached POST, and with
 * per-credential keys the one Cookie the key covers. Its pointers live as
 * long as the request; a flight and a refresh copy what they keep.
 */
struct fetch_spec {
	const char		*method;	/* "GET" or "POST" */
	const void		*body;		/* POST: sent, and stored */
	size_t			 body_len;
	const char		*cookie;	/* NULL: Cookie as the client
						 * sent it; else what is sent
						 * instead ("": none) */
	int			 per_credential;	/* the key holds the
						 * credential: not "authorized" */
	char			 url_tag[KEYRULE_TAG_MAX + 1];	/* "" or the
						 * tag that files it under its
						 * URL (a purge by URL) */
};

/* What a flight or a refresh keeps of a fetch_spec: its own copy
 * (proxy_key.h: fetch_keep, fetch_drop). */
struct fetch_kept {
	const char		*method;	/* "GET" or "POST" */
	unsigned char		*body;		/* POST: owned */
	size_t			 body_len;
	char			 url_tag[KEYRULE_TAG_MAX + 1];
};

/* What a flight hands a waiter, once. */
enum hand_kind {
	HAND_ANSWER,		/* deliver this */
	HAND_PASS,		/* fetch it yourself, without the cache */
	HAND_VARIANT,		/* the key varies: join your variant's flight */
};

struct handover {
	enum hand_kind		 kind;
	enum outcome		 outcome;
	struct cache_entry	*entry;		/* the waiter takes it; or NULL */
	enum upstream_result	 uerr;
	int			 not_forwarded;
	const char		*failure;
	int64_t			 upstream_ms;	/* -1: not this waiter's fetch */
	int			 upstream_status;
	int			 hit_for_miss;	/* HAND_PASS: the key is per user */
	const char		*vary;		/* HAND_VARIANT: what it varies on */
	const char		*not_stored;	/* fetched, not stored: why */
	const char		*head_length;	/* a pass: the origin's
						 * Content-Length, or NULL */
};

struct waiter;

/*
 * What a flight and a stream may ask of whoever joined them: the request
 * registers these when it joins, and every answer comes back through them.
 */
struct waiter_ops {
	/* The flight's answer; w is out of the flight already. */
	void	(*answer)(struct waiter *w, const struct handover *h);
	/* Appends what goes upstream for w to dst, less what flags name. */
	void	(*forward)(struct waiter *w, struct hlist *dst, int flags);
	/* Starts w's reply with resp's head, the body to come (collapsed:
	 * another request's fetch). 0, or -1 when w cannot stream. */
	int	(*start)(struct waiter *w, const struct upstream_response *resp,
		    int collapsed);
	/* A piece of the body, by reference: the bytes still queued. */
	size_t	(*data)(struct waiter *w, struct evbuffer *chunk);
	/* The bytes queued for w's client (0 once it is gone). */
	size_t	(*backlog)(struct waiter *w);
	/* w fell behind the other clients of its stream: it goes on at its
	 * own pace from the body kept, or (cut) with none kept its reply
	 * ends cut short; its end follows. */
	void	(*lag)(struct waiter *w, int cut);
	/* The body ended, whole only if ok; w is out of the stream. */
	void	(*end)(struct waiter *w, int ok, enum outcome o,
		    int64_t upstream_ms);
	/* An interim (1xx) response of the fetch w waits for, before its
	 * answer, with w's interim_arg. 0. */
	int	(*interim)(int status, const struct hlist *headers,
		    void *arg);
};

/* A request's seat in a flight, then maybe in its stream. */
struct waiter {
	const struct waiter_ops	*ops;
	struct flight		*flight;	/* waiting in it, or NULL */
	struct stream		*stream;	/* its reply streams, or NULL */
	TAILQ_ENTRY(waiter)	 flight_link;
	TAILQ_ENTRY(waiter)	 stream_link;
	const struct hlist	*headers;	/* the request's */
	const struct fetch_spec	*spec;		/* how its key's fetch goes, or
						 * NULL: a GET as it came */
	void			*interim_arg;	/* for ops->interim */
	int			 peer;		/* a sibling worker's request */
	int			 lead;		/* the stream is its own fetch */
	int			 late;		/* waits as it came once the
						 * body had begun */
	int			 behind;	/* fed from the body kept, at its
						 * own pace, not as it comes */
	uint64_t		 fed;		/* body bytes handed to it */
};

TAILQ_HEAD(waiters, waiter);

#endif
