/* SPDX-License-Identifier: MIT */
#include "common/hlist.h"
#include "cache/cache_l2.h"

#include <sys/wait.h>

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "tests/unit/unit.h"
#include "tests/unit/unit_entry.h"

#define BIG_L2		(16LL * 1024 * 1024)
#define SMALL_L2	(256LL * 1024)	/* wraps after a few dozen entries */
#define BODY_LEN	100
#define WRAP_BODY	5000
#define WRAP_PUTS	1000
#define KEY_BUF		64
#define RACE_PUTS	20000
#define RACE_KEYS	16	/* overwritten by one another: same length */
#define RACE_BODY	30000
#define HOLD_MS		2000	/* a worker stalls inside the lock this long */
#define BOUND_MS	200	/* what the others may wait for it, at most */

static struct l2 *
new_l2(int64_t max_bytes)
{
	char err[128];
	struct l2 *l = l2_new(max_bytes, err, sizeof(err));

	if (l == NULL) {
		printf("l2_new: %s\n", err);
		abort();
	}
	return l;
}

static struct l2_counters
counters(const struct l2 *l)
{
	struct l2_counters c;

	l2_counters(l, &c);
	return c;
}

/* Puts an entry of generation digit whose body is key's own text,
 * repeated to body_len bytes, so that a copy shows whose it is. */
static void
put_marked(struct l2 *l, const char *key, char digit, size_t body_len)
{
	struct cache_entry *e = make_entry(digit, 0);
	unsigned char *body = malloc(body_len);
	size_t klen = strlen(key);

	if (e == NULL || body == NULL)
		abort();
	for (size_t i = 0; i < body_len; i++)
		body[i] = (unsigned char)key[i % klen];
	if (entry_copy_body(e, body, body_len) == -1)
		abort();
	free(body);
	l2_put(l, key, e, NOW);
	entry_unref(&e);
}

/* Is key's copy present, fresh, and whose it says? */
static int
holds(struct l2 *l, const char *key, char digit)
{
	struct cache_entry *e = l2_get(l, key, NOW, 0, NULL);
	size_t klen = strlen(key);
	int ok;

	if (e == NULL)
		return 0;
	ok = e->gen[0] == digit && e->status == 200;
	for (size_t i = 0; ok && i < e->body_len; i++)
		ok = e->body[i] == (unsigned char)key[i % klen];
	entry_unref(&e);
	return ok;
}

static void
t_hit_is_a_decoded_copy_of_its_own(void)
{
	struct l2 *l = new_l2(BIG_L2);
	struct cache_entry *e = make_entry('a', BODY_LEN), *got;

	l2_put(l, "k", e, NOW);
	CHECK((got = l2_get(l, "k", NOW, 0, NULL)) != NULL);
	CHECK(got != e);
	CHECK_STR(got->gen, e->gen);
	CHECK(got->status == 200);
	CHECK(got->fresh_until_ms == e->fresh_until_ms);
	CHECK(got->body_len == BODY_LEN);
	CHECK(memcmp(got->body, e->body, BODY_LEN) == 0);
	CHECK_STR(hl_find(&got->headers, "Content-Type"),
	    "text/plain");
	CHECK(got->refcnt == 1);
	entry_unref(&got);
	CHECK(counters(l).hits == 1);
	CHECK(counters(l).stores == 1);
	CHECK(counters(l).entries == 1);
	CHECK(l2_get(l, "other", NOW, 0, NULL) == NULL);
	CHECK(counters(l).misses == 1);
	entry_unref(&e);
	l2_free(&l);
	CHECK(l == NULL);
}

static void
t_reads_are_counted_per_copy_and_put_says_what_it_kept(void)
{
	struct l2 *l = new_l2(BIG_L2);
	struct cache_entry *e = make_entry('1', BODY_LEN), *f, *got;
	uint32_t reads = 0;

	CHECK(l2_put(l, "k", e, NOW) == 1);
	CHECK(l2_put(l, "k", e, NOW) == 1);	/* held already */
	for (uint32_t i = 1; i <= 3; i++) {
		CHECK((got = l2_get(l, "k", NOW, 0, &reads)) != NULL);
		CHECK(reads == i);
		entry_unref(&got);
	}
	CHECK(l2_get(l, "k", NOW + FRESH_MS, 0, &reads) == NULL);
	CHECK(reads == 3);		/* a miss reads nothing */
	f = make_entry('2', BODY_LEN);	/* another generation: new count */
	CHECK(l2_put(l, "k", f, NOW) == 1);
	CHECK((got = l2_get(l, "k", NOW, 0, &reads)) != NULL);
	CHECK(reads == 1);
	entry_unref(&got);
	CHECK(l2_put(l, "k", e, NOW + FRESH_MS + STALE_MS) == 0);	/* expired */
	entry_unref(&f);
	entry_unref(&e);
	l2_free(&l);
}

