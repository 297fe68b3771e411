#ifndef PROXY_PROXY_FLOW_H
#define PROXY_PROXY_FLOW_H

/*
 * Private to the request flow: the types of its three state machines and
 * each file's face, what the other files of the flow may call.
 *
 *	proxy_req.c	struct req: one client request
 *	proxy_flight.c	struct flight: one key's requests in this process
 *	proxy_refresh.c	struct refresh: one fetch, its lock and its store
 *	proxy_vary.c	the variants of a key whose responses vary
 *	proxy_status.c	what an answer is called: Cache-Status, counters,
 *			the access-log record
 *	proxy_flow.c	what spans them all: reload, drain, shutdown
 *	proxy_peer.c	workers > 1: a response in flight, shared with the
 *			sibling workers whose requests wait for it
 *
 * A machine's fields are its own: the others read a report it hands over
 * or call its face. Nothing outside proxy/ sees these types.
 */

#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_key.h"
#include "common/util.h"
#include "conf/conf.h"
#include "upstream/upstream.h"

#define FLOW_KEY_MAX		(CACHE_KEY_MAX + 1 + CACHE_VARIANT_MAX)
#define VARY_MARKER		"X-Corral-Vary-Marker"	/* never from upstream */
#define VARY_SPEC_MAX		512
#define FAILURE_MAX		16	/* "503", "timeout", ... */
#define PASS_BODY_MAX		((size_t)1 << 30)	/* responses not stored */
#define HTTP_BAD_GATEWAY	502
#define HTTP_GATEWAY_TIMEOUT	504
#define HTTP_MISDIRECTED	421
/* A response longer than this (or of unknown length) is streamed to its
 * clients as it arrives; a shorter one is answered whole. */
#define STREAM_MIN_BYTES	(64 * 1024)

#define MIN(a, b)		((a) < (b) ? (a) : (b))
#define MAX(a, b)		((a) > (b) ? (a) : (b))

struct proxy;
struct flight;
struct refresh;

/* What a request was answered with; decides Cache-Status and counters. */
enum outcome {
	OUT_NONE,
	OUT_HIT,		/* fresh entry */
	OUT_STALE,		/* stale entry, refresh in the background */
	OUT_STORED,		/* fetched for this request and stored */
	OUT_FETCHED,		/* fetched for this request, not stored */
	OUT_COLLAPSED,		/* answered by another request's fetch */
	OUT_WAIT_TIMEOUT,	/* waited lock_wait, then fetched directly */
	OUT_DEGRADED,		/* Redis unavailable: fetched directly */
	OUT_BYPASS,		/* not cacheable: passed through */
	OUT_METHOD,		/* not GET or HEAD: passed through */
	OUT_UPSTREAM_ERROR,	/* the upstream failed: 502 or 504 */
	OUT_STALE_ERROR,	/* the upstream failed: stale served instead */
	OUT_BACKOFF,		/* the key's refreshes back off: its last error */
	OUT_REJECTED,		/* malformed or over a limit: 4xx */
	OUT_UNAVAILABLE,	/* shutting down, or out of memory: 503 */
};

/* ---- proxy_req.c ---------------------------------------------------- */

enum req_step {
	REQ_RECV,
	REQ_PASS,
	REQ_JOIN,
	REQ_DELIVER,
	REQ_FINISH,
};

struct req {
	uint32_t		 magic;
	struct proxy		*px;
	struct evhttp_request	*ev;
	enum req_step		 step;
	int			 route;		/* index, or -1 */
	struct conf_route	 rt;		/* its settings when it began */
	int			 head;
	int			 pass_kind;	/* OUT_BYPASS or OUT_METHOD */
	char			*uri;		/* path[?query] */
	char			*host;
	char			 key[FLOW_KEY_MAX + 1];
	TAILQ_ENTRY(req)	 all_link;
	struct upstream_fetch	*fetch;		/* PASS only */
	int			 reject_code;	/* OUT_REJECTED */
	int			 peer;		/* a sibling worker's (proxy_peer.c):
						 * it takes a stream or a 204 */
	int			 credentials;	/* Authorization or Cookie sent */
	int			 conditional;	/* If-None-Match or If-Modified-Since */
	int			 early_due;	/* its near-cache hit rolled XFetch */
	int			 hit_for_miss;	/* passed: the key is uncacheable */
	int			 streaming;	/* its reply is under way */
	int			 stream_status;	/* ... with this status line */
	int			 paused;	/* PASS: its fetch waits for it */
	struct event		*end_ev;	/* its reply ends once sent */
	uint64_t		 streamed;	/* body bytes handed to it */
	int			 not_forwarded;	/* a backoff answered: no fetch */
	int			 upstream_status;	/* fwd-status, if not the entry's */
	char			 failure[FAILURE_MAX];	/* what the upstream did */
	char			 head_length[24];	/* PASS HEAD: origin's */
	int64_t			 t_start_us;
	int64_t			 t_join_us;
	int64_t			 upstream_ms;	/* -1: none run for it */
	int64_t			 waited_us;	/* from joining to its answer */

