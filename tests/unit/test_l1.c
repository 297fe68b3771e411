/* SPDX-License-Identifier: MIT */
#include "cache/cache_l1.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/unit.h"
#include "tests/unit/unit_entry.h"

#define BIG_L1		(64LL * 1024 * 1024)
#define BODY_LEN	100
#define NKEYS		8	/* entries that fit in a budget of 8 charges */
#define MANY_KEYS	5000
#define KEY_BUF		64

/* What the L1 charges for e under key, measured on a roomy L1. */
static int64_t
charge(const char *key, struct cache_entry *e)
{
	struct l1 *l = l1_new(BIG_L1);
	int64_t c;

	if (l == NULL)
		abort();
	l1_put(l, key, e);
	c = l1_counters(l)->bytes;
	l1_free(&l);
	return c;
}

/* Puts a new entry under key and leaves the L1 the only holder. */
static void
put_new(struct l1 *l, const char *key, char digit, size_t body_len)
{
	struct cache_entry *e = l1_get(l, key, NOW, 0);	/* as the proxy does */

	entry_unref(&e);
	e = make_entry(digit, body_len);
	l1_put(l, key, e);
	entry_unref(&e);
}

/* A key asked for once more than put_new's: admitted over an entry that
 * was asked for once. */
static void
put_wanted(struct l1 *l, const char *key, char digit, size_t body_len)
{
	struct cache_entry *e = l1_get(l, key, NOW, 0);

	entry_unref(&e);
	put_new(l, key, digit, body_len);
}

/* Is key held and fresh at NOW? (A hit: it also touches the key.) */
static int
has(struct l1 *l, const char *key)
{
	struct cache_entry *e = l1_get(l, key, NOW, 0);
	int found = e != NULL;

	entry_unref(&e);
	return found;
}

/* A near cache of NKEYS charges holding k0 .. k7, each looked up once
 * before its put; *cp (if not NULL) is one entry's charge. */
static struct l1 *
full_l1(int64_t *cp)
{
	struct cache_entry *e = make_entry('1', BODY_LEN);
	char key[KEY_BUF];
	struct l1 *l;
	int64_t c;

	c = charge("k0", e);
	entry_unref(&e);
	if ((l = l1_new(NKEYS * c)) == NULL)
		abort();
	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put_new(l, key, '1', BODY_LEN);
	}
	if (cp != NULL)
		*cp = c;
	return l;
}

static void
t_hit_returns_the_same_entry_with_a_new_reference(void)
{
	struct l1 *l = l1_new(BIG_L1);
	struct cache_entry *e = make_entry('1', BODY_LEN), *got;

	CHECK(l != NULL);
	l1_put(l, "host/a", e);
	CHECK(e->refcnt == 2);
	got = l1_get(l, "host/a", NOW, 0);
	CHECK(got == e);
	CHECK(e->refcnt == 3);
	entry_unref(&got);
	CHECK(got == NULL && e->refcnt == 2);
	CHECK(l1_get(l, "host/b", NOW, 0) == NULL);
	CHECK(l1_get(l, "host/", NOW, 0) == NULL);
	CHECK(l1_get(l, "host/a\nv", NOW, 0) == NULL);
	CHECK(l1_counters(l)->hits == 1);
	CHECK(l1_counters(l)->misses == 3);
	l1_free(&l);
	CHECK(l == NULL);
	CHECK(e->refcnt == 1);
	entry_unref(&e);
}

static void
t_stale_entry_is_kept_for_stale_lookups_and_dropped_once_expired(void)
{
	struct l1 *l = l1_new(BIG_L1);
	struct cache_entry *e = make_entry('1', BODY_LEN), *got;

	CHECK(l != NULL);
	l1_put(l, "k", e);
	got = l1_get(l, "k", NOW + FRESH_MS - 1, 0);
	CHECK(got == e);
	entry_unref(&got);
	/* Stale: a lookup for fresh entries misses, and the copy stays. */
	CHECK(l1_get(l, "k", NOW + FRESH_MS, 0) == NULL);
	CHECK(l1_counters(l)->entries == 1);
	CHECK(l1_counters(l)->drops == 0);
	CHECK(l1_counters(l)->misses == 1);
	/* ... for a lookup that takes it stale. */
	got = l1_get(l, "k", NOW + FRESH_MS, 1);
	CHECK(got == e);
	entry_unref(&got);
	CHECK(l1_counters(l)->hits == 2);
	/* Past its stale window: a miss either way, and dropped. */
	CHECK(l1_get(l, "k", NOW + FRESH_MS + STALE_MS, 1) == NULL);
	CHECK(e->refcnt == 1);
	CHECK(l1_counters(l)->entries == 0);
	CHECK(l1_counters(l)->bytes == 0);
	CHECK(l1_counters(l)->drops == 1);
	CHECK(l1_counters(l)->misses == 2);
	/* Gone: a second look is a plain miss. */
	CHECK(l1_get(l, "k", NOW, 1) == NULL);
	CHECK(l1_counters(l)->drops == 1);
	CHECK(l1_counters(l)->misses == 3);
	l1_free(&l);
	entry_unref(&e);
}

