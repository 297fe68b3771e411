/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_FEED_INT_H
#define CHANGES_FEED_INT_H

/*
 * Inside changes/ only: what feed.c asks feed_why.c. A failure in one
 * line, with the fix when it is one a DBA makes (a role without
 * REPLICATION, no publication, wal_level, a slot another reader holds,
 * an unreachable server). Server messages are matched in English and by
 * SQLSTATE; others are passed on as they are.
 */

#include <stddef.h>

#include <libpq-fe.h>

/* The connection's error (PQerrorMessage). */
void	why_conn(PGconn *conn, char *out, size_t outlen);
/* A result's error; slot and publication name the fix. */
void	why_result(const PGresult *res, PGconn *conn, const char *slot,
	    const char *publication, char *out, size_t outlen);

#endif
