/* SPDX-License-Identifier: MIT */
/*
 * Regression tests: one per bug found by the fault and limit scenarios or
 * by the fuzz targets in fuzz/, feeding the input that exposed it to the
 * pure function at fault. A crash found by `make fuzz` is added here with
 * its input as a byte array (the file libFuzzer wrote to build/fuzz/).
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "cache/cache_key.h"
#include "conf/conf.h"
#include "proxy/proxy_json.h"
#include "tests/unit/unit.h"

static struct conf conf;	/* large: keep it off the stack */

/* conf_load() of text through a temporary file; the number of errors. */
static int
load_text(const char *text)
{
	char path[] = "/tmp/corral-regression-XXXXXX";
	FILE *devnull = fopen("/dev/null", "w");
	int fd = mkstemp(path), nerr;

	if (fd == -1 || devnull == NULL ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	nerr = conf_load(&conf, path, devnull);
	unlink(path);
	fclose(devnull);
	return nerr;
}

/*
 * sort_query sorted the parameters as sent and normalised them after, so
 * "%62=1" ("b=1") sorted before "a=2": one query in two orders made two
 * keys (scenario sort_query_sorts_parameters_after_normalising_them).
 */
static void
t_sorted_query_is_normalised_before_sorting(void)
{
	char *x = cache_query_sorted("%62=1&a=2");
	char *y = cache_query_sorted("a=2&b=1");
	char kx[CACHE_KEY_MAX + 1], ky[CACHE_KEY_MAX + 1];

	CHECK(x != NULL && y != NULL);
	cache_key_build("app.test", "/q", x, kx);
	cache_key_build("app.test", "/q", y, ky);
	free(x);
	free(y);
	CHECK_STR(kx, ky);
}

/*
 * ttl_status durations had no range: 200:2562047788015h passed corral -t,
 * and the first 200 overflowed fresh_until = now + ttl (signed overflow;
 * scenario ttl_status_durations_are_range_checked_like_ttl).
 */
static void
t_ttl_status_past_the_ttl_range_is_refused(void)
{
	CHECK(load_text("[route /]\nttl_status = 200:2562047788015h\n") == 1);
	CHECK(load_text("[route /]\nttl_status = 404:30s,410:8760h\n") == 0);
}

/*
 * ttl_status = 200:0 was taken as "200 not listed" (both were 0), so 200s
 * were stored for the route's ttl (scenario ttl_status_zero_does_not_
 * store_for_the_route_ttl). A listed 0 must differ from "not listed".
 */
static void
t_ttl_status_zero_is_not_the_route_ttl(void)
{
	CHECK(load_text("[route /]\nttl = 10s\nttl_status = 200:0\n") == 0);
	CHECK(conf.nroutes == 1);
	CHECK(conf_status_ttl(&conf.routes[0], 200) == 0);
	CHECK(conf_status_ttl(&conf.routes[0], 203) !=
	    conf_status_ttl(&conf.routes[0], 200));
}

/*
 * A route prefix with bytes past ASCII passed corral -t, and json_string()
 * copied them into /stats as they were: invalid UTF-8, invalid JSON. Such
 * a prefix is refused now, and json_string() writes every byte past ASCII
 * as \u00XX.
 */
static void
t_json_string_is_ascii_whatever_its_bytes(void)
{
	struct evbuffer *b = evbuffer_new();
	const char *want = "\"/caf\\u00c3\\u00a9 \\u00ff\\u007f\\\"\"";
	size_t n;

	CHECK(b != NULL);
	json_string(b, "/caf\xc3\xa9 \xff\x7f\"");
	n = evbuffer_get_length(b);
	CHECK(n == strlen(want) &&
	    memcmp(evbuffer_pullup(b, -1), want, n) == 0);
	evbuffer_free(b);
	CHECK(load_text("[route /caf\xc3\xa9/]\n") == 1);
}

int
main(void)
{
	RUN(t_sorted_query_is_normalised_before_sorting);
	RUN(t_ttl_status_past_the_ttl_range_is_refused);
	RUN(t_ttl_status_zero_is_not_the_route_ttl);
	RUN(t_json_string_is_ascii_whatever_its_bytes);
	return unit_exit();
}
