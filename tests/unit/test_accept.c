/* SPDX-License-Identifier: MIT */
/*
 * codec/accept.c: Accept-Encoding read as RFC 9110 §12.5.3 and §12.4.2
 * have it, leniently (a member that is not valid counts as absent), and
 * the coding sent chosen from what the cache holds and what decoding
 * makes, with 406 only where the RFC puts it. The class of a field does
 * not depend on its spelling.
 */

#include <stdlib.h>
#include <string.h>

#include "codec/accept.h"
#include "tests/unit/unit.h"

#define LONG_FIELD	(256 * 1024)	/* a field far past any real one */

#define ID	CODING_BIT(CODING_IDENTITY)
#define GZ	CODING_BIT(CODING_GZIP)
#define BR	CODING_BIT(CODING_BR)
#define ZS	CODING_BIT(CODING_ZSTD)

static struct accept
parse(const char *line)
{
	struct accept a;

	accept_init(&a);
	accept_parse(&a, line);
	return a;
}

/* The coding sent for field (NULL: none), or -1 (unavailable) or -2
 * (not acceptable). */
static int
sent(const char *field, unsigned held, int can_decode)
{
	struct accept a;
	enum coding c;

	accept_init(&a);
	if (field != NULL)
		accept_parse(&a, field);
	switch (accept_choose(&a, held, can_decode, &c)) {
	case ACCEPT_SEND:
		return (int)c;
	case ACCEPT_UNAVAILABLE:
		return -1;
	case ACCEPT_NOT_ACCEPTABLE:
		break;
	}
	return -2;
}

static void
t_no_field_gets_identity_when_it_can_be_had(void)
{
	CHECK(sent(NULL, GZ, 1) == CODING_IDENTITY);
	CHECK(sent(NULL, ID | BR, 0) == CODING_IDENTITY);
	/* Any coding is acceptable (rule 1): the held one, not a miss. */
	CHECK(sent(NULL, GZ, 0) == CODING_GZIP);
	CHECK(sent(NULL, GZ | BR, 0) == CODING_BR);
	CHECK(sent(NULL, 0, 1) == -1);
}

static void
t_a_listed_coding_held_is_sent_as_it_is(void)
{
	CHECK(sent("gzip", GZ, 1) == CODING_GZIP);
	CHECK(sent("br", BR | GZ, 1) == CODING_BR);
	CHECK(sent("zstd", BR | ZS, 1) == CODING_ZSTD);
	CHECK(sent("gzip", BR | GZ, 1) == CODING_GZIP);
	/* Not held: identity, acceptable unless excluded. */
	CHECK(sent("gzip", BR, 1) == CODING_IDENTITY);
	CHECK(sent("br", ID, 0) == CODING_IDENTITY);
	/* Nothing held is acceptable and identity cannot be made. */
	CHECK(sent("br", GZ, 0) == -1);
}

static void
t_ties_go_to_the_held_coding_then_the_smaller(void)
{
	CHECK(sent("gzip, deflate, br, zstd", GZ | BR | ZS, 1) == CODING_BR);
	CHECK(sent("gzip, zstd", GZ | BR | ZS, 1) == CODING_ZSTD);
	CHECK(sent("gzip, identity", GZ, 1) == CODING_GZIP);
	CHECK(sent("identity, gzip", GZ, 1) == CODING_GZIP);
	CHECK(sent("*", GZ, 1) == CODING_GZIP);
	CHECK(sent("*", GZ | BR, 1) == CODING_BR);
	CHECK(sent("*", ID | GZ, 0) == CODING_GZIP);
}

static void
t_weights_order_the_choice(void)
{
	CHECK(sent("gzip;q=0.5, br;q=0.8", GZ | BR, 1) == CODING_BR);
	CHECK(sent("gzip;q=0.8, br;q=0.5", GZ | BR, 1) == CODING_GZIP);
	CHECK(sent("gzip;q=0.5, identity", GZ, 1) == CODING_IDENTITY);
	CHECK(sent("gzip;q=0.001", GZ, 1) == CODING_GZIP);
	CHECK(sent("gzip;q=0.5, *;q=0.9", GZ | BR, 1) == CODING_BR);
	CHECK(sent("gzip;q=0.5, *;q=0.1", GZ, 1) == CODING_GZIP);
	CHECK(sent("gzip;q=0.5, *;q=0.9", GZ, 1) == CODING_IDENTITY);
}

