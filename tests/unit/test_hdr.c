/*
 * proxy/proxy_hdr.c: freshness as a shared cache decides it (route mode
 * and origin mode, every branch), HTTP dates, conditional requests from
 * the cache, 304 merges, and which headers hdr_copy drops.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>


#include "common/hlist.h"
#include "conf/conf.h"
#include "proxy/proxy_hdr.h"
#include "tests/unit/unit.h"

#define S		INT64_C(1000)		/* ms per second */
#define NOW		INT64_C(1700000000000)	/* a fixed "now", whole seconds */
#define ROUTE_TTL	(10 * S)
#define ROUTE_SWR	(60 * S)
#define ROUTE_SIE	(7 * S)
#define DATE_1994	INT64_C(784111777000)	/* Sun, 06 Nov 1994 08:49:37 GMT */
#define DATE_BUF	64

static struct conf_route rt;
static struct hlist hs, req;
static struct freshness f;

/* A route as conf_defaults leaves it, but with a distinct
 * stale_if_error, so that every field can be told apart. */
static void
route_reset(int origin_cache_control)
{
	memset(&rt, 0, sizeof(rt));
	snprintf(rt.prefix, sizeof(rt.prefix), "/");
	rt.ttl_ms = ROUTE_TTL;
	rt.swr_ms = ROUTE_SWR;
	rt.lock_ttl_ms = 5 * S;
	rt.lock_wait_ms = 3 * S;
	rt.lock_poll_ms = 500;
	rt.stale_if_error_ms = ROUTE_SIE;
	rt.error_backoff_ms = 30 * S;
	rt.ttl_404_ms = 0;
	rt.early_refresh_beta = 1.0;
	rt.origin_cache_control = origin_cache_control;
}

static void
clear(void)
{
	hl_free(&hs);
	hl_free(&req);
	hl_init(&hs);
	hl_init(&req);
	memset(&f, 0xa5, sizeof(f));	/* hdr_freshness must set every field */
}

static void
add(const char *name, const char *value)
{
	if (hl_add(&hs, name, value) != 0)
		abort();
}

static void
add_req(const char *name, const char *value)
{
	if (hl_add(&req, name, value) != 0)
		abort();
}

static void
fresh(int status, int authorized)
{
	hdr_freshness(status, &hs, authorized, &rt, NOW, &f);
}

static int
is(int64_t ttl, int64_t swr, int64_t sie)
{
	return f.storable == 1 && f.ttl_ms == ttl && f.swr_ms == swr &&
	    f.sie_ms == sie;
}

static int
refused(const char *why)
{
	return f.storable == 0 && f.why != NULL && strcmp(f.why, why) == 0 &&
	    f.ttl_ms == 0 && f.swr_ms == 0 && f.sie_ms == 0;
}

static int
count(const struct hlist *q, const char *name)
{
	const struct hfield *h;
	int n = 0;

	HL_FOREACH(h, q)
		if (strcasecmp(h->key, name) == 0)
			n++;
	return n;
}

static void
date_at(int64_t ms, char out[DATE_BUF])
{
	hdr_format_date(ms, out, DATE_BUF);
}

/* ---- route mode: origin_cache_control = off ---- */

static void
t_route_mode_uses_route_times(void)
{
	route_reset(0);
	clear();
	fresh(200, 0);
	CHECK(is(ROUTE_TTL, ROUTE_SWR, ROUTE_SIE));
	CHECK(f.why != NULL);
}

static void
t_route_mode_ignores_origin_freshness(void)
{
	route_reset(0);
	clear();
	add("Cache-Control", "s-maxage=5, max-age=1, must-revalidate, "
	    "stale-while-revalidate=3, stale-if-error=4");
	add("Expires", "Sun, 06 Nov 1994 08:49:37 GMT");
	add("Age", "100");
	fresh(200, 0);
	CHECK(is(ROUTE_TTL, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "no-cache");
	fresh(200, 0);
	CHECK(is(ROUTE_TTL, ROUTE_SWR, ROUTE_SIE));
}

static void
t_route_mode_every_default_status(void)
{
	static const int ok[] = { 200, 203, 204, 300, 301, 308 };
	static const int no[] = { 201, 202, 206, 302, 303, 304, 307, 400,
	    403, 404, 410 };

	route_reset(0);
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		clear();
		fresh(ok[i], 0);
		CHECK(is(ROUTE_TTL, ROUTE_SWR, ROUTE_SIE));
		CHECK(hdr_status_storable(ok[i]));
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		clear();
		fresh(no[i], 0);
		CHECK(refused("status"));
		CHECK(!hdr_status_storable(no[i]));
	}
}