static void
t_put_replaces_an_older_copy_and_releases_it(void)
{
	struct l1 *l = l1_new(BIG_L1);
	struct cache_entry *old = make_entry('1', BODY_LEN);
	struct cache_entry *newer = make_entry('2', 3 * BODY_LEN), *got;
	int64_t bytes;

	CHECK(l != NULL);
	l1_put(l, "k", old);
	bytes = l1_counters(l)->bytes;
	CHECK(old->refcnt == 2);
	l1_put(l, "k", newer);
	CHECK(old->refcnt == 1);
	CHECK(newer->refcnt == 2);
	got = l1_get(l, "k", NOW, 0);
	CHECK(got == newer);
	entry_unref(&got);
	CHECK(l1_counters(l)->stores == 2);
	CHECK(l1_counters(l)->entries == 1);
	CHECK(l1_counters(l)->bytes == bytes + 2 * BODY_LEN);
	/* Ours was the last reference to the old copy: this frees it. */
	entry_unref(&old);
	l1_free(&l);
	CHECK(newer->refcnt == 1);
	entry_unref(&newer);
}

static void
t_put_of_the_same_generation_keeps_the_held_copy_and_bumps_it(void)
{
	struct cache_entry *first = make_entry('a', BODY_LEN), *again, *got;
	char key[KEY_BUF];
	struct l1 *l;
	int64_t c;

	c = charge("k0", first);
	CHECK((l = l1_new(NKEYS * c)) != NULL);
	l1_put(l, "k0", first);
	for (int i = 1; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put_new(l, key, '1', BODY_LEN);
	}
	/* The same pointer again: nothing new to store. */
	l1_put(l, "k0", first);
	CHECK(first->refcnt == 2);
	CHECK(l1_counters(l)->stores == NKEYS);
	/* Another decoding of the same generation. */
	again = make_entry('a', BODY_LEN);
	l1_put(l, "k0", again);
	CHECK(again->refcnt == 1);
	CHECK(l1_counters(l)->stores == NKEYS);
	/* k0 was made most recent by those puts: k1 goes first. */
	put_wanted(l, "k8", '1', BODY_LEN);
	CHECK(l1_counters(l)->evictions == 1);
	CHECK(!has(l, "k1"));
	got = l1_get(l, "k0", NOW, 0);
	CHECK(got == first);
	entry_unref(&got);
	l1_free(&l);
	CHECK(first->refcnt == 1);
	entry_unref(&first);
	entry_unref(&again);
}

static void
t_lru_eviction_under_the_byte_bound_spares_touched_entries(void)
{
	char key[KEY_BUF];
	int64_t c;
	struct l1 *l = full_l1(&c);

	CHECK(l1_counters(l)->entries == NKEYS);
	CHECK(l1_counters(l)->bytes == NKEYS * c);
	CHECK(l1_counters(l)->evictions == 0);

	CHECK(has(l, "k0"));			/* k0 is now the most recent */
	put_wanted(l, "k8", '1', BODY_LEN);
	CHECK(l1_counters(l)->evictions == 1);
	CHECK(l1_counters(l)->entries == NKEYS);
	CHECK(l1_counters(l)->bytes == NKEYS * c);
	CHECK(!has(l, "k1"));
	CHECK(has(l, "k0"));

	put_wanted(l, "k9", '1', BODY_LEN);
	CHECK(l1_counters(l)->evictions == 2);
	CHECK(!has(l, "k2"));
	for (int i = 3; i <= 9; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(has(l, key));
	}
	CHECK(has(l, "k0"));
	CHECK(l1_counters(l)->evictions == 2);
	l1_free(&l);
}