static void
t_not_acceptable_only_where_identity_is_excluded(void)
{
	CHECK(sent("identity;q=0", GZ, 1) == -2);
	CHECK(sent("identity;q=0", ID, 0) == -2);
	CHECK(sent("*;q=0", GZ, 1) == -2);
	CHECK(sent("br, identity;q=0", GZ, 1) == -2);
	CHECK(sent("gzip, identity;q=0", GZ, 1) == CODING_GZIP);
	CHECK(sent("*;q=0, identity", GZ, 1) == CODING_IDENTITY);
	CHECK(sent("*;q=0, gzip", GZ, 1) == CODING_GZIP);
	CHECK(sent("gzip;q=0, *", GZ, 1) == CODING_IDENTITY);
	CHECK(sent("gzip;q=0, *", GZ | BR, 1) == CODING_BR);
	CHECK(sent("gzip;q=0, *", GZ, 0) == -1);
	CHECK(sent("gzip;q=0", GZ, 1) == CODING_IDENTITY);
	/* An empty field wants no coding: identity. */
	CHECK(sent("", GZ, 1) == CODING_IDENTITY);
	CHECK(sent("", GZ, 0) == -1);
}

static void
t_names_are_case_insensitive_and_x_gzip_is_gzip(void)
{
	struct accept a = parse("GZIP");

	CHECK(a.present && a.q[CODING_GZIP] == ACCEPT_Q_MAX);
	a = parse("x-gzip;q=0.3");
	CHECK(a.q[CODING_GZIP] == 300);
	a = parse("Br;Q=0.25, ZStd, IDENTITY;q=0.1");
	CHECK(a.q[CODING_BR] == 250 && a.q[CODING_ZSTD] == ACCEPT_Q_MAX);
	CHECK(a.q[CODING_IDENTITY] == 100);
	a = parse("deflate, compress, x-compress, gzipx");
	CHECK(a.q[CODING_GZIP] == ACCEPT_UNLISTED && a.ignored == 0);
}

static void
t_whitespace_around_separators_is_allowed(void)
{
	struct accept a = parse(" gzip ; q=0.5 ,\tbr\t;\tq = 0.7 , zstd ;q= 1");

	CHECK(a.q[CODING_GZIP] == 500);
	CHECK(a.q[CODING_BR] == 700);
	CHECK(a.q[CODING_ZSTD] == ACCEPT_Q_MAX);
	CHECK(a.ignored == 0);
}

static void
t_qvalues_have_up_to_three_decimals_from_0_to_1(void)
{
	CHECK(parse("gzip;q=1.000").q[CODING_GZIP] == 1000);
	CHECK(parse("gzip;q=1.").q[CODING_GZIP] == 1000);
	CHECK(parse("gzip;q=0.").q[CODING_GZIP] == 0);
	CHECK(parse("gzip;q=0").q[CODING_GZIP] == 0);
	CHECK(parse("gzip;q=0.999").q[CODING_GZIP] == 999);
	CHECK(parse("gzip;q=0.05").q[CODING_GZIP] == 50);
	CHECK(parse("gzip;q=1.0001").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=0.0001").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=1.5").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=1.001").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=2").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=.5").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=-0").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=01").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=0.5x").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=\"0.5\"").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;level=1").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=0.5;q=0.6").q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(parse("gzip;q=0.5;q=0.6").ignored == 1);
}

static void
t_an_invalid_member_is_absent_and_the_rest_still_count(void)
{
	struct accept a = parse("gzip;q=1.0001, br");

	CHECK(a.q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX && a.ignored == 1);
	/* The invalid gzip is absent, so identity is sent, not 406. */
	CHECK(sent("gzip;q=1.0001, identity;q=0", GZ, 1) == -2);
	CHECK(sent("gzip;q=1.0001", GZ, 1) == CODING_IDENTITY);
	CHECK(sent("@@@, ;;;, gzip", GZ, 1) == CODING_GZIP);
	CHECK(sent("identity;q=0.0001", GZ, 1) == CODING_IDENTITY);
	a = parse("g\xc3\xa9zip, br");
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX && a.ignored == 1);
}

static void
t_empty_members_are_skipped(void)
{
	struct accept a = parse(",, gzip,,  ,\t, br,,");

	CHECK(a.q[CODING_GZIP] == ACCEPT_Q_MAX);
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX);
	CHECK(a.ignored == 0);
	a = parse(",");
	CHECK(a.present && a.ignored == 0 && a.star == ACCEPT_UNLISTED);
}

static void
t_quotes_and_escapes_never_run_past_the_field(void)
{
	struct accept a = parse("br, gzip\\");

	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX);
	CHECK(a.q[CODING_GZIP] == ACCEPT_UNLISTED && a.ignored == 1);
	a = parse("br, \"gzip\\");
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX && a.ignored == 1);
	/* A comma inside a quoted string does not end a member. */
	a = parse("br;q=\"0.1, gzip\", zstd");
	CHECK(a.q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(a.q[CODING_ZSTD] == ACCEPT_Q_MAX && a.ignored == 1);
	a = parse("\"a\\\"b, gzip\", br");
	CHECK(a.q[CODING_GZIP] == ACCEPT_UNLISTED);
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX);
	a = parse("\\");
	CHECK(a.ignored == 1);
}

