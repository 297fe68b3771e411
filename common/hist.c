/*
 * Latency histograms with fixed bounds (hist.h). Calls nothing.
 */

#include "common/hist.h"

const double hist_bounds[HIST_NBOUNDS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

void
hist_observe(struct hist *h, double seconds)
{
	int i;

	if (seconds < 0)
		seconds = 0;
	for (i = 0; i < HIST_NBOUNDS; i++)
		if (seconds <= hist_bounds[i])
			break;
	h->bucket[i]++;
	h->count++;
	h->sum += seconds;
}

void
hist_merge(struct hist *dst, const struct hist *src)
{
	for (int i = 0; i <= HIST_NBOUNDS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum += src->sum;
}

double
hist_quantile(const struct hist *h, double q)
{
	double rank, seen = 0, lo = 0;

	if (h->count == 0)
		return 0;
	rank = q * (double)h->count;
	for (int i = 0; i <= HIST_NBOUNDS; i++) {
		double n = (double)h->bucket[i];
		if (n > 0 && seen + n >= rank) {
			if (i == HIST_NBOUNDS)
				return hist_bounds[HIST_NBOUNDS - 1];
			return lo + (hist_bounds[i] - lo) * ((rank - seen) / n);
		}
		seen += n;
		if (i < HIST_NBOUNDS)
			lo = hist_bounds[i];
	}
	return hist_bounds[HIST_NBOUNDS - 1];
}
