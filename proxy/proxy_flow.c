/*
 * The life of a request, as three small state machines, each with one
 * driver function that runs its steps top to bottom. Async callbacks only
 * copy their result into the object and re-enter its driver.
 *
 * struct req: one client request.
 *	RECV -> PASS (uncacheable: straight to the upstream)
 *	     -> JOIN (wait for this key's flight)
 *	     -> DELIVER -> FINISH
 *
 * struct flight: every request of this process for one key that has no
 * answer yet. One Redis round trip per key per process, not per request.
 *	LOOKUP -> DONE (fresh, or stale: served at once, refresh started)
 *	       -> LOCK -> DONE (we fetched, or someone else filled the key)
 *	               -> WAIT -> LOCK ... (woken by a "filled" notification,
 *	                                    or by a bounded fallback poll)
 *	                       -> DIRECT -> DONE (lock_wait ran out)
 *	       -> DIRECT -> DONE (Redis is unavailable: fetch without a lock)
 *
 * struct refresh: one fetch that owns a lock token and a curl handle and
 * never points back at a client request, so a client that leaves cannot
 * break it.
 *	LOCK -> FETCH (renewing the lock) -> STORE (fenced by the token)
 *	                                  -> RELEASE (not storable, failed)
 *	     -> DONE
 */

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_key.h"
#include "cache/cache_l1.h"
#include "common/dict.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_log.h"
#include "upstream/upstream.h"

#define REQ_MAGIC		0x52455155u	/* "REQU" */
#define FLIGHT_MAGIC		0x464c4754u	/* "FLGT" */
#define REFRESH_MAGIC		0x52465348u	/* "RFSH" */
#define RENEW_DIVISOR		3	/* renew the lock every lock_ttl / 3 */
#define CACHE_STATUS_MAX	160
#define HTTP_BAD_GATEWAY	502
#define HTTP_GATEWAY_TIMEOUT	504
#define HTTP_HEADERS_TOO_LARGE	431
#define PASS_BODY_MAX		((size_t)1 << 30)	/* responses not stored */
#define BACKOFF_BASE_MS		1000	/* first pause after a failed refresh */
#define KEEP_VALIDATORS_MS	60000	/* entries with validators: kept at least */
#define FLOW_KEY_MAX		(CACHE_KEY_MAX + 1 + CACHE_VARIANT_MAX)
#define VARY_MARKER		"X-Corral-Vary-Marker"	/* never from upstream */
#define VARY_KEYS_MAX		100000	/* keys whose Vary a process remembers */
#define VARY_SPEC_MAX		512
#define VIA_TOKEN		"1.1 corral"
#define VIA_MAX			1024	/* the origin's Via lines, joined */
#define FAILURE_MAX		16	/* "503", "timeout", ... */

#define MIN(a, b)		((a) < (b) ? (a) : (b))
#define MAX(a, b)		((a) > (b) ? (a) : (b))

enum req_step {
	REQ_RECV,
	REQ_PASS,
	REQ_JOIN,
	REQ_DELIVER,
	REQ_FINISH,
};

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

struct flight;

struct req {
	uint32_t		 magic;
	struct proxy		*px;
	struct evhttp_request	*ev;
	enum req_step		 step;
	int			 route;		/* index, or -1 */
	int			 head;
	int			 pass_kind;	/* OUT_BYPASS or OUT_METHOD */
	char			*uri;		/* path[?query] */
	char			*host;
	char			 key[FLOW_KEY_MAX + 1];
	struct flight		*flight;
	TAILQ_ENTRY(req)	 flight_link;
	TAILQ_ENTRY(req)	 all_link;
	struct upstream_fetch	*fetch;		/* PASS only */
	int			 reject_code;	/* OUT_REJECTED */
	int			 credentials;	/* Authorization or Cookie sent */
	int			 conditional;	/* If-None-Match or If-Modified-Since */
	int			 early_due;	/* its near-cache hit rolled XFetch */
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
};

enum flight_step {
	FL_LOOKUP,
	FL_LOCK,
	FL_WAIT,
	FL_DIRECT,
	FL_DONE,
};

struct refresh;

struct flight {
	uint32_t		 magic;
	struct proxy		*px;
	enum flight_step	 step;
	int			 route;		/* for counters; -1 if reloaded away */
	struct conf_route	 rt;		/* its settings when the flight began */
	char			 key[FLOW_KEY_MAX + 1];
	char			*uri;
	struct evkeyvalq	 headers;	/* sent upstream */
	TAILQ_HEAD(, req)	 reqs;		/* the first one led */
	TAILQ_ENTRY(flight)	 link;
	struct cache_op		*op;
	struct refresh		*refresh;
	struct event		*poll_ev;
	struct event		*deadline_ev;
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	struct cache_entry	*prev;		/* the unusable entry it saw: for
						 * validators, and stale-if-error */
	int			 authorized;	/* the lead sends credentials */
	int			 early_due;	/* a request's XFetch roll said so */
	int			 not_forwarded;	/* answered from a backoff */
	int			 upstream_status;	/* the lead's fetch, if not
						 * the entry's (a 304) */
	int			 waited;
	int			 timed_out;	/* lock_wait ran out */
	int			 degraded;	/* Redis failed */
	int			 fill_pending;	/* a fill arrived mid-acquire */

	/* The answer, set before DONE. */
	enum outcome		 lead_outcome;
	enum outcome		 rest_outcome;
	struct cache_entry	*entry;
	enum upstream_result	 uerr;
	char			 failure[FAILURE_MAX];
	int			 shareable;
	int64_t			 upstream_ms;	/* the lead's fetch, or -1 */
	char			 vary[VARY_SPEC_MAX];	/* the answer varies on */
	char			 variant[CACHE_VARIANT_MAX];	/* the lead's */
	int			 redirect;	/* K varies: every request goes
						 * to its variant instead */
};

enum refresh_mode {
	RF_LOCKED,		/* take the lock, fetch, store */
	RF_DIRECT,		/* just fetch */
};

enum refresh_step {
	RF_LOCK,
	RF_FETCH,
	RF_STORE,
	RF_RELEASE,
	RF_DONE,
};

enum refresh_result {
	RFR_NONE,
	RFR_BUSY,		/* another process holds the lock */
	RFR_CHANGED,		/* the entry was refreshed by someone else */
	RFR_FETCHED,		/* entry holds the upstream's response */
	RFR_UPSTREAM_ERROR,
	RFR_BACKOFF,		/* failure holds the error that started it */
	RFR_REDIS_ERROR,
};

typedef void refresh_done_cb(struct refresh *rf, void *arg);

struct refresh {
	uint32_t		 magic;
	struct proxy		*px;
	enum refresh_mode	 mode;
	enum refresh_step	 step;
	int			 route;		/* for counters; -1 if reloaded away */
	struct conf_route	 rt;		/* its settings when it began */
	char			 key[FLOW_KEY_MAX + 1];
	char			*url;
	struct evkeyvalq	 headers;
	char			 token[UTIL_TOKEN_HEX + 1];
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	struct cache_entry	*base;		/* revalidated by a 304, or NULL */
	int			 authorized;
	struct cache_op		*op;
	struct cache_op		*renew_op;
	struct upstream_fetch	*fetch;
	struct event		*renew_ev;
	struct event		*done_ev;
	int			 registered;	/* in px->refreshes */
	int			 lost;		/* our token was replaced */
	int			 stored;
	int64_t			 fetch_start_us;
	int64_t			 fetch_ms;	/* -1 until the fetch ends */
	TAILQ_ENTRY(refresh)	 link;
	refresh_done_cb		*cb;
	void			*cb_arg;

	enum refresh_result	 result;
	struct cache_entry	*entry;
	enum upstream_result	 uerr;
	char			 failure[FAILURE_MAX];	/* "" unless it failed */
	int			 shareable;
	int64_t			 sie_ms;	/* stale-if-error of the entry */
	int			 upstream_status;	/* when not the entry's */
	char			 variant[FLOW_KEY_MAX + 1];	/* "" or "K\nID" */
	char			 vary[VARY_SPEC_MAX];	/* the response's Vary */
	struct cache_entry	*marker;	/* stored at K when it varies */
};

/* Every live object, for shutdown. */
static TAILQ_HEAD(, req)	all_reqs = TAILQ_HEAD_INITIALIZER(all_reqs);
static TAILQ_HEAD(, flight)	all_flights = TAILQ_HEAD_INITIALIZER(all_flights);
static TAILQ_HEAD(, refresh)	all_refreshes = TAILQ_HEAD_INITIALIZER(all_refreshes);

static void req_run(struct req *req);
static void flight_run(struct flight *fl);
static void refresh_run(struct refresh *rf);

/* ================================================================
 * Vary
 *
 * A response with Vary is stored as one variant of its key, "K\nID",
 * where ID hashes the request's values of the headers it varies on; a
 * marker at K names them. Each process remembers K's Vary so that later
 * requests go straight to their variant.
 * ================================================================ */

/*
 * The next header name of a Vary list at *p that tells variants apart,
 * with its length in *n, or NULL at the end; *p moves past it.
 * Accept-Encoding never does: Corral asks the upstream for identity and
 * stores only that.
 */
static const char *
vary_next(const char **p, size_t *n)
{
	const char *name;

	while (**p != '\0') {
		while (**p == ' ' || **p == '\t' || **p == ',')
			(*p)++;
		name = *p;
		*n = strcspn(name, ", \t");
		*p += *n;
		if (*n > 0 && !(*n == 15 &&
		    strncasecmp(name, "accept-encoding", 15) == 0))
			return name;
	}
	return NULL;
}