	/* The answer, set before DELIVER. */
	enum outcome		 outcome;
	struct cache_entry	*entry;
	enum upstream_result	 uerr;

	/* proxy_flight.c's alone: the flight it is in. */
	struct flight		*flight;
	TAILQ_ENTRY(req)	 flight_link;
};

/* What a flight hands each request it answers. */
struct handover {
	enum outcome		 outcome;
	struct cache_entry	*entry;		/* the request takes it; or NULL */
	enum upstream_result	 uerr;
	int			 not_forwarded;
	const char		*failure;
	int64_t			 upstream_ms;	/* -1: not this request's fetch */
	int			 upstream_status;
};

/* The flight answered req (out of the flight already): it is delivered. */
void	req_answer(struct req *req, const struct handover *h);
/* The flight's answer is one client's, or the key is uncacheable
 * (hit_for_miss): req goes to the upstream itself. */
void	req_pass(struct req *req, int hit_for_miss);
/* req's key varies on spec: it goes on to its own variant. */
void	req_to_variant(struct req *req, const char *spec);
struct evkeyvalq *req_headers(const struct req *req);
/* Appends what goes upstream for req to dst: its end-to-end headers less
 * those flags name, and who asked. */
void	req_forward_headers(struct req *req, struct evkeyvalq *dst, int flags);
/* The client's address, or NULL when the connection is gone. */
char	*req_client_address(struct req *req);
/* Should a response with this head be streamed as it arrives? A flight
 * (cached) keeps 5xx whole: a stale entry may answer instead. */
int	stream_wanted(const struct upstream_response *resp, int cached);
/* Starts req's reply with resp's status and headers, the body to come
 * (collapsed: another request's fetch). 0, or -1 when its client is gone
 * (req is then answered whole, or passed, when the fetch ends). */
int	req_stream_start(struct req *req, const struct upstream_response *resp,
	    int collapsed);
/* Sends a piece of the body by reference; returns the bytes still queued
 * for the client (0 once it is gone). */
size_t	req_stream_data(struct req *req, struct evbuffer *chunk);
size_t	req_stream_backlog(struct req *req);
/* The body ended, whole (ok) or cut short (the client's connection is
 * then closed: a cut body is never passed off as whole); req is done. */
void	req_stream_end(struct req *req, int ok, enum outcome o,
	    int64_t upstream_ms);
/* A sibling worker asks for the response in flight for key: req joins
 * that flight (flight_attach_peer), or is answered 204 at once. */
void	flow_peer_recv(struct proxy *px, struct evhttp_request *ev,
	    const char *key);
void	req_abandon_all(void);
void	req_remap(const struct conf *old, const struct conf *new);
void	req_shutdown_all(void);

/* ---- proxy_flight.c ------------------------------------------------- */

/* Joins the flight for key, starting one if there is none. The flight
 * may answer req before this returns. 0, or -1 on no memory. */
int	flight_join(struct proxy *px, struct req *req, const char *key,
	    const char *uri, int route, const struct conf_route *rt,
	    int early_due);
/* req leaves its flight, if it is in one, unanswered. */
void	flight_leave(struct req *req);
/* A sibling's request (req->peer) joins the flight of its key if that
 * flight's fetch runs and may still stream to it from the first byte:
 * 0, or -1 (nothing to stream: req is not in a flight). */
int	flight_attach_peer(struct proxy *px, struct req *req);
/* A streamed piece reached req's client: the fetch may go on. */
void	flight_stream_drained(struct req *req);
/* Has a hit on e drawn an early refresh (XFetch)? */
int	xfetch_due(const struct conf_route *rt, const struct cache_entry *e);
void	flight_abandon_all(void);
void	flight_remap(const struct conf *new);
void	flight_shutdown_all(void);

/* ---- proxy_refresh.c ------------------------------------------------ */

enum refresh_mode {
	RF_LOCKED,		/* take the lock, fetch, store */
	RF_DIRECT,		/* just fetch */
};

enum refresh_result {
	RFR_NONE,
	RFR_BUSY,		/* another process holds the lock */
	RFR_CHANGED,		/* the entry was refreshed by someone else */
	RFR_FETCHED,		/* entry holds the upstream's response */
	RFR_UPSTREAM_ERROR,
	RFR_BACKOFF,		/* failure holds the error that started it */
	RFR_REDIS_ERROR,
	RFR_STOPPING,		/* the process is stopping: no fetch started */
	RFR_PASS,		/* the key is uncacheable (hit-for-miss) */
};