static void
t_stale_copy_is_kept_for_stale_lookups_and_dropped_once_expired(void)
{
	struct l2 *l = new_l2(BIG_L2);
	struct cache_entry *e = make_entry('a', BODY_LEN), *got;

	l2_put(l, "k", e, NOW);
	/* Stale: a lookup for fresh copies misses, and the copy stays ... */
	CHECK(l2_get(l, "k", NOW + FRESH_MS, 0, NULL) == NULL);
	CHECK(counters(l).entries == 1);
	CHECK(counters(l).drops == 0);
	/* ... for a lookup that takes it stale. */
	CHECK((got = l2_get(l, "k", NOW + FRESH_MS, 1, NULL)) != NULL);
	CHECK(strcmp(got->gen, e->gen) == 0);
	entry_unref(&got);
	/* Past its stale window: dropped. */
	CHECK(l2_get(l, "k", NOW + FRESH_MS + STALE_MS, 1, NULL) == NULL);
	CHECK(counters(l).entries == 0);
	CHECK(counters(l).bytes == 0);
	CHECK(counters(l).drops == 1);
	/* One put while stale is kept, for stale lookups only ... */
	l2_put(l, "k", e, NOW + FRESH_MS);
	CHECK(counters(l).stores == 2);
	CHECK(l2_get(l, "k", NOW + FRESH_MS, 0, NULL) == NULL);
	CHECK((got = l2_get(l, "k", NOW + FRESH_MS, 1, NULL)) != NULL);
	entry_unref(&got);
	/* ... and none once past its stale window. */
	l2_drop(l, "k");
	l2_put(l, "k", e, NOW + FRESH_MS + STALE_MS);
	CHECK(counters(l).stores == 2);
	CHECK(l2_get(l, "k", NOW, 1, NULL) == NULL);
	entry_unref(&e);
	l2_free(&l);
}

static void
t_put_replaces_another_generation_and_keeps_its_own(void)
{
	struct l2 *l = new_l2(BIG_L2);

	put_marked(l, "k", 'a', BODY_LEN);
	put_marked(l, "k", 'a', BODY_LEN);
	CHECK(counters(l).stores == 1);
	put_marked(l, "k", 'b', BODY_LEN);
	CHECK(counters(l).stores == 2);
	CHECK(counters(l).entries == 1);
	CHECK(holds(l, "k", 'b'));
	l2_free(&l);
}

static void
t_drop_removes_the_key_and_its_variants_only(void)
{
	struct l2 *l = new_l2(BIG_L2);

	put_marked(l, "/a", 'a', BODY_LEN);
	put_marked(l, "/a\nv1", 'a', BODY_LEN);
	put_marked(l, "/a\nv2", 'a', BODY_LEN);
	put_marked(l, "/ab", 'a', BODY_LEN);
	put_marked(l, "/b", 'a', BODY_LEN);
	l2_drop(l, "/a");
	CHECK(!holds(l, "/a", 'a'));
	CHECK(!holds(l, "/a\nv1", 'a'));
	CHECK(!holds(l, "/a\nv2", 'a'));
	CHECK(holds(l, "/ab", 'a'));
	CHECK(holds(l, "/b", 'a'));
	CHECK(counters(l).entries == 2);
	/* A variant alone. */
	put_marked(l, "/c\nv1", 'a', BODY_LEN);
	l2_drop(l, "/c");
	CHECK(!holds(l, "/c\nv1", 'a'));
	l2_free(&l);
}

static void
t_drop_prefix_removes_matching_keys_and_empty_prefix_all(void)
{
	struct l2 *l = new_l2(BIG_L2);

	put_marked(l, "/api/1", 'a', BODY_LEN);
	put_marked(l, "/api/2\nv", 'a', BODY_LEN);
	put_marked(l, "/web/1", 'a', BODY_LEN);
	l2_drop_prefix(l, "/api/");
	CHECK(!holds(l, "/api/1", 'a'));
	CHECK(!holds(l, "/api/2\nv", 'a'));
	CHECK(holds(l, "/web/1", 'a'));
	l2_drop_prefix(l, "");
	CHECK(!holds(l, "/web/1", 'a'));
	CHECK(counters(l).entries == 0);
	CHECK(counters(l).bytes == 0);
	/* And it goes on working. */
	put_marked(l, "/web/1", 'b', BODY_LEN);
	CHECK(holds(l, "/web/1", 'b'));
	l2_free(&l);
}