/* Does spec name any header that tells variants apart? */
static int
vary_relevant(const char *spec)
{
	size_t n;

	return vary_next(&spec, &n) != NULL;
}

static uint64_t
fnv(uint64_t h, const char *s, size_t n, int fold)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)(fold ? tolower((unsigned char)s[i]) : s[i]);
		h *= 1099511628211ULL;
	}
	return h;
}

/* The variant id of a request with these headers for a response that
 * varies on spec. */
static void
variant_id(const char *spec, const struct evkeyvalq *headers,
    char out[CACHE_VARIANT_MAX])
{
	uint64_t h = 1469598103934665603ULL;
	const struct evkeyval *kv;
	const char *name;
	size_t n;

	while ((name = vary_next(&spec, &n)) != NULL) {
		h = fnv(h, name, n, 1);
		h = fnv(h, "\0", 1, 0);
		TAILQ_FOREACH(kv, headers, next) {
			if (strlen(kv->key) == n &&
			    strncasecmp(kv->key, name, n) == 0) {
				h = fnv(h, kv->value, strlen(kv->value), 0);
				h = fnv(h, ",", 1, 0);
			}
		}
		h = fnv(h, "\1", 1, 0);
	}
	snprintf(out, CACHE_VARIANT_MAX, "%016" PRIx64, h);
}

/* Remembers what key's responses vary on (bounded). */
static void
vary_learn(struct proxy *px, const char *key, const char *spec)
{
	char *old = dict_get(px->vary, key), *copy;

	if (old != NULL && strcmp(old, spec) == 0)
		return;
	if (old == NULL && dict_count(px->vary) >= VARY_KEYS_MAX)
		return;		/* still correct: one more lookup each time */
	if ((copy = strdup(spec)) == NULL)
		return;
	if (dict_set(px->vary, key, copy) == -1) {
		free(copy);
		return;
	}
	free(old);
}

/* Appends "\nID" to base for a request with these headers, when base is
 * known to vary. */
static void
variant_key(struct proxy *px, char key[FLOW_KEY_MAX + 1],
    const struct evkeyvalq *headers)
{
	const char *spec = dict_get(px->vary, key);
	char id[CACHE_VARIANT_MAX];

	if (spec == NULL || strchr(key, '\n') != NULL)
		return;
	variant_id(spec, headers, id);
	snprintf(key + strlen(key), FLOW_KEY_MAX + 1 - strlen(key), "\n%s", id);
}

static void
free_spec(const char *key, void *value, void *arg)
{
	free(value);
}

void
flow_free_vary(struct proxy *px)
{
	if (px->vary == NULL)
		return;
	dict_foreach(px->vary, free_spec, NULL);
	dict_free(&px->vary);
}

/* ================================================================
 * refresh
 * ================================================================ */

static void
timer_arm(struct event *ev, int64_t ms)
{
	struct timeval tv = util_timeval(ms);

	evtimer_add(ev, &tv);
}

static const struct conf_route *
route_of(const struct proxy *px, int route)
{
	assert(route >= 0 && route < px->conf->nroutes);
	return &px->conf->routes[route];
}

/* Counts one finished upstream fetch: its status class and duration. */
static void
count_upstream(struct proxy *px, int route, const struct upstream_response *resp)
{
	struct stats *st = px->stats;

	STAT_OBSERVE(st, route, upstream_duration, resp->elapsed_ms / 1000.0);
	if (resp->result == UPSTREAM_ERR_TIMEOUT) {
		STAT_INC(st, route, upstream_timeouts);
		STAT_INC(st, route, upstream_errors);
	} else if (resp->result != UPSTREAM_OK) {
		STAT_INC(st, route, upstream_failures);
		STAT_INC(st, route, upstream_errors);
	} else if (resp->status >= 500) {
		STAT_INC(st, route, upstream_5xx);
		STAT_INC(st, route, upstream_errors);
	} else if (resp->status >= 400) {
		STAT_INC(st, route, upstream_4xx);
	} else if (resp->status >= 300) {
		STAT_INC(st, route, upstream_3xx);
	} else {
		STAT_INC(st, route, upstream_2xx);
	}
}

static void
mark_lost(struct refresh *rf)
{
	if (rf->lost)
		return;
	rf->lost = 1;
	STAT_INC(rf->px->stats, rf->route, lock_lost);
	log_warn("lock for %s was taken over; this fetch will not be stored",
	    rf->key);
}

static void
on_refresh_done(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	if (rf->cb != NULL)
		rf->cb(rf, rf->cb_arg);
	TAILQ_REMOVE(&all_refreshes, rf, link);
	rf->px->nrefreshes--;
	entry_unref(&rf->entry);
	entry_unref(&rf->base);
	entry_unref(&rf->marker);
	evhttp_clear_headers(&rf->headers);
	event_free(rf->renew_ev);
	event_free(rf->done_ev);
	free(rf->url);
	rf->magic = 0;
	free(rf);
}

/* Stops all work and reports from outside the current call stack. */
static void
refresh_end(struct refresh *rf)
{
	rf->step = RF_DONE;
	evtimer_del(rf->renew_ev);
	cache_op_cancel(&rf->op);
	cache_op_cancel(&rf->renew_op);
	upstream_cancel(&rf->fetch);
	if (rf->registered) {
		dict_del(rf->px->refreshes, rf->key);
		rf->registered = 0;
	}
	event_active(rf->done_ev, 0, 0);
}

static void
on_renewed(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->renew_op = NULL;
	if (r == FENCE_OK)
		STAT_INC(rf->px->stats, rf->route, lock_renewals);
	else if (r == FENCE_LOST)
		mark_lost(rf);
}

static void
on_renew_tick(evutil_socket_t fd, short what, void *arg)
{
	struct refresh *rf = arg;
	const struct conf_route *rt = &rf->rt;

	assert(rf->magic == REFRESH_MAGIC);
	if (rf->step != RF_FETCH || rf->lost)
		return;
	if (rf->renew_op == NULL)
		rf->renew_op = lock_renew(rf->px->cache, rf->key, rf->token,
		    rt->lock_ttl_ms, on_renewed, rf);
	timer_arm(rf->renew_ev, rt->lock_ttl_ms / RENEW_DIVISOR);
}

static void
on_refresh_lock(enum lock_result r, struct cache_entry *e, const char *backoff,
    void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->op = NULL;
	switch (r) {
	case LOCK_ACQUIRED:
		STAT_INC(rf->px->stats, rf->route, locks_acquired);
		rf->step = RF_FETCH;
		break;
	case LOCK_BUSY:
		STAT_INC(rf->px->stats, rf->route, lock_busy);
		rf->result = RFR_BUSY;
		rf->step = RF_DONE;
		break;
	case LOCK_CHANGED:
		rf->result = RFR_CHANGED;
		rf->entry = e;
		rf->step = RF_DONE;
		break;
	case LOCK_BACKOFF:
		STAT_INC(rf->px->stats, rf->route, backoff_skips);
		snprintf(rf->failure, sizeof(rf->failure), "%s", backoff);
		rf->result = RFR_BACKOFF;
		rf->step = RF_DONE;
		break;
	case LOCK_ERROR:
		rf->result = RFR_REDIS_ERROR;
		rf->step = RF_DONE;
		break;
	}
	refresh_run(rf);
}

/* Turns an upstream response into an entry whose gen is gen, fresh for no
 * time yet: a refresh sets its times from hdr_freshness(). */
static struct cache_entry *
entry_from_response(struct upstream_response *resp, const char *gen,
    int64_t fetch_ms)
{
	struct cache_entry *e;
	int64_t now = util_now_ms();

	if ((e = entry_new()) == NULL)
		return NULL;
	snprintf(e->gen, sizeof(e->gen), "%s", gen);
	e->status = resp->status;
	e->stored_ms = e->fresh_until_ms = e->stale_until_ms = now;
	e->fetch_ms = (uint32_t)(fetch_ms > UINT32_MAX ? UINT32_MAX : fetch_ms);
	hdr_copy(&resp->headers, &e->headers, HDR_DROP_LENGTH);
	while (evhttp_remove_header(&e->headers, VARY_MARKER) == 0)
		;	/* only Corral writes markers */
	if (entry_set_body(e, resp->body) == -1) {
		entry_unref(&e);
		return NULL;
	}
	return e;
}

/*
 * A response that varies is stored as a variant ("K\nID": the flight's
 * own key if it already is one, else K with the lead's variant) with a
 * marker at K naming what it varies on. 0 or -1.
 */
static int
refresh_vary(struct refresh *rf)
{
	const char *spec = evhttp_find_header(&rf->entry->headers, "Vary");
	char base[CACHE_KEY_MAX + 1], id[CACHE_VARIANT_MAX];
	struct cache_entry *m;

	if (spec == NULL || !vary_relevant(spec) || strlen(spec) >= VARY_SPEC_MAX)
		return 0;
	snprintf(rf->vary, sizeof(rf->vary), "%s", spec);
	snprintf(base, sizeof(base), "%.*s", (int)strcspn(rf->key, "\n"),
	    rf->key);
	if (strchr(rf->key, '\n') != NULL) {
		snprintf(rf->variant, sizeof(rf->variant), "%s", rf->key);
	} else {
		variant_id(spec, &rf->headers, id);
		snprintf(rf->variant, sizeof(rf->variant), "%s\n%s", base, id);
	}
	vary_learn(rf->px, base, spec);
	if ((m = entry_new()) == NULL)
		return -1;
	snprintf(m->gen, sizeof(m->gen), "%s", rf->token);
	m->status = 200;
	m->stored_ms = rf->entry->stored_ms;
	m->fresh_until_ms = rf->entry->fresh_until_ms;
	m->stale_until_ms = rf->entry->stale_until_ms;
	if (entry_add_header(m, "Vary", spec) == -1 ||
	    entry_add_header(m, VARY_MARKER, "1") == -1) {
		entry_unref(&m);
		return -1;
	}
	rf->marker = m;
	return 0;
}