/* A refresh's response as it arrives (upstream_data_cb's contract), for
 * the flight that started it. */
typedef int refresh_stream_cb(const struct upstream_response *resp,
    struct evbuffer *chunk, void *arg);

/* What a refresh wants: it copies all of it. */
struct refresh_args {
	enum refresh_mode	 mode;
	const char		*key;
	const char		*uri;		/* path[?query] */
	int			 route;
	const struct conf_route	*rt;
	int			 authorized;
	const struct evkeyvalq	*headers;	/* sent upstream */
	const char		*seen_gen;	/* the generation it saw */
	struct cache_entry	*base;		/* to revalidate, or NULL */
	refresh_stream_cb	*stream;	/* NULL: the body comes whole */
};

/* What a refresh reports once it has ended. The callee may take entry. */
struct refresh_report {
	enum refresh_mode	 mode;
	enum refresh_result	 result;
	struct cache_entry	*entry;
	enum upstream_result	 uerr;
	char			 failure[FAILURE_MAX];	/* "" unless it failed */
	int			 shareable;
	int			 stored;
	int			 upstream_status;	/* when not the entry's */
	int64_t			 fetch_ms;	/* -1: no fetch ended */
	char			 variant[FLOW_KEY_MAX + 1];	/* "" or "K\nID" */
	char			 vary[VARY_SPEC_MAX];	/* the response's Vary */
	int			 partial;	/* streamed past max_entry_bytes:
						 * entry's body is not whole */
};

typedef void refresh_done_cb(struct refresh_report *rep, void *arg);

/* Starts a refresh. It reports once through cb (which may be NULL) after
 * it has ended, never from inside this call. NULL on no memory. */
struct refresh *refresh_start(struct proxy *px, const struct refresh_args *a,
	    refresh_done_cb *cb, void *arg);
/* Does this process refresh key with the lock right now? */
int	refresh_running(struct proxy *px, const char *key);
/* Its starter is gone: it goes on, and reports to nobody. */
void	refresh_detach(struct refresh *rf);
/* Goes on with a fetch its stream callback paused. */
void	refresh_resume(struct refresh *rf);
/* An upstream response as an entry of generation gen, fresh for no time
 * yet. NULL on no memory. */
struct cache_entry *entry_from_response(struct upstream_response *resp,
	    const char *gen, int64_t fetch_ms);
void	refresh_abandon_all(void);
void	refresh_remap(const struct conf *new);
void	refresh_shutdown_all(void);

/* ---- proxy_vary.c --------------------------------------------------- */

/* Does spec name any header that tells variants apart? */
int	vary_relevant(const char *spec);
/* The variant id of a request with these headers for a response that
 * varies on spec. */
void	variant_id(const char *spec, const struct evkeyvalq *headers,
	    char out[CACHE_VARIANT_MAX]);
/* Remembers what key's responses vary on (bounded). */
void	vary_learn(struct proxy *px, const char *key, const char *spec);
/* Appends "\nID" to key for a request with these headers, when key is
 * known to vary. */
void	variant_key(struct proxy *px, char key[FLOW_KEY_MAX + 1],
	    const struct evkeyvalq *headers);

/* ---- proxy_status.c ------------------------------------------------- */

/* The Cache-Status value of req's answer. */
void	cache_status(const struct req *req, int fwd_status, char *out,
	    size_t outlen);
/* The status and text of an answer Corral makes up itself. */
int	error_code(const struct req *req);
const char *error_text(const struct req *req, int code);
void	count_outcome(struct req *req);
/* Counts one finished upstream fetch: its status class and duration. */
void	count_upstream(struct proxy *px, int route,
	    const struct upstream_response *resp);
const char *method_name(enum evhttp_cmd_type cmd);
void	log_access(struct req *req, uint64_t bytes);

/* ---- proxy_peer.c --------------------------------------------------- */

/* Says in the shared table that this worker fetches key under the lock
 * (while peer siblings may ask): an entry for peer_withdraw(), or -1. */
int	peer_publish(struct proxy *px, const char *key);
void	peer_withdraw(struct proxy *px, int *entry);
/* The sibling slot whose table says it fetches key, or -1. */
int	peer_find(struct proxy *px, const char *key);
/* Asks sibling slot for its response in flight for key, as upstream.h's
 * fetch (on_data gets it as it arrives). NULL if it cannot be asked. */
struct upstream_fetch *peer_fetch(struct proxy *px, int slot, const char *key,
	    const char *uri, upstream_data_cb *on_data, upstream_done_cb *cb,
	    void *arg);

/* ---- proxy_flow.c --------------------------------------------------- */

static inline void
timer_arm(struct event *ev, int64_t ms)
{
	struct timeval tv = util_timeval(ms);

	evtimer_add(ev, &tv);
}

#endif
