/* SPDX-License-Identifier: MIT */
/*
 * The replication slot's commands and the check's verdict (slot.h).
 *
 * The check is one plain SELECT on the replication connection (a
 * replication=database walsender runs SQL too): READ_REPLICATION_SLOT,
 * new in PostgreSQL 15, refuses logical slots ("cannot use
 * READ_REPLICATION_SLOT with a logical replication slot"), and a
 * missing publication would otherwise show only once the first change
 * is decoded.
 *
 * Calls libpq's result accessors and changes.c (LSN text). No I/O.
 */

#include "changes/slot.h"

#include <stdio.h>
#include <string.h>

#include "changes/changes.h"

/* The check's columns. */
enum {
	COL_WAL_LEVEL,
	COL_PUBLICATION,	/* it exists: t or f */
	COL_TYPE,		/* the slot's, all NULL without one */
	COL_PLUGIN,
	COL_OURS,		/* of this database: t or f */
	COL_ACTIVE_PID,
	COL_WAL_STATUS,
	COL_DATABASE,
	COL_CONFIRMED,
	COLS,
};

void
slot_sql(enum slot_command cmd, const char *slot, const char *publication,
    char out[SLOT_SQL_MAX])
{
	switch (cmd) {
	case SLOT_CHECK:
		snprintf(out, SLOT_SQL_MAX, "SELECT "
		    "current_setting('wal_level'), EXISTS (SELECT 1 FROM "
		    "pg_catalog.pg_publication WHERE pubname = '%s'), "
		    "s.slot_type, s.plugin, s.database = current_database(), "
		    "s.active_pid, s.wal_status, s.database, "
		    "s.confirmed_flush_lsn FROM (SELECT 1) AS one LEFT JOIN "
		    "pg_catalog.pg_replication_slots s ON s.slot_name = '%s'",
		    publication, slot);
		break;
	case SLOT_DROP:
		snprintf(out, SLOT_SQL_MAX, "DROP_REPLICATION_SLOT %s", slot);
		break;
	case SLOT_CREATE:
		/* The old spelling of (SNAPSHOT 'nothing'): 10 and later. */
		snprintf(out, SLOT_SQL_MAX, "CREATE_REPLICATION_SLOT %s "
		    "LOGICAL pgoutput NOEXPORT_SNAPSHOT", slot);
		break;
	case SLOT_START:
		snprintf(out, SLOT_SQL_MAX, "START_REPLICATION SLOT %s LOGICAL "
		    "0/0 (proto_version '1', publication_names '\"%s\"', "
		    "messages 'true')", slot, publication);
		break;
	}
}

/* A column of the check's row, "" if NULL. */
static const char *
col(const PGresult *res, int c)
{
	return PQgetisnull(res, 0, c) ? "" : PQgetvalue(res, 0, c);
}

uint64_t
slot_lsn(const PGresult *res, int row, int c)
{
	uint64_t lsn = 0;

	if (!PQgetisnull(res, row, c))
		(void)changes_lsn_parse(PQgetvalue(res, row, c), &lsn);
	return lsn;
}

enum slot_verdict
slot_verdict(const PGresult *res, const char *slot, const char *publication,
    uint64_t *confirmed, char *why, size_t whylen)
{
	if (PQntuples(res) != 1 || PQnfields(res) != COLS) {
		snprintf(why, whylen, "the slot check: unexpected answer");
		return SLOT_REFUSED;
	}
	if (strcmp(col(res, COL_WAL_LEVEL), "logical") != 0) {
		snprintf(why, whylen, "wal_level is %s, and logical decoding "
		    "needs logical: set wal_level = logical in postgresql.conf "
		    "and restart PostgreSQL", col(res, COL_WAL_LEVEL));
		return SLOT_REFUSED;
	}
	if (strcmp(col(res, COL_PUBLICATION), "t") != 0) {
		snprintf(why, whylen, "publication \"%s\" does not exist in "
		    "this database: CREATE PUBLICATION %s FOR TABLE ... (or "
		    "FOR ALL TABLES)", publication, publication);
		return SLOT_REFUSED;
	}
	if (PQgetisnull(res, 0, COL_TYPE))
		return SLOT_MISSING;
	if (strcmp(col(res, COL_TYPE), "logical") != 0 ||
	    strcmp(col(res, COL_PLUGIN), "pgoutput") != 0 ||
	    strcmp(col(res, COL_OURS), "t") != 0) {
		snprintf(why, whylen, "replication slot %s is not a logical "
		    "pgoutput slot of this database (%s, %s, database %s): "
		    "drop it (SELECT pg_drop_replication_slot('%s')) or name "
		    "another", slot, col(res, COL_TYPE), col(res, COL_PLUGIN),
		    col(res, COL_DATABASE), slot);
		return SLOT_REFUSED;
	}
	if (strcmp(col(res, COL_WAL_STATUS), "lost") == 0)
		return SLOT_LOST;
	if (!PQgetisnull(res, 0, COL_ACTIVE_PID)) {
		snprintf(why, whylen, "replication slot %s is active for PID "
		    "%s: another reader holds it, and PostgreSQL lets one "
		    "reader use a slot at a time", slot,
		    col(res, COL_ACTIVE_PID));
		return SLOT_REFUSED;
	}
	*confirmed = slot_lsn(res, 0, COL_CONFIRMED);
	return SLOT_READY;
}