/*
 * Many times round a small ring with entries of several sizes: the oldest
 * go, the newest stay, and every copy read is whole and its own.
 */
static void
t_ring_wraps_evicting_the_oldest_and_never_mixes_copies(void)
{
	struct l2 *l = new_l2(SMALL_L2);
	char key[KEY_BUF];
	int held = 0;

	for (int i = 0; i < WRAP_PUTS; i++) {
		snprintf(key, sizeof(key), "/k/%d", i);
		put_marked(l, key, 'a', WRAP_BODY + (size_t)(i % 7) * 911);
		CHECK(holds(l, key, 'a'));
		CHECK(counters(l).bytes <= SMALL_L2);
	}
	CHECK(counters(l).evictions > 0);
	CHECK(counters(l).stores == WRAP_PUTS);
	CHECK(counters(l).entries + (int64_t)counters(l).evictions ==
	    WRAP_PUTS);
	for (int i = 0; i < WRAP_PUTS; i++) {
		snprintf(key, sizeof(key), "/k/%d", i);
		held += holds(l, key, 'a');
	}
	CHECK(held == counters(l).entries);
	CHECK(holds(l, key, 'a'));	/* the last */
	CHECK(!holds(l, "/k/0", 'a'));
	l2_free(&l);
}

static void
t_entry_over_an_eighth_of_the_budget_is_not_kept(void)
{
	struct l2 *l = new_l2(SMALL_L2);

	put_marked(l, "k", 'a', BODY_LEN);
	put_marked(l, "k", 'b', SMALL_L2 / 8);
	CHECK(counters(l).entries == 0);
	CHECK(!holds(l, "k", 'a'));
	CHECK(!holds(l, "k", 'b'));
	l2_free(&l);
}

static void
t_disabled_keeps_nothing_and_counts_nothing(void)
{
	struct l2 *l = new_l2(0);
	struct cache_entry *e = make_entry('a', BODY_LEN);

	l2_put(l, "k", e, NOW);
	CHECK(l2_get(l, "k", NOW, 0, NULL) == NULL);
	l2_drop(l, "k");
	l2_drop_prefix(l, "");
	CHECK(counters(l).misses == 0);
	CHECK(counters(l).max_bytes == 0);
	CHECK(l2_get(NULL, "k", NOW, 0, NULL) == NULL);
	l2_put(NULL, "k", e, NOW);
	entry_unref(&e);
	l2_free(&l);
}

