/* SPDX-License-Identifier: MIT */
/*
 * Latency histograms with fixed bounds (hist.h). Calls nothing.
 */

#include "common/hist.h"

#include <math.h>

/* Every bound of the old ladder (0.0005, 0.001, 0.0025 ... 30, 60) is
 * still one: queries on an le label keep working. */
const double hist_bounds[HIST_NBOUNDS] = {
	0.0001, 0.00015, 0.0002, 0.00025, 0.0003, 0.0004, 0.0005, 0.00075,
	0.001, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.0075,
	0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
	0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75,
	1, 1.5, 2, 2.5, 3, 4, 5, 7.5,
	10, 15, 20, 30, 45, 60,
};

/* A width's power of ten; the slack keeps 0.5 - 0.4 (0.0999...) at 0.1. */
#define WIDTH_SLACK	1.000001

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

double
hist_round(double v, double *step)
{
	double lo = 0, width;
	int i;

	for (i = 0; i < HIST_NBOUNDS - 1 && v > hist_bounds[i]; i++)
		lo = hist_bounds[i];
	width = hist_bounds[i] - lo;
	*step = pow(10, floor(log10(width * WIDTH_SLACK)));
	return floor(v / *step + 0.5) * *step;
}