/* base, still valid by a 304: its body, its headers updated by the 304. */
static struct cache_entry *
entry_revalidated(const struct cache_entry *base,
    const struct upstream_response *resp, const char *gen, int64_t fetch_ms)
{
	struct cache_entry *e;

	if ((e = entry_new()) == NULL)
		return NULL;
	snprintf(e->gen, sizeof(e->gen), "%s", gen);
	e->status = base->status;
	e->stored_ms = util_now_ms();
	e->fetch_ms = (uint32_t)(fetch_ms > UINT32_MAX ? UINT32_MAX : fetch_ms);
	hdr_copy(&base->headers, &e->headers, 0);
	hdr_merge_304(&e->headers, &resp->headers);
	if (base->body_len > 0) {
		if ((e->body = malloc(base->body_len)) == NULL) {
			entry_unref(&e);
			return NULL;
		}
		memcpy(e->body, base->body, base->body_len);
		e->body_len = base->body_len;
	}
	return e;
}

static void
on_refresh_fetched(struct upstream_response *resp, void *arg)
{
	struct refresh *rf = arg;
	struct proxy *px = rf->px;
	const struct conf_route *rt = &rf->rt;
	const char *why = "";
	struct freshness f;

	assert(rf->magic == REFRESH_MAGIC);
	rf->fetch = NULL;
	rf->fetch_ms = (util_mono_us() - rf->fetch_start_us) / 1000;
	evtimer_del(rf->renew_ev);
	cache_op_cancel(&rf->renew_op);
	count_upstream(px, rf->route, resp);

	if (resp->result != UPSTREAM_OK) {
		log_warn("upstream %s: %s (%s)", rf->url,
		    upstream_result_name(resp->result), resp->error);
		rf->result = RFR_UPSTREAM_ERROR;
		rf->uerr = resp->result;
		snprintf(rf->failure, sizeof(rf->failure), "%s",
		    upstream_result_name(resp->result));
		rf->step = RF_RELEASE;
		goto out;
	}
	if (resp->status == 304 && rf->base != NULL) {
		/* Still valid: the stored body with the 304's headers. */
		STAT_INC(px->stats, rf->route, revalidated);
		rf->upstream_status = 304;
		rf->entry = entry_revalidated(rf->base, resp, rf->token,
		    rf->fetch_ms);
	} else {
		rf->entry = entry_from_response(resp, rf->token, rf->fetch_ms);
	}
	if (rf->entry == NULL) {
		rf->result = RFR_UPSTREAM_ERROR;
		rf->uerr = UPSTREAM_ERR_PROTOCOL;
		snprintf(rf->failure, sizeof(rf->failure), "error");
		rf->step = RF_RELEASE;
		goto out;
	}
	rf->result = RFR_FETCHED;
	rf->shareable = hdr_shareable(&rf->entry->headers);
	hdr_freshness(rf->entry->status, &rf->entry->headers, rf->authorized,
	    rt, rf->entry->stored_ms, &f);
	rf->entry->fresh_until_ms = rf->entry->stored_ms + f.ttl_ms;
	rf->entry->stale_until_ms = rf->entry->fresh_until_ms + f.swr_ms;
	rf->sie_ms = f.sie_ms;
	if (f.storable && refresh_vary(rf) == -1)
		why = "out of memory";
	else if (!f.storable)
		why = f.why;
	else if (rf->entry->body_len > (uint64_t)px->conf->max_entry_bytes)
		why = "larger than max_entry_bytes";
	else if (rf->lost)
		why = "lock lost";
	rf->step = rf->mode == RF_LOCKED && why[0] == '\0' ? RF_STORE :
	    RF_RELEASE;
	if (rf->step == RF_RELEASE && resp->status >= 500)
		snprintf(rf->failure, sizeof(rf->failure), "%d", resp->status);
	if (rf->step == RF_RELEASE && why[0] != '\0')
		log_debug("%s not stored: %s", rf->key, why);
out:
	upstream_response_free(&resp);
	refresh_run(rf);
}

static void
on_refresh_stored(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->op = NULL;
	switch (r) {
	case FENCE_OK:		/* the script also deleted the lock */
		rf->stored = 1;
		STAT_INC(rf->px->stats, rf->route, stores);
		if (entry_state(rf->entry, util_now_ms()) == ENTRY_FRESH)
			l1_put(rf->px->l1, rf->variant[0] != '\0' ? rf->variant :
			    rf->key, rf->entry);
		rf->step = RF_DONE;
		break;
	case FENCE_LOST:
		mark_lost(rf);
		rf->step = RF_DONE;
		break;
	case FENCE_ERROR:	/* maybe not stored: let the lock go */
		rf->step = RF_RELEASE;
		break;
	}
	refresh_run(rf);
}

static void
on_refresh_released(enum fence_result r, void *arg)
{
	struct refresh *rf = arg;

	assert(rf->magic == REFRESH_MAGIC);
	rf->op = NULL;
	if (r == FENCE_LOST)
		mark_lost(rf);
	rf->step = RF_DONE;
	refresh_run(rf);
}

static int
refresh_fetch(struct refresh *rf)
{
	const struct conf *conf = rf->px->conf;
	const struct conf_route *rt = &rf->rt;
	struct upstream_request ur = {
		.method = "GET",
		.url = rf->url,
		.headers = &rf->headers,
		.connect_timeout_ms = conf->upstream_connect_timeout_ms,
		.timeout_ms = conf->upstream_timeout_ms,
		.max_body_bytes = PASS_BODY_MAX,	/* larger: not stored */
	};

	rf->fetch_start_us = util_mono_us();
	STAT_INC(rf->px->stats, rf->route, upstream_fetches);
	rf->fetch = upstream_fetch(rf->px->upstream, &ur, on_refresh_fetched, rf);
	if (rf->fetch == NULL)
		return -1;
	if (rf->mode == RF_LOCKED)
		timer_arm(rf->renew_ev, rt->lock_ttl_ms / RENEW_DIVISOR);
	return 0;
}

/* Redis keeps an entry while it may be served (stale, or on errors), and
 * one with validators a while longer, to be revalidated with a 304. */
static int64_t
expire_at(const struct refresh *rf)
{
	const struct cache_entry *e = rf->entry;
	int64_t at = MAX(e->stale_until_ms, e->fresh_until_ms + rf->sie_ms);

	if (evhttp_find_header(&e->headers, "ETag") != NULL ||
	    evhttp_find_header(&e->headers, "Last-Modified") != NULL)
		at = MAX(at, e->stored_ms + KEEP_VALIDATORS_MS);
	return at;
}

static void
refresh_run(struct refresh *rf)
{
	struct proxy *px = rf->px;
	const struct conf_route *rt = &rf->rt;

	assert(rf->magic == REFRESH_MAGIC);
	for (;;) {
		switch (rf->step) {
		case RF_LOCK:
			if (rf->mode == RF_DIRECT) {
				rf->step = RF_FETCH;
				continue;
			}
			rf->op = lock_acquire(px->cache, rf->key, rf->token,
			    rt->lock_ttl_ms, rf->seen_gen, on_refresh_lock, rf);
			if (rf->op == NULL) {
				rf->result = RFR_REDIS_ERROR;
				rf->step = RF_DONE;
				continue;
			}
			return;
		case RF_FETCH:
			if (refresh_fetch(rf) == -1) {
				rf->result = RFR_UPSTREAM_ERROR;
				rf->uerr = UPSTREAM_ERR_PROTOCOL;
				rf->step = RF_RELEASE;
				continue;
			}
			return;
		case RF_STORE:
			rf->op = cache_store(px->cache, rf->key, rf->token,
			    rf->entry, expire_at(rf),
			    rf->marker != NULL ? rf->variant : NULL, rf->marker,
			    on_refresh_stored, rf);
			if (rf->op == NULL) {
				rf->step = RF_RELEASE;
				continue;
			}
			return;
		case RF_RELEASE:
			if (rf->mode == RF_DIRECT || rf->lost) {
				rf->step = RF_DONE;
				continue;
			}
			rf->op = lock_release(px->cache, rf->key, rf->token,
			    rf->failure[0] != '\0' ? rf->failure : NULL,
			    MIN(BACKOFF_BASE_MS, rt->error_backoff_ms),
			    rt->error_backoff_ms, on_refresh_released, rf);
			if (rf->op == NULL) {
				rf->step = RF_DONE;
				continue;
			}
			return;
		case RF_DONE:
			refresh_end(rf);
			return;
		}
	}
}

/*
 * Starts a refresh of fl's key: it copies what it needs and keeps no
 * pointer to fl (only cb's arg). seen_gen: the entry generation fl saw.
 * base: an entry to revalidate (its ETag and Last-Modified are sent). It
 * reports once through cb (which may be NULL) after it has ended, never
 * from inside this call. NULL on no memory.
 */
static struct refresh *
refresh_start(struct flight *fl, enum refresh_mode mode, const char *seen_gen,
    struct cache_entry *base, refresh_done_cb *cb, void *arg)
{
	struct proxy *px = fl->px;
	const char *etag, *lm;
	struct refresh *rf;
	size_t urllen;

