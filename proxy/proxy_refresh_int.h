/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_REFRESH_INT_H
#define PROXY_PROXY_REFRESH_INT_H

/*
 * struct refresh's insides, shared by its machine (proxy_refresh.c) and
 * the step that decides what a fetched response becomes
 * (proxy_decide.c), which the machine calls; nothing else includes it.
 */

#include <stdint.h>
#include <sys/queue.h>


#include "cache/cache.h"
#include "proxy/proxy_budget.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_refresh.h"

#include "common/hlist.h"

#define REFRESH_MAGIC		0x52465348u	/* "RFSH" */

enum refresh_step {
	RF_LOCK,		/* the lock script: the lock, or what stands in
				 * its way (a newer entry, a failure, ...) */
	RF_CLAIM,		/* DIRECT: the instance's claim, or the entry a
				 * sibling fetched under it */
	RF_FETCH,		/* the origin fetch, the lock renewed meanwhile */
	RF_DECIDE,		/* what the response is: stored, or not */
	RF_STORE,		/* the store, fenced by the token */
	RF_RELEASE,		/* the lock let go, if it is still ours */
	RF_DONE,		/* ended: reports from outside the call stack */
	RF_PARK,		/* not a step: wait for a callback */
};


#define TEXT_MAX	(MAX(UTIL_TOKEN_HEX, FAILURE_MAX) + 1)

/* Why a fetch was given up before it ended (never by a callback). */
enum given_up {
	GIVEN_UP_NONE,
	GIVEN_UP_UNWANTED,	/* its flight's clients all left, unsent */
	GIVEN_UP_STOPPING,	/* the stop's deadline passed */
};

struct refresh {
	uint32_t		 magic;
	uint64_t		 id;		/* for the step trace */
	struct proxy		*px;
	enum refresh_step	 step;
	int			 route;		/* for counters; -1 if reloaded away */
	struct conf_route	 rt;		/* its settings when it began */
	char			 key[FLOW_KEY_MAX + 1];
	char			*url;
	struct hlist	 headers;
	int			 token_expired;	/* may_send held it back */
	struct fetch_kept	 sent;		/* method, body, url tag */
	char			 token[UTIL_TOKEN_HEX + 1];
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	char			 waited[UTIL_TOKEN_HEX + 1];	/* its holder */
	struct cache_entry	*base;		/* revalidated by a 304, or NULL */
	int			 authorized;
	struct cache_op		*op;
	struct cache_op		*renew_op;
	struct origin_fetch	*fetch;		/* through the origin budget */
	struct event		*renew_ev;
	struct event		*done_ev;
	int			 registered;	/* in px->refreshes */
	int			 peer_entry;	/* in the siblings' table, or -1 */
	int			 claim;		/* DIRECT: under the instance's claim */
	int			 claimed;	/* ... and it holds the claim */
	struct event		*sibling_ev;	/* polls a sibling's claim */
	int64_t			 sibling_until_us;	/* ... as for a holder */
	int			 lost;		/* our token was replaced */
	enum given_up		 given_up;	/* its fetch, before it ended */
	int			 stale_copy;	/* refresh_args' */
	int64_t			 fetch_start_us;
	int64_t			 sie_ms;	/* stale-if-error of the entry */
	struct cache_entry	*marker;	/* stored at K when it varies */
	TAILQ_ENTRY(refresh)	 link;		/* in px->refresh_list */
	refresh_done_cb		*cb;
	void			*cb_arg;
	refresh_stream_cb	*stream;	/* with cb_arg */
	enum budget_class	 budget;	/* its rank for an origin slot */
	const struct waiters	*waiters;	/* a flight's: with cb */

	/* What callbacks left for the step they re-enter. */
	int			 replied;	/* LOCK, STORE, RELEASE: Redis did */
	enum lock_result	 lock_r;
	enum fence_result	 fence_r;
	struct cache_entry	*lock_e;	/* with lock_r */
	char			 lock_text[TEXT_MAX];
	struct upstream_response *resp;		/* FETCH: the response came */

	struct refresh_report	 report;
};

/* DECIDE: what the response rf->resp is (an entry to store, to release
 * with, a failure), its report filled in; RF_STORE or RF_RELEASE. */
enum refresh_step refresh_decide(struct refresh *rf);
/* Its claims token no longer verified as the fetch was to go: not sent,
 * the lock let go with no failure, its waiters answered as for an
 * upstream error. */
enum refresh_step refresh_token_expired(struct refresh *rf);

#endif
