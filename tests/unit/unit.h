/* SPDX-License-Identifier: MIT */
#ifndef TESTS_UNIT_H
#define TESTS_UNIT_H

/*
 * A minimal unit-test harness. Each test is a function; CHECK records a
 * failure and returns from it. Every test prints "PASS name" or
 * "FAIL name: file:line: expr"; tests/run.py counts those lines.
 *
 *	static void t_name(void) { CHECK(1 + 1 == 2); }
 *	int main(void) { RUN(t_name); return unit_exit(); }
 */

#include <stdio.h>
#include <string.h>

static int unit_failed_now;
static int unit_failures;

#define CHECK(expr) do {						\
	if (!(expr)) {							\
		printf("FAIL %s: %s:%d: %s\n", unit_current, __FILE__,	\
		    __LINE__, #expr);					\
		unit_failed_now = 1;					\
		return;							\
	}								\
} while (0)

#define CHECK_STR(a, b) CHECK(strcmp((a), (b)) == 0)

static const char *unit_current = "";

#define RUN(fn) do {							\
	unit_current = #fn + 2;						\
	unit_failed_now = 0;						\
	fn();								\
	if (unit_failed_now)						\
		unit_failures++;					\
	else								\
		printf("PASS %s\n", unit_current);			\
	fflush(stdout);							\
} while (0)

static inline int
unit_exit(void)
{
	return unit_failures == 0 ? 0 : 1;
}

#endif
