#include "common/hist.h"

#include <math.h>

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

static void
t_a_value_on_a_bound_falls_in_that_bucket(void)
{
	struct hist h = { 0 };

	hist_observe(&h, 0.001);	/* le="0.001" */
	CHECK(h.bucket[1] == 1);
	hist_observe(&h, 0.0010001);	/* the next bucket */
	CHECK(h.bucket[2] == 1);
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

	/* 100 values in (0.1, 0.25]: p50 is half-way through the bucket. */
	for (int i = 0; i < 100; i++)
		hist_observe(&h, 0.2);
	CHECK(near(hist_quantile(&h, 0.5), 0.1 + 0.15 * 0.5));
	CHECK(near(hist_quantile(&h, 0.99), 0.1 + 0.15 * 0.99));
	CHECK(hist_quantile(&h, 1.0) <= 0.25 + EPS);
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
	CHECK(hist_quantile(&h, 0.99) > 1 && hist_quantile(&h, 0.99) <= 2.5);
	CHECK(hist_quantile(&h, 0.5) <= hist_quantile(&h, 0.9));
	CHECK(hist_quantile(&h, 0.9) <= hist_quantile(&h, 0.99));
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
	CHECK(a.bucket[3] == 2);	/* (0.0025, 0.005] */
	CHECK(a.bucket[13] == 1);	/* (5, 10] */
	CHECK(near(a.sum, 7.006));
}

int
main(void)
{
	RUN(t_empty_histogram_has_zero_quantiles);
	RUN(t_bounds_ascend_from_sub_millisecond_to_a_minute);
	RUN(t_a_value_on_a_bound_falls_in_that_bucket);
	RUN(t_negative_counts_as_zero_and_huge_as_inf);
	RUN(t_quantile_interpolates_within_its_bucket);
	RUN(t_quantiles_follow_the_mass);
	RUN(t_merge_adds_buckets_count_and_sum);
	return unit_exit();
}
