/* SPDX-License-Identifier: MIT */
/*
 * The transaction assembler (txn.h): a transaction's life from Begin to
 * Commit, the tags its changes (rules.c) and its messages add, and the
 * two sets it fills: the exact tags, and the broad ones that stand in
 * for them once there are too many.
 *
 * Calls rules.c and common/dict.c. No I/O.
 */

#include "changes/txn.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes/rules.h"
#include "common/dict.h"

#define TXN_MAGIC		0x54584e41u	/* "TXNA" */
#define MESSAGE_SEPARATORS	" \t\r\n"
#define TAGSET_FIRST		16	/* a tag set's first array */

/* Distinct tags in the order they came, each with whether it is purged
 * hard (a tag a hard rule and a soft one both name is: the stronger). */
struct tagset {
	struct dict	*seen;		/* tag -> its index + 1 */
	char		**v;
	unsigned char	*hard;
	size_t		 n, cap;
	int		 any_hard;
};

struct txn {
	uint32_t		 magic;
	struct rules		*rules;
	int			 hard;		/* messages' and payloads' purges */
	int			 open;		/* Begin seen, Commit not yet */
	uint64_t		 begin_lsn;
	struct tagset		 exact, broad;
	struct tagset		 now;		/* a non-transactional message's */
	enum changes_breadth	 breadth;
	struct changes_commit	 out;
	int			 failed;	/* out of memory in this event */
};

/* ---- tag sets ----------------------------------------------------------- */

static int
tagset_has(const struct tagset *s, const char *tag)
{
	return s->seen != NULL && dict_get(s->seen, tag) != NULL;
}

static int
tagset_grow(struct tagset *s)
{
	size_t cap = s->cap == 0 ? TAGSET_FIRST : s->cap * 2;
	unsigned char *hard;
	char **grown;

	if ((grown = realloc(s->v, cap * sizeof(*grown))) == NULL)
		return -1;
	s->v = grown;
	if ((hard = realloc(s->hard, cap)) == NULL)
		return -1;
	s->hard = hard;
	s->cap = cap;
	return 0;
}

/* 0 (added, or there already: hard if either says so) or -1 (out of
 * memory). */
static int
tagset_add(struct tagset *s, const char *tag, int hard)
{
	char *copy;
	uintptr_t at;

	if (s->seen == NULL && (s->seen = dict_new()) == NULL)
		return -1;
	if ((at = (uintptr_t)dict_get(s->seen, tag)) != 0) {
		s->hard[at - 1] |= (unsigned char)hard;
		s->any_hard |= hard;
		return 0;
	}
	if (s->n == s->cap && tagset_grow(s) == -1)
		return -1;
	if ((copy = strdup(tag)) == NULL)
		return -1;
	if (dict_set(s->seen, copy, (void *)(s->n + 1)) == -1) {
		free(copy);
		return -1;
	}
	s->hard[s->n] = (unsigned char)hard;
	s->any_hard |= hard;
	s->v[s->n++] = copy;
	return 0;
}

/* Its hard flags for an output: NULL when none is. */
static const unsigned char *
tagset_hard(const struct tagset *s)
{
	return s->any_hard ? s->hard : NULL;
}

static void
tagset_clear(struct tagset *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
	s->any_hard = 0;
	dict_free(&s->seen);
}

static void
tagset_free(struct tagset *s)
{
	tagset_clear(s);
	free(s->v);
	free(s->hard);
	s->v = NULL;
	s->hard = NULL;
	s->cap = 0;
}

/*
 * A tag of the transaction, and the broad one that stands in for it.
 * Past CHANGES_TXN_TAGS_MAX distinct tags the exact set goes and only the
 * broad one grows; past as many broad ones, the commit purges everything.
 */
