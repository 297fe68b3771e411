/* SPDX-License-Identifier: MIT */
/*
 * common/hlist.c: fields in order, found without case, removed one or
 * all; copies that stay put while more are added; a cleared list that
 * allocates nothing for a message no larger than the last; and fields
 * that could be read as two refused.
 */

#include <stdlib.h>
#include <string.h>

#include "common/hlist.h"
#include "tests/unit/unit.h"

static void
t_fields_keep_their_order_and_are_found_without_case(void)
{
	struct hlist h;
	const struct hfield *f;
	const char *want[] = { "A", "1", "b", "2", "a", "3" };
	size_t i = 0;

	hl_init(&h);
	CHECK(hl_add(&h, "A", "1") == 0);
	CHECK(hl_add(&h, "b", "2") == 0);
	CHECK(hl_add(&h, "a", "3") == 0);
	CHECK(h.n == 3);
	HL_FOREACH(f, &h) {
		CHECK_STR(f->key, want[i]);
		CHECK_STR(f->value, want[i + 1]);
		i += 2;
	}
	CHECK_STR(hl_find(&h, "a"), "1");
	CHECK_STR(hl_find(&h, "B"), "2");
	CHECK(hl_find(&h, "c") == NULL);
	CHECK(hl_find(&h, "") == NULL);
	hl_free(&h);
	CHECK(h.n == 0 && h.v == NULL);
}

static void
t_remove_takes_the_first_and_remove_all_every_one(void)
{
	struct hlist h;

	hl_init(&h);
	CHECK(hl_add(&h, "x", "1") == 0 && hl_add(&h, "y", "2") == 0);
	CHECK(hl_add(&h, "X", "3") == 0 && hl_add(&h, "x", "4") == 0);
	CHECK(hl_remove(&h, "x") == 0);
	CHECK(h.n == 3);
	CHECK_STR(hl_find(&h, "x"), "3");
	CHECK_STR(h.v[0].key, "y");
	CHECK(hl_remove(&h, "z") == -1 && h.n == 3);
	CHECK(hl_remove_all(&h, "X") == 2);
	CHECK(h.n == 1 && hl_find(&h, "x") == NULL);
	CHECK_STR(hl_find(&h, "y"), "2");
	CHECK(hl_remove_all(&h, "y") == 1 && h.n == 0);
	CHECK(hl_remove_all(&h, "y") == 0);
	hl_free(&h);
}

static void
t_a_value_found_stays_valid_as_more_are_added(void)
{
	struct hlist h;
	char name[16], value[64];
	const char *first;

	hl_init(&h);
	CHECK(hl_add(&h, "first", "kept") == 0);
	first = hl_find(&h, "first");
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		snprintf(value, sizeof(value), "%0*d", 40, i);
		CHECK(hl_add(&h, name, value) == 0);
	}
	CHECK(first == hl_find(&h, "first"));
	CHECK_STR(first, "kept");
	CHECK_STR(hl_find(&h, "n1999"),
	    "0000000000000000000000000000000000001999");
	hl_free(&h);
}

static void
t_lengths_copy_exactly_the_bytes_given(void)
{
	struct hlist h;

	hl_init(&h);
	CHECK(hl_addn(&h, "Name: more", 4, "value\r\n", 5) == 0);
	CHECK_STR(hl_find(&h, "Name"), "value");
	CHECK(hl_addn(&h, "e", 0, "", 0) == 0);		/* empty both */
	CHECK_STR(h.v[1].key, "");
	CHECK_STR(h.v[1].value, "");
	hl_free(&h);
}

static void
t_a_field_that_reads_as_two_is_refused(void)
{
	struct hlist h;

	hl_init(&h);
	CHECK(hl_add(&h, "A", "1\r\nB: 2") == -1);
	CHECK(hl_add(&h, "A", "1\n") == -1);
	CHECK(hl_add(&h, "A", "\r") == -1);
	CHECK(hl_add(&h, "A\r\nB", "1") == -1);
	CHECK(hl_add(&h, "\nA", "1") == -1);
	CHECK(hl_addn(&h, "A", 1, "1\0002", 3) == -1);	/* a NUL within */
	CHECK(hl_addn(&h, "A\0B", 3, "1", 1) == -1);
	CHECK(h.n == 0);
	/* Other controls and bytes past ASCII are the caller's to judge. */
	CHECK(hl_add(&h, "A", "1\t2 \x7f\xff") == 0);
	CHECK(h.n == 1);
	hl_free(&h);
}

