/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_REFRESH_H
#define PROXY_PROXY_REFRESH_H

/*
 * struct refresh: one fetch of a key, for a flight or for nobody (a
 * background refresh of a stale entry). It owns a lock token and a curl
 * handle and never points back at a client request. It reports once,
 * through the callback its starter gave, after it has ended. Its fetch
 * goes through the origin budget (origin_fetch(), proxy_budget.h).
 */

#include <stdint.h>


#include "proxy/proxy_flow.h"
#include "upstream/upstream.h"

struct hlist;

struct cache_entry;
struct conf;
struct conf_route;
struct proxy;

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
	RFR_FAILED,		/* the fetch waited for failed: failure holds its
				 * failure, entry its error response or NULL */
	RFR_ORIGIN_BUSY,	/* no origin slot within queue_timeout: not
				 * sent (failure says "origin-busy") */
	RFR_UNWANTED,		/* nobody waited for it any more: not sent */
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
	const struct hlist	*headers;	/* sent upstream */
	const struct fetch_kept	*fetch;		/* method, body, url tag; a
						 * revalidated base's stored
						 * request body goes instead */
	const char		*seen_gen;	/* the generation it saw */
	const char		*waited;	/* the holder it waited for, or "" */
	struct cache_entry	*base;		/* to revalidate, or NULL */
	refresh_stream_cb	*stream;	/* NULL: the body comes whole */
	int			 claim;		/* RF_DIRECT: under the instance's
						 * claim (proxy_peer.h), or with
						 * the entry a sibling fetched
						 * under it (RFR_CHANGED) */
	const struct waiters	*waiters;	/* a flight's: how many wait for
						 * it (its origin slot's rank) */
	int			 lowest;	/* an operator's refresh: the
						 * origin budget's lowest rank */
	int			 stale_copy;	/* base is a near cache's stale
						 * copy, served meanwhile: dropped
						 * if Redis cannot be asked */
};

/* What a refresh reports once it has ended. The callee may take entry
 * (and then sets it to NULL). */
struct refresh_report {
	enum refresh_mode	 mode;
	enum refresh_result	 result;
	struct cache_entry	*entry;
	enum upstream_result	 uerr;
	char			 failure[FAILURE_MAX];	/* "" unless it failed */
	int			 shareable;
	int			 stored;
	const char		*not_stored;	/* why it was not (a token for
						 * Cache-Status), or NULL */
	int			 upstream_status;	/* when not the entry's */
	int64_t			 fetch_ms;	/* -1: no fetch ended */
	char			 variant[FLOW_KEY_MAX + 1];	/* "" or "K\nID" */
	char			 vary[VARY_SPEC_MAX];	/* the response's Vary */
	int			 partial;	/* streamed past max_entry_bytes:
						 * entry's body is not whole */
	size_t			 plain_len;	/* entry's body as identity */
	char			 holder[UTIL_TOKEN_HEX + 1];	/* RFR_BUSY: the
						 * lock's holder, or "" */
};

typedef void refresh_done_cb(struct refresh_report *rep, void *arg);

/* Starts a refresh. It reports once through cb (which may be NULL) after
 * it has ended, never from inside this call. NULL on no memory. */
struct refresh *refresh_start(struct proxy *px, const struct refresh_args *a,
	    refresh_done_cb *cb, void *arg);
/* Has a hit on e drawn an early refresh (XFetch)? */
int	refresh_early_due(const struct conf_route *rt,
	    const struct cache_entry *e);
/* Does this process refresh key with the lock right now? */
int	refresh_running(struct proxy *px, const char *key);
/* Its starter is gone: it goes on, and reports to nobody. */
void	refresh_detach(struct refresh *rf);
/* Every client that waited for it left: if it still waits for its origin
 * slot, it is not sent (its lock goes, with no failure) and it reports
 * RFR_UNWANTED; under way, it goes on (its entry will serve). */
void	refresh_unwanted(struct refresh *rf);
/* Goes on with a fetch its stream callback paused. */
void	refresh_resume(struct refresh *rf);
/* Past the stop deadline: every refresh whose fetch is under way gives
 * it up and releases its lock, so the fleet does not wait out lock_ttl
 * (the others are waiting for Redis, due within its timeout). */
void	refresh_abandon_fetches(struct proxy *px);
/* A reload: each counts under the route of its prefix, if any. */
void	refresh_remap(struct proxy *px, const struct conf *new);
/* Gives up every fetch now (its lock expires after lock_ttl). */
void	refresh_shutdown_all(struct proxy *px);

#endif
