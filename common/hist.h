#ifndef COMMON_HIST_H
#define COMMON_HIST_H

/*
 * A latency histogram with fixed bucket bounds chosen for a caching proxy:
 * sub-millisecond Redis round trips up to tens of seconds of slow upstream.
 * Buckets are cumulative only when exported; here each counts its own range.
 */

#include <stdint.h>

#define HIST_NBOUNDS	16	/* finite upper bounds; one more bucket for +Inf */

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

#endif