static void
t_a_coding_named_twice_counts_at_its_first(void)
{
	struct accept a = parse("gzip;q=0.2, gzip, x-gzip;q=0.9, *, *;q=0");

	CHECK(a.q[CODING_GZIP] == 200 && a.star == ACCEPT_Q_MAX);
	/* Lines of the field read in order, as one list. */
	accept_init(&a);
	accept_parse(&a, "gzip;q=0");
	accept_parse(&a, "gzip, br");
	CHECK(a.q[CODING_GZIP] == 0 && a.q[CODING_BR] == ACCEPT_Q_MAX);
}

static void
t_very_long_fields_are_read_whole(void)
{
	static const char unit[] = "deflate;q=0.5, ";
	size_t n = strlen(unit), k = LONG_FIELD / n;
	char *f = malloc(k * n + sizeof("br") + 1);
	struct accept a;

	CHECK(f != NULL);
	for (size_t i = 0; i < k; i++)
		memcpy(f + i * n, unit, n);
	strcpy(f + k * n, "br");
	a = parse(f);
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX && a.ignored == 0);
	/* One token as long as the field. */
	memset(f, 'a', k * n);
	strcpy(f + k * n, ",br");
	a = parse(f);
	CHECK(a.q[CODING_BR] == ACCEPT_Q_MAX && a.ignored == 0);
	/* One quoted string that never closes. */
	f[0] = '"';
	a = parse(f);
	CHECK(a.q[CODING_BR] == ACCEPT_UNLISTED && a.ignored == 1);
	free(f);
}

static void
t_classes_do_not_depend_on_spelling(void)
{
	struct accept a;

	accept_init(&a);
	CHECK(accept_classify(&a) == ACCEPT_CLASS_NONE);
	CHECK(accept_class_value(ACCEPT_CLASS_NONE) == NULL);
	a = parse("gzip, deflate, br, zstd");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_BR);
	a = parse("br;q=1.0, GZIP;q=1.0");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_BR);
	a = parse("deflate, gzip");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_GZIP);
	a = parse(" X-GZIP ;Q=0.9");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_GZIP);
	a = parse("zstd, gzip");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_ZSTD);
	a = parse("gzip;q=0.5, zstd;q=0.4, br;q=0.3");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_GZIP);
	a = parse("");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_IDENTITY);
	a = parse("deflate");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_IDENTITY);
	a = parse("*");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_BR);
	a = parse("identity;q=0");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_REFUSED);
	a = parse("*;q=0, gzip");
	CHECK(accept_classify(&a) == ACCEPT_CLASS_GZIP);
	CHECK_STR(accept_class_value(ACCEPT_CLASS_GZIP), "gzip");
	CHECK_STR(accept_class_value(ACCEPT_CLASS_BR), "br");
	CHECK_STR(accept_class_value(ACCEPT_CLASS_ZSTD), "zstd");
	CHECK_STR(accept_class_value(ACCEPT_CLASS_IDENTITY), "identity");
	CHECK_STR(accept_class_value(ACCEPT_CLASS_REFUSED), "identity;q=0");
	/* Each class's value reads back as the class. */
	for (int c = ACCEPT_CLASS_IDENTITY; c <= ACCEPT_CLASS_REFUSED; c++) {
		a = parse(accept_class_value((enum accept_class)c));
		CHECK(accept_classify(&a) == (enum accept_class)c);
	}
}

int
main(void)
{
	RUN(t_no_field_gets_identity_when_it_can_be_had);
	RUN(t_a_listed_coding_held_is_sent_as_it_is);
	RUN(t_ties_go_to_the_held_coding_then_the_smaller);
	RUN(t_weights_order_the_choice);
	RUN(t_not_acceptable_only_where_identity_is_excluded);
	RUN(t_names_are_case_insensitive_and_x_gzip_is_gzip);
	RUN(t_whitespace_around_separators_is_allowed);
	RUN(t_qvalues_have_up_to_three_decimals_from_0_to_1);
	RUN(t_an_invalid_member_is_absent_and_the_rest_still_count);
	RUN(t_empty_members_are_skipped);
	RUN(t_quotes_and_escapes_never_run_past_the_field);
	RUN(t_a_coding_named_twice_counts_at_its_first);
	RUN(t_very_long_fields_are_read_whole);
	RUN(t_classes_do_not_depend_on_spelling);
	return unit_exit();
}
