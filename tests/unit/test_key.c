/* SPDX-License-Identifier: MIT */
#include "cache/cache_key.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

#define LONG_PATH_LEN	(10 * 1024)
#define HASH_HEX	32

static char key[CACHE_KEY_MAX + 1];

/* Builds into the shared key buffer. */
static const char *
build(const char *host, const char *path, const char *query)
{
	cache_key_build(host, path, query, key);
	return key;
}

static int
is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int
is_hashed(const char *k)
{
	size_t mark = CACHE_KEY_MAX - 1 - HASH_HEX;

	return strlen(k) == CACHE_KEY_MAX && k[mark] == '#' &&
	    is_lower_hex(k + mark + 1, HASH_HEX);
}

/* A malloc'd string of n copies of c followed by tail. */
static char *
repeat(char c, size_t n, const char *tail)
{
	size_t tl = strlen(tail);
	char *s = malloc(n + tl + 1);

	if (s == NULL)
		abort();
	memset(s, c, n);
	memcpy(s + n, tail, tl + 1);
	return s;
}

static void
t_host_is_lower_cased_and_loses_port_80_only(void)
{
	CHECK_STR(build("Example.COM", "/a", NULL), "example.com/a");
	CHECK_STR(build("Example.COM:80", "/a", NULL), "example.com/a");
	CHECK_STR(build("example.com:8080", "/a", NULL), "example.com:8080/a");
	CHECK_STR(build("example.com:800", "/a", NULL), "example.com:800/a");
	CHECK_STR(build("[::1]:80", "/a", NULL), "[::1]/a");
}

static void
t_missing_host_starts_key_with_path(void)
{
	CHECK_STR(build(NULL, "/a", NULL), "/a");
	CHECK_STR(build("", "/a", NULL), "/a");
}

static void
t_host_cannot_pose_as_path(void)
{
	char a[CACHE_KEY_MAX + 1];

	cache_key_build("h/x", "/y", NULL, a);
	CHECK_STR(a, "h%2Fx/y");
	CHECK(strcmp(a, build("h", "/x/y", NULL)) != 0);
	CHECK_STR(build("h{a} b", "/", NULL), "h%7Ba%7D%20b/");
	CHECK_STR(build("h?q#f%", "/", NULL), "h%3Fq%23f%25/");
}

static void
t_query_appended_only_when_non_empty(void)
{
	CHECK_STR(build("h", "/a", NULL), "h/a");
	CHECK_STR(build("h", "/a", ""), "h/a");
	CHECK_STR(build("h", "/a", "x=1&y=2"), "h/a?x=1&y=2");
	CHECK_STR(build("h", "/a", "x=?/"), "h/a?x=?/");
}

static void
t_empty_path_becomes_slash(void)
{
	CHECK_STR(build("h", "", NULL), "h/");
	CHECK_STR(build("h", NULL, "q"), "h/?q");
	CHECK_STR(build("h", "a", NULL), "h/a");
}

static void
t_braces_space_and_controls_are_encoded(void)
{
	CHECK_STR(build("h", "/{tag} x", NULL), "h/%7Btag%7D%20x");
	CHECK_STR(build("h", "/a", "{b} c"), "h/a?%7Bb%7D%20c");
	CHECK_STR(build("h", "/\x01\x7f\xc3\xa9", NULL), "h/%01%7F%C3%A9");
	CHECK_STR(build("h", "/a?b#c", NULL), "h/a%3Fb%23c");
	CHECK_STR(build("h", "/a\"<>\\^`|", NULL),
	    "h/a%22%3C%3E%5C%5E%60%7C");
	CHECK_STR(build("h", "/-._~:@!$&'()*+,;=", NULL),
	    "h/-._~:@!$&'()*+,;=");
	CHECK(strchr(build("h", "/{x}", "{y}"), '{') == NULL);
	CHECK(strchr(build("h", "/{x}", "{y}"), '}') == NULL);
}