static void
add_tag(struct txn *t, const char *tag, const char *broad, int hard)
{
	if (t->breadth == CHANGES_EXACT) {
		if (t->exact.n >= CHANGES_TXN_TAGS_MAX &&
		    !tagset_has(&t->exact, tag)) {
			t->breadth = CHANGES_BROAD;
			tagset_clear(&t->exact);
		} else if (tagset_add(&t->exact, tag, hard) == -1) {
			t->failed = 1;
		}
	}
	if (t->breadth == CHANGES_EVERYTHING)
		return;
	if (t->broad.n >= CHANGES_TXN_TAGS_MAX &&
	    !tagset_has(&t->broad, broad)) {
		t->breadth = CHANGES_EVERYTHING;
		tagset_clear(&t->exact);
		tagset_clear(&t->broad);
	} else if (tagset_add(&t->broad, broad, hard) == -1) {
		t->failed = 1;
	}
}

static void
on_tag(const char *tag, const char *broad, int hard, void *arg)
{
	add_tag(arg, tag, broad, hard);
}

/* A row change, or a truncate: its tags (rules.c) join the transaction. */
static enum txn_result
change(struct txn *t, const struct pgoutput_event *ev, char *err,
    size_t errlen)
{
	if (!t->open) {
		snprintf(err, errlen, "%s outside a transaction",
		    pgoutput_kind_name(ev->kind));
		return TXN_ERROR;
	}
	if (rules_change(t->rules, ev, on_tag, t, err, errlen) == -1)
		return TXN_ERROR;
	return TXN_MORE;
}

/* The tags of a message's content (len bytes at s), each as it is (its
 * own broad tag), into the transaction or, with into, that set. One
 * that is too long or holds a control byte is skipped: the note says so. */
static void
message_tags(struct txn *t, const char *s, size_t len, struct tagset *into,
    char *err, size_t errlen)
{
	char tag[CHANGES_TAG_MAX + 1];
	size_t i = 0, n, k, skipped = 0;

	while (i < len) {
		if (s[i] == '\0' || strchr(MESSAGE_SEPARATORS, s[i]) != NULL) {
			i++;
			continue;
		}
		for (n = 0; i + n < len && s[i + n] != '\0' &&
		    strchr(MESSAGE_SEPARATORS, s[i + n]) == NULL; n++)
			;
		for (k = 0; k < n && (unsigned char)s[i + k] >= 0x20 &&
		    s[i + k] != 0x7f; k++)
			;
		if (n > CHANGES_TAG_MAX || k < n) {
			skipped++;
		} else {
			memcpy(tag, s + i, n);
			tag[n] = '\0';
			if (into == NULL)
				add_tag(t, tag, tag, t->hard);
			else if (tagset_add(into, tag, t->hard) == -1)
				t->failed = 1;
		}
		i += n;
	}
	if (skipped > 0)
		snprintf(err, errlen, "a tag list had %zu tags over %d bytes "
		    "or with control bytes: skipped", skipped, CHANGES_TAG_MAX);
}

enum txn_result
txn_payload(struct txn *t, const char *s, size_t len, uint64_t lsn,
    char *err, size_t errlen)
{
	assert(t->magic == TXN_MAGIC);
	t->failed = 0;
	err[0] = '\0';
	tagset_clear(&t->now);
	message_tags(t, s, len, &t->now, err, errlen);
	if (t->failed) {
		snprintf(err, errlen, "out of memory");
		return TXN_ERROR;
	}
	t->out = (struct changes_commit){ (const char *const *)t->now.v,
	    t->now.n, CHANGES_EXACT, lsn, 0, tagset_hard(&t->now) };
	return TXN_READY;
}

static enum txn_result
message(struct txn *t, const struct pgoutput_event *ev, char *err,
    size_t errlen)
{
	if (strcmp(ev->name, CHANGES_MESSAGE_PREFIX) != 0)
		return TXN_MORE;
	if (!(ev->flags & 1))	/* not transactional: at once */
		return txn_payload(t, ev->content, ev->content_len, ev->lsn,
		    err, errlen);
	if (!t->open) {
		snprintf(err, errlen, "a transactional Message outside a "
		    "transaction");
		return TXN_ERROR;
	}
	message_tags(t, ev->content, ev->content_len, NULL, err, errlen);
	return err[0] != '\0' ? TXN_NOTE : TXN_MORE;
}

