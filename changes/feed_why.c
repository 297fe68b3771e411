/* SPDX-License-Identifier: MIT */
/*
 * Why a connection failed, in one line with the fix (feed_int.h). One
 * table: what the server's message (or SQLSTATE) says, and the fix.
 * libpq's messages never hold the password.
 *
 * Calls libpq only.
 */

#include "changes/feed_int.h"

#include <stdio.h>
#include <string.h>

#include "changes/changes.h"

/* What a fix names. */
enum hint_arg {
	ARG_NONE,
	ARG_USER,
	ARG_SLOT,
	ARG_PUBLICATION,
};

static const struct {
	const char	*sqlstate;	/* or NULL: the needle only */
	const char	*needle;	/* in the message, or NULL */
	const char	*before;
	enum hint_arg	 arg;
	const char	*after;
} hints[] = {
	{ NULL, "must be superuser or replication role",
	  "the role has no REPLICATION attribute: ALTER ROLE ", ARG_USER,
	  " REPLICATION" },
	{ NULL, "permission denied to start WAL sender",
	  "the role has no REPLICATION attribute: ALTER ROLE ", ARG_USER,
	  " REPLICATION" },
	/* A logical replication connection matches pg_hba.conf's lines by
	 * its database; the word "replication" there is for physical ones. */
	{ NULL, "no pg_hba.conf entry",
	  "pg_hba.conf has no line for this host, database and role ",
	  ARG_USER, ": add \"host DATABASE ROLE ADDRESS/32 scram-sha-256\" "
	  "(a logical replication connection matches by its database, not "
	  "by the word replication) and reload PostgreSQL" },
	{ NULL, "password authentication failed",
	  "the password of ", ARG_USER, " is wrong, or none was given" },
	{ NULL, "no password supplied",
	  "the server wants a password for ", ARG_USER, " and none was given" },
	{ NULL, "logical decoding requires wal_level",
	  "set wal_level = logical in postgresql.conf and restart PostgreSQL",
	  ARG_NONE, "" },
	{ "42704", "publication",
	  "create it: CREATE PUBLICATION ", ARG_PUBLICATION,
	  " FOR TABLE ... (or FOR ALL TABLES)" },
	{ "55006", NULL,
	  "another reader holds replication slot ", ARG_SLOT,
	  ", and PostgreSQL lets one reader use a slot at a time" },
	{ NULL, "can no longer get changes from replication slot",
	  "the slot fell behind max_slot_wal_keep_size and was invalidated: "
	  "the next attempt drops and creates ", ARG_SLOT, "" },
	{ NULL, "all replication slots are in use",
	  "raise max_replication_slots or drop a slot nobody reads", ARG_NONE,
	  "" },
	{ NULL, "exceeds max_wal_senders",
	  "raise max_wal_senders in postgresql.conf", ARG_NONE, "" },
	{ NULL, "too many clients",
	  "raise max_connections, or close idle sessions", ARG_NONE, "" },
	{ "3D000", NULL,
	  "check dbname in the connection string", ARG_NONE, "" },
	{ NULL, "Connection refused",
	  "the server is unreachable: check host and port in the connection "
	  "string and that PostgreSQL listens there", ARG_NONE, "" },
	{ NULL, "could not connect",
	  "the server is unreachable: check host and port in the connection "
	  "string and that PostgreSQL listens there", ARG_NONE, "" },
	{ NULL, "could not translate host name",
	  "the server's name does not resolve: check host in the connection "
	  "string", ARG_NONE, "" },
	{ NULL, "terminating connection due to administrator command",
	  "the server shut down, or an administrator ended the session",
	  ARG_NONE, "" },
};

/* msg in one line: newlines and runs of spaces as one space, no end. */
static void
one_line(const char *msg, char *out, size_t outlen)
{
	size_t o = 0;
	int space = 0;

	for (; *msg != '\0' && o + 1 < outlen; msg++) {
		if (*msg == '\n' || *msg == '\r' || *msg == '\t' ||
		    *msg == ' ') {
			space = o > 0;
			continue;
		}
		if (space && o + 2 < outlen)
			out[o++] = ' ';
		space = 0;
		out[o++] = *msg;
	}
	out[o] = '\0';
}

static void
explain(const char *msg, const char *sqlstate, PGconn *conn, const char *slot,
    const char *publication, char *out, size_t outlen)
{
	char line[CHANGES_ERR_MAX];
	const char *arg;
	size_t i;

	one_line(msg[0] != '\0' ? msg : "the connection failed", line,
	    sizeof(line));
	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
		if (hints[i].sqlstate != NULL && (sqlstate == NULL ||
		    strcmp(hints[i].sqlstate, sqlstate) != 0))
			continue;
		if (hints[i].needle != NULL && strstr(msg, hints[i].needle) ==
		    NULL)
			continue;
		switch (hints[i].arg) {
		case ARG_USER:
			arg = conn != NULL && PQuser(conn) != NULL ?
			    PQuser(conn) : "ROLE";
			break;
		case ARG_SLOT:
			arg = slot;
			break;
		case ARG_PUBLICATION:
			arg = publication;
			break;
		default:
			arg = "";
			break;
		}
		snprintf(out, outlen, "%s; %s%s%s", line, hints[i].before, arg,
		    hints[i].after);
		return;
	}
	snprintf(out, outlen, "%s", line);
}

void
why_conn(PGconn *conn, char *out, size_t outlen)
{
	const char *msg = conn != NULL ? PQerrorMessage(conn) : "out of memory";

	explain(msg, NULL, conn, "", "", out, outlen);
}

void
why_result(const PGresult *res, PGconn *conn, const char *slot,
    const char *publication, char *out, size_t outlen)
{
	explain(PQresultErrorMessage(res), PQresultErrorField(res,
	    PG_DIAG_SQLSTATE), conn, slot, publication, out, outlen);
}