static void
t_entry_over_an_eighth_of_the_budget_is_not_kept(void)
{
	struct cache_entry *e = make_entry('1', BODY_LEN), *big;
	struct l1 *l;
	int64_t c;

	c = charge("k0", e);
	/* Exactly an eighth: kept. */
	CHECK((l = l1_new(8 * c)) != NULL);
	l1_put(l, "k0", e);
	CHECK(l1_counters(l)->entries == 1);
	l1_free(&l);
	/* An eighth one byte short of the charge: not kept. */
	CHECK((l = l1_new(8 * c - 8)) != NULL);
	l1_put(l, "k0", e);
	CHECK(e->refcnt == 1);
	CHECK(l1_counters(l)->entries == 0);
	CHECK(l1_counters(l)->bytes == 0);
	CHECK(l1_counters(l)->stores == 0);
	CHECK(l1_get(l, "k0", NOW, 0) == NULL);
	l1_free(&l);
	/* A budget smaller than the overhead of one entry keeps nothing. */
	CHECK((l = l1_new(1)) != NULL);
	l1_put(l, "k0", e);
	CHECK(e->refcnt == 1 && l1_counters(l)->entries == 0);
	l1_free(&l);

	/* A newer entry too large to keep still retires the older copy. */
	CHECK((l = l1_new(8 * c)) != NULL);
	l1_put(l, "k0", e);
	big = make_entry('2', BODY_LEN + 1);
	l1_put(l, "k0", big);
	CHECK(big->refcnt == 1);
	CHECK(e->refcnt == 1);
	CHECK(l1_get(l, "k0", NOW, 0) == NULL);
	CHECK(l1_counters(l)->entries == 0);
	CHECK(l1_counters(l)->drops == 1);
	l1_free(&l);
	entry_unref(&big);
	entry_unref(&e);
}

static void
t_charge_counts_key_body_headers_and_overhead(void)
{
	struct cache_entry *e = make_entry('1', 0), *f = make_entry('1', 0);
	int64_t c0, c1;

	c0 = charge("a", e);
	CHECK(c0 > (int64_t)(strlen("a") + strlen("Content-Type") +
	    strlen("text/plain")));
	{
		static unsigned char body[BODY_LEN];

		CHECK(entry_copy_body(f, body, BODY_LEN) == 0);
	}
	CHECK(entry_add_header(f, "X-A", "bc") == 0);
	c1 = charge("abc", f);
	CHECK(c1 == c0 + 2 + BODY_LEN + 5);
	entry_unref(&e);
	entry_unref(&f);
}

static void
t_drop_removes_the_key_and_its_variants_only(void)
{
	static const char *gone[] = { "K", "K\na", "K\nb" };
	static const char *kept[] = { "K2", "Kx", "K2\na", "xK", "xK\na" };
	struct l1 *l = l1_new(BIG_L1);

	CHECK(l != NULL);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		put_new(l, gone[i], '1', BODY_LEN);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		put_new(l, kept[i], '1', BODY_LEN);
	l1_drop(l, "K");
	CHECK(l1_counters(l)->drops == 3);
	CHECK(l1_counters(l)->entries == 5);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		CHECK(!has(l, gone[i]));
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		CHECK(has(l, kept[i]));

	/* Dropping one variant leaves its base and its siblings, even one
	 * whose id starts with the dropped id. */
	put_new(l, "K2\nb", '1', BODY_LEN);
	put_new(l, "K2\nab", '1', BODY_LEN);
	l1_drop(l, "K2\na");
	CHECK(!has(l, "K2\na"));
	CHECK(has(l, "K2") && has(l, "K2\nb") && has(l, "K2\nab"));
	/* Dropping what is absent changes nothing. */
	l1_drop(l, "nothing");
	l1_drop(l, "");
	CHECK(l1_counters(l)->drops == 4);
	CHECK(l1_counters(l)->entries == 6);
	l1_free(&l);
}

static void
t_drop_finds_variants_whose_base_key_is_absent(void)
{
	struct l1 *l = l1_new(BIG_L1);

	CHECK(l != NULL);
	put_new(l, "V\n1", '1', BODY_LEN);
	put_new(l, "V\n2", '1', BODY_LEN);
	put_new(l, "W\n1", '1', BODY_LEN);
	l1_drop(l, "V");
	CHECK(!has(l, "V\n1") && !has(l, "V\n2"));
	CHECK(has(l, "W\n1"));
	CHECK(l1_counters(l)->entries == 1);
	l1_free(&l);
}

