/* SPDX-License-Identifier: MIT */
/*
 * A flight's waiting list and its rush: each waiter is handed, once, its
 * answer or its way on, through the ops it joined with. Calls
 * proxy_vary.c and the waiters' ops only.
 */

#include <stdio.h>
#include <string.h>
#include <sys/queue.h>

#include "cache/cache_entry.h"
#include "common/util.h"
#include "proxy/proxy_vary.h"
#include "proxy/proxy_waitlist.h"

void
verdict_set(struct verdict *v, enum outcome lead, enum outcome rest,
    struct cache_entry *e)
{
	v->lead_outcome = lead;
	v->rest_outcome = rest;
	entry_unref(&v->entry);
	v->entry = e;
	v->shareable = 1;
	v->not_stored = NULL;
}

/* Hands w, out of its list, its answer or its way on. */
static void
hand(struct waiter *w, const struct verdict *v, enum hand_kind kind,
    enum outcome o, struct cache_entry *e, int lead)
{
	struct handover h = {
		.kind = kind,
		.outcome = o,
		.entry = e,
		.uerr = v->uerr,
		.not_forwarded = v->not_forwarded,
		.failure = v->failure,
		.upstream_ms = lead ? v->upstream_ms : -1,
		.upstream_status = lead ? v->upstream_status : 0,
		.hit_for_miss = v->pass_all,
		.vary = v->vary,
		.not_stored = v->not_stored,
	};

	w->flight = NULL;
	w->ops->answer(w, &h);
}

int
waitlist_count(const struct waiters *list)
{
	const struct waiter *w;
	int n = 0;

	TAILQ_FOREACH(w, list, flight_link)
		n++;
	return n;
}

void
waitlist_refuse_peers(struct waiters *list, const struct verdict *v)
{
	struct waiter *w, *next;

	for (w = TAILQ_FIRST(list); w != NULL; w = next) {
		next = TAILQ_NEXT(w, flight_link);
		if (!w->peer)
			continue;
		TAILQ_REMOVE(list, w, flight_link);
		hand(w, v, HAND_ANSWER, OUT_NONE, NULL, 0);
	}
}

int
waitlist_next_round(struct waiters *list, const struct verdict *v)
{
	struct waiter *w, *next;
	int late = 0;

	TAILQ_FOREACH(w, list, flight_link)
		late |= w->late;
	if (!late)
		return 0;
	for (w = TAILQ_FIRST(list); w != NULL; w = next) {
		next = TAILQ_NEXT(w, flight_link);
		if (w->late) {
			w->late = 0;
			continue;
		}
		TAILQ_REMOVE(list, w, flight_link);
		hand(w, v, HAND_PASS, OUT_NONE, NULL, 0);
	}
	return 1;
}

/* Would w get the variant the lead got? */
static int
same_variant(const struct verdict *v, const struct waiter *w,
    const struct vary_keying *vk)
{
	char id[CACHE_VARIANT_MAX];

	/* No id: not known to be the same, so it looks for its own. */
	return vary_id(v->vary, w->headers, vk, id) == 0 &&
	    strcmp(id, v->variant) == 0;
}

void
waitlist_rush(struct waiters *list, const struct verdict *v,
    const struct vary_keying *vk, int lead_gone, int64_t *first_us)
{
	struct waiter *w;
	int lead = !lead_gone, handed = 0;

	while ((w = TAILQ_FIRST(list)) != NULL) {
		TAILQ_REMOVE(list, w, flight_link);
		if (v->redirect || (!lead && v->vary[0] != '\0' &&
		    !same_variant(v, w, vk)))
			hand(w, v, HAND_VARIANT, OUT_NONE, NULL, 0);
		else if (v->pass_all || (v->partial && v->entry != NULL) ||
		    (!lead && !v->shareable))
			/* Per user, or its body went only to the streams:
			 * never half. */
			hand(w, v, HAND_PASS, OUT_NONE, NULL, 0);
		else
			hand(w, v, HAND_ANSWER, lead ? v->lead_outcome :
			    v->rest_outcome, v->entry != NULL ?
			    entry_ref(v->entry) : NULL, lead);
		if (handed++ == 0)	/* (w may be gone) */
			*first_us = util_mono_us();
		lead = 0;
	}
}

int
waitlist_interim(const struct waiters *list,
    const struct upstream_response *resp)
{
	struct waiter *w;

	TAILQ_FOREACH(w, list, flight_link)
		if (w->ops->interim != NULL)
			(void)w->ops->interim(resp->status, &resp->headers,
			    w->interim_arg);
	return 0;
}
