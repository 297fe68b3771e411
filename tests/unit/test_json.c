/* SPDX-License-Identifier: MIT */
/*
 * The strict JSON reader (common/json.c): what it reads, everything it
 * refuses, paths and the canonical text.
 */

#include "common/json.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"

#define ERR_MAX		256
#define TEXT_MAX	512

static char err[ERR_MAX];

/* Does text[0..len) parse? 1 or 0, with why in err. */
static int
parses_n(const char *text, size_t len)
{
	struct json *doc;

	err[0] = '\0';
	if ((doc = json_parse(text, len, err, sizeof(err))) == NULL)
		return 0;
	json_free(&doc);
	return 1;
}

static int
parses(const char *text)
{
	return parses_n(text, strlen(text));
}

/* The canonical text of the document text, or "(refused)". */
static const char *
canon(const char *text)
{
	static char out[TEXT_MAX];
	struct json *doc;

	err[0] = '\0';
	if ((doc = json_parse(text, strlen(text), err, sizeof(err))) == NULL)
		return "(refused)";
	json_write(json_root(doc), out, sizeof(out));
	json_free(&doc);
	return out;
}

/* Text nested depth arrays deep around a 1, as [[[1]]] for 3. */
static char *
nested(int depth)
{
	char *s = malloc((size_t)depth * 2 + 2);

	if (s == NULL)
		return NULL;
	memset(s, '[', (size_t)depth);
	s[depth] = '1';
	memset(s + depth + 1, ']', (size_t)depth);
	s[2 * depth + 1] = '\0';
	return s;
}

static void
t_values_of_every_type_are_read(void)
{
	const char *text = " {\"a\": [1, true, false, null, \"x\"],\n"
	    "\t\"b\": {\"c\": -0.5e+3}}\r\n";
	const struct json_value *root, *a, *v;
	struct json *doc;
	double d;
	int b;

	CHECK((doc = json_parse(text, strlen(text), err, sizeof(err))) != NULL);
	root = json_root(doc);
	CHECK(json_type(root) == JSON_OBJECT && json_len(root) == 2);
	CHECK((a = json_member(root, "a", 1)) != NULL);
	CHECK(json_type(a) == JSON_ARRAY && json_len(a) == 5);
	CHECK(json_get_number(json_index(a, 0, NULL, NULL), &d) == 0 && d == 1);
	CHECK(json_get_bool(json_index(a, 1, NULL, NULL), &b) == 0 && b == 1);
	CHECK(json_get_bool(json_index(a, 2, NULL, NULL), &b) == 0 && b == 0);
	CHECK(json_type(json_index(a, 3, NULL, NULL)) == JSON_NULL);
	CHECK_STR(json_get_string(json_index(a, 4, NULL, NULL), NULL), "x");
	CHECK(json_index(a, 5, NULL, NULL) == NULL);
	CHECK((v = json_path(root, "b.c")) != NULL);
	CHECK(json_get_number(v, &d) == 0 && d == -500);
	CHECK(json_get_string(v, NULL) == NULL && json_get_bool(v, &b) == -1);
	CHECK(json_get_number(a, &d) == -1 && json_len(v) == 0);
	json_free(&doc);
	CHECK(doc == NULL);
	json_free(&doc);
}

static void
t_every_json_value_may_stand_alone(void)
{
	CHECK(parses("1") && parses("\"s\"") && parses("null") &&
	    parses("true") && parses("[]") && parses("{}") && parses(" 0 "));
}

