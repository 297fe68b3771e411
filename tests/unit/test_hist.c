/* SPDX-License-Identifier: MIT */
#include "common/hist.h"

#include <math.h>
#include <stdlib.h>

#include "proxy/proxy_stats.h"
#include "tests/unit/unit.h"

#define EPS	1e-9

static int
near(double a, double b)
{
	return fabs(a - b) < EPS;
}

static void
t_empty_histogram_has_zero_quantiles(void)
{
	struct hist h = { 0 };

	CHECK(hist_quantile(&h, 0.5) == 0);
	CHECK(hist_quantile(&h, 0.99) == 0);
}

static void
t_bounds_ascend_from_sub_millisecond_to_a_minute(void)
{
	CHECK(hist_bounds[0] < 0.001);
	CHECK(hist_bounds[HIST_NBOUNDS - 1] >= 30);
	for (int i = 1; i < HIST_NBOUNDS; i++)
		CHECK(hist_bounds[i] > hist_bounds[i - 1]);
}

/* The bucket whose upper bound is le. */
static int
bucket_of(double le)
{
	for (int i = 0; i < HIST_NBOUNDS; i++)
		if (near(hist_bounds[i], le))
			return i;
	return -1;
}

static void
t_no_bucket_is_wider_than_half_its_lower_bound(void)
{
	/* A quantile read from a bucket is within a third of its value:
	 * (0.3, 0.4], never (0.25, 0.5]. */
	for (int i = 1; i < HIST_NBOUNDS; i++)
		CHECK(hist_bounds[i] <= 1.5 * hist_bounds[i - 1] + EPS);
	/* The old ladder's bounds are all still there. */
	CHECK(bucket_of(0.0005) >= 0 && bucket_of(0.0025) >= 0);
	CHECK(bucket_of(0.25) >= 0 && bucket_of(2.5) >= 0);
	CHECK(bucket_of(30) >= 0 && bucket_of(60) == HIST_NBOUNDS - 1);
}

static void
t_a_value_on_a_bound_falls_in_that_bucket(void)
{
	struct hist h = { 0 };

	hist_observe(&h, 0.001);	/* le="0.001" */
	CHECK(h.bucket[bucket_of(0.001)] == 1);
	hist_observe(&h, 0.0010001);	/* the next bucket */
	CHECK(h.bucket[bucket_of(0.0015)] == 1);
	CHECK(h.count == 2);
	CHECK(near(h.sum, 0.0020001));
}

static void
t_negative_counts_as_zero_and_huge_as_inf(void)
{
	struct hist h = { 0 };

	hist_observe(&h, -1);
	hist_observe(&h, 1e6);
	CHECK(h.bucket[0] == 1);
	CHECK(h.bucket[HIST_NBOUNDS] == 1);
	CHECK(near(h.sum, 1e6));
	/* Above the last bound the estimate is that bound. */
	CHECK(near(hist_quantile(&h, 0.99), hist_bounds[HIST_NBOUNDS - 1]));
}

static void
t_quantile_interpolates_within_its_bucket(void)
{
	struct hist h = { 0 };

	/* 100 values in (0.15, 0.2]: p50 is half-way through the bucket. */
	for (int i = 0; i < 100; i++)
		hist_observe(&h, 0.2);
	CHECK(near(hist_quantile(&h, 0.5), 0.15 + 0.05 * 0.5));
	CHECK(near(hist_quantile(&h, 0.99), 0.15 + 0.05 * 0.99));
	CHECK(hist_quantile(&h, 1.0) <= 0.2 + EPS);
}

