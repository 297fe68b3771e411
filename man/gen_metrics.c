/* SPDX-License-Identifier: MIT */
/*
 * Prints the counters of /stats (proxy_stats.h's STATS_FIELDS, the table
 * the JSON is made from) and the histograms' bucket bounds (common/hist.c)
 * as man(7) text: the Makefile puts them into corral-metrics(7).
 *
 *	gen_metrics counters | buckets
 */

#include <stdio.h>
#include <string.h>

#include "common/hist.h"
#include "proxy/proxy_stats.h"

static void
counters(void)
{
#define STATS_MAN(name, doc)	printf(".TP\n.B %s\n\\&%s.\n", #name, doc);
	STATS_FIELDS(STATS_MAN)
#undef STATS_MAN
}

static void
buckets(void)
{
	for (int i = 0; i < HIST_NBOUNDS; i++)
		printf("%g%s", hist_bounds[i], i + 1 < HIST_NBOUNDS ? ", " : "\n");
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "counters") == 0)
		counters();
	else if (argc == 2 && strcmp(argv[1], "buckets") == 0)
		buckets();
	else {
		fprintf(stderr, "usage: gen_metrics counters | buckets\n");
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
