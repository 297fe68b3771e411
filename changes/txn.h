/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_TXN_H
#define CHANGES_TXN_H

/*
 * The transaction assembler (no I/O): decoded pgoutput events in, the
 * tags to purge out, at each Commit only (changes.h says which tags).
 * A transaction's tags are deduplicated and bounded: past
 * CHANGES_TXN_TAGS_MAX distinct tags it keeps only the broad ones.
 * Nothing comes out without a Commit: an open transaction is dropped by
 * txn_reset() (the connection was lost) and sent again by the server.
 */

#include <stddef.h>
#include <stdint.h>

#include "changes/changes.h"
#include "changes/pgoutput.h"

/* err is "" after each call unless there is something to say: the
 * error, or with TXN_NOTE and TXN_READY a warning to log. */
enum txn_result {
	TXN_MORE,	/* nothing to hand out yet */
	TXN_READY,	/* txn_output() has a commit's tags (or a message's) */
	TXN_NOTE,	/* nothing yet, but err says something to log */
	TXN_ERROR,	/* the stream makes no sense (err): reconnect */
};

struct txn;

/* NULL with err if a rule is not usable (or out of memory). hard: the
 * default rule's, messages' and payloads' purges are hard. */
struct txn	*txn_new(const struct changes_rule *rules, size_t nrules,
		    int hard, char *err, size_t errlen);
void		 txn_free(struct txn **tp);
enum txn_result	 txn_add(struct txn *t, const struct pgoutput_event *ev,
		    char *err, size_t errlen);
/* A tag list from outside a transaction (a NOTIFY payload) as one
 * output at once, with lsn: TXN_READY, or TXN_ERROR out of memory. */
enum txn_result	 txn_payload(struct txn *t, const char *s, size_t len,
		    uint64_t lsn, char *err, size_t errlen);
/* After TXN_READY, until the next txn_add() or txn_payload(). */
const struct changes_commit *txn_output(const struct txn *t);
/* Is a transaction open (a Begin without its Commit yet)? */
int		 txn_open(const struct txn *t);
/* Drops an open transaction. */
void		 txn_reset(struct txn *t);

#endif