static void
t_percent_encoding_is_normalised(void)
{
	CHECK_STR(build("h", "/%7e%7E", NULL), "h/~~");
	CHECK_STR(build("h", "/%41%7a%2D%2e%5F%30", NULL), "h/Az-._0");
	CHECK_STR(build("h", "/a%2fb", NULL), "h/a%2Fb");
	CHECK_STR(build("h", "/a%2Fb", NULL), "h/a%2Fb");
	CHECK_STR(build("h", "/%7b%ff", "q=%3d%7e"), "h/%7B%FF?q=%3D~");
	CHECK_STR(build("h", "/%7e", NULL), build("h", "/~", NULL));
}

static void
t_lone_percent_becomes_percent_25(void)
{
	CHECK_STR(build("h", "/100%", NULL), "h/100%25");
	CHECK_STR(build("h", "/%", NULL), "h/%25");
	CHECK_STR(build("h", "/%4", NULL), "h/%254");
	CHECK_STR(build("h", "/%zz", NULL), "h/%25zz");
	CHECK_STR(build("h", "/%%41", NULL), "h/%25A");
	CHECK_STR(build("h", "/", "a=%"), "h/?a=%25");
}

static void
t_long_path_gives_max_bytes_ending_in_hash(void)
{
	char *path = repeat('a', LONG_PATH_LEN, "");

	path[0] = '/';
	build("h", path, NULL);
	free(path);
	CHECK(is_hashed(key));
	CHECK(strncmp(key, "h/aaaa", 6) == 0);
}

static void
t_key_of_exactly_max_bytes_is_not_hashed(void)
{
	/* "h" + "/" + n 'a's == CACHE_KEY_MAX */
	char *path = repeat('a', CACHE_KEY_MAX - 1, "");
	char *over = repeat('a', CACHE_KEY_MAX, "");

	path[0] = '/';
	over[0] = '/';
	build("h", path, NULL);
	CHECK(strlen(key) == CACHE_KEY_MAX);
	CHECK(strchr(key, '#') == NULL);
	CHECK(strcmp(key + 1, path) == 0);
	build("h", over, NULL);
	CHECK(is_hashed(key));
	free(path);
	free(over);
}

static void
t_long_keys_differing_only_at_the_end_differ(void)
{
	char a[CACHE_KEY_MAX + 1], b[CACHE_KEY_MAX + 1];
	char *pa = repeat('x', LONG_PATH_LEN, "/a");
	char *pb = repeat('x', LONG_PATH_LEN, "/b");

	pa[0] = pb[0] = '/';
	cache_key_build("h", pa, NULL, a);
	cache_key_build("h", pb, NULL, b);
	CHECK(is_hashed(a) && is_hashed(b));
	CHECK(strcmp(a, b) != 0);
	/* Also when the difference is only in the query. */
	cache_key_build("h", pa, "q=1", a);
	cache_key_build("h", pa, "q=2", b);
	CHECK(strcmp(a, b) != 0);
	/* And when one is a different length of the same bytes. */
	pb[LONG_PATH_LEN] = '\0';
	pa[LONG_PATH_LEN] = 'x';
	pa[LONG_PATH_LEN + 1] = '\0';
	cache_key_build("h", pa, NULL, a);
	cache_key_build("h", pb, NULL, b);
	CHECK(strcmp(a, b) != 0);
	free(pa);
	free(pb);
}

static void
t_same_input_gives_same_key(void)
{
	char a[CACHE_KEY_MAX + 1], b[CACHE_KEY_MAX + 1];
	char *p = repeat('{', LONG_PATH_LEN, "");

	cache_key_build("Host:80", "/x y", "a=%7e", a);
	cache_key_build("Host:80", "/x y", "a=%7e", b);
	CHECK_STR(a, b);
	cache_key_build("H", p, "q", a);
	cache_key_build("H", p, "q", b);
	free(p);
	CHECK(is_hashed(a));
	CHECK_STR(a, b);
}

static void
t_output_never_written_past_max(void)
{
	char buf[CACHE_KEY_MAX + 2];
	char *p = repeat('%', LONG_PATH_LEN, "");

	buf[CACHE_KEY_MAX + 1] = 'G';
	cache_key_build("h", p, p, buf);
	free(p);
	CHECK(buf[CACHE_KEY_MAX] == '\0');
	CHECK(buf[CACHE_KEY_MAX + 1] == 'G');
	CHECK(is_hashed(buf));
}