/* What a forked child finds, as its exit status: 0 found. */
static int
child_holds(struct l2 *l, const char *key, char digit)
{
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(holds(l, key, digit) ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void
t_processes_forked_after_it_share_it(void)
{
	struct l2 *l = new_l2(BIG_L2);
	pid_t pid;
	int status;

	put_marked(l, "/parent", 'a', BODY_LEN);
	CHECK(child_holds(l, "/parent", 'a') == 1);
	CHECK(child_holds(l, "/none", 'a') == 0);
	if ((pid = fork()) == 0) {
		put_marked(l, "/child", 'c', BODY_LEN);
		l2_drop(l, "/parent");
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(holds(l, "/child", 'c'));
	CHECK(!holds(l, "/parent", 'a'));
	CHECK(counters(l).hits >= 2);
	l2_free(&l);
}

/*
 * A writer in another process laps a small ring while this one reads:
 * a copy overwritten while it was taken is a miss, never a mix of two
 * entries.
 */
static void
t_a_copy_overwritten_while_taken_is_a_miss_not_a_mix(void)
{
	struct l2 *l = new_l2(SMALL_L2);
	char key[KEY_BUF];
	struct cache_entry *e;
	int status, mixed = 0, hits = 0;
	pid_t pid;

	if ((pid = fork()) == 0) {
		for (int i = 0; i < RACE_PUTS; i++) {
			snprintf(key, sizeof(key), "/r/%d", i % RACE_KEYS);
			put_marked(l, key, (char)('a' + i % 6), RACE_BODY);
		}
		_exit(0);
	}
	CHECK(pid > 0);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		for (int k = 0; k < RACE_KEYS; k++) {
			snprintf(key, sizeof(key), "/r/%d", k);
			if ((e = l2_get(l, key, NOW, 0, NULL)) == NULL)
				continue;
			hits++;
			for (size_t i = 0; i < e->body_len; i++)
				if (e->body[i] != (unsigned char)key[i %
				    strlen(key)]) {
					mixed++;
					break;
				}
			entry_unref(&e);
		}
	}
	CHECK(hits > 0);
	CHECK(mixed == 0);
	l2_free(&l);
}

static void
t_a_holder_that_dies_leaves_it_empty_and_working(void)
{
	struct l2 *l = new_l2(BIG_L2);
	pid_t pid;
	int status;

	put_marked(l, "/a", 'a', BODY_LEN);
	if ((pid = fork()) == 0) {
		l2_hold_lock(l);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(!holds(l, "/a", 'a'));	/* what it held may be half done */
	CHECK(counters(l).resets == 1);
	CHECK(counters(l).entries == 0);
	put_marked(l, "/a", 'b', BODY_LEN);
	CHECK(holds(l, "/a", 'b'));
	CHECK(counters(l).resets == 1);
	l2_free(&l);
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Forks a worker that stalls inside the lock until *go (HOLD_MS at most);
 * returns once it holds it. */
static pid_t
fork_stalled_holder(struct l2 *l, int *go)
{
	int held[2], wake[2];
	struct pollfd pfd;
	char c = 0;
	pid_t pid;

	if (pipe(held) == -1 || pipe(wake) == -1)
		abort();
	if ((pid = fork()) == 0) {
		l2_hold_lock(l);
		if (write(held[1], &c, 1) != 1)
			_exit(1);
		pfd.fd = wake[0];
		pfd.events = POLLIN;
		(void)poll(&pfd, 1, HOLD_MS);
		l2_unhold_lock(l);
		_exit(0);
	}
	if (pid < 0 || read(held[0], &c, 1) != 1)
		abort();
	close(held[0]);
	close(held[1]);
	close(wake[0]);
	*go = wake[1];
	return pid;
}

static void
t_a_holder_that_stalls_makes_the_others_skip_it_not_wait(void)
{
	struct l2 *l = new_l2(BIG_L2);
	struct cache_entry *e;
	int64_t t0, took;
	int go, status, taken = 0;
	pid_t pid;

	put_marked(l, "/a", 'a', BODY_LEN);
	put_marked(l, "/b", 'b', BODY_LEN);
	pid = fork_stalled_holder(l, &go);
	t0 = mono_ms();
	e = l2_get(l, "/a", NOW, 0, NULL);
	put_marked(l, "/c", 'c', BODY_LEN);
	l2_drop(l, "/a");
	took = mono_ms() - t0;
	if (write(go, "", 1) != 1)
		abort();
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(took < BOUND_MS);
	CHECK(e == NULL);	/* it goes to Redis instead */
	CHECK(counters(l).lock_busy == 3);
	CHECK(counters(l).stores == 2);
	/* Once free again (this worker skips it a moment first), the drop
	 * it could not make has emptied it: nothing dropped is served. */
	for (t0 = mono_ms(); !taken && mono_ms() - t0 < HOLD_MS; ) {
		put_marked(l, "/d", 'd', BODY_LEN);
		taken = holds(l, "/d", 'd');
	}
	CHECK(taken);
	CHECK(!holds(l, "/a", 'a') && !holds(l, "/b", 'b'));
	CHECK(counters(l).entries == 1);
	l2_free(&l);
}

int
main(void)
{
	RUN(t_hit_is_a_decoded_copy_of_its_own);
	RUN(t_reads_are_counted_per_copy_and_put_says_what_it_kept);
	RUN(t_stale_copy_is_kept_for_stale_lookups_and_dropped_once_expired);
	RUN(t_put_replaces_another_generation_and_keeps_its_own);
	RUN(t_drop_removes_the_key_and_its_variants_only);
	RUN(t_drop_prefix_removes_matching_keys_and_empty_prefix_all);
	RUN(t_ring_wraps_evicting_the_oldest_and_never_mixes_copies);
	RUN(t_entry_over_an_eighth_of_the_budget_is_not_kept);
	RUN(t_disabled_keeps_nothing_and_counts_nothing);
	RUN(t_processes_forked_after_it_share_it);
	RUN(t_a_copy_overwritten_while_taken_is_a_miss_not_a_mix);
	RUN(t_a_holder_that_dies_leaves_it_empty_and_working);
	RUN(t_a_holder_that_stalls_makes_the_others_skip_it_not_wait);
	return unit_exit();
}