static void
t_references_are_kept_as_given(void)
{
	struct hlist h;
	char key[] = "Host", value[] = "example.org";

	hl_init(&h);
	CHECK(hl_add_ref(&h, key, value) == 0);
	CHECK(h.v[0].key == key && h.v[0].value == value);
	CHECK(hl_find(&h, "host") == value);
	hl_free(&h);
}

static void
t_copy_appends_every_field(void)
{
	struct hlist a, b;

	hl_init(&a);
	hl_init(&b);
	CHECK(hl_add(&a, "x", "1") == 0 && hl_add(&a, "y", "2") == 0);
	CHECK(hl_add(&b, "z", "0") == 0);
	CHECK(hl_copy(&b, &a) == 0);
	CHECK(b.n == 3);
	CHECK_STR(b.v[1].key, "x");
	CHECK_STR(b.v[2].value, "2");
	CHECK(b.v[1].value != a.v[0].value);	/* copies */
	hl_free(&a);
	hl_free(&b);
}

/* A list cleared and filled again with no more than before ends in one
 * block as large as its copies took: the same fill then needs none. */
static void
t_a_cleared_list_refills_in_the_memory_it_kept(void)
{
	struct hlist h;
	char value[300];
	const char *before, *after;
	struct hfield *v;

	memset(value, 'v', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	hl_init(&h);
	for (int round = 0; round < 3; round++) {
		hl_clear(&h);
		for (int i = 0; i < 40; i++)
			CHECK(hl_add(&h, "field", value) == 0);
	}
	v = h.v;
	before = h.v[0].value;
	hl_clear(&h);
	CHECK(h.n == 0);
	for (int i = 0; i < 40; i++)
		CHECK(hl_add(&h, "field", value) == 0);
	after = h.v[0].value;
	CHECK(before == after);		/* the same block, from its start */
	CHECK(v == h.v);
	/* The last copy in the same block as the first: one block (each copy
	 * the name, the value and its alignment). */
	CHECK(h.v[39].value > after &&
	    h.v[39].value < after + 40 * (sizeof(value) + 32));
	hl_free(&h);
}

/* A compacted list: the same fields in order, in one piece of exactly
 * their size, still valid when what they were copied from is gone; and
 * it takes more fields after. */
static void
t_a_compacted_list_keeps_its_fields_in_one_piece(void)
{
	struct hlist h;
	char ref[] = "by reference";

	hl_init(&h);
	CHECK(hl_compact(&h) == 0 && h.n == 0);
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "X-F%d", i);
		CHECK(hl_add(&h, name, "value") == 0);
	}
	CHECK(hl_add_ref(&h, "X-Ref", ref) == 0);
	CHECK(hl_compact(&h) == 0);
	memset(ref, 'z', sizeof(ref) - 1);	/* the original changes */
	CHECK(h.n == 21 && h.cap == 21);
	CHECK_STR(h.v[0].key, "X-F0");
	CHECK_STR(h.v[19].key, "X-F19");
	CHECK_STR(hl_find(&h, "x-ref"), "by reference");
	/* One piece: each field right after the one before. */
	CHECK(h.v[0].value == h.v[0].key + strlen(h.v[0].key) + 1);
	for (int i = 1; i < 21; i++)
		CHECK(h.v[i].key == h.v[i - 1].value + strlen(h.v[i - 1].value) + 1);
	CHECK(hl_add(&h, "X-After", "1") == 0);
	CHECK_STR(hl_find(&h, "X-After"), "1");
	CHECK_STR(hl_find(&h, "X-F7"), "value");
	hl_free(&h);
}

int
main(void)
{
	RUN(t_fields_keep_their_order_and_are_found_without_case);
	RUN(t_remove_takes_the_first_and_remove_all_every_one);
	RUN(t_a_value_found_stays_valid_as_more_are_added);
	RUN(t_lengths_copy_exactly_the_bytes_given);
	RUN(t_a_field_that_reads_as_two_is_refused);
	RUN(t_references_are_kept_as_given);
	RUN(t_copy_appends_every_field);
	RUN(t_a_cleared_list_refills_in_the_memory_it_kept);
	RUN(t_a_compacted_list_keeps_its_fields_in_one_piece);
	return unit_exit();
}