	if ((rf = calloc(1, sizeof(*rf))) == NULL)
		return NULL;
	rf->magic = REFRESH_MAGIC;
	rf->px = px;
	rf->mode = mode;
	rf->step = RF_LOCK;
	rf->route = fl->route;
	rf->rt = fl->rt;
	rf->authorized = fl->authorized;
	rf->fetch_ms = -1;
	rf->cb = cb;
	rf->cb_arg = arg;
	TAILQ_INIT(&rf->headers);
	snprintf(rf->key, sizeof(rf->key), "%s", fl->key);
	snprintf(rf->seen_gen, sizeof(rf->seen_gen), "%s", seen_gen);
	urllen = strlen(px->conf->upstream_url) + strlen(fl->uri) + 1;
	if ((rf->url = malloc(urllen)) == NULL)
		goto fail;
	snprintf(rf->url, urllen, "%s%s", px->conf->upstream_url, fl->uri);
	hdr_copy(&fl->headers, &rf->headers, 0);
	if (base != NULL && base->status == 200 && mode == RF_LOCKED) {
		rf->base = entry_ref(base);
		if ((etag = evhttp_find_header(&base->headers, "ETag")) != NULL)
			evhttp_add_header(&rf->headers, "If-None-Match", etag);
		if ((lm = evhttp_find_header(&base->headers,
		    "Last-Modified")) != NULL)
			evhttp_add_header(&rf->headers, "If-Modified-Since", lm);
	}
	if (util_random_token(rf->token) == -1)
		goto fail;
	rf->renew_ev = evtimer_new(px->base, on_renew_tick, rf);
	rf->done_ev = event_new(px->base, -1, 0, on_refresh_done, rf);
	if (rf->renew_ev == NULL || rf->done_ev == NULL)
		goto fail;
	if (mode == RF_LOCKED && dict_get(px->refreshes, rf->key) == NULL &&
	    dict_set(px->refreshes, rf->key, rf) == 0)
		rf->registered = 1;
	TAILQ_INSERT_TAIL(&all_refreshes, rf, link);
	px->nrefreshes++;
	refresh_run(rf);
	return rf;
fail:
	if (rf->renew_ev != NULL)
		event_free(rf->renew_ev);
	if (rf->done_ev != NULL)
		event_free(rf->done_ev);
	evhttp_clear_headers(&rf->headers);
	entry_unref(&rf->base);
	free(rf->url);
	free(rf);
	return NULL;
}

/* ================================================================
 * flight
 * ================================================================ */

/* The client's address, or NULL when the connection is gone. */
static char *
client_address(struct req *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req->ev);
	char *peer = NULL;
	ev_uint16_t port;

	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &peer, &port);
	return peer;
}

/* Appends what goes upstream for req to dst: its end-to-end headers less
 * those flags name, and who asked (X-Forwarded-Host, X-Forwarded-For). */
static void
forward_headers(struct req *req, struct evkeyvalq *dst, int flags)
{
	char *peer;

	hdr_copy(evhttp_request_get_input_headers(req->ev), dst, flags);
	if (req->host[0] != '\0')
		evhttp_add_header(dst, "X-Forwarded-Host", req->host);
	if ((peer = client_address(req)) != NULL)
		evhttp_add_header(dst, "X-Forwarded-For", peer);
}

static void
flight_set_answer(struct flight *fl, enum outcome lead, enum outcome rest,
    struct cache_entry *e)
{
	fl->lead_outcome = lead;
	fl->rest_outcome = rest;
	entry_unref(&fl->entry);
	fl->entry = e;
	fl->shareable = 1;
	fl->step = FL_DONE;
}

/* Keeps an entry that can no longer be served as it is: the refresh
 * revalidates it, and stale_if_error may still serve it. */
static void
flight_keep_prev(struct flight *fl, struct cache_entry **ep)
{
	struct cache_entry *e = *ep;

	*ep = NULL;
	snprintf(fl->seen_gen, sizeof(fl->seen_gen), "%s", e->gen);
	entry_unref(&fl->prev);
	if (e->status != 0)
		fl->prev = e;
	else
		entry_unref(&e);	/* unreadable: only its gen counts */
}

/* May the flight serve its previous entry because the upstream failed? */
static int
stale_if_error(const struct flight *fl)
{
	struct freshness f;

	if (fl->prev == NULL)
		return 0;
	hdr_freshness(fl->prev->status, &fl->prev->headers, 0, &fl->rt,
	    util_now_ms(), &f);
	return util_now_ms() < fl->prev->fresh_until_ms + f.sie_ms;
}

/* The key's responses vary (a marker says on what): every request of the
 * flight goes on to its own variant. */
static void
flight_redirect(struct flight *fl, struct cache_entry **marker)
{
	const char *spec = evhttp_find_header(&(*marker)->headers, "Vary");

	snprintf(fl->vary, sizeof(fl->vary), "%s", spec != NULL ? spec : "");
	if (strchr(fl->key, '\n') == NULL)
		vary_learn(fl->px, fl->key, fl->vary);
	entry_unref(marker);
	fl->redirect = 1;
	fl->step = FL_DONE;
}

/*
 * XFetch (Vattani, Chierichetti and Lowenstein, VLDB 2015): a hit on a
 * fresh entry is due for a refresh when now - delta * beta * ln(rand())
 * reaches fresh_until, where delta is how long the entry's fetch took.
 * One draw per hit.
 */
static int
xfetch_due(const struct conf_route *rt, const struct cache_entry *e)
{
	double late;

	if (!rt->early_refresh || e->fetch_ms == 0)
		return 0;
	late = -(double)e->fetch_ms * rt->early_refresh_beta *
	    log(util_random_unit());
	return (double)util_now_ms() + late >= (double)e->fresh_until_ms;
}

/* Should a hit of the flight on a fresh entry refresh it now? Refreshes
 * still go through the lock: one per fleet. */
static int
refresh_early(const struct flight *fl, const struct cache_entry *e)
{
	if (!fl->rt.early_refresh || e->fetch_ms == 0 ||
	    dict_get(fl->px->refreshes, fl->key) != NULL)
		return 0;
	/* A request drew already, when its near-cache hit was due. */
	return fl->early_due || xfetch_due(&fl->rt, e);
}

static void
on_flight_lookup(enum cache_result r, struct cache_entry *e, void *arg)
{
	struct flight *fl = arg;
	struct proxy *px = fl->px;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->op = NULL;
	if (r == CACHE_ERROR) {
		fl->degraded = 1;
		fl->step = FL_DIRECT;
	} else if (r == CACHE_ABSENT) {
		fl->step = FL_LOCK;
	} else if (evhttp_find_header(&e->headers, VARY_MARKER) != NULL) {
		flight_redirect(fl, &e);
	} else {
		switch (entry_state(e, util_now_ms())) {
		case ENTRY_FRESH:
			l1_put(px->l1, fl->key, e);
			if (refresh_early(fl, e)) {
				STAT_INC(px->stats, fl->route, early_refreshes);
				(void)refresh_start(fl, RF_LOCKED, e->gen, e,
				    NULL, NULL);
			}
			flight_set_answer(fl, OUT_HIT, OUT_HIT, e);
			break;
		case ENTRY_STALE:
			if (dict_get(px->refreshes, fl->key) == NULL)
				(void)refresh_start(fl, RF_LOCKED, e->gen, e,
				    NULL, NULL);
			flight_set_answer(fl, OUT_STALE, OUT_STALE, e);
			break;
		case ENTRY_EXPIRED:
			flight_keep_prev(fl, &e);
			fl->step = FL_LOCK;
			break;
		}
	}
	flight_run(fl);
}

/*
 * Hands req, taken out of fl, its answer: outcome o and entry e (req takes
 * this reference; NULL for an answer Corral makes up). The lead also gets
 * what its own fetch took and said.
 */
static void
flight_hand(struct flight *fl, struct req *req, enum outcome o,
    struct cache_entry *e, int lead)
{
	req->flight = NULL;
	req->outcome = o;
	req->uerr = fl->uerr;
	req->not_forwarded = fl->not_forwarded;
	snprintf(req->failure, sizeof(req->failure), "%s", fl->failure);
	if (lead) {
		req->upstream_ms = fl->upstream_ms;
		req->upstream_status = fl->upstream_status;
	}
	req->entry = e;
	req->step = REQ_DELIVER;
	req_run(req);
}

/* Answers the flight's first request now; the rest stay in the flight. */
static void
flight_answer_lead(struct flight *fl, enum outcome o, struct cache_entry *e)
{
	struct req *req = TAILQ_FIRST(&fl->reqs);

	TAILQ_REMOVE(&fl->reqs, req, flight_link);
	flight_hand(fl, req, o, e, 1);
}

/* Starts the lock_wait budget, once per flight. */
static void
flight_start_wait(struct flight *fl)
{
	if (!fl->waited) {
		fl->waited = 1;
		timer_arm(fl->deadline_ev, fl->rt.lock_wait_ms);
	}
}

/*
 * The upstream failed (e, if not NULL, is its 5xx answer). A stale entry
 * that stale_if_error covers is served instead. Otherwise the request
 * whose fetch failed gets the failure, and one of the others, if any and
 * within lock_wait, takes the lock over: they are not all thrown at the
 * upstream at once (and while the key backs off, none is).
 */
static void
flight_failed(struct flight *fl, const struct refresh *rf,
    struct cache_entry *e)
{
	enum outcome o = e != NULL ? OUT_FETCHED : OUT_UPSTREAM_ERROR;

