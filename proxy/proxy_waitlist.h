/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_WAITLIST_H
#define PROXY_PROXY_WAITLIST_H

/*
 * A flight's waiting list: the waiters of one key, the first leading, and
 * what each is handed once the flight has its answer (Varnish's "rush"):
 * the answer itself, "pass" (fetch your own: the response is one user's),
 * or "go to your variant". It calls the waiters' ops, and proxy_vary.c.
 */

#include <stdint.h>

#include "cache/cache.h"
#include "proxy/proxy_flow.h"

struct vary_keying;

/* A flight's answer, and how it applies to each waiter. */
struct verdict {
	enum outcome		 lead_outcome;
	enum outcome		 rest_outcome;
	struct cache_entry	*entry;		/* owned; NULL: made up */
	enum upstream_result	 uerr;
	char			 failure[FAILURE_MAX];
	int			 not_forwarded;	/* answered from a backoff */
	int			 upstream_status;	/* the lead's fetch, if not
						 * the entry's (a 304) */
	int64_t			 upstream_ms;	/* the lead's fetch, or -1 */
	int			 shareable;	/* may go to all, not one user */
	const char		*not_stored;	/* fetched, not stored: why */
	int			 partial;	/* its body was not all kept */
	char			 vary[VARY_SPEC_MAX];	/* it varies on this */
	char			 variant[CACHE_VARIANT_MAX];	/* the lead's */
	int			 redirect;	/* K varies: every waiter goes
						 * to its variant instead */
	int			 pass_all;	/* hit-for-miss: all go upstream */
	int64_t			 woken_us;	/* the last fill (or resubscription)
						 * that woke the flight: its
						 * receipt, monotonic; 0: none */
};

/* The answer every waiter gets: e (the verdict takes the reference). */
void	verdict_set(struct verdict *v, enum outcome lead, enum outcome rest,
	    struct cache_entry *e);
/* How many wait. */
int	waitlist_count(const struct waiters *list);
/* The siblings' waiters leave list with no answer (a 204 for them). */
void	waitlist_refuse_peers(struct waiters *list, const struct verdict *v);
/* An interim (1xx) response to every waiter of list, before their
 * answer. 0. */
int	waitlist_interim(const struct waiters *list,
	    const struct upstream_response *resp);
/* A streamed body was too long to keep: the waiters that came once it
 * had begun (and could not be fed it from its start) stay in list, to
 * share the next fetch; the others (HEADs) leave it to fetch their own.
 * Did any stay? */
int	waitlist_next_round(struct waiters *list, const struct verdict *v);
/* Every waiter leaves list with its share of v (its variant's by vk);
 * the first leads, unless the lead had its answer already (lead_gone).
 * *first_us: when the first had been handed its share (monotonic), if
 * any was. */
void	waitlist_rush(struct waiters *list, const struct verdict *v,
	    const struct vary_keying *vk, int lead_gone, int64_t *first_us);

#endif