static void
begin(struct txn *t, const struct pgoutput_event *ev)
{
	tagset_clear(&t->exact);
	tagset_clear(&t->broad);
	t->breadth = CHANGES_EXACT;
	t->open = 1;
	t->begin_lsn = ev->lsn;
}

static enum txn_result
commit(struct txn *t, const struct pgoutput_event *ev, char *err,
    size_t errlen)
{
	const struct tagset *s;

	if (!t->open) {
		snprintf(err, errlen, "a Commit without a Begin");
		return TXN_ERROR;
	}
	if (ev->lsn != t->begin_lsn) {
		snprintf(err, errlen, "a Commit whose LSN is not its Begin's");
		return TXN_ERROR;
	}
	t->open = 0;
	s = t->breadth == CHANGES_EXACT ? &t->exact : &t->broad;
	t->out = (struct changes_commit){ (const char *const *)s->v,
	    t->breadth == CHANGES_EVERYTHING ? 0 : s->n, t->breadth,
	    ev->end_lsn, pgoutput_time_ms(ev->time),
	    t->breadth == CHANGES_EVERYTHING ? NULL : tagset_hard(s) };
	return TXN_READY;
}

enum txn_result
txn_add(struct txn *t, const struct pgoutput_event *ev, char *err,
    size_t errlen)
{
	enum txn_result res = TXN_MORE;

	assert(t->magic == TXN_MAGIC);
	t->failed = 0;
	err[0] = '\0';
	switch (ev->kind) {
	case PGOUTPUT_BEGIN:
		if (t->open) {
			snprintf(err, errlen, "a Begin inside a transaction");
			return TXN_ERROR;
		}
		begin(t, ev);
		break;
	case PGOUTPUT_COMMIT:
		res = commit(t, ev, err, errlen);
		break;
	case PGOUTPUT_RELATION:
		if (rules_relation(t->rules, ev->rel, err, errlen))
			res = TXN_NOTE;
		break;
	case PGOUTPUT_INSERT:
	case PGOUTPUT_UPDATE:
	case PGOUTPUT_DELETE:
	case PGOUTPUT_TRUNCATE:
		res = change(t, ev, err, errlen);
		break;
	case PGOUTPUT_MESSAGE:
		res = message(t, ev, err, errlen);
		break;
	case PGOUTPUT_ORIGIN:
	case PGOUTPUT_TYPE:
		break;
	}
	if (t->failed) {
		snprintf(err, errlen, "out of memory");
		return TXN_ERROR;
	}
	return res;
}

const struct changes_commit *
txn_output(const struct txn *t)
{
	return &t->out;
}

int
txn_open(const struct txn *t)
{
	return t->open;
}

void
txn_reset(struct txn *t)
{
	t->open = 0;
	tagset_clear(&t->exact);
	tagset_clear(&t->broad);
	tagset_clear(&t->now);
	t->breadth = CHANGES_EXACT;
}

/* ---- the assembler ------------------------------------------------------ */

struct txn *
txn_new(const struct changes_rule *rules, size_t nrules, int hard, char *err,
    size_t errlen)
{
	struct txn *t;

	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->magic = TXN_MAGIC;
	t->hard = hard;
	if ((t->rules = rules_new(rules, nrules, hard, err, errlen)) == NULL) {
		free(t);
		return NULL;
	}
	return t;
}

void
txn_free(struct txn **tp)
{
	struct txn *t = *tp;

	if (t == NULL)
		return;
	*tp = NULL;
	assert(t->magic == TXN_MAGIC);
	rules_free(&t->rules);
	tagset_free(&t->exact);
	tagset_free(&t->broad);
	tagset_free(&t->now);
	t->magic = 0;
	free(t);
}