static void
t_route_mode_ttl_404_and_ttl_status(void)
{
	route_reset(0);
	rt.ttl_404_ms = 30 * S;
	rt.nstatus_ttls = 3;
	rt.status_ttls[0].status = 410;
	rt.status_ttls[0].ttl_ms = 5 * S;
	rt.status_ttls[1].status = 200;
	rt.status_ttls[1].ttl_ms = 0;		/* 0: never stored */
	rt.status_ttls[2].status = 503;
	rt.status_ttls[2].ttl_ms = 9 * S;	/* 5xx: never, whatever it says */
	clear();
	fresh(404, 0);
	CHECK(is(30 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	fresh(410, 0);
	CHECK(is(5 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	fresh(200, 0);
	CHECK(refused("status"));
	clear();
	fresh(503, 0);
	CHECK(refused("status"));
}

static void
t_route_mode_ttl_zero_stores_nothing(void)
{
	route_reset(0);
	rt.ttl_ms = 0;
	clear();
	fresh(200, 0);
	CHECK(refused("status"));
	clear();
	add("Cache-Control", "max-age=60");
	fresh(200, 0);
	CHECK(refused("status"));
}

static void
t_never_stored_in_either_mode(void)
{
	for (int mode = 0; mode <= 1; mode++) {
		route_reset(mode);
		clear();
		fresh(500, 0);
		CHECK(refused("status"));
		clear();
		fresh(503, 0);
		CHECK(refused("status"));
		clear();
		add("Cache-Control", "max-age=60");
		fresh(502, 0);
		CHECK(refused("status"));
		clear();
		add("Set-Cookie", "a=1");
		add("Cache-Control", "public, max-age=60");
		fresh(200, 0);
		CHECK(refused("set-cookie"));
		clear();
		add("Cache-Control", "max-age=60, No-Store");
		fresh(200, 0);
		CHECK(refused("no-store"));
		clear();
		add("Cache-Control", "public");
		add("Cache-Control", "private");
		fresh(200, 0);
		CHECK(refused("private"));
		clear();
		add("Vary", "*");
		fresh(200, 0);
		CHECK(refused("vary"));
		clear();
		add("Vary", "Accept-Language, *");
		fresh(200, 0);
		CHECK(refused("vary"));
		clear();
		add("Vary", "Accept-Language");
		fresh(200, 0);
		CHECK(f.storable);
	}
}

static void
t_authorization_needs_public_s_maxage_or_must_revalidate(void)
{
	for (int mode = 0; mode <= 1; mode++) {
		route_reset(mode);
		clear();
		fresh(200, 1);
		CHECK(refused("authorization"));
		clear();
		add("Cache-Control", "max-age=60");
		fresh(200, 1);
		CHECK(refused("authorization"));
		clear();
		add("Cache-Control", "public");
		fresh(200, 1);
		CHECK(f.storable);
		clear();
		add("Cache-Control", "s-maxage=60");
		fresh(200, 1);
		CHECK(f.storable);
		clear();
		add("Cache-Control", "must-revalidate");
		fresh(200, 1);
		CHECK(f.storable);
		clear();
		fresh(200, 0);		/* the same response, no Authorization */
		CHECK(f.storable);
	}
}

/* ---- origin mode: origin_cache_control = on ---- */

static void
t_origin_mode_silent_origin_gets_route_defaults(void)
{
	route_reset(1);
	clear();
	add("Content-Type", "text/plain");
	fresh(200, 0);
	CHECK(is(ROUTE_TTL, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "public");
	fresh(200, 0);
	CHECK(is(ROUTE_TTL, ROUTE_SWR, ROUTE_SIE));
}

static void
t_origin_mode_silent_origin_and_ttl_zero_not_stored(void)
{
	route_reset(1);
	rt.ttl_ms = 0;
	clear();
	fresh(200, 0);
	CHECK(refused("no-freshness"));
	clear();
	add("ETag", "\"v1\"");
	fresh(200, 0);
	CHECK(refused("no-freshness"));
	clear();
	add("Cache-Control", "max-age=5");	/* the origin says: it rules */
	fresh(200, 0);
	CHECK(is(5 * S, ROUTE_SWR, ROUTE_SIE));
}

static void
t_origin_mode_max_age(void)
{
	route_reset(1);
	clear();
	add("Cache-Control", "max-age=30");
	fresh(200, 0);
	CHECK(is(30 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "public, Max-Age=\"45\"");
	fresh(200, 0);
	CHECK(is(45 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "public");
	add("Cache-Control", "max-age=20");	/* directives of every line */
	fresh(200, 0);
	CHECK(is(20 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "max-age=99999999999");	/* capped at 2^31 s */
	fresh(200, 0);
	CHECK(f.storable && f.ttl_ms == (INT64_C(1) << 31) * S);
}

static void
t_origin_mode_s_maxage_beats_max_age_and_is_strict(void)
{
	route_reset(1);
	clear();
	add("Cache-Control", "max-age=30, s-maxage=40");
	fresh(200, 0);
	CHECK(is(40 * S, 0, 0));
	clear();
	add("Cache-Control", "s-maxage=5, max-age=300");
	fresh(200, 0);
	CHECK(is(5 * S, 0, 0));
	clear();
	add("Cache-Control", "s-maxage=5, stale-while-revalidate=8, "
	    "stale-if-error=9");
	fresh(200, 0);
	CHECK(is(5 * S, 8 * S, 9 * S));
}

static void
t_origin_mode_swr_and_sie_directives(void)
{
	route_reset(1);
	clear();
	add("Cache-Control", "max-age=30, stale-while-revalidate=15");
	fresh(200, 0);
	CHECK(is(30 * S, 15 * S, ROUTE_SIE));
	clear();
	add("Cache-Control", "max-age=30, stale-if-error=20");
	fresh(200, 0);
	CHECK(is(30 * S, ROUTE_SWR, 20 * S));
	clear();
	add("Cache-Control", "max-age=30, stale-while-revalidate=0, "
	    "stale-if-error=0");
	fresh(200, 0);
	CHECK(is(30 * S, 0, 0));
}

static void
t_origin_mode_must_and_proxy_revalidate_are_strict(void)
{
	route_reset(1);
	clear();
	add("Cache-Control", "max-age=30, must-revalidate");
	fresh(200, 0);
	CHECK(is(30 * S, 0, 0));
	clear();
	add("Cache-Control", "max-age=30, proxy-revalidate");
	fresh(200, 0);
	CHECK(is(30 * S, 0, 0));
	clear();
	add("Cache-Control", "max-age=30, must-revalidate, "
	    "stale-while-revalidate=5, stale-if-error=6");
	fresh(200, 0);
	CHECK(is(30 * S, 5 * S, 6 * S));
	clear();
	add("Cache-Control", "must-revalidate");	/* no lifetime: route ttl */
	fresh(200, 0);
	CHECK(is(ROUTE_TTL, 0, 0));
	clear();
	add("Cache-Control", "max-age=0, must-revalidate");	/* nothing left */
	fresh(200, 0);
	CHECK(refused("no-freshness"));
	clear();
	add("Cache-Control", "max-age=0, must-revalidate");
	add("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
	fresh(200, 0);
	CHECK(is(0, 0, 0));		/* kept to be revalidated */
}

static void
t_origin_mode_no_cache_only_with_validators(void)
{
	route_reset(1);
	clear();
	add("Cache-Control", "no-cache");
	fresh(200, 0);
	CHECK(refused("no-freshness"));
	clear();
	add("Cache-Control", "no-cache, max-age=60");	/* no-cache wins */
	add("ETag", "\"v1\"");
	fresh(200, 0);
	CHECK(is(0, 0, 0));
	clear();
	add("Cache-Control", "no-cache");
	add("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
	fresh(200, 0);
	CHECK(is(0, 0, 0));
	clear();
	add("Cache-Control", "no-cache, stale-if-error=30");
	fresh(200, 0);
	CHECK(is(0, 0, 30 * S));
}

static void
t_origin_mode_expires_minus_date(void)
{
	char date[DATE_BUF], exp[DATE_BUF];

	route_reset(1);
	clear();
	date_at(NOW - 5 * S, date);	/* the origin's clock is behind */
	date_at(NOW + 20 * S, exp);
	add("Date", date);
	add("Expires", exp);
	fresh(200, 0);
	CHECK(is(25 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	date_at(NOW + 25 * S, exp);	/* no Date: from now */
	add("Expires", exp);
	fresh(200, 0);
	CHECK(is(25 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	date_at(NOW, date);
	date_at(NOW - 10 * S, exp);	/* in the past */
	add("Date", date);
	add("Expires", exp);
	fresh(200, 0);
	CHECK(is(0, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Date", date);
	add("Expires", "0");		/* invalid: already expired */
	fresh(200, 0);
	CHECK(is(0, ROUTE_SWR, ROUTE_SIE));
	clear();
	date_at(NOW + 25 * S, exp);
	add("Date", date);
	add("Expires", exp);
	add("Cache-Control", "max-age=3");	/* max-age beats Expires */
	fresh(200, 0);
	CHECK(is(3 * S, ROUTE_SWR, ROUTE_SIE));
}

static void
t_origin_mode_age_is_subtracted(void)
{
	char date[DATE_BUF], exp[DATE_BUF];

	route_reset(1);
	clear();
	add("Cache-Control", "max-age=30");
	add("Age", "10");
	fresh(200, 0);
	CHECK(is(20 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "s-maxage=30");
	add("Age", "45");		/* older than its lifetime */
	add("ETag", "\"x\"");
	fresh(200, 0);
	CHECK(is(0, 0, 0));
	clear();
	date_at(NOW, date);
	date_at(NOW + 30 * S, exp);
	add("Date", date);
	add("Expires", exp);
	add("Age", "12");
	fresh(200, 0);
	CHECK(is(18 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "max-age=30");
	add("Age", "junk");		/* ignored */
	fresh(200, 0);
	CHECK(is(30 * S, ROUTE_SWR, ROUTE_SIE));
}

static void
t_origin_mode_statuses(void)
{
	route_reset(1);
	clear();
	add("Cache-Control", "max-age=60");
	fresh(206, 0);
	CHECK(refused("status"));
	clear();
	add("Cache-Control", "max-age=60");
	fresh(304, 0);
	CHECK(refused("status"));
	clear();
	add("Cache-Control", "max-age=60");
	fresh(404, 0);			/* explicit freshness: any final status */
	CHECK(is(60 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	fresh(404, 0);			/* nothing said, no ttl_404 */
	CHECK(refused("no-freshness"));
	rt.ttl_404_ms = 4 * S;
	clear();
	fresh(404, 0);
	CHECK(is(4 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	fresh(206, 0);			/* route ttl would apply, not to 206 */
	CHECK(f.storable == 0);
}

/* ---- dates ---- */

static void
t_parse_date_three_formats(void)
{
	CHECK(hdr_parse_date("Sun, 06 Nov 1994 08:49:37 GMT") == DATE_1994);
	CHECK(hdr_parse_date("Sunday, 06-Nov-94 08:49:37 GMT") == DATE_1994);
	CHECK(hdr_parse_date("Sun Nov  6 08:49:37 1994") == DATE_1994);
	CHECK(hdr_parse_date("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
}

static void
t_parse_date_junk(void)
{
	CHECK(hdr_parse_date("") == -1);
	CHECK(hdr_parse_date("0") == -1);
	CHECK(hdr_parse_date("-1") == -1);
	CHECK(hdr_parse_date("yesterday") == -1);
	CHECK(hdr_parse_date("Sun, 06 Nov 1994") == -1);
	CHECK(hdr_parse_date("Sun, 06 Nov 1994 08:49:37 GMT trailing") == -1);
	CHECK(hdr_parse_date("Sun, 06 Nov 1994 08:49:37 PST") == -1);
	CHECK(hdr_parse_date("Sun, 06 Foo 1994 08:49:37 GMT") == -1);
	CHECK(hdr_parse_date("Sun, 06 Nov 1994 25:49:37 GMT") == -1);
}

static int
year_of(int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || gmtime_r(&t, &tm) == NULL)
		return -1;
	return tm.tm_year + 1900;
}

/* The calendar's edges: leap years (every 4th, not every 100th, every
 * 400th), the days of each month, the clock's limits (a leap second
 * allowed), and RFC 850's two-digit years: 00 is 2000, and one more than
 * 50 years ahead is a century back (RFC 9110 5.6.7). */
static void
t_parse_date_calendar_bounds(void)
{
	static const char *const valid[] = {
		"Tue, 29 Feb 2000 00:00:00 GMT", "Sun, 29 Feb 2004 00:00:00 GMT",
		"Tue, 31 Jan 2023 23:59:59 GMT", "Sun, 30 Apr 2023 00:00:00 GMT",
		"Sat, 31 Dec 2016 23:59:60 GMT", "Sat, 01 Jan 2000 00:00:00 GMT",
		"Saturday, 01-Jan-00 00:00:00 GMT", "Tue Feb 29 00:00:00 2000",
	};
	static const char *const invalid[] = {
		"Thu, 29 Feb 1900 00:00:00 GMT", "Mon, 29 Feb 2100 00:00:00 GMT",
		"Thu, 29 Feb 2001 00:00:00 GMT", "Wed, 32 Jan 2023 00:00:00 GMT",
		"Mon, 31 Apr 2023 00:00:00 GMT", "Sat, 00 Jan 2000 00:00:00 GMT",
		"Sat, 01 Jan 2000 24:00:00 GMT", "Sat, 01 Jan 2000 00:60:00 GMT",
		"Sat, 01 Jan 2000 00:00:61 GMT", "Sat, 01 Jan 1899 00:00:00 GMT",
		"Thursday, 29-Feb-01 00:00:00 GMT", "Thu Feb 29 00:00:00 1900",
	};
	char s[64];
	time_t t = time(NULL);
	struct tm now;
	int ahead;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		if (hdr_parse_date(valid[i]) < 0)
			printf("# refused: %s\n", valid[i]);
		CHECK(hdr_parse_date(valid[i]) >= 0);
	}
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		if (hdr_parse_date(invalid[i]) != -1)
			printf("# taken: %s\n", invalid[i]);
		CHECK(hdr_parse_date(invalid[i]) == -1);
	}
	CHECK(hdr_parse_date("Saturday, 01-Jan-00 00:00:00 GMT") ==
	    INT64_C(946684800000));
	gmtime_r(&t, &now);
	ahead = now.tm_year + 1900 + 50;	/* the last year still ahead */
	snprintf(s, sizeof(s), "Monday, 01-Jan-%02d 00:00:00 GMT", ahead % 100);
	CHECK(year_of(hdr_parse_date(s)) == ahead);
	snprintf(s, sizeof(s), "Monday, 01-Jan-%02d 00:00:00 GMT",
	    (ahead + 1) % 100);
	CHECK(year_of(hdr_parse_date(s)) == ahead + 1 - 100);
}

static void
t_format_date_round_trip(void)
{
	static const int64_t times[] = { 0, DATE_1994, NOW, NOW + 999,
	    INT64_C(951782400000) /* 29 Feb 2000 */, INT64_C(4102444799000) };
	char out[DATE_BUF];

	hdr_format_date(DATE_1994, out, sizeof(out));
	CHECK_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	hdr_format_date(DATE_1994 + 999, out, sizeof(out));	/* truncates */
	CHECK_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	hdr_format_date(INT64_C(951782400000), out, sizeof(out));
	CHECK_STR(out, "Tue, 29 Feb 2000 00:00:00 GMT");
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		hdr_format_date(times[i], out, sizeof(out));
		CHECK(strlen(out) == 29);
		CHECK(hdr_parse_date(out) == times[i] / 1000 * 1000);
	}
}

/* ---- conditional requests answered from the cache ---- */

static void
t_not_modified_strong_and_weak_etags(void)
{
	clear();
	add("ETag", "\"v1\"");
	add_req("If-None-Match", "\"v1\"");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "W/\"v1\"");	/* weak comparison */
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "\"v2\"");
	CHECK(!hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "\"v10\"");
	CHECK(!hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "\"v");
	CHECK(!hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "v1");		/* not a quoted tag */
	CHECK(!hdr_not_modified(&req, &hs));

	clear();
	add("ETag", "W/\"v1\"");
	add_req("If-None-Match", "\"v1\"");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "W/\"v1\"");
	CHECK(hdr_not_modified(&req, &hs));
}

static void
t_not_modified_lists_and_star(void)
{
	clear();
	add("ETag", "\"v1\"");
	add_req("If-None-Match", "\"a\", \"v1\"");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", " \"a\" ,\t\"v1\" , W/\"b\" ");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "\"a\", W/\"b\"");
	CHECK(!hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "*");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "");
	CHECK(!hdr_not_modified(&req, &hs));
	/* A "*" among the members, or with blanks after it, matches too. */
	hl_free(&req);
	add_req("If-None-Match", "\"a\", *");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", " * ");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-None-Match", "\"a\", **");
	CHECK(!hdr_not_modified(&req, &hs));
}

/* RFC 9110 13.1.2: "*" is false (so: 304) whenever a current
 * representation exists, whether or not it has an entity tag. */
static void
t_not_modified_star_matches_entry_without_etag(void)
{
	clear();
	add("Content-Type", "text/plain");
	add_req("If-None-Match", "*");
	CHECK(hdr_not_modified(&req, &hs));
}

static void
t_not_modified_if_modified_since(void)
{
	clear();
	add("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
	add_req("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-Modified-Since", "Mon, 07 Nov 1994 08:49:37 GMT");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-Modified-Since", "Sunday, 06-Nov-94 08:49:37 GMT");
	CHECK(hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-Modified-Since", "Sun, 06 Nov 1994 08:49:36 GMT");
	CHECK(!hdr_not_modified(&req, &hs));
	hl_free(&req);
	add_req("If-Modified-Since", "not a date");
	CHECK(!hdr_not_modified(&req, &hs));

	clear();			/* no Last-Modified */
	add("ETag", "\"v1\"");
	add_req("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT");
	CHECK(!hdr_not_modified(&req, &hs));
	clear();			/* no conditional at all */
	add("ETag", "\"v1\"");
	add("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
	CHECK(!hdr_not_modified(&req, &hs));
}

static void
t_not_modified_if_none_match_takes_precedence(void)
{
	clear();
	add("ETag", "\"v1\"");
	add("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
	add_req("If-None-Match", "\"v2\"");
	add_req("If-Modified-Since", "Mon, 07 Nov 1994 08:49:37 GMT");
	CHECK(!hdr_not_modified(&req, &hs));	/* IMS ignored */
	hl_free(&req);
	add_req("If-None-Match", "\"v1\"");
	add_req("If-Modified-Since", "Sat, 05 Nov 1994 08:49:37 GMT");
	CHECK(hdr_not_modified(&req, &hs));	/* IMS ignored */

	clear();			/* INM, entry without ETag: no 304 */
	add("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
	add_req("If-None-Match", "\"v1\"");
	add_req("If-Modified-Since", "Mon, 07 Nov 1994 08:49:37 GMT");
	CHECK(!hdr_not_modified(&req, &hs));
}

/* ---- 304 merges ---- */

static void
t_merge_304_replaces_same_name_headers(void)
{
	struct hlist fresh304;

	hl_init(&fresh304);
	clear();
	add("Content-Type", "text/plain");
	add("ETag", "\"v1\"");
	add("X-Multi", "1");
	add("X-Multi", "2");
	add("Content-Length", "10");
	add("X-Kept", "k");
	hl_add(&fresh304, "ETag", "\"v2\"");
	hl_add(&fresh304, "x-multi", "3");
	hl_add(&fresh304, "Cache-Control", "max-age=5");
	hl_add(&fresh304, "Content-Length", "0");
	hl_add(&fresh304, "Connection", "close, X-Hop");
	hl_add(&fresh304, "X-Hop", "h");
	hl_add(&fresh304, "Keep-Alive", "timeout=5");
	hl_add(&fresh304, "Transfer-Encoding", "chunked");
	hdr_merge_304(&hs, &fresh304);
	hl_free(&fresh304);

	CHECK(count(&hs, "ETag") == 1);
	CHECK_STR(hl_find(&hs, "ETag"), "\"v2\"");
	CHECK(count(&hs, "X-Multi") == 1);
	CHECK_STR(hl_find(&hs, "X-Multi"), "3");
	CHECK_STR(hl_find(&hs, "Cache-Control"), "max-age=5");
	CHECK(count(&hs, "Content-Length") == 1);
	CHECK_STR(hl_find(&hs, "Content-Length"), "10");
	CHECK_STR(hl_find(&hs, "Content-Type"), "text/plain");
	CHECK_STR(hl_find(&hs, "X-Kept"), "k");
	CHECK(count(&hs, "Connection") == 0);
	CHECK(count(&hs, "X-Hop") == 0);
	CHECK(count(&hs, "Keep-Alive") == 0);
	CHECK(count(&hs, "Transfer-Encoding") == 0);
}

static void
t_merge_304_keeps_content_encoding_and_range(void)
{
	struct hlist fresh304;

	hl_init(&fresh304);
	clear();
	add("Content-Encoding", "gzip");
	hl_add(&fresh304, "Content-Encoding", "br");
	hl_add(&fresh304, "Content-Range", "bytes 0-1/2");
	hdr_merge_304(&hs, &fresh304);
	hl_free(&fresh304);
	CHECK_STR(hl_find(&hs, "Content-Encoding"), "gzip");
	CHECK(count(&hs, "Content-Range") == 0);
}

/* ---- hdr_copy, hop-by-hop, storable ---- */

static void
t_copy_drops_hop_by_hop_always(void)
{
	struct hlist out;
	const struct hfield *h;

	hl_init(&out);
	clear();
	add("Connection", "keep-alive, X-Private-Hop");
	add("Keep-Alive", "timeout=5");
	add("Proxy-Authenticate", "Basic");
	add("Proxy-Authorization", "Basic x");
	add("Proxy-Connection", "keep-alive");
	add("TE", "trailers");
	add("Trailer", "X-T");
	add("transfer-encoding", "chunked");
	add("Upgrade", "h2c");
	add("x-private-hop", "1");
	add("X-End", "1");
	add("Host", "h");
	hdr_copy(&hs, &out, 0);
	CHECK(out.n == 2);
	h = out.v;
	CHECK(strcmp(h->key, "X-End") == 0);
	h++;
	CHECK(strcmp(h->key, "Host") == 0);
	hl_free(&out);
	CHECK(hdr_is_hop_by_hop("te", NULL));
	CHECK(hdr_is_hop_by_hop("X-A", "close, x-a"));
	CHECK(!hdr_is_hop_by_hop("X-A", "close"));
	CHECK(!hdr_is_hop_by_hop("X-A", NULL));
}

static void
t_copy_flags_each_drop_their_headers(void)
{
	static const struct {
		int		 flag;
		const char	*names[4];
	} cases[] = {
		{ HDR_DROP_HOST, { "Host" } },
		{ HDR_DROP_LENGTH, { "Content-Length" } },
		{ HDR_DROP_CONDITIONAL, { "If-None-Match", "If-Modified-Since",
		    "if-match", "Range" } },
		{ HDR_DROP_ENCODING, { "Accept-Encoding" } },
		{ HDR_DROP_CREDENTIALS, { "Authorization", "Cookie" } },
		{ HDR_DROP_UNDERSCORED, { "X_API_Key", "_", "x-a_" } },
	};
	static const char *const all[] = { "Host", "Content-Length",
	    "If-None-Match", "If-Modified-Since", "if-match", "Range",
	    "Accept-Encoding", "Authorization", "Cookie", "Age", "Via",
	    "Accept", "X-Other", "X_API_Key", "_", "x-a_" };
	struct hlist out;

	clear();
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		add(all[i], "v");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		hl_init(&out);
		hdr_copy(&hs, &out, cases[c].flag);
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
			int dropped = 0;
			for (size_t j = 0; j < 4 && cases[c].names[j]; j++)
				dropped |= strcasecmp(all[i],
				    cases[c].names[j]) == 0;
			CHECK(count(&out, all[i]) == (dropped ? 0 : 1));
		}
		hl_free(&out);
	}
	hl_init(&out);
	hdr_copy(&hs, &out, HDR_DROP_HOST | HDR_DROP_LENGTH |
	    HDR_DROP_CONDITIONAL | HDR_DROP_ENCODING | HDR_DROP_CREDENTIALS |
	    HDR_DROP_UNDERSCORED);
	CHECK(count(&out, "Accept") == 1 && count(&out, "X-Other") == 1);
	CHECK(count(&out, "Age") == 1 && count(&out, "Via") == 1);
	CHECK(out.n == 4);	/* those four only */
	hl_free(&out);
	hl_init(&out);
	hdr_copy(&hs, &out, 0);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CHECK(count(&out, all[i]) == 1);
	hl_free(&out);
}

static void
t_storable_and_shareable(void)
{
	const char *why = "";

	clear();
	add("Cache-Control", "public, max-age=5");
	CHECK(hdr_shareable(&hs, 0, NULL, &why));
	CHECK(hdr_shareable(&hs, 1, NULL, &why));
	clear();
	add("Set-Cookie", "a=b");
	CHECK(!hdr_shareable(&hs, 0, NULL, &why) &&
	    strcmp(why, "set-cookie") == 0);
	clear();
	add("Cache-Control", "max-age=5");
	add("Cache-Control", "no-store");
	CHECK(!hdr_shareable(&hs, 0, NULL, &why) &&
	    strcmp(why, "no-store") == 0);
	clear();
	add("Cache-Control", "private");
	CHECK(!hdr_shareable(&hs, 0, NULL, &why) &&
	    strcmp(why, "private") == 0);
}

/* RFC 9111 3.5: fetched with credentials, a response goes to another
 * request only when it says public, s-maxage or must-revalidate. */
static void
t_authorized_answers_are_shared_only_when_the_origin_says(void)
{
	static const char *const shared[] = { "public", "s-maxage=0",
	    "max-age=60, must-revalidate", "proxy-revalidate",
	    "Public", "max-age=5, S-MAXAGE=10" };
	static const char *const unshared[] = { "", "max-age=60",
	    "no-cache", "stale-while-revalidate=60", "publicity",
	    "s-maxage", "must-revalidate-not" };
	const char *why = "";

	clear();
	CHECK(hdr_shareable(&hs, 0, NULL, &why));
	CHECK(!hdr_shareable(&hs, 1, NULL, &why) &&
	    strcmp(why, "authorization") == 0);
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		clear();
		add("Cache-Control", shared[i]);
		CHECK(hdr_shareable(&hs, 1, NULL, &why));
	}
	for (size_t i = 0; i < sizeof(unshared) / sizeof(unshared[0]); i++) {
		clear();
		add("Cache-Control", unshared[i]);
		CHECK(hdr_shareable(&hs, 0, NULL, &why));
		CHECK(!hdr_shareable(&hs, 1, NULL, &why));
	}
	/* public does not make one user's answer everyone's. */
	clear();
	add("Cache-Control", "public, private");
	CHECK(!hdr_shareable(&hs, 1, NULL, &why) &&
	    strcmp(why, "private") == 0);
}

/* RFC 9110 5.6.7: only the three formats, exactly. */
static void
t_parse_date_is_exact(void)
{
	CHECK(hdr_parse_date("Thu, 18 Aug 2050 02:01:18 GMT") > 0);
	CHECK(hdr_parse_date("Thu, 18 Aug 2050 2:01:18 GMT") == -1);
	CHECK(hdr_parse_date("Thu,  18 Aug 2050 02:01:18 GMT") == -1);
	CHECK(hdr_parse_date("Thu, 18 Aug 2050 02:01:18  GMT") == -1);
	CHECK(hdr_parse_date("Thu, 8 Aug 2050 02:01:18 GMT") == -1);
	CHECK(hdr_parse_date("thu, 18 Aug 2050 02:01:18 GMT") == -1);
	CHECK(hdr_parse_date("Thu, 18 aug 2050 02:01:18 GMT") == -1);
	CHECK(hdr_parse_date("Thu, 31 Apr 2050 02:01:18 GMT") == -1);
	CHECK(hdr_parse_date("Thu, 29 Feb 2051 02:01:18 GMT") == -1);
	CHECK(hdr_parse_date("Tue, 29 Feb 2000 02:01:18 GMT") > 0);
	CHECK(hdr_parse_date("Sun, 06 Nov 1994 08:49:37 GMT ") == -1);
	CHECK(hdr_parse_date(" Sun, 06 Nov 1994 08:49:37 GMT") == -1);
	CHECK(hdr_parse_date("Sun Nov 6 08:49:37 1994") == -1);
	CHECK(hdr_parse_date("Sun Nov 06 08:49:37 1994") == DATE_1994);
	CHECK(hdr_parse_date("Sun, 06-Nov-94 08:49:37 GMT") == -1);
	CHECK(hdr_parse_date("Sunday, 6-Nov-94 08:49:37 GMT") == -1);
	/* RFC 850: a year more than 50 years ahead is in the past. */
	CHECK(hdr_parse_date("Saturday, 01-Jan-77 00:00:00 GMT") ==
	    INT64_C(220924800000));
	CHECK(hdr_parse_date("Sunday, 01-Jan-70 00:00:00 GMT") ==
	    INT64_C(3155760000000));	/* 2070: 44 years ahead */
}

/* RFC 9110 5.3: lines of one field form one list. */
static void
t_fields_split_over_lines_form_one_list(void)
{
	char exp[DATE_BUF];

	route_reset(1);
	clear();
	add("Cache-Control", "max-age=60");
	add("Vary", "Accept-Language");
	add("Vary", "*");
	fresh(200, 0);
	CHECK(!f.storable);
	clear();
	add("Cache-Control", "max-age=60");
	add("Cache-Control", "no-store");
	fresh(200, 0);
	CHECK(!f.storable);
	clear();
	date_at(NOW + 3600 * S, exp);
	add("Expires", exp);
	add("Expires", exp);		/* two: invalid, already expired */
	fresh(200, 0);
	CHECK(is(0, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Expires", "Thu, 18 Aug 2050 2:01:18 GMT");	/* invalid */
	fresh(200, 0);
	CHECK(is(0, ROUTE_SWR, ROUTE_SIE));
}

/* RFC 9111 5.1: an Age that is not 1*DIGIT is ignored. */
static void
t_invalid_age_is_ignored(void)
{
	static const char *const bad[] = { "7200.0", "-5", "", "1e3", ", 10",
	    "x, 10" };

	route_reset(1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear();
		add("Cache-Control", "max-age=30");
		add("Age", bad[i]);
		fresh(200, 0);
		CHECK(is(30 * S, ROUTE_SWR, ROUTE_SIE));
	}
	CHECK(hdr_delta_seconds("99999999999999999999") == INT64_C(1) << 31);
}

/* RFC 9111 5.1: a list counts by its first member, on one line or two. */
static void
t_age_list_counts_its_first_member(void)
{
	static const char *const lists[] = { "10, 0", "10,0", " 10 , 25",
	    "10, junk" };

	route_reset(1);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		clear();
		add("Cache-Control", "max-age=30");
		add("Age", lists[i]);
		fresh(200, 0);
		CHECK(is(20 * S, ROUTE_SWR, ROUTE_SIE));
	}
	clear();
	add("Cache-Control", "max-age=30");
	add("Age", "10");
	add("Age", "20");
	fresh(200, 0);
	CHECK(is(20 * S, ROUTE_SWR, ROUTE_SIE));
	clear();
	add("Cache-Control", "max-age=3600");
	add("Age", "7200, 0");		/* stale on arrival */
	fresh(200, 0);
	CHECK(f.ttl_ms == 0);
}

/* RFC 9213 2.1: a targeted field that is not a Structured Field
 * Dictionary, or whose known directives have the wrong type, is ignored
 * whole: Cache-Control rules. */
static void
t_targeted_field_must_be_a_dictionary(void)
{
	static const char *const bad[] = { "&&&&", "max-age=\"600\"",
	    "Max-Age=600", "max-age=600,", "max-age=6.5", "max-age=-1",
	    "no-store=1", "max-age=600 x", "max-age=(1 2)",
	    "max-age=1234567890123456",
	    /* RFC 8941 4.2.5: a string escapes '"' and '\\' alone; an
	     * escape of anything else, at its start, middle or end, or one
	     * that leaves it unclosed, is not a string */
	    "max-age=600, x=\"\\a\"", "max-age=600, x=\"a\\b\"",
	    "max-age=600, x=\"ab\\n\"", "max-age=600, x=\"a\\\"",
	    "max-age=600, x=\"a\\", "max-age=600, x=\"\\\\\\\"",
	    "max-age=600;p=\"\\t\"", "max-age=600, x=(\"\\a\")" };
	static const char *const good[] = { "max-age=600", "max-age=600, x=y",
	    "max-age=600;p=\"q\", foo=(a b);c", "max-age=600, public=?1",
	    " max-age=600 ", "max-age=600, no-store=?0",
	    "max-age=600, x=\"\\\"a\"", "max-age=600, x=\"a\\\\b\"",
	    "max-age=600, x=\"ab\\\"\"", "max-age=600, x=\"\\\\\"",
	    "max-age=600;p=\"\\\\\", x=(\"\\\"\")" };

	route_reset(1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear();
		add("Cache-Control", "max-age=30");
		add("CDN-Cache-Control", bad[i]);
		fresh(200, 0);
		if (!is(30 * S, ROUTE_SWR, ROUTE_SIE))
			printf("# bad: %s\n", bad[i]);
		CHECK(is(30 * S, ROUTE_SWR, ROUTE_SIE));
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		clear();
		add("Cache-Control", "no-store");
		add("CDN-Cache-Control", good[i]);
		fresh(200, 0);
		if (!f.storable || f.ttl_ms != 600 * S)
			printf("# good: %s\n", good[i]);
		CHECK(f.storable && f.ttl_ms == 600 * S);
	}
	clear();
	add("Cache-Control", "max-age=30");
	add("CDN-Cache-Control", "no-store");
	fresh(200, 0);
	CHECK(!f.storable);
}

/* RFC 3986 5.4's examples of resolved dot segments, and %2E. */
static void
t_normalize_path_removes_dot_segments(void)
{
	static const char *const cases[][2] = {
		{ "/ok/../status/x", "/status/x" },
		{ "/ok/%2e%2e/status/x", "/status/x" },
		{ "/ok/%2E%2E/status/x", "/status/x" },
		{ "/ok/./../status/x", "/status/x" },
		{ "/a/b/c/./../../g", "/a/g" },
		{ "/a/./b/../c", "/a/c" },
		{ "/a/b/..", "/a/" },
		{ "/a/b/.", "/a/b/" },
		{ "/../../x", "/x" },
		{ "/..", "/" },
		{ "/", "/" },
		{ "/a/..b/.c", "/a/..b/.c" },
		{ "/a%2fb/%2e", "/a%2fb/" },
		{ "/mid/content=5/../6", "/mid/6" },
		{ "/a//../b", "/a/b" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i][0]);
		hdr_normalize_path(buf);
		if (strcmp(buf, cases[i][1]) != 0)
			printf("    %s -> %s, want %s\n", cases[i][0], buf,
			    cases[i][1]);
		CHECK_STR(buf, cases[i][1]);
	}
}

/* Does Forwarded v without its host pairs read want (NULL: dropped)? */
static int
forwarded_is(const char *v, const char *want)
{
	char *got = hdr_forwarded_without(v, "host");
	int same = got == NULL ? want == NULL :
	    want != NULL && strcmp(got, want) == 0;

	if (!same)
		printf("  Forwarded %s: got %s\n", v, got != NULL ? got : "NULL");
	free(got);
	return same;
}

static void
t_forwarded_loses_its_host_pairs(void)
{
	CHECK(forwarded_is("for=1.2.3.4;host=evil.example;proto=https",
	    "for=1.2.3.4;proto=https"));
	CHECK(forwarded_is("Host=evil;for=a, for=b ;HOST=\"x,y\"",
	    "for=a, for=b"));
	CHECK(forwarded_is("for=\"[2001:db8::1]:4711\";by=x, host=e",
	    "for=\"[2001:db8::1]:4711\";by=x"));
	CHECK(forwarded_is("for=a,,;;for=b", "for=a, for=b"));
	CHECK(forwarded_is("host=evil", NULL));
	CHECK(forwarded_is("", NULL));
	CHECK(forwarded_is("for=a;host", NULL));		/* no value */
	CHECK(forwarded_is("for=\"a;host=b", NULL));		/* open quote */
	CHECK(forwarded_is("for=a b", NULL));
	CHECK(forwarded_is("hosts=a;xhost=b", "hosts=a;xhost=b"));
}

int
main(void)
{
	hl_init(&hs);
	hl_init(&req);
	RUN(t_route_mode_uses_route_times);
	RUN(t_forwarded_loses_its_host_pairs);
	RUN(t_route_mode_ignores_origin_freshness);
	RUN(t_route_mode_every_default_status);
	RUN(t_route_mode_ttl_404_and_ttl_status);
	RUN(t_route_mode_ttl_zero_stores_nothing);
	RUN(t_never_stored_in_either_mode);
	RUN(t_authorization_needs_public_s_maxage_or_must_revalidate);
	RUN(t_origin_mode_silent_origin_gets_route_defaults);
	RUN(t_origin_mode_silent_origin_and_ttl_zero_not_stored);
	RUN(t_origin_mode_max_age);
	RUN(t_origin_mode_s_maxage_beats_max_age_and_is_strict);
	RUN(t_origin_mode_swr_and_sie_directives);
	RUN(t_origin_mode_must_and_proxy_revalidate_are_strict);
	RUN(t_origin_mode_no_cache_only_with_validators);
	RUN(t_origin_mode_expires_minus_date);
	RUN(t_origin_mode_age_is_subtracted);
	RUN(t_origin_mode_statuses);
	RUN(t_parse_date_three_formats);
	RUN(t_parse_date_junk);
	RUN(t_parse_date_calendar_bounds);
	RUN(t_format_date_round_trip);
	RUN(t_not_modified_strong_and_weak_etags);
	RUN(t_not_modified_lists_and_star);
	RUN(t_not_modified_star_matches_entry_without_etag);
	RUN(t_not_modified_if_modified_since);
	RUN(t_not_modified_if_none_match_takes_precedence);
	RUN(t_merge_304_replaces_same_name_headers);
	RUN(t_merge_304_keeps_content_encoding_and_range);
	RUN(t_copy_drops_hop_by_hop_always);
	RUN(t_copy_flags_each_drop_their_headers);
	RUN(t_storable_and_shareable);
	RUN(t_authorized_answers_are_shared_only_when_the_origin_says);
	RUN(t_parse_date_is_exact);
	RUN(t_fields_split_over_lines_form_one_list);
	RUN(t_invalid_age_is_ignored);
	RUN(t_age_list_counts_its_first_member);
	RUN(t_targeted_field_must_be_a_dictionary);
	RUN(t_normalize_path_removes_dot_segments);
	clear();
	return unit_exit();
}
