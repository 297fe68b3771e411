/* SPDX-License-Identifier: MIT */
#ifndef COMMON_HIST_H
#define COMMON_HIST_H

/*
 * A latency histogram with fixed bucket bounds chosen for a caching proxy:
 * 0.1 ms Redis round trips up to a minute of slow upstream, each bound at
 * most 1.5 times the one before (1, 1.5, 2, 2.5, 3, 4, 5, 7.5 in every
 * decade up to 10 s, then 15, 20, 30, 45, 60), so that a quantile read
 * from it is off by a third of its value at most.
 * Buckets are cumulative only when exported; here each counts its own range.
 */

#include <stdint.h>

#define HIST_NBOUNDS	46	/* finite upper bounds; one more bucket for +Inf */

extern const double hist_bounds[HIST_NBOUNDS];	/* seconds, ascending */

struct hist {
	uint64_t	bucket[HIST_NBOUNDS + 1];	/* last: above every bound */
	uint64_t	count;
	double		sum;				/* seconds */
};

void	hist_observe(struct hist *h, double seconds);
/* Adds src into dst. */
void	hist_merge(struct hist *dst, const struct hist *src);
/* An estimate of quantile q (0..1) in seconds, interpolated within its
 * bucket; 0 when empty. */
double	hist_quantile(const struct hist *h, double q);
/* What a value read from the histogram can honestly be shown as: v rounded
 * to the power of ten (*step, in seconds) at or below the width of the
 * bucket v falls in (a quantile in (0.3, 0.4] s shows to the 100 ms, one
 * in (0.1, 0.15] s to the 10 ms). */
double	hist_round(double v, double *step);

#endif