static void
t_quantiles_follow_the_mass(void)
{
	struct hist h = { 0 };

	/* 90 fast (<= 1 ms) and 10 slow (in (1, 2.5] s). */
	for (int i = 0; i < 90; i++)
		hist_observe(&h, 0.0008);
	for (int i = 0; i < 10; i++)
		hist_observe(&h, 2);
	CHECK(hist_quantile(&h, 0.5) <= 0.001);
	CHECK(hist_quantile(&h, 0.9) <= 0.001 + EPS);
	CHECK(hist_quantile(&h, 0.99) > 1.5 && hist_quantile(&h, 0.99) <= 2);
	CHECK(hist_quantile(&h, 0.5) <= hist_quantile(&h, 0.9));
	CHECK(hist_quantile(&h, 0.9) <= hist_quantile(&h, 0.99));
}

static void
t_a_value_is_shown_to_its_buckets_width(void)
{
	double step;

	/* (0.3, 0.4]: 100 ms wide, shown to the 100 ms. */
	CHECK(near(hist_round(0.349, &step), 0.3) && near(step, 0.1));
	CHECK(near(hist_round(0.3501, &step), 0.4));
	/* (0.4, 0.5]: 0.5 - 0.4 is 0.0999...: still to the 100 ms. */
	CHECK(near(hist_round(0.47, &step), 0.5) && near(step, 0.1));
	/* (0.1, 0.15]: to the 10 ms. */
	CHECK(near(hist_round(0.1234, &step), 0.12) && near(step, 0.01));
	/* (0.5, 0.75]: 250 ms wide, to the 100 ms. */
	CHECK(near(hist_round(0.7225, &step), 0.7) && near(step, 0.1));
	/* Sub-millisecond: (0.0003, 0.0004] to the 0.1 ms. */
	CHECK(near(hist_round(0.00037, &step), 0.0004) && near(step, 0.0001));
	/* The last bucket, and 0. */
	CHECK(near(hist_round(60, &step), 60) && near(step, 10));
	CHECK(near(hist_round(0, &step), 0));
}

static void
t_merge_adds_buckets_count_and_sum(void)
{
	struct hist a = { 0 }, b = { 0 };

	hist_observe(&a, 0.003);
	hist_observe(&b, 0.003);
	hist_observe(&b, 7);
	hist_merge(&a, &b);
	CHECK(a.count == 3);
	CHECK(a.bucket[bucket_of(0.003)] == 2);	/* (0.0025, 0.003] */
	CHECK(a.bucket[bucket_of(7.5)] == 1);	/* (5, 7.5] */
	CHECK(near(a.sum, 7.006));
}

static double clock_s;

/* A clock that moves on each time it is read, as util_mono_us() does. */
static double
read_clock(void)
{
	double now = clock_s;

	clock_s += 1e-6;
	return now;
}

static void
t_a_route_and_the_total_get_an_observation_in_the_same_bucket(void)
{
	struct stats *st = calloc(1, sizeof(*st));

	CHECK(st != NULL);
	clock_s = hist_bounds[3];	/* read again, it would be past it */
	STAT_OBSERVE(st, 0, slot_wait, read_clock());
	for (int i = 0; i <= HIST_NBOUNDS; i++)
		CHECK(st->total.slot_wait.bucket[i] ==
		    st->route[0].slot_wait.bucket[i]);
	CHECK(st->total.slot_wait.bucket[3] == 1);
	CHECK(near(st->total.slot_wait.sum, st->route[0].slot_wait.sum));
	free(st);
}

int
main(void)
{
	RUN(t_empty_histogram_has_zero_quantiles);
	RUN(t_bounds_ascend_from_sub_millisecond_to_a_minute);
	RUN(t_no_bucket_is_wider_than_half_its_lower_bound);
	RUN(t_a_value_on_a_bound_falls_in_that_bucket);
	RUN(t_negative_counts_as_zero_and_huge_as_inf);
	RUN(t_quantile_interpolates_within_its_bucket);
	RUN(t_quantiles_follow_the_mass);
	RUN(t_a_value_is_shown_to_its_buckets_width);
	RUN(t_merge_adds_buckets_count_and_sum);
	RUN(t_a_route_and_the_total_get_an_observation_in_the_same_bucket);
	return unit_exit();
}