	fl->uerr = rf->uerr;
	snprintf(fl->failure, sizeof(fl->failure), "%s", rf->failure);
	if (stale_if_error(fl)) {
		entry_unref(&e);
		flight_set_answer(fl, OUT_STALE_ERROR, OUT_STALE_ERROR,
		    entry_ref(fl->prev));
		return;
	}
	if (rf->mode == RF_LOCKED && !fl->timed_out &&
	    TAILQ_NEXT(TAILQ_FIRST(&fl->reqs), flight_link) != NULL) {
		flight_answer_lead(fl, o, e);
		flight_start_wait(fl);
		fl->step = FL_LOCK;
		return;
	}
	flight_set_answer(fl, o, o, e);
}

static void
on_flight_refresh(struct refresh *rf, void *arg)
{
	struct flight *fl = arg;
	enum outcome lead;
	int direct;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->refresh = NULL;
	if (rf->fetch_ms >= 0)
		fl->upstream_ms = rf->fetch_ms;
	fl->upstream_status = rf->upstream_status;
	if (fl->px->abandoned && rf->result != RFR_FETCHED &&
	    rf->result != RFR_CHANGED) {
		flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_run(fl);
		return;
	}
	switch (rf->result) {
	case RFR_BUSY:
		if (fl->timed_out)
			fl->step = FL_DIRECT;
		else if (fl->fill_pending)
			fl->step = FL_LOCK;
		else
			fl->step = FL_WAIT;
		break;
	case RFR_CHANGED:
		if (evhttp_find_header(&rf->entry->headers, VARY_MARKER) != NULL) {
			flight_redirect(fl, &rf->entry);
			break;
		}
		if (entry_state(rf->entry, util_now_ms()) == ENTRY_EXPIRED) {
			flight_keep_prev(fl, &rf->entry);
			fl->step = FL_LOCK;
			break;
		}
		if (entry_state(rf->entry, util_now_ms()) == ENTRY_FRESH)
			l1_put(fl->px->l1, fl->key, rf->entry);
		flight_set_answer(fl, OUT_COLLAPSED, OUT_COLLAPSED,
		    entry_ref(rf->entry));
		break;
	case RFR_FETCHED:
		if (rf->failure[0] != '\0') {
			flight_failed(fl, rf, entry_ref(rf->entry));
			break;
		}
		direct = rf->mode == RF_DIRECT;
		if (direct && fl->timed_out)
			lead = OUT_WAIT_TIMEOUT;
		else if (direct && fl->degraded)
			lead = OUT_DEGRADED;
		else
			lead = rf->stored ? OUT_STORED : OUT_FETCHED;
		flight_set_answer(fl, lead, direct && fl->timed_out ?
		    OUT_WAIT_TIMEOUT : OUT_COLLAPSED, entry_ref(rf->entry));
		fl->shareable = rf->shareable;
		if (rf->vary[0] != '\0' && strchr(fl->key, '\n') == NULL) {
			/* Only requests of the lead's variant share it. */
			snprintf(fl->vary, sizeof(fl->vary), "%s", rf->vary);
			snprintf(fl->variant, sizeof(fl->variant), "%s",
			    strchr(rf->variant, '\n') + 1);
		}
		break;
	case RFR_UPSTREAM_ERROR:
	case RFR_NONE:
		flight_failed(fl, rf, NULL);
		break;
	case RFR_BACKOFF:
		fl->not_forwarded = 1;
		snprintf(fl->failure, sizeof(fl->failure), "%s", rf->failure);
		if (stale_if_error(fl))
			flight_set_answer(fl, OUT_STALE_ERROR, OUT_STALE_ERROR,
			    entry_ref(fl->prev));
		else
			flight_set_answer(fl, OUT_BACKOFF, OUT_BACKOFF, NULL);
		break;
	case RFR_REDIS_ERROR:
		fl->degraded = 1;
		fl->step = FL_DIRECT;
		break;
	}
	flight_run(fl);
}

static void
flight_wake(struct flight *fl)
{
	if (fl->step == FL_WAIT) {
		evtimer_del(fl->poll_ev);
		fl->step = FL_LOCK;
		flight_run(fl);
	} else if (fl->step == FL_LOCK) {
		/* The notification may overtake the acquire's reply. */
		fl->fill_pending = 1;
	}
}

static void
on_flight_poll(evutil_socket_t fd, short what, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	flight_wake(fl);
}

static void
on_flight_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct flight *fl = arg;

	assert(fl->magic == FLIGHT_MAGIC);
	fl->timed_out = 1;
	if (fl->step == FL_WAIT) {
		evtimer_del(fl->poll_ev);
		fl->step = FL_DIRECT;
		flight_run(fl);
	}
}

/* Would req get the variant fl's lead got? */
static int
same_variant(const struct flight *fl, struct req *req)
{
	char id[CACHE_VARIANT_MAX];

	variant_id(fl->vary, evhttp_request_get_input_headers(req->ev), id);
	return strcmp(id, fl->variant) == 0;
}

/* Sends req on to its own variant of a key that varies on spec. */
static void
req_to_variant(struct req *req, const char *spec)
{
	char id[CACHE_VARIANT_MAX];
	size_t base = strcspn(req->key, "\n");

	variant_id(spec, evhttp_request_get_input_headers(req->ev), id);
	snprintf(req->key + base, sizeof(req->key) - base, "\n%s", id);
	req->step = REQ_JOIN;
}

/* Hands the answer to every request and frees the flight. */
static void
flight_done(struct flight *fl)
{
	struct proxy *px = fl->px;
	struct req *req;
	int lead = 1;

	dict_del(px->flights, fl->key);
	TAILQ_REMOVE(&all_flights, fl, link);
	while ((req = TAILQ_FIRST(&fl->reqs)) != NULL) {
		TAILQ_REMOVE(&fl->reqs, req, flight_link);
		req->flight = NULL;
		if (fl->redirect || (!lead && fl->vary[0] != '\0' &&
		    !same_variant(fl, req))) {
			req_to_variant(req, fl->vary);
			req_run(req);
			continue;
		}
		if (!lead && !fl->shareable) {
			req->step = REQ_PASS;	/* a per-user response */
			req_run(req);
		} else {
			flight_hand(fl, req, lead ? fl->lead_outcome :
			    fl->rest_outcome, fl->entry != NULL ?
			    entry_ref(fl->entry) : NULL, lead);
		}
		lead = 0;
	}
	cache_op_cancel(&fl->op);
	entry_unref(&fl->entry);
	entry_unref(&fl->prev);
	evhttp_clear_headers(&fl->headers);
	event_free(fl->poll_ev);
	event_free(fl->deadline_ev);
	free(fl->uri);
	fl->magic = 0;
	free(fl);
}

static void
flight_run(struct flight *fl)
{
	struct proxy *px = fl->px;
	const struct conf_route *rt = &fl->rt;

	assert(fl->magic == FLIGHT_MAGIC);
	for (;;) {
		switch (fl->step) {
		case FL_LOOKUP:
			fl->op = cache_lookup(px->cache, fl->key,
			    on_flight_lookup, fl);
			if (fl->op == NULL) {
				fl->degraded = 1;
				fl->step = FL_DIRECT;
				continue;
			}
			return;
		case FL_LOCK:
			fl->fill_pending = 0;
			fl->refresh = refresh_start(fl, RF_LOCKED, fl->seen_gen,
			    fl->prev, on_flight_refresh, fl);
			if (fl->refresh == NULL) {
				flight_set_answer(fl, OUT_UNAVAILABLE,
				    OUT_UNAVAILABLE, NULL);
				continue;
			}
			return;
		case FL_WAIT:
			flight_start_wait(fl);
			timer_arm(fl->poll_ev, rt->lock_poll_ms);
			return;
		case FL_DIRECT:
			evtimer_del(fl->deadline_ev);
			if (fl->timed_out)
				STAT_INC(px->stats, fl->route, lock_wait_timeouts);
			fl->refresh = refresh_start(fl, RF_DIRECT, "", NULL,
			    on_flight_refresh, fl);
			if (fl->refresh == NULL) {
				flight_set_answer(fl, OUT_UNAVAILABLE,
				    OUT_UNAVAILABLE, NULL);
				continue;
			}
			return;
		case FL_DONE:
			flight_done(fl);
			return;
		}
	}
}

/*
 * Joins the flight for req's key, starting one if there is none. The
 * flight may answer req before this returns. 0, or -1 on no memory.
 */
static int
flight_join(struct req *req)
{
	struct proxy *px = req->px;
	struct evkeyvalq *in = evhttp_request_get_input_headers(req->ev);
	const struct conf_route *rt = route_of(px, req->route);
	struct flight *fl;
	int flags;

	if ((fl = dict_get(px->flights, req->key)) != NULL) {
		TAILQ_INSERT_TAIL(&fl->reqs, req, flight_link);
		req->flight = fl;
		fl->early_due |= req->early_due;
		return 0;
	}
	if ((fl = calloc(1, sizeof(*fl))) == NULL)
		return -1;
	fl->magic = FLIGHT_MAGIC;
	fl->px = px;
	fl->step = FL_LOOKUP;
	fl->route = req->route;
	fl->rt = *rt;
	fl->early_due = req->early_due;
	fl->upstream_ms = -1;
	TAILQ_INIT(&fl->reqs);
	TAILQ_INIT(&fl->headers);
	snprintf(fl->key, sizeof(fl->key), "%s", req->key);
	fl->uri = strdup(req->uri);
	fl->poll_ev = evtimer_new(px->base, on_flight_poll, fl);
	fl->deadline_ev = evtimer_new(px->base, on_flight_deadline, fl);
	if (fl->uri == NULL || fl->poll_ev == NULL || fl->deadline_ev == NULL ||
	    dict_set(px->flights, fl->key, fl) == -1)
		goto fail;
	/* A shared fetch: nothing that would make the answer one client's. */
	flags = HDR_DROP_HOST | HDR_DROP_LENGTH | HDR_DROP_CONDITIONAL |
	    HDR_DROP_ENCODING | (rt->cache_authorized ? 0 : HDR_DROP_CREDENTIALS);
	fl->authorized = rt->cache_authorized &&
	    evhttp_find_header(in, "Authorization") != NULL;
	forward_headers(req, &fl->headers, flags);
	TAILQ_INSERT_TAIL(&fl->reqs, req, flight_link);
	req->flight = fl;
	TAILQ_INSERT_TAIL(&all_flights, fl, link);
	flight_run(fl);
	return 0;
fail:
	if (fl->poll_ev != NULL)
		event_free(fl->poll_ev);
	if (fl->deadline_ev != NULL)
		event_free(fl->deadline_ev);
	evhttp_clear_headers(&fl->headers);
	free(fl->uri);
	free(fl);
	return -1;
}

