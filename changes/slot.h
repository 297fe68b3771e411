/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_SLOT_H
#define CHANGES_SLOT_H

/*
 * Inside changes/ only: the replication slot's commands, and what the
 * server's answers to them mean (no I/O). Slot and publication names
 * are [A-Za-z0-9_] (changes_check()), so they go in unquoted.
 */

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#define SLOT_SQL_MAX	1024

enum slot_command {
	SLOT_CHECK,	/* one SELECT: wal_level, the publication, the slot */
	SLOT_DROP,
	SLOT_CREATE,
	SLOT_START,
};

/* What the check found. */
enum slot_verdict {
	SLOT_READY,	/* ours, idle: START it */
	SLOT_MISSING,	/* CREATE it */
	SLOT_LOST,	/* invalidated (max_slot_wal_keep_size): DROP, CREATE */
	SLOT_REFUSED,	/* why says why and what to do */
};

/* The command's text, into out (SLOT_SQL_MAX). */
void	slot_sql(enum slot_command cmd, const char *slot,
	    const char *publication, char out[SLOT_SQL_MAX]);
/* The check's answer; READY sets *confirmed (its confirmed_flush_lsn). */
enum slot_verdict slot_verdict(const PGresult *res, const char *slot,
	    const char *publication, uint64_t *confirmed, char *why,
	    size_t whylen);
/* An LSN column of a result (0 if NULL or not one). */
uint64_t slot_lsn(const PGresult *res, int row, int col);

#endif