static void
t_key_for_sorts_the_query_only_when_asked(void)
{
	char sorted[CACHE_KEY_MAX + 1], plain[CACHE_KEY_MAX + 1];
	char built[CACHE_KEY_MAX + 1];

	CHECK(cache_key_for("h", "/q", "b=2&a=1", 1, sorted) == 0);
	CHECK_STR(sorted, "h/q?a=1&b=2");
	CHECK(cache_key_for("h", "/q", "b=2&a=1", 0, plain) == 0);
	cache_key_build("h", "/q", "b=2&a=1", built);
	CHECK_STR(plain, built);
	CHECK(cache_key_for("h", "/q", NULL, 1, sorted) == 0);
	CHECK_STR(sorted, "h/q");
}

/* Names are sorted; a repeated name keeps its values' order. */
static void
t_sorted_query_keeps_the_order_of_repeated_names(void)
{
	char a[CACHE_KEY_MAX + 1], b[CACHE_KEY_MAX + 1];

	CHECK(cache_key_for("h", "/q", "x=2&x=1", 1, a) == 0);
	CHECK(cache_key_for("h", "/q", "x=1&x=2", 1, b) == 0);
	CHECK_STR(a, "h/q?x=2&x=1");
	CHECK_STR(b, "h/q?x=1&x=2");
	CHECK(cache_key_for("h", "/q", "b=1&x=2&a=9&x=1&ab=0&a=3", 1, a) == 0);
	CHECK_STR(a, "h/q?a=9&a=3&ab=0&b=1&x=2&x=1");
	CHECK(cache_key_for("h", "/q", "y&x=1&y=0", 1, a) == 0);
	CHECK_STR(a, "h/q?x=1&y&y=0");
}

/* Hash slots as the Redis Cluster specification computes them (the
 * figures are CLUSTER KEYSLOT's). */
static void
t_slot_follows_the_cluster_specification(void)
{
	CHECK(cache_key_slot("123456789") == 0x31c3);	/* the CRC16 check value */
	CHECK(cache_key_slot("foo") == 12182);
	CHECK(cache_key_slot("bar") == 5061);
	CHECK(cache_key_slot("somekey") == 11058);
	/* A hash tag: the first non-empty {...}. */
	CHECK(cache_key_slot("{user1000}.following") == 3443);
	CHECK(cache_key_slot("{user1000}.followers") == 3443);
	CHECK(cache_key_slot("foo{bar}{zap}") == cache_key_slot("bar"));
	CHECK(cache_key_slot("foo{{bar}}zap") == cache_key_slot("{bar"));
	CHECK(cache_key_slot("foo{}{bar}") == 8363);	/* empty: whole key */
	/* Every Redis key and the fill channel of a cache key share a slot. */
	CHECK(cache_key_slot("corral:{app.test/k0}:entry") ==
	    cache_key_slot("app.test/k0"));
	CHECK(cache_key_slot("corral:{app.test/k0}:lock") ==
	    cache_key_slot("corral:{app.test/k0}:filled"));
	CHECK(cache_key_slot("corral:{app.test/k0}:entry:3f2a") ==
	    cache_key_slot("app.test/k0"));
}

int
main(void)
{
	RUN(t_host_is_lower_cased_and_loses_port_80_only);
	RUN(t_missing_host_starts_key_with_path);
	RUN(t_host_cannot_pose_as_path);
	RUN(t_query_appended_only_when_non_empty);
	RUN(t_empty_path_becomes_slash);
	RUN(t_braces_space_and_controls_are_encoded);
	RUN(t_percent_encoding_is_normalised);
	RUN(t_lone_percent_becomes_percent_25);
	RUN(t_long_path_gives_max_bytes_ending_in_hash);
	RUN(t_key_of_exactly_max_bytes_is_not_hashed);
	RUN(t_long_keys_differing_only_at_the_end_differ);
	RUN(t_same_input_gives_same_key);
	RUN(t_output_never_written_past_max);
	RUN(t_key_for_sorts_the_query_only_when_asked);
	RUN(t_sorted_query_keeps_the_order_of_repeated_names);
	RUN(t_slot_follows_the_cluster_specification);
	return unit_exit();
}
