/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_FLIGHT_INT_H
#define PROXY_PROXY_FLIGHT_INT_H

/*
 * struct flight's insides, shared by its machine (proxy_flight.c) and
 * what its answers are made of (proxy_flight_answer.c), which the
 * machine's steps call; nothing else includes it.
 */

#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "conf/conf.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hold.h"
#include "proxy/proxy_refresh.h"
#include "proxy/proxy_waitlist.h"

#include "common/hlist.h"

#define FLIGHT_MAGIC		0x464c4754u	/* "FLGT" */

enum flight_step {
	FL_LOOKUP,		/* reads the entry */
	FL_LOCK,		/* a refresh takes the lock and fetches */
	FL_WAIT,		/* another process fetches: wait for its fill */
	FL_PEER,		/* a sibling worker fetches: take its stream */
	FL_DIRECT,		/* fetches without the lock */
	FL_DONE,		/* answered: hands it out and frees */
	FL_PARK,		/* not a step: wait for a callback */
};


/* What the response being fetched turned out to be. */
enum stream_state {
	STREAM_NONE,		/* no head yet */
	STREAM_ON,		/* streamed to the flight's waiters */
	STREAM_WHOLE,		/* answered whole, when it ends */
};

struct flight {
	uint32_t		 magic;
	uint64_t		 id;		/* for the step trace */
	struct proxy		*px;
	enum flight_step	 step;
	int			 route;		/* for counters; -1 if reloaded away */
	struct conf_route	 rt;		/* its settings when the flight began */
	char			 key[FLOW_KEY_MAX + 1];
	char			*uri;
	struct hlist	 headers;	/* sent upstream */
	struct fetch_kept	 fetch;		/* method, body, url tag */
	struct waiters		 waiters;	/* the first one leads */
	TAILQ_ENTRY(flight)	 link;		/* in px->flight_list */
	struct stream		*stream;	/* the fetch's body, as it comes */
	enum stream_state	 stream_state;	/* of the fetch running */
	int			 lead_streamed;	/* the lead's reply streams */
	int			 lead_left;	/* the lead's client left: the
						 * others are all its waiters */
	struct upstream_fetch	*peer;		/* PEER: a sibling's stream */
	int			 peer_slot;	/* PEER: that sibling */
	struct cache_op		*op;
	struct refresh		*refresh;
	struct event		*poll_ev;
	struct hold		 hold;		/* its waiters' lock_wait budget */
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	struct cache_entry	*prev;		/* the unusable entry it saw: for
						 * validators, and stale-if-error */
	int			 authorized;	/* the lead sends credentials */
	int			 early_due;	/* a request's XFetch roll said so */

	/* What callbacks left for the step they re-enter. */
	int			 looked;	/* LOOKUP: the lookup answered */
	enum cache_result	 look_result;
	struct cache_entry	*look_entry;
	int			 reported;	/* LOCK, DIRECT: the refresh did */
	struct refresh_report	 rep;
	int			 peer_ended;	/* PEER: the sibling's answer */
	int			 peer_ok;
	int			 fill_pending;	/* a fill came (or a poll) */
	struct cache_entry	*fill;		/* ... with this entry */
	int			 degraded;	/* Redis failed */

	struct verdict		 verdict;	/* the answer, set before DONE */
};

/* ---- proxy_flight_answer.c: the flight's answers -------------------- */

/* Keeps an entry that can no longer be served as it is (*ep, taken): the
 * refresh revalidates it, and stale_if_error may still serve it. */
void	flight_keep_prev(struct flight *fl, struct cache_entry **ep);
/* The key's responses vary (*marker says on what, taken): every waiter
 * goes on to its own variant. FL_DONE. */
enum flight_step flight_redirect(struct flight *fl, struct cache_entry **marker);
/* lock_wait ran out while another process still fetches: stale, or 504;
 * none fetches. FL_DONE. */
enum flight_step flight_give_up(struct flight *fl);
/* After a busy lock, or a sibling that had no stream for us: the lock
 * again (a fill came), the end (lock_wait ran out) or the wait. */
enum flight_step flight_after_busy(struct flight *fl);
/* The flight's refresh has ended: what its report (fl->rep) makes of the
 * verdict, and the step that follows. */
enum flight_step flight_reported(struct flight *fl);
/* Every reply under way ends, whole only if ok; the lead's (if it
 * streamed) is lead_o, with what its fetch took. */
void	flight_end_streams(struct flight *fl, int ok, enum outcome lead_o,
	    int64_t lead_ms);

#endif
