/* SPDX-License-Identifier: MIT */
/*
 * Probes on the fill path (proxy_probe.h): a flight's hand-out, timed.
 * Calls proxy_waitlist.c and proxy_vary.c.
 */

#include "proxy/proxy_probe.h"

#include "common/util.h"
#include "proxy/proxy_stats.h"
#include "proxy/proxy_vary.h"

#define US_PER_S	1e6

void
probe_rush(struct proxy *px, int route, const struct conf_route *rt,
    struct waiters *list, const struct verdict *v, int lead_gone)
{
	int n = waitlist_count(list);
	int64_t start = util_mono_us(), first_us = 0;
	struct vary_keying vk;

	vary_keying(px->conf, rt, &vk);
	waitlist_rush(list, v, &vk, lead_gone, &first_us);
	if (first_us == 0)
		return;		/* nobody was left to hand it to */
	/* Woken, and answered by another's fetch: not one of its own. */
	if (v->woken_us > 0 && v->lead_outcome == OUT_COLLAPSED)
		STAT_OBSERVE(px->stats, route, fill_wake,
		    (double)(first_us - v->woken_us) / US_PER_S);
	if (n > 1)
		STAT_OBSERVE(px->stats, route, rush,
		    (double)(util_mono_us() - start) / US_PER_S);
}