/* A purge or invalidation anywhere in the fleet: key, or NULL when some
 * may have been missed. */
void
flow_on_purge(const char *key, void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	if (key != NULL)
		l1_drop(px->l1, key);
	else
		l1_drop_prefix(px->l1, "");
}

void
flow_on_fill(const char *key, void *arg)
{
	struct proxy *px = arg;
	struct flight *fl, *next;

	assert(px->magic == PROXY_MAGIC);
	if (key != NULL) {
		l1_drop(px->l1, key);	/* a newer entry is in Redis */
		if ((fl = dict_get(px->flights, key)) != NULL)
			flight_wake(fl);
		return;
	}
	l1_drop_prefix(px->l1, "");
	/* Resubscribed: anything may have been filled meanwhile. */
	for (fl = TAILQ_FIRST(&all_flights); fl != NULL; fl = next) {
		next = TAILQ_NEXT(fl, link);
		flight_wake(fl);
	}
}

/* ================================================================
 * req
 * ================================================================ */

/* Whole seconds e has been stale at now, rounded up: at least 1. */
static int64_t
seconds_stale(const struct cache_entry *e, int64_t now)
{
	int64_t late = (now - e->fresh_until_ms + 999) / 1000;

	return late > 0 ? late : 1;
}

static void
cache_status(const struct req *req, int fwd_status, char *out, size_t outlen)
{
	const struct cache_entry *e = req->entry;
	int64_t now = util_now_ms();

	switch (req->outcome) {
	case OUT_HIT:
		snprintf(out, outlen, "corral; hit; ttl=%" PRId64,
		    (e->fresh_until_ms - now) / 1000);
		break;
	case OUT_STALE:
		snprintf(out, outlen, "corral; hit; ttl=-%" PRId64,
		    seconds_stale(e, now));
		break;
	case OUT_STORED:
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d; stored",
		    fwd_status);
		break;
	case OUT_FETCHED:
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d",
		    fwd_status);
		break;
	case OUT_COLLAPSED:
		snprintf(out, outlen,
		    "corral; fwd=miss; fwd-status=%d; collapsed", fwd_status);
		break;
	case OUT_WAIT_TIMEOUT:
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d; "
		    "detail=lock-wait-timeout", fwd_status);
		break;
	case OUT_DEGRADED:
		snprintf(out, outlen, "corral; fwd=miss; fwd-status=%d; "
		    "detail=cache-unavailable", fwd_status);
		break;
	case OUT_BYPASS:
		snprintf(out, outlen, "corral; fwd=bypass; fwd-status=%d",
		    fwd_status);
		break;
	case OUT_METHOD:
		snprintf(out, outlen, "corral; fwd=method; fwd-status=%d",
		    fwd_status);
		break;
	case OUT_UPSTREAM_ERROR:
		snprintf(out, outlen, "corral; fwd=%s; detail=upstream-error",
		    req->pass_kind == OUT_METHOD ? "method" :
		    req->pass_kind == OUT_BYPASS ? "bypass" : "miss");
		break;
	case OUT_STALE_ERROR: {
		int st = atoi(req->failure);
		char fs[32] = "";
		if (req->not_forwarded) {
			/* The key backs off: nothing went upstream. */
			snprintf(out, outlen, "corral; hit; ttl=-%" PRId64
			    "; detail=stale-if-error", seconds_stale(e, now));
			break;
		}
		if (st > 0)
			snprintf(fs, sizeof(fs), "fwd-status=%d; ", st);
		snprintf(out, outlen, "corral; fwd=stale; %sttl=-%" PRId64
		    "; detail=stale-if-error", fs, seconds_stale(e, now));
		break;
	}
	case OUT_BACKOFF:
		snprintf(out, outlen, "corral; detail=error-backoff");
		break;
	case OUT_REJECTED:
		snprintf(out, outlen, "corral; detail=rejected");
		break;
	case OUT_UNAVAILABLE:
	case OUT_NONE:
		snprintf(out, outlen, "corral; detail=unavailable");
		break;
	}
}

/* The status of an answer Corral makes up itself (no entry to send). */
static int
error_code(const struct req *req)
{
	int st;

	switch (req->outcome) {
	case OUT_REJECTED:
		return req->reject_code;
	case OUT_UPSTREAM_ERROR:
		return req->uerr == UPSTREAM_ERR_TIMEOUT ?
		    HTTP_GATEWAY_TIMEOUT : HTTP_BAD_GATEWAY;
	case OUT_BACKOFF:
		if (strcmp(req->failure, "timeout") == 0)
			return HTTP_GATEWAY_TIMEOUT;
		st = atoi(req->failure);
		return st >= 500 && st <= 599 ? st : HTTP_BAD_GATEWAY;
	default:
		return HTTP_SERVUNAVAIL;
	}
}

static const char *
error_text(const struct req *req, int code)
{
	switch (req->outcome) {
	case OUT_REJECTED:
		return code == HTTP_HEADERS_TOO_LARGE ?
		    "request headers too large" : "bad request";
	case OUT_UPSTREAM_ERROR:
		return code == HTTP_GATEWAY_TIMEOUT ? "upstream timed out" :
		    "upstream unavailable";
	case OUT_BACKOFF:
		return "upstream failing; retrying after a backoff";
	default:
		return "service unavailable";
	}
}

static void
count_outcome(struct req *req)
{
	struct stats *st = req->px->stats;
	int r = req->route;
	uint64_t waited_ms = (uint64_t)req->waited_us / 1000;

	switch (req->outcome) {
	case OUT_HIT:
		STAT_INC(st, r, hits);
		break;
	case OUT_STALE:
		STAT_INC(st, r, stale_hits);
		break;
	case OUT_STALE_ERROR:
		STAT_INC(st, r, stale_hits);
		STAT_INC(st, r, stale_if_error);
		break;
	case OUT_REJECTED:
		STAT_INC(st, r, rejected);
		break;
	case OUT_STORED:
	case OUT_FETCHED:
	case OUT_DEGRADED:
		STAT_INC(st, r, misses);
		break;
	case OUT_COLLAPSED:
		STAT_INC(st, r, collapsed);
		STAT_INC(st, r, waiters);
		STAT_ADD(st, r, lock_wait_ms, waited_ms);
		STAT_OBSERVE(st, r, lock_wait, req->waited_us / 1e6);
		break;
	case OUT_WAIT_TIMEOUT:
		STAT_INC(st, r, misses);
		STAT_INC(st, r, waiters);
		STAT_ADD(st, r, lock_wait_ms, waited_ms);
		STAT_OBSERVE(st, r, lock_wait, req->waited_us / 1e6);
		break;
	case OUT_BYPASS:
	case OUT_METHOD:
		STAT_INC(st, r, bypass);
		break;
	case OUT_UPSTREAM_ERROR:
	case OUT_BACKOFF:
	case OUT_UNAVAILABLE:
	case OUT_NONE:
		STAT_INC(st, r, errors);
		break;
	}
}

static void
on_body_sent(const void *data, size_t len, void *arg)
{
	struct cache_entry *e = arg;

	entry_unref(&e);
}

/* Writes v in decimal to out (24 bytes); returns out. */
static const char *
fmt_uint(uint64_t v, char out[24])
{
	char *p = out + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return p;
}

