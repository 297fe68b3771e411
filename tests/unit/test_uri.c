/* SPDX-License-Identifier: MIT */
/*
 * common/uri.c: request-targets and absolute URLs split where they lie,
 * ports at their bounds, percent-decoding with and without '+', escapes
 * cut short at a string's end, and query strings into pairs.
 */

#include <string.h>

#include "common/hlist.h"
#include "common/uri.h"
#include "tests/unit/unit.h"

static int
part_is(const char *p, size_t n, const char *want)
{
	return p != NULL && n == strlen(want) && memcmp(p, want, n) == 0;
}

static int
split(const char *s, struct uri *u)
{
	return uri_split(s, strlen(s), u);
}

static void
t_origin_form_is_a_path_and_a_query(void)
{
	struct uri u;

	CHECK(split("/a/b?x=1&y", &u) == 0);
	CHECK(u.scheme == NULL && u.host == NULL && u.port == -1);
	CHECK(part_is(u.path, u.path_len, "/a/b"));
	CHECK(part_is(u.query, u.query_len, "x=1&y"));
	CHECK(split("/a", &u) == 0 && u.query == NULL);
	CHECK(split("/a?", &u) == 0 && part_is(u.query, u.query_len, ""));
	CHECK(split("//m/new?q", &u) == 0 && part_is(u.path, u.path_len, "//m/new"));
	CHECK(split("*", &u) == 0 && part_is(u.path, u.path_len, "*"));
	CHECK(split("", &u) == -1);
	CHECK(split("a/b", &u) == -1);
}

static void
t_absolute_urls_name_their_authority(void)
{
	struct uri u;

	CHECK(split("http://Host:8080/p?q#frag", &u) == 0);
	CHECK(part_is(u.scheme, u.scheme_len, "http"));
	CHECK(part_is(u.host, u.host_len, "Host") && u.port == 8080);
	CHECK(part_is(u.path, u.path_len, "/p"));
	CHECK(part_is(u.query, u.query_len, "q"));
	CHECK(split("https://h", &u) == 0 && part_is(u.host, u.host_len, "h"));
	CHECK(u.port == -1 && u.path_len == 0 && u.query == NULL);
	CHECK(split("http://h?q", &u) == 0 && u.path_len == 0 &&
	    part_is(u.query, u.query_len, "q"));
	CHECK(split("http://user:pw@h:1/x", &u) == 0 &&
	    part_is(u.host, u.host_len, "h") && u.port == 1);
	CHECK(split("http://[::1]:80/x", &u) == 0 &&
	    part_is(u.host, u.host_len, "[::1]") && u.port == 80);
	CHECK(split("http://[::1]/x", &u) == 0 && u.port == -1);
	CHECK(split("http://[::1/x", &u) == -1);
	CHECK(split("http://[::1]x/", &u) == -1);
	CHECK(split("1http://h/", &u) == -1);
	CHECK(split("http:/h/", &u) == -1);
}

static void
t_ports_are_digits_below_65536(void)
{
	struct uri u;

	CHECK(split("http://h:65535/", &u) == 0 && u.port == 65535);
	CHECK(split("http://h:0/", &u) == 0 && u.port == 0);
	CHECK(split("http://h:65536/", &u) == -1);
	CHECK(split("http://h:099999/", &u) == -1);	/* six digits */
	CHECK(split("http://h:/", &u) == -1);
	CHECK(split("http://h:8a/", &u) == -1);
	CHECK(split("http://h:-1/", &u) == -1);
}

static void
t_decoding_keeps_what_is_no_escape(void)
{
	char out[64];

	CHECK(uri_decode("a%20b+c", 7, 1, out) == 5 && strcmp(out, "a b c") == 0);
	CHECK(uri_decode("a%20b+c", 7, 0, out) == 5 && strcmp(out, "a b+c") == 0);
	CHECK(uri_decode("%7e%7E", 6, 0, out) == 2 && strcmp(out, "~~") == 0);
	/* Escapes cut short, or not hex: kept as they are. */
	CHECK(uri_decode("%", 1, 0, out) == 1 && strcmp(out, "%") == 0);
	CHECK(uri_decode("a%4", 3, 0, out) == 3 && strcmp(out, "a%4") == 0);
	CHECK(uri_decode("%zz%4g", 6, 0, out) == 6 && strcmp(out, "%zz%4g") == 0);
	CHECK(uri_decode("%41%", 4, 0, out) == 2 && strcmp(out, "A%") == 0);
	/* Only the n bytes given. */
	CHECK(uri_decode("%41%42", 3, 0, out) == 1 && strcmp(out, "A") == 0);
	CHECK(uri_decode("%4142", 4, 0, out) == 2 && strcmp(out, "A4") == 0);
}

static void
t_queries_split_into_decoded_pairs(void)
{
	struct hlist h;
	const char *q = "url=http%3A%2F%2Fh%2Fa%3Fb&x=1+2&&empty=";

	hl_init(&h);
	CHECK(uri_query_parse(q, strlen(q), &h) == 0);
	CHECK(h.n == 3);
	CHECK_STR(hl_find(&h, "url"), "http://h/a?b");
	CHECK_STR(hl_find(&h, "x"), "1 2");
	CHECK_STR(hl_find(&h, "empty"), "");
	hl_clear(&h);
	CHECK(uri_query_parse("a%62=c", 6, &h) == 0);
	CHECK_STR(hl_find(&h, "ab"), "c");
	hl_clear(&h);
	CHECK(uri_query_parse("", 0, &h) == 0 && h.n == 0);
	CHECK(uri_query_parse("novalue", 7, &h) == -1);
	hl_clear(&h);
	CHECK(uri_query_parse("=v", 2, &h) == -1);
	hl_clear(&h);
	CHECK(uri_query_parse("a=%0d%0aX", 9, &h) == -1);	/* a line break */
	hl_free(&h);
}

int
main(void)
{
	RUN(t_origin_form_is_a_path_and_a_query);
	RUN(t_absolute_urls_name_their_authority);
	RUN(t_ports_are_digits_below_65536);
	RUN(t_decoding_keeps_what_is_no_escape);
	RUN(t_queries_split_into_decoded_pairs);
	return unit_exit();
}