static void
t_drop_among_many_keys_across_table_growth(void)
{
	struct l1 *l = l1_new(BIG_L1);
	char key[KEY_BUF];

	CHECK(l != NULL);
	for (int i = 0; i < MANY_KEYS; i++) {
		snprintf(key, sizeof(key), "host/%d", i);
		put_new(l, key, '1', 0);
		snprintf(key, sizeof(key), "host/%d\nv", i);
		put_new(l, key, '1', 0);
	}
	CHECK(l1_counters(l)->entries == 2 * MANY_KEYS);
	CHECK(l1_counters(l)->evictions == 0);
	for (int i = 0; i < MANY_KEYS; i += 2) {
		snprintf(key, sizeof(key), "host/%d", i);
		l1_drop(l, key);
	}
	CHECK(l1_counters(l)->entries == MANY_KEYS);
	for (int i = 0; i < MANY_KEYS; i++) {
		snprintf(key, sizeof(key), "host/%d", i);
		CHECK(has(l, key) == (i % 2 == 1));
		snprintf(key, sizeof(key), "host/%d\nv", i);
		CHECK(has(l, key) == (i % 2 == 1));
	}
	l1_free(&l);
}

static void
t_drop_prefix_removes_matching_keys_and_their_variants(void)
{
	static const char *gone[] = { "a.com/x", "a.com/y\nv1", "a.com/" };
	static const char *kept[] = { "a.co", "b.com/a.com/x", "A.com/x" };
	struct l1 *l = l1_new(BIG_L1);

	CHECK(l != NULL);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		put_new(l, gone[i], '1', BODY_LEN);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		put_new(l, kept[i], '1', BODY_LEN);
	l1_drop_prefix(l, "a.com/");
	CHECK(l1_counters(l)->drops == 3);
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		CHECK(!has(l, gone[i]));
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		CHECK(has(l, kept[i]));
	/* The empty prefix matches everything. */
	l1_drop_prefix(l, "");
	CHECK(l1_counters(l)->entries == 0);
	CHECK(l1_counters(l)->bytes == 0);
	l1_free(&l);
}

static void
t_disabled_l1_keeps_nothing_and_counts_nothing(void)
{
	struct cache_entry *e = make_entry('1', BODY_LEN);
	const struct l1_counters *k;
	struct l1 *l;

	for (int64_t max = 0; max >= -1; max--) {
		CHECK((l = l1_new(max)) != NULL);
		l1_put(l, "k", e);
		CHECK(e->refcnt == 1);
		CHECK(l1_get(l, "k", NOW, 0) == NULL);
		l1_drop(l, "k");
		l1_drop_prefix(l, "");
		k = l1_counters(l);
		CHECK(k->hits == 0 && k->misses == 0 && k->stores == 0 &&
		    k->evictions == 0 && k->drops == 0 && k->bytes == 0 &&
		    k->entries == 0);
		l1_free(&l);
		CHECK(l == NULL);
	}
	entry_unref(&e);
}

static void
t_counters_follow_a_short_story(void)
{
	struct l1 *l = l1_new(BIG_L1);
	const struct l1_counters *k;
	struct cache_entry *e;

	CHECK(l != NULL);
	k = l1_counters(l);
	put_new(l, "a", '1', BODY_LEN);
	put_new(l, "b", '1', BODY_LEN);
	CHECK(k->stores == 2 && k->entries == 2 && k->bytes > 0);
	CHECK(has(l, "a"));			/* hit */
	CHECK(!has(l, "c"));			/* miss */
	e = l1_get(l, "b", NOW + FRESH_MS + STALE_MS, 0); /* expired: drop */
	CHECK(e == NULL);
	l1_drop(l, "a");			/* drop */
	CHECK(k->hits == 1);
	CHECK(k->misses == 4);		/* a and b before their puts, c, b */
	CHECK(k->stores == 2);
	CHECK(k->drops == 2);
	CHECK(k->rejected == 0);
	CHECK(k->evictions == 0);
	CHECK(k->entries == 0);
	CHECK(k->bytes == 0);
	l1_free(&l);
}