/* Sends the one reply this request gets; returns the body bytes sent. */
static uint64_t
deliver(struct req *req)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req->ev);
	struct cache_entry *e = req->entry;
	char cs[CACHE_STATUS_MAX], num[24], line[VIA_MAX];
	int cached = req->pass_kind == OUT_NONE;	/* not passed through */
	const char *origin_age = NULL;
	const struct evkeyval *h;
	size_t via_len = 0;
	int has_date = 0;
	struct evbuffer *body;
	uint64_t sent;
	int code, status;

	if (e == NULL) {
		code = error_code(req);
		cache_status(req, code, cs, sizeof(cs));
		evhttp_add_header(out, "Cache-Status", cs);
		evhttp_add_header(out, "Content-Type", "text/plain");
		evhttp_add_header(out, "Connection", "close");
		if ((body = evbuffer_new()) != NULL)
			evbuffer_add_printf(body, "%d %s\n", code,
			    error_text(req, code));
		sent = body != NULL && !req->head ? evbuffer_get_length(body) : 0;
		evhttp_send_reply(req->ev, code, NULL, req->head ? NULL : body);
		if (body != NULL)
			evbuffer_free(body);
		return sent;
	}

	status = e->status;
	/*
	 * One pass over the entry's headers, the hot path of every hit: they
	 * are end-to-end already (filtered when the entry was made); Via and,
	 * from the cache, Age are ours to rewrite.
	 */
	line[0] = '\0';
	TAILQ_FOREACH(h, &e->headers, next) {
		if (strcasecmp(h->key, "Via") == 0) {
			via_len += snprintf(line + via_len, sizeof(line) - via_len,
			    "%s, ", h->value);
			if (via_len >= sizeof(line))
				via_len = sizeof(line) - 1;
		} else if (cached && strcasecmp(h->key, "Age") == 0)
			origin_age = h->value;
		else if (strcasecmp(h->key, "Content-Length") != 0) {
			if (!has_date && strcasecmp(h->key, "Date") == 0)
				has_date = 1;
			evhttp_add_header(out, h->key, h->value);
		}
	}
	if (via_len > 0) {
		/* Every hop the origin's Via lists, then ours. */
		snprintf(line + via_len, sizeof(line) - via_len, VIA_TOKEN);
		evhttp_add_header(out, "Via", line);
	} else {
		evhttp_add_header(out, "Via", VIA_TOKEN);
	}
	if (req->px->draining)
		evhttp_add_header(out, "Connection", "close");
	/* fwd-status: what the upstream said, a 304 for a revalidation. */
	cache_status(req, req->upstream_status != 0 ? req->upstream_status :
	    e->status, cs, sizeof(cs));
	evhttp_add_header(out, "Cache-Status", cs);
	if (cached) {
		/* The origin's Age (if it is a cache too) plus our time. */
		int64_t age = (util_now_ms() - e->stored_ms) / 1000;
		if (origin_age != NULL && isdigit((unsigned char)*origin_age))
			age += strtoll(origin_age, NULL, 10);
		evhttp_add_header(out, "Age", fmt_uint(age > 0 ? (uint64_t)age : 0,
		    num));
		if (!has_date) {
			hdr_format_date(e->stored_ms, line, sizeof(line));
			evhttp_add_header(out, "Date", line);
		}
		if (status == 200 && req->conditional && hdr_not_modified(
		    evhttp_request_get_input_headers(req->ev), &e->headers)) {
			STAT_INC(req->px->stats, req->route, not_modified);
			evhttp_remove_header(out, "Content-Type");
			evhttp_send_reply(req->ev, HTTP_NOTMODIFIED, NULL, NULL);
			return 0;
		}
	}
	if (req->head || e->body_len == 0) {
		if (req->head && e->status != 204 && e->status != 304) {
			snprintf(num, sizeof(num), "%zu", e->body_len);
			evhttp_add_header(out, "Content-Length",
			    req->head_length[0] != '\0' ? req->head_length : num);
		}
		evhttp_send_reply(req->ev, e->status, NULL, NULL);
		return 0;
	}
	if ((body = evbuffer_new()) == NULL ||
	    evbuffer_add_reference(body, e->body, e->body_len, on_body_sent,
	    entry_ref(e)) == -1) {
		if (body != NULL) {
			entry_unref(&e);	/* the reference just taken */
			evbuffer_free(body);
		}
		evhttp_send_reply(req->ev, HTTP_SERVUNAVAIL, NULL, NULL);
		return 0;
	}
	evhttp_send_reply(req->ev, e->status, NULL, body);
	evbuffer_free(body);
	return e->body_len;
}

static void log_access_record(struct req *req, uint64_t bytes);

static const char *
method_name(enum evhttp_cmd_type cmd)
{
	static const char *const names[] = {
		"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE",
		"CONNECT", "PATCH",
	};

	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if ((unsigned)cmd == (1u << i))
			return names[i];
	return "-";
}

/* The cache label of an outcome, as metrics and the access log name it. */
static const char *
outcome_label(enum outcome o)
{
	switch (o) {
	case OUT_HIT:
		return "hit";
	case OUT_STALE:
	case OUT_STALE_ERROR:
		return "stale";
	case OUT_STORED:
	case OUT_FETCHED:
	case OUT_WAIT_TIMEOUT:
	case OUT_DEGRADED:
		return "miss";
	case OUT_COLLAPSED:
		return "collapsed";
	case OUT_BYPASS:
	case OUT_METHOD:
		return "bypass";
	case OUT_UPSTREAM_ERROR:
	case OUT_BACKOFF:
	case OUT_REJECTED:
	case OUT_UNAVAILABLE:
	case OUT_NONE:
		break;
	}
	return "error";
}

static void
log_access(struct req *req, uint64_t bytes)
{
	if (req->px->access_log == NULL && LOGL_DEBUG > log_current_level)
		return;		/* nobody would read the record */
	log_access_record(req, bytes);
}

static void
log_access_record(struct req *req, uint64_t bytes)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req->ev);
	int waited = req->outcome == OUT_COLLAPSED ||
	    req->outcome == OUT_WAIT_TIMEOUT;
	char *client = client_address(req);
	int64_t now = util_mono_us();
	struct access_record r = {
		.client = client != NULL ? client : "-",
		.method = method_name(evhttp_request_get_command(req->ev)),
		.uri = req->uri != NULL ? req->uri :
		    evhttp_request_get_uri(req->ev),
		.status = evhttp_request_get_response_code(req->ev),
		.bytes = bytes,
		.referer = evhttp_find_header(in, "Referer"),
		.user_agent = evhttp_find_header(in, "User-Agent"),
		.cache = outcome_label(req->outcome),
		.route = req->route >= 0 ?
		    route_of(req->px, req->route)->prefix : NULL,
		.upstream_ms = req->upstream_ms,
		.lock_wait_ms = waited ? req->waited_us / 1000 : -1,
		.total_ms = (now - req->t_start_us) / 1000,
	};

	r.proto_major = req->ev->major;	/* no accessor in libevent 2.1 */
	r.proto_minor = req->ev->minor;
	access_log_write(req->px, &r);
}

/* The one way out: replies, counts, logs and frees. */
static void
req_finish(struct req *req)
{
	struct proxy *px = req->px;

	assert(req->magic == REQ_MAGIC);
	upstream_cancel(&req->fetch);
	if (req->flight != NULL) {
		TAILQ_REMOVE(&req->flight->reqs, req, flight_link);
		req->flight = NULL;
	}
	req->waited_us = util_mono_us() - req->t_join_us;	/* measured once */
	log_access(req, deliver(req));
	count_outcome(req);
	TAILQ_REMOVE(&all_reqs, req, all_link);
	px->nrequests--;
	entry_unref(&req->entry);
	free(req->uri);
	free(req->host);
	req->magic = 0;
	free(req);
}

static void
on_pass_fetched(struct upstream_response *resp, void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC);
	req->fetch = NULL;
	req->upstream_ms = resp->elapsed_ms;
	count_upstream(req->px, req->route, resp);
	if (resp->result != UPSTREAM_OK) {
		log_warn("upstream %s: %s (%s)", req->uri,
		    upstream_result_name(resp->result), resp->error);
		req->outcome = OUT_UPSTREAM_ERROR;
		req->uerr = resp->result;
	} else {
		const char *cl = evhttp_find_header(&resp->headers,
		    "Content-Length");
		if (req->head && cl != NULL)
			snprintf(req->head_length, sizeof(req->head_length),
			    "%s", cl);
		req->entry = entry_from_response(resp, "", 0);
		req->outcome = req->entry != NULL ? req->pass_kind :
		    OUT_UNAVAILABLE;
		/* RFC 9111 4.4: a successful unsafe request invalidates: this
		 * process's copy at once, Redis's (queued ahead of any later
		 * lookup) and the fleet's by the broadcast. */
		if (req->key[0] != '\0' && resp->status < 400) {
			l1_drop(req->px->l1, req->key);
			if (cache_invalidate(req->px->cache, req->key, NULL,
			    NULL) != NULL)
				STAT_INC(req->px->stats, req->route,
				    invalidations);
		}
	}
	upstream_response_free(&resp);
	req->step = REQ_DELIVER;
	req_run(req);
}

static int
pass_start(struct req *req)
{
	struct proxy *px = req->px;
	struct evbuffer *in = evhttp_request_get_input_buffer(req->ev);
	struct evkeyvalq headers;
	size_t urllen = strlen(px->conf->upstream_url) + strlen(req->uri) + 1;
	char *url;
	const char *method = method_name(evhttp_request_get_command(req->ev));
	struct upstream_request ur;

	if ((url = malloc(urllen)) == NULL)
		return -1;
	snprintf(url, urllen, "%s%s", px->conf->upstream_url, req->uri);
	TAILQ_INIT(&headers);
	forward_headers(req, &headers, HDR_DROP_HOST | HDR_DROP_LENGTH);
	memset(&ur, 0, sizeof(ur));
	ur.method = method;
	ur.url = url;
	ur.headers = &headers;
	ur.body_len = evbuffer_get_length(in);
	ur.body = ur.body_len > 0 ? evbuffer_pullup(in, -1) : NULL;
	ur.connect_timeout_ms = px->conf->upstream_connect_timeout_ms;
	ur.timeout_ms = px->conf->upstream_timeout_ms;
	ur.max_body_bytes = PASS_BODY_MAX;
	STAT_INC(px->stats, req->route, upstream_fetches);
	req->fetch = upstream_fetch(px->upstream, &ur, on_pass_fetched, req);
	evhttp_clear_headers(&headers);
	free(url);
	return req->fetch != NULL ? 0 : -1;
}

/*
 * What a proxy must not forward: 0, or the 4xx to answer with. libevent
 * reads up to HEADER_SLACK times max_header_bytes, so that the limit
 * itself is ours to enforce with a 431 rather than its generic 400.
 */
