/* SPDX-License-Identifier: MIT */
#ifndef UPSTREAM_UPSTREAM_H
#define UPSTREAM_UPSTREAM_H

/*
 * Fetches from the origin over HTTP on the caller's libevent loop (libcurl's
 * multi_socket interface underneath). One struct upstream per event loop;
 * any number of fetches in flight; each fetch ends in exactly one callback
 * unless it is cancelled first.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>
#include <event2/buffer.h>

#include "common/hlist.h"

struct upstream;
struct upstream_fetch;
struct upstream_response;

/*
 * Streaming: the response is handed over as it arrives. First with chunk
 * NULL once its status and headers are in (before any body), then with
 * each piece of the body. Before that head, each interim response other
 * than 100 and 101 (103 Early Hints) as it comes: chunk NULL, a status
 * below 200 and its own headers, from inside the transfer (the return
 * value is ignored). The callee may take the piece's bytes by
 * reference (evbuffer_add_buffer_reference) but must not drain it nor
 * cancel the fetch. It returns 0 to go on, or these flags:
 *	UPSTREAM_PAUSE	pause the transfer until upstream_resume()
 *	UPSTREAM_STREAM	(to the head) the body is streamed: the response
 *			keeps only its first keep_body bytes. Otherwise it
 *			keeps all of it, up to max_body_bytes.
 */
#define UPSTREAM_PAUSE	0x1
#define UPSTREAM_STREAM	0x2
typedef int upstream_data_cb(const struct upstream_response *resp,
    struct evbuffer *chunk, void *arg);

enum upstream_result {
	UPSTREAM_OK = 0,	/* a complete HTTP response (any status) */
	UPSTREAM_ERR_CONNECT,	/* could not connect, or connection refused */
	UPSTREAM_ERR_TIMEOUT,	/* connect or total timeout */
	UPSTREAM_ERR_TOO_BIG,	/* body exceeded max_body_bytes */
	UPSTREAM_ERR_PROTOCOL,	/* anything else: bad response, reset, ... */
	UPSTREAM_NOT_SENT,	/* never from upstream_fetch(): a caller that
				 * holds its fetches back (the origin budget,
				 * proxy_budget.h) gave this one up unsent */
};

struct upstream_request {
	const char		*method;	/* "GET", "HEAD", "POST", ... */
	const char		*url;		/* absolute URL */
	const struct hlist	*headers;	/* sent as given; may be NULL */
	const void		*body;		/* request body; may be NULL */
	size_t			 body_len;
	int64_t			 connect_timeout_ms;
	int64_t			 timeout_ms;
	size_t			 max_body_bytes;	/* 0: no limit */
	/* Optional streaming (on_data): a body the callee streams is not
	 * limited, and the response keeps only its first keep_body bytes
	 * (body_partial when there were more). */
	upstream_data_cb	*on_data;
	void			*data_arg;
	size_t			 keep_body;
	/* Optional: connect to this abstract Unix socket (its name without
	 * the leading NUL) instead of url's host, and only if the process
	 * listening there is listen_pid; otherwise the fetch fails with
	 * UPSTREAM_ERR_CONNECT. url still names the Host and the target. */
	const char		*abstract_socket;
	pid_t			 listen_pid;
	/* The caller's word that sending it twice does no harm (GET, HEAD,
	 * a cacheable query): origin_fetch() may send it to another server
	 * when the first failed before any byte of its response. */
	int			 replayable;
};

struct upstream_response {
	enum upstream_result	 result;
	int			 status;	/* HTTP status when UPSTREAM_OK */
	struct hlist	 headers;	/* final response's headers */
	struct evbuffer		*body;
	int			 body_partial;	/* streamed past keep_body */
	uint64_t		 body_bytes;	/* received, kept or not */
	int64_t			 elapsed_ms;
	int			 received;	/* any byte of a response came */
	char			 error[160];	/* human-readable, when not OK */
};

/* Responses refused, by why; any of them is an UPSTREAM_ERR_PROTOCOL. */
struct upstream_counters {
	uint64_t	too_many_headers;	/* over upstream_set_max_headers() */
	uint64_t	bad_framing;	/* two Content-Lengths, one with
					 * Transfer-Encoding, not a number,
					 * or a folded header line */
};

/* The callback owns resp and frees it with upstream_response_free(). */
typedef void upstream_done_cb(struct upstream_response *resp, void *arg);

struct upstream	*upstream_new(struct event_base *base);
/* Cancels every fetch in flight (no callbacks) and frees. */
void		 upstream_free(struct upstream **up);

/* Starts a fetch. NULL if it could not be started (out of memory). */
struct upstream_fetch *upstream_fetch(struct upstream *up,
		    const struct upstream_request *req, upstream_done_cb *cb,
		    void *arg);
/* Goes on with a fetch its on_data paused. */
void		 upstream_resume(struct upstream_fetch *f);
/* Has any byte of its response come (a status line at least)? */
int		 upstream_received(const struct upstream_fetch *f);
/* Stops a fetch in flight; its callback will not run. Sets *f to NULL. */
void		 upstream_cancel(struct upstream_fetch **f);
/* Number of fetches in flight. */
int		 upstream_active(const struct upstream *up);
/* A response with more header lines than n fails; 0 (the default): no
 * limit. Fetches already started keep the limit they began with. */
void		 upstream_set_max_headers(struct upstream *up, int n);
const struct upstream_counters *upstream_counters(const struct upstream *up);
/* Adds every counter of src into dst (the workers' figures summed). */
void		 upstream_counters_add(struct upstream_counters *dst,
		    const struct upstream_counters *src);

void		 upstream_response_free(struct upstream_response **resp);
const char	*upstream_result_name(enum upstream_result r);

#endif
