/* SPDX-License-Identifier: MIT */
/*
 * What the server says of a configuration (changes_inspect(), changes.h),
 * for corral -t: a blocking connection made with the feed's keywords, and
 * the feed's own slot check (slot.c), which reads and changes nothing.
 *
 * Calls libpq (blocking: never on the event loop), slot.c, feed_why.c.
 */

#include "changes/changes.h"

#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "changes/feed_int.h"
#include "changes/slot.h"

#define TIMEOUT_TEXT_MAX	16

/* Connects as the feed does (with replication=database in replication
 * mode), waiting at most timeout_s. NULL or a bad connection: out says
 * why. */
static PGconn *
inspect_connect(const struct changes_config *cfg, int timeout_s, char *out,
    size_t outlen)
{
	const char *keys[8] = { "application_name", "connect_timeout",
	    "dbname" };
	const char *vals[8] = { "corral-check", NULL, cfg->conninfo };
	char timeout[TIMEOUT_TEXT_MAX];
	PGconn *conn;
	int n = 3;

	snprintf(timeout, sizeof(timeout), "%d", timeout_s);
	vals[1] = timeout;
	if (cfg->mode == CHANGES_REPLICATION) {
		keys[n] = "replication";
		vals[n++] = "database";
	}
	if (cfg->password != NULL) {
		keys[n] = "password";
		vals[n++] = cfg->password;
	}
	keys[n] = vals[n] = NULL;
	conn = PQconnectdbParams(keys, vals, 1);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
		why_conn(conn, out, outlen);
	return conn;
}

/* The slot check's verdict, as the feed would act on it. */
static enum changes_verdict
inspect_slot(PGconn *conn, const struct changes_config *cfg, char *out,
    size_t outlen)
{
	char sql[SLOT_SQL_MAX];
	PGresult *res;
	uint64_t confirmed = 0;
	enum changes_verdict v = CHANGES_READY;

	slot_sql(SLOT_CHECK, cfg->slot, cfg->publication, sql);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		why_result(res, conn, cfg->slot, cfg->publication, out, outlen);
		PQclear(res);
		return CHANGES_REFUSED;
	}
	switch (slot_verdict(res, cfg->slot, cfg->publication, &confirmed, out,
	    outlen)) {
	case SLOT_READY:
		break;
	case SLOT_MISSING:
		snprintf(out, outlen, "replication slot %s does not exist yet: "
		    "the feed creates it, and changes before that are unknown",
		    cfg->slot);
		break;
	case SLOT_LOST:
		snprintf(out, outlen, "replication slot %s was invalidated "
		    "(max_slot_wal_keep_size): the feed drops and creates it",
		    cfg->slot);
		break;
	case SLOT_REFUSED:
		/* One in use is a running feed's, most likely: not a fault. */
		v = strstr(out, " is active for PID ") != NULL ? CHANGES_READY :
		    CHANGES_REFUSED;
		break;
	}
	PQclear(res);
	return v;
}

enum changes_verdict
changes_inspect(const struct changes_config *cfg, int timeout_s, char *out,
    size_t outlen)
{
	enum changes_verdict v;
	PGconn *conn;

	out[0] = '\0';
	conn = inspect_connect(cfg, timeout_s, out, outlen);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
		/* Refused by the server (a role, pg_hba.conf, a password) or
		 * not answered at all. */
		v = conn != NULL && strstr(PQerrorMessage(conn), "FATAL") !=
		    NULL ? CHANGES_REFUSED : CHANGES_UNREACHABLE;
		PQfinish(conn);
		return v;
	}
	v = cfg->mode == CHANGES_REPLICATION ? inspect_slot(conn, cfg, out,
	    outlen) : CHANGES_READY;
	PQfinish(conn);
	return v;
}