static void
t_free_releases_every_reference(void)
{
	struct cache_entry *e[3], *shared = make_entry('9', BODY_LEN);
	char key[KEY_BUF];
	struct l1 *l = l1_new(BIG_L1);

	CHECK(l != NULL);
	for (int i = 0; i < 3; i++) {
		e[i] = make_entry((char)('1' + i), BODY_LEN);
		snprintf(key, sizeof(key), "k%d", i);
		l1_put(l, key, e[i]);
		CHECK(e[i]->refcnt == 2);
	}
	/* Held only by the L1, under two keys. */
	l1_put(l, "s1", shared);
	l1_put(l, "s2\nv", shared);
	CHECK(shared->refcnt == 3);
	entry_unref(&shared);
	l1_free(&l);
	CHECK(l == NULL);
	l1_free(&l);				/* twice is harmless */
	for (int i = 0; i < 3; i++) {
		CHECK(e[i]->refcnt == 1);
		entry_unref(&e[i]);
	}
	/* Leaks of "shared" would be reported by LeakSanitizer at exit. */
}

static void
t_a_loop_over_more_keys_than_fit_still_hits(void)
{
	struct cache_entry *e = make_entry('1', BODY_LEN), *got;
	int hits = 0, lookups = 0;
	char key[KEY_BUF];
	struct l1 *l;
	int64_t c;

	c = charge("k0000", e);
	entry_unref(&e);
	CHECK((l = l1_new(100 * c)) != NULL);
	/* 300 keys in a loop, 100 fit: LRU would evict each key just
	 * before its turn comes again and never hit. */
	for (int round = 0; round < 20; round++)
		for (int i = 0; i < 300; i++) {
			snprintf(key, sizeof(key), "k%04d", i);
			lookups++;
			if ((got = l1_get(l, key, NOW, 0)) != NULL) {
				hits++;
				entry_unref(&got);
				continue;
			}
			e = make_entry('1', BODY_LEN);
			l1_put(l, key, e);
			entry_unref(&e);
		}
	/* About a third, the share that fits; LRU gets 0. */
	CHECK(hits > lookups / 4);
	CHECK(l1_counters(l)->rejected > 0);
	CHECK(l1_counters(l)->bytes <= 100 * c);
	l1_free(&l);
}

static void
t_a_key_asked_for_more_often_gets_in(void)
{
	struct l1 *l = full_l1(NULL);
	struct cache_entry *got;

	/* Asked for once, as often as the least recently used entry: the
	 * held entries stay. */
	put_new(l, "kn", '1', BODY_LEN);
	CHECK(!has(l, "kn"));
	CHECK(l1_counters(l)->rejected == 1);
	CHECK(l1_counters(l)->evictions == 0);
	/* Asked for again (that has() too): now more often, so it is let in
	 * and the least recently used entry (k0) goes. */
	put_new(l, "kn", '1', BODY_LEN);
	CHECK((got = l1_get(l, "kn", NOW, 0)) != NULL);
	entry_unref(&got);
	CHECK(l1_counters(l)->evictions == 1);
	CHECK(!has(l, "k0"));
	l1_free(&l);
}

int
main(void)
{
	RUN(t_hit_returns_the_same_entry_with_a_new_reference);
	RUN(t_stale_entry_is_kept_for_stale_lookups_and_dropped_once_expired);
	RUN(t_put_replaces_an_older_copy_and_releases_it);
	RUN(t_put_of_the_same_generation_keeps_the_held_copy_and_bumps_it);
	RUN(t_lru_eviction_under_the_byte_bound_spares_touched_entries);
	RUN(t_entry_over_an_eighth_of_the_budget_is_not_kept);
	RUN(t_charge_counts_key_body_headers_and_overhead);
	RUN(t_drop_removes_the_key_and_its_variants_only);
	RUN(t_drop_finds_variants_whose_base_key_is_absent);
	RUN(t_drop_among_many_keys_across_table_growth);
	RUN(t_drop_prefix_removes_matching_keys_and_their_variants);
	RUN(t_disabled_l1_keeps_nothing_and_counts_nothing);
	RUN(t_counters_follow_a_short_story);
	RUN(t_free_releases_every_reference);
	RUN(t_a_loop_over_more_keys_than_fit_still_hits);
	RUN(t_a_key_asked_for_more_often_gets_in);
	return unit_exit();
}