static void
t_members_are_found_by_name_and_listed_in_name_order(void)
{
	const char *text = "{\"b\":2,\"a\":1,\"ab\":3,\"\":0,\"B\":4}";
	const char *order[] = { "", "B", "a", "ab", "b" }, *name;
	const struct json_value *root;
	struct json *doc;
	size_t len;

	CHECK((doc = json_parse(text, strlen(text), err, sizeof(err))) != NULL);
	root = json_root(doc);
	for (size_t i = 0; i < 5; i++) {
		CHECK(json_index(root, i, &name, &len) != NULL);
		CHECK(len == strlen(order[i]) && memcmp(name, order[i], len) == 0);
		CHECK(json_member(root, order[i], strlen(order[i])) ==
		    json_index(root, i, NULL, NULL));
	}
	CHECK(json_member(root, "c", 1) == NULL);
	CHECK(json_member(root, "a", 0) == json_index(root, 0, NULL, NULL));
	CHECK(json_member(json_member(root, "a", 1), "a", 1) == NULL);
	json_free(&doc);
}

static void
t_escapes_decode_at_the_start_middle_and_end_of_strings(void)
{
	CHECK_STR(canon("\"\\u0041bc\""), "\"Abc\"");
	CHECK_STR(canon("\"a\\u0042c\""), "\"aBc\"");
	CHECK_STR(canon("\"ab\\u0043\""), "\"abC\"");
	CHECK_STR(canon("\"\\nab\""), "\"\\nab\"");
	CHECK_STR(canon("\"a\\/b\""), "\"a/b\"");
	CHECK_STR(canon("\"ab\\\\\""), "\"ab\\\\\"");
	CHECK_STR(canon("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""),
	    "\"\\\"\\\\/\\b\\f\\n\\r\\t\"");
	CHECK_STR(canon("\"\\u00e9\\u20AC\""), "\"\xc3\xa9\xe2\x82\xac\"");
	CHECK_STR(canon("\"\\u001F\\u007f\""), "\"\\u001f\x7f\"");
}

static void
t_surrogate_pairs_decode_to_one_character(void)
{
	CHECK_STR(canon("\"\\ud83d\\ude00\""), "\"\xf0\x9f\x98\x80\"");
	CHECK_STR(canon("\"\\uD83D\\uDE00x\""), "\"\xf0\x9f\x98\x80x\"");
	CHECK_STR(canon("\"x\\ud83d\\ude00y\""), "\"x\xf0\x9f\x98\x80y\"");
	CHECK_STR(canon("\"x\\ud800\\udc00\""), "\"x\xf0\x90\x80\x80\"");
	CHECK_STR(canon("\"\\udbff\\udfff\""), "\"\xf4\x8f\xbf\xbf\"");
	/* The same character written raw reads the same. */
	CHECK_STR(canon("\"\xf0\x9f\x98\x80\""), "\"\xf0\x9f\x98\x80\"");
}

static void
t_lone_surrogates_are_refused(void)
{
	CHECK(!parses("\"\\ud800\""));
	CHECK(!parses("\"\\udc00\""));
	CHECK(!parses("\"x\\udfff\""));
	CHECK(!parses("\"\\ud800x\""));
	CHECK(!parses("\"\\ud800\\u0041\""));
	CHECK(!parses("\"\\ud800\\ud800\""));
	CHECK(!parses("\"\\ud800\\n\""));
	CHECK(!parses("\"\\ud800\\"));
	CHECK(!parses("\"\\udc00\\ud800\""));
	CHECK(strstr(err, "surrogate") != NULL);
}

static void
t_escapes_rfc_8259_does_not_list_are_refused(void)
{
	const char *bad[] = { "\"\\x41\"", "\"\\U0041\"", "\"\\u12\"",
	    "\"\\u12g4\"", "\"\\'\"", "\"\\ \"", "\"\\0\"", "\"\\a\"",
	    "\"\\", "\"\\\"", "\"\\u\"", "\"\\u-123\"", "\"\\u+123\"" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!parses(bad[i]));
}

static void
t_invalid_utf8_is_refused(void)
{
	const char *bad[] = { "\"\xc0\x80\"", "\"\xc1\xbf\"",
	    "\"\xe0\x80\x80\"", "\"\xe0\x9f\xbf\"", "\"\xf0\x80\x80\x80\"",
	    "\"\xf0\x8f\xbf\xbf\"", "\"\xed\xa0\x80\"", "\"\xed\xbf\xbf\"",
	    "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\x80\"",
	    "\"\xbf\"", "\"\xe2\x82\"", "\"\xe2\x82", "\"\xff\"", "\"\xfe\"",
	    "\"\xc3\x28\"", "\"\xf0\x9f\x98\"", "\"\xf0\x9f\x98\x28\"",
	    "[\xc3\xa9]" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!parses(bad[i]));
	CHECK(parses("\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
	    "\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""));
}

static void
t_raw_control_characters_in_strings_are_refused(void)
{
	char text[] = "\"a?b\"";

	for (int c = 0; c < 0x20; c++) {
		text[2] = (char)c;
		CHECK(parses_n(text, sizeof(text) - 1) == 0);
	}
	CHECK(parses("\"a\x7f" "b\""));
	CHECK(parses_n("\"\\u0000\"", 8) == 1);
}

static void
t_a_nul_escape_is_one_byte_of_the_string(void)
{
	const char *text = "{\"k\\u0000\":\"a\\u0000b\"}", *s;
	struct json *doc;
	size_t len;

	CHECK((doc = json_parse(text, strlen(text), err, sizeof(err))) != NULL);
	CHECK(json_member(json_root(doc), "k", 1) == NULL);
	CHECK((s = json_get_string(json_member(json_root(doc), "k\0", 2),
	    &len)) != NULL);
	CHECK(len == 3 && memcmp(s, "a\0b", 4) == 0);
	json_free(&doc);
	CHECK_STR(canon(text), "{\"k\\u0000\":\"a\\u0000b\"}");
}

static void
t_a_member_named_twice_is_refused_even_when_escaped(void)
{
	CHECK(!parses("{\"a\":1,\"a\":2}"));
	CHECK(strstr(err, "twice") != NULL);
	CHECK(!parses("{\"a\":1,\"\\u0061\":1}"));
	CHECK(!parses("{\"\\u00e9\":1,\"\xc3\xa9\":1}"));
	CHECK(!parses("{\"\":1,\"\":2}"));
	CHECK(!parses("{\"x\":{\"a\":1,\"b\":2,\"a\":3}}"));
	CHECK(!parses("[{\"a\":1,\"a\":1}]"));
	CHECK(parses("{\"a\":1,\"A\":2,\"a \":3,\"x\":{\"a\":4}}"));
	CHECK(parses("[{\"a\":1},{\"a\":1}]"));
}

static void
t_numbers_follow_the_grammar(void)
{
	const char *good[] = { "0", "-0", "1.5", "1e10", "1E+2", "-1.25e-3",
	    "10", "0.0", "0e0", "-0.0E-0", "123456789012345678901234567890" };
	const char *bad[] = { "01", "-01", "00", "+1", ".5", "1.", "1.e5",
	    "1e", "1e+", "-", "0x10", "NaN", "Infinity", "-Infinity", "1_0",
	    "- 1", "1.5.5", "[01]", "{\"a\":01}", "[-]", "0.e1", "1e1.5" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(parses(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!parses(bad[i]));
	CHECK(!parses("012") && strstr(err, "leading zero") != NULL);
}

static void
t_numbers_read_as_doubles_within_range(void)
{
	struct json *doc;
	double d;

	CHECK((doc = json_parse("[1.5, 1e400, -1e400, 1700000000.25, 1e-400]",
	    43, err, sizeof(err))) != NULL);
	CHECK(json_get_number(json_index(json_root(doc), 0, NULL, NULL), &d) == 0 &&
	    d == 1.5);
	CHECK(json_get_number(json_index(json_root(doc), 1, NULL, NULL), &d) == -1);
	CHECK(json_get_number(json_index(json_root(doc), 2, NULL, NULL), &d) == -1);
	CHECK(json_get_number(json_index(json_root(doc), 3, NULL, NULL), &d) == 0 &&
	    d == 1700000000.25);
	CHECK(json_get_number(json_index(json_root(doc), 4, NULL, NULL), &d) == 0 &&
	    d == 0);
	json_free(&doc);
}

static void
t_literals_are_spelled_exactly(void)
{
	const char *bad[] = { "tru", "True", "TRUE", "nul", "nulls", "fals",
	    "falsey", "[true false]", "undefined", "'a'", "[nil]" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!parses(bad[i]));
}

static void
t_a_byte_order_mark_and_trailing_bytes_are_refused(void)
{
	CHECK(!parses("\xef\xbb\xbf{}"));
	CHECK(strstr(err, "byte order mark") != NULL);
	CHECK(!parses(" \xef\xbb\xbf{}"));
	CHECK(!parses("{} x"));
	CHECK(strstr(err, "offset 3: bytes after the value") != NULL);
	CHECK(!parses("{}{}") && !parses("1 2") && !parses("[1]]") &&
	    !parses("\"a\"\"b\"") && !parses("{},"));
	CHECK(parses_n("{}\0", 3) == 0);
	CHECK(!parses("") && !parses("   ") && !parses("\n"));
}

static void
t_only_the_four_rfc_whitespace_bytes_separate_tokens(void)
{
	CHECK(parses(" \t\r\n[ \t\r\n1 \t\r\n, \t\r\n2 \t\r\n] \t\r\n"));
	CHECK(!parses("\f[]") && !parses("[\v]") && !parses("[1,\xa0" "2]"));
	CHECK(!parses("[1,\xc2\xa0" "2]"));
}

static void
t_broken_structure_is_refused(void)
{
	const char *bad[] = { "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}",
	    "[", "{", "[1 2]", "{\"a\"}", "{\"a\":}", "]", "}", "[,1]",
	    "{,}", "{\"a\":1 \"b\":2}", "[1:2]", "{\"a\",1}", "{'a':1}",
	    "{a:1}", "[\"a]", "\"abc" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!parses(bad[i]));
}

static void
t_nesting_is_read_up_to_the_depth_limit_and_refused_past_it(void)
{
	char *at = nested(JSON_DEPTH_MAX), *past = nested(JSON_DEPTH_MAX + 1);
	char obj[JSON_DEPTH_MAX * 8 + 16], *p = obj;
	int ok_at, ok_past;

	CHECK(at != NULL && past != NULL);
	ok_at = parses(at);
	ok_past = parses(past);
	free(at);
	free(past);
	CHECK(ok_at && !ok_past);
	CHECK(strstr(err, "too deep") != NULL);
	/* Objects count as arrays do, mixed. */
	for (int i = 0; i < JSON_DEPTH_MAX; i++)
		p += i % 2 == 0 ? sprintf(p, "{\"a\":") : sprintf(p, "[");
	*p++ = '1';
	for (int i = JSON_DEPTH_MAX - 1; i >= 0; i--)
		*p++ = i % 2 == 0 ? '}' : ']';
	*p = '\0';
	CHECK(parses(obj));
	memmove(obj + 1, obj, strlen(obj) + 1);
	obj[0] = '[';
	strcat(obj, "]");
	CHECK(!parses(obj));
}

static void
t_documents_are_read_up_to_the_size_limit(void)
{
	size_t n = JSON_SIZE_MAX + 1;
	char *big = malloc(n);
	int at, past;

	CHECK(big != NULL);
	memset(big, ' ', n);
	big[0] = '"';
	big[JSON_SIZE_MAX - 1] = '"';
	at = parses_n(big, JSON_SIZE_MAX);
	past = parses_n(big, n);
	free(big);
	CHECK(at == 1 && past == 0);
	CHECK(strstr(err, "larger than") != NULL);
}

static void
t_many_values_grow_the_tree(void)
{
	enum { N = 20000 };
	char *text = malloc(N * 20 + 16), *p = text;
	struct json *doc;
	double d;

	CHECK(text != NULL);
	p += sprintf(p, "{");
	for (int i = 0; i < N; i++)
		p += sprintf(p, "%s\"k%d\":[%d]", i > 0 ? "," : "", i, i);
	p += sprintf(p, "}");
	doc = json_parse(text, (size_t)(p - text), err, sizeof(err));
	free(text);
	CHECK(doc != NULL);
	CHECK(json_len(json_root(doc)) == N);
	CHECK(json_get_number(json_index(json_path(json_root(doc), "k12345"), 0,
	    NULL, NULL), &d) == 0 && d == 12345);
	json_free(&doc);
}

static void
t_paths_name_members_and_may_escape_a_dot(void)
{
	const char *text = "{\"app_metadata\":{\"role\":\"admin\",\"a.b\":1,"
	    "\"c\\\\d\":3},\"a\":{\"b\":2},\"s\":\"x\"}";
	const struct json_value *root;
	struct json *doc;
	double d;

	CHECK((doc = json_parse(text, strlen(text), err, sizeof(err))) != NULL);
	root = json_root(doc);
	CHECK_STR(json_get_string(json_path(root, "app_metadata.role"), NULL),
	    "admin");
	CHECK(json_get_number(json_path(root, "app_metadata.a\\.b"), &d) == 0 &&
	    d == 1);
	CHECK(json_get_number(json_path(root, "app_metadata.c\\\\d"), &d) == 0 &&
	    d == 3);
	CHECK(json_get_number(json_path(root, "a.b"), &d) == 0 && d == 2);
	CHECK(json_path(root, "a\\.b") == NULL);
	CHECK(json_path(root, "s.x") == NULL);
	CHECK(json_path(root, "app_metadata.role.x") == NULL);
	CHECK(json_path(root, "nope") == NULL);
	CHECK(json_path(root, "a") == json_member(root, "a", 1));
	json_free(&doc);
}

static void
t_invalid_paths_are_told_apart(void)
{
	char longname[JSON_PATH_MAX + 2];

	CHECK(json_path_valid("a") && json_path_valid("a.b.c") &&
	    json_path_valid("a\\.b") && json_path_valid("a\\\\") &&
	    json_path_valid("\\.") && json_path_valid("x-y:z"));
	CHECK(!json_path_valid("") && !json_path_valid(".") &&
	    !json_path_valid("a.") && !json_path_valid(".a") &&
	    !json_path_valid("a..b") && !json_path_valid("a\\x") &&
	    !json_path_valid("a\\") && !json_path_valid("a.\\"));
	memset(longname, 'n', sizeof(longname));
	longname[JSON_PATH_MAX] = '\0';
	CHECK(json_path_valid(longname));
	longname[JSON_PATH_MAX] = 'n';
	longname[JSON_PATH_MAX + 1] = '\0';
	CHECK(!json_path_valid(longname));
}

static void
t_canonical_text_sorts_members_and_escapes_minimally(void)
{
	CHECK_STR(canon(" { \"b\" : [ 1 , 2.50 ] , \"a\" : \"x\\u0001\\\"\\\\"
	    "\\/\\u00e9\\ud83d\\ude00\" , \"c\" : { \"z\" : null , \"y\" : true ,"
	    " \"x\" : false } , \"d\" : { } , \"e\" : [ ] } "),
	    "{\"a\":\"x\\u0001\\\"\\\\/\xc3\xa9\xf0\x9f\x98\x80\",\"b\":[1,25e-1],"
	    "\"c\":{\"x\":false,\"y\":true,\"z\":null},\"d\":{},\"e\":[]}");
	CHECK_STR(canon("1E+2"), "100");
	CHECK_STR(canon("[\"\\u0008\\u000c\\u000A\\u000d\\u0009\"]"),
	    "[\"\\b\\f\\n\\r\\t\"]");
	CHECK_STR(canon("{\"\\u0062\":1,\"a\":[3,2,1]}"),
	    "{\"a\":[3,2,1],\"b\":1}");
}

/* A number is written by its value: every text of one value is one
 * text, and two values are never one. */
static void
t_canonical_numbers_are_one_text_per_value(void)
{
	const char *one[] = { "1", "1.0", "1e0", "10E-1", "0.1e1", "1.000e+0",
	    "100e-2", "1E0" };
	const char *zero[] = { "0", "-0", "0.0", "-0.0e5", "0e-7", "-0E+0" };

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		CHECK_STR(canon(one[i]), "1");
	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		CHECK_STR(canon(zero[i]), "0");
	CHECK_STR(canon("-12.50"), "-125e-1");
	CHECK_STR(canon("-1.25e1"), "-125e-1");
	CHECK_STR(canon("1700000000"), "1700000000");
	CHECK_STR(canon("17e8"), "1700000000");
	CHECK_STR(canon("0.001"), "1e-3");
	CHECK_STR(canon("1e20"), "100000000000000000000");
	CHECK_STR(canon("1e21"), "1e21");
	CHECK_STR(canon("120e20"), "12e21");
	/* Past a double's precision, two integers stay two. */
	CHECK_STR(canon("12345678901234567891"), "12345678901234567891");
	CHECK_STR(canon("12345678901234567892"), "12345678901234567892");
	CHECK_STR(canon("[1,1.0,-0]"), "[1,1,0]");
	/* An exponent too large to take as a value: the text as it came. */
	CHECK_STR(canon("1e99999999999"), "1e99999999999");
}

static void
t_canonical_text_is_cut_as_snprintf_cuts(void)
{
	struct json *doc;
	char out[8];

	CHECK((doc = json_parse("{\"abc\":[1,2,3]}", 15, err,
	    sizeof(err))) != NULL);
	CHECK(json_write(json_root(doc), NULL, 0) == 15);
	memset(out, 'z', sizeof(out));
	CHECK(json_write(json_root(doc), out, sizeof(out)) == 15);
	CHECK_STR(out, "{\"abc\":");
	CHECK(json_write(json_root(doc), out, 1) == 15 && out[0] == '\0');
	json_free(&doc);
}

int
main(void)
{
	RUN(t_values_of_every_type_are_read);
	RUN(t_every_json_value_may_stand_alone);
	RUN(t_members_are_found_by_name_and_listed_in_name_order);
	RUN(t_escapes_decode_at_the_start_middle_and_end_of_strings);
	RUN(t_surrogate_pairs_decode_to_one_character);
	RUN(t_lone_surrogates_are_refused);
	RUN(t_escapes_rfc_8259_does_not_list_are_refused);
	RUN(t_invalid_utf8_is_refused);
	RUN(t_raw_control_characters_in_strings_are_refused);
	RUN(t_a_nul_escape_is_one_byte_of_the_string);
	RUN(t_a_member_named_twice_is_refused_even_when_escaped);
	RUN(t_numbers_follow_the_grammar);
	RUN(t_numbers_read_as_doubles_within_range);
	RUN(t_literals_are_spelled_exactly);
	RUN(t_a_byte_order_mark_and_trailing_bytes_are_refused);
	RUN(t_only_the_four_rfc_whitespace_bytes_separate_tokens);
	RUN(t_broken_structure_is_refused);
	RUN(t_nesting_is_read_up_to_the_depth_limit_and_refused_past_it);
	RUN(t_documents_are_read_up_to_the_size_limit);
	RUN(t_many_values_grow_the_tree);
	RUN(t_paths_name_members_and_may_escape_a_dot);
	RUN(t_invalid_paths_are_told_apart);
	RUN(t_canonical_text_sorts_members_and_escapes_minimally);
	RUN(t_canonical_text_is_cut_as_snprintf_cuts);
	RUN(t_canonical_numbers_are_one_text_per_value);
	return unit_exit();
}
