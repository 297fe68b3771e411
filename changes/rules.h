/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_RULES_H
#define CHANGES_RULES_H

/*
 * Which tags a row change purges (no I/O): the per-table rules parsed
 * from their templates, the default rule for the other tables, what is
 * known of the old and the new row, and the escaping of values in tags
 * (changes.h describes all of it).
 */

#include <stddef.h>

#include "changes/changes.h"
#include "changes/pgoutput.h"

/* Templates of one rule. */
#define RULES_TEMPLATES_MAX	32

struct rules;

/* Each tag of a change, with the broad tag that would stand in for it,
 * and whether its rule purges hard. */
typedef void rules_emit_cb(const char *tag, const char *broad, int hard,
    void *arg);

/* NULL with err if a rule is not usable (or out of memory). hard: the
 * default rule's purges are hard. */
struct rules	*rules_new(const struct changes_rule *rules, size_t nrules,
		    int hard, char *err, size_t errlen);
void		 rules_free(struct rules **rp);
/* The tags of an Insert, Update, Delete or Truncate, through emit. 0, or
 * -1 with err (a table whose own tag would be too long). */
int		 rules_change(struct rules *r, const struct pgoutput_event *ev,
		    rules_emit_cb *emit, void *arg, char *err, size_t errlen);
/* A Relation message: 1 with err saying what to warn about (a rule that
 * names a column the table lacks, a table with no usable key), or 0. */
int		 rules_relation(const struct rules *r,
		    const struct pgoutput_relation *rel, char *err,
		    size_t errlen);

/* Writes the escaped form of len bytes at s and a NUL into out. Its
 * length, or -1 if it does not fit in outlen. */
int		 rules_escape(const char *s, size_t len, char *out,
		    size_t outlen);

#endif