static int
request_problem(struct req *req)
{
	const struct evkeyval *h;
	size_t bytes = strlen(evhttp_request_get_uri(req->ev)) +
	    sizeof(" HTTP/1.1\r\n");
	int lengths = 0, chunked = 0;

	/* One pass, which also notes what later steps ask of the headers. */
	TAILQ_FOREACH(h, evhttp_request_get_input_headers(req->ev), next) {
		bytes += strlen(h->key) + strlen(h->value) + sizeof(": \r\n") - 1;
		if (strcasecmp(h->key, "Content-Length") == 0)
			lengths++;
		else if (strcasecmp(h->key, "Transfer-Encoding") == 0)
			chunked = 1;
		else if (strcasecmp(h->key, "Authorization") == 0 ||
		    strcasecmp(h->key, "Cookie") == 0)
			req->credentials = 1;
		else if (strcasecmp(h->key, "If-None-Match") == 0 ||
		    strcasecmp(h->key, "If-Modified-Since") == 0)
			req->conditional = 1;
	}
	if (bytes > (size_t)req->px->conf->max_header_bytes)
		return HTTP_HEADERS_TOO_LARGE;
	/* Two lengths, or a length and chunking: a smuggling attempt. */
	if (lengths > 1 || (lengths > 0 && chunked))
		return HTTP_BADREQUEST;
	return 0;
}

/*
 * A fresh entry in this process's memory answers without a Redis round
 * trip. When early refresh may be due, the request takes the usual path
 * instead, so that the refresh can start.
 */
static int
near_hit(struct req *req, const struct conf_route *rt)
{
	struct cache_entry *e = l1_get(req->px->l1, req->key, util_now_ms());

	if (e == NULL)
		return 0;
	if (xfetch_due(rt, e)) {
		/* Due: the flight refreshes without drawing again. */
		req->early_due = 1;
		entry_unref(&e);
		return 0;
	}
	req->entry = e;
	req->outcome = OUT_HIT;
	STAT_INC(req->px->stats, req->route, near_hits);
	return 1;
}

/* A method that changes the resource (RFC 9110 9.2.1). */
static int
unsafe(enum evhttp_cmd_type cmd)
{
	return cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
	    cmd == EVHTTP_REQ_DELETE || cmd == EVHTTP_REQ_PATCH;
}

/* Decides how the request is served. */
static void
req_recv(struct req *req)
{
	struct proxy *px = req->px;
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req->ev);
	struct evkeyvalq *in = evhttp_request_get_input_headers(req->ev);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req->ev);
	const char *path = u != NULL ? evhttp_uri_get_path(u) : NULL;
	const char *query = u != NULL ? evhttp_uri_get_query(u) : NULL;
	const char *host = evhttp_find_header(in, "Host");
	const struct conf_route *rt;
	size_t len;

	if (path == NULL || path[0] == '\0')
		path = "/";
	len = strlen(path) + (query != NULL ? strlen(query) + 1 : 0) + 1;
	req->host = strdup(host != NULL ? host : "");
	if ((req->uri = malloc(len)) == NULL || req->host == NULL) {
		req->outcome = OUT_UNAVAILABLE;
		req->step = REQ_DELIVER;
		return;
	}
	snprintf(req->uri, len, "%s%s%s", path, query != NULL ? "?" : "",
	    query != NULL ? query : "");
	rt = conf_route_match(px->conf, path);
	req->route = rt != NULL ? (int)(rt - px->conf->routes) : -1;
	req->head = cmd == EVHTTP_REQ_HEAD;
	STAT_INC(px->stats, req->route, requests);

	if ((req->reject_code = request_problem(req)) != 0) {
		log_info("rejected %s: %d", req->uri, req->reject_code);
		req->outcome = OUT_REJECTED;
		req->step = REQ_DELIVER;
	} else if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		/* If it succeeds, the cached entry of its URL is dropped
		 * (with no memory for the key, it is not). */
		if (rt != NULL && unsafe(cmd) && cache_key_for(host, path,
		    query, rt->sort_query, req->key) == -1)
			req->key[0] = '\0';
		req->pass_kind = OUT_METHOD;
		req->step = REQ_PASS;
	} else if (rt == NULL || (!rt->cache_authorized && req->credentials)) {
		req->pass_kind = OUT_BYPASS;
		req->step = REQ_PASS;
	} else if (cache_key_for(host, path, query, rt->sort_query,
	    req->key) == -1) {
		req->outcome = OUT_UNAVAILABLE;
		req->step = REQ_DELIVER;
	} else {
		variant_key(px, req->key, in);
		req->step = near_hit(req, rt) ? REQ_DELIVER : REQ_JOIN;
	}
}

static void
req_run(struct req *req)
{
	assert(req->magic == REQ_MAGIC);
	for (;;) {
		switch (req->step) {
		case REQ_RECV:
			req_recv(req);
			continue;
		case REQ_PASS:
			if (req->pass_kind == OUT_NONE)
				req->pass_kind = OUT_BYPASS;
			if (pass_start(req) == -1) {
				req->outcome = OUT_UNAVAILABLE;
				req->step = REQ_DELIVER;
				continue;
			}
			return;
		case REQ_JOIN:
			req->t_join_us = util_mono_us();
			req->step = REQ_DELIVER;	/* when the flight ends */
			if (flight_join(req) == -1) {
				req->outcome = OUT_UNAVAILABLE;
				continue;
			}
			return;		/* req may be answered already */
		case REQ_DELIVER:
		case REQ_FINISH:
			req->step = REQ_FINISH;
			req_finish(req);
			return;
		}
	}
}

void
flow_recv(struct proxy *px, struct evhttp_request *ev)
{
	struct req *req;

	assert(px->magic == PROXY_MAGIC);
	if ((req = calloc(1, sizeof(*req))) == NULL) {
		evhttp_send_error(ev, HTTP_SERVUNAVAIL, NULL);
		return;
	}
	req->magic = REQ_MAGIC;
	req->px = px;
	req->ev = ev;
	req->step = REQ_RECV;
	req->route = -1;
	req->upstream_ms = -1;
	req->t_start_us = req->t_join_us = util_mono_us();
	TAILQ_INSERT_TAIL(&all_reqs, req, all_link);
	px->nrequests++;
	req_run(req);
}

/*
 * Past the stop deadline: every fetch that holds a lock gives it up and
 * releases the lock (so the fleet does not wait out lock_ttl), and every
 * client still waiting gets a 503. Releases finish asynchronously.
 */
void
flow_abandon(struct proxy *px)
{
	struct refresh *rf;
	struct flight *fl, *fnext;
	struct req *req, *rnext;

	px->abandoned = 1;
	TAILQ_FOREACH(rf, &all_refreshes, link) {
		if (rf->step != RF_FETCH)
			continue;	/* a Redis reply is due within its timeout */
		upstream_cancel(&rf->fetch);
		evtimer_del(rf->renew_ev);
		cache_op_cancel(&rf->renew_op);
		rf->result = RFR_UPSTREAM_ERROR;
		rf->uerr = UPSTREAM_ERR_PROTOCOL;
		rf->step = RF_RELEASE;	/* no failure: no backoff */
		refresh_run(rf);
	}
	for (fl = TAILQ_FIRST(&all_flights); fl != NULL; fl = fnext) {
		fnext = TAILQ_NEXT(fl, link);
		if (fl->refresh != NULL)
			continue;	/* answered when its refresh reports */
		flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_done(fl);	/* cancels its op and timers */
	}
	for (req = TAILQ_FIRST(&all_reqs); req != NULL; req = rnext) {
		rnext = TAILQ_NEXT(req, all_link);
		if (req->fetch == NULL)
			continue;
		req->outcome = OUT_UNAVAILABLE;
		req_finish(req);
	}
}

/* The index of the route with this prefix in c, or -1. */
static int
route_index(const struct conf *c, const char *prefix)
{
	for (int i = 0; i < c->nroutes; i++)
		if (strcmp(c->routes[i].prefix, prefix) == 0)
			return i;
	return -1;
}

/*
 * A reload replaced old with new: work in progress keeps the settings it
 * began with, but counts under the route of the same prefix, if any.
 */
void
flow_remap_routes(struct proxy *px, const struct conf *old,
    const struct conf *new)
{
	struct req *req;
	struct flight *fl;
	struct refresh *rf;

	TAILQ_FOREACH(req, &all_reqs, all_link)
		if (req->route >= 0)
			req->route = route_index(new, old->routes[req->route].prefix);
	TAILQ_FOREACH(fl, &all_flights, link)
		fl->route = route_index(new, fl->rt.prefix);
	TAILQ_FOREACH(rf, &all_refreshes, link)
		rf->route = route_index(new, rf->rt.prefix);
}

/*
 * Ends everything in progress: every waiting client gets a 503, every
 * refresh gives up its fetch (its lock expires after lock_ttl).
 */
void
flow_shutdown(struct proxy *px)
{
	struct flight *fl;
	struct refresh *rf;
	struct req *req;

	while ((fl = TAILQ_FIRST(&all_flights)) != NULL) {
		if (fl->refresh != NULL) {
			fl->refresh->cb = NULL;
			fl->refresh = NULL;
		}
		flight_set_answer(fl, OUT_UNAVAILABLE, OUT_UNAVAILABLE, NULL);
		flight_done(fl);	/* cancels its op and timers */
	}
	while ((req = TAILQ_FIRST(&all_reqs)) != NULL) {
		req->outcome = OUT_UNAVAILABLE;
		req_finish(req);
	}
	while ((rf = TAILQ_FIRST(&all_refreshes)) != NULL) {
		rf->cb = NULL;
		if (rf->step != RF_DONE)
			refresh_end(rf);
		event_del(rf->done_ev);
		on_refresh_done(-1, 0, rf);
	}
}
