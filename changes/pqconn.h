/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_PQCONN_H
#define CHANGES_PQCONN_H

/*
 * Inside changes/ only: one libpq connection on the caller's libevent
 * loop, non-blocking (after curl's multi-event.c, for libpq): it watches
 * the socket as libpq asks and calls ready() when it is, and never
 * blocks. The caller's machine then asks it to go on: pqconn_poll()
 * while connecting, pqconn_query() for a query, PQgetCopyData() and
 * pqconn_flush() on the PGconn for a COPY.
 *
 * ready() may close the connection (pqconn_close): nothing touches it
 * after ready() returns.
 */

#include <stddef.h>

#include <event2/event.h>
#include <libpq-fe.h>

struct pqconn;

typedef void pqconn_ready_cb(void *arg);

enum pqconn_result {
	PQC_WAIT,	/* under way: wait for ready() */
	PQC_DONE,
	PQC_FAILED,	/* why says why (feed_int.h's words) */
};

/* Starts connecting with PQconnectStartParams(keys, vals, expand_dbname);
 * the server's notices are logged under label (which must outlive it).
 * NULL with why. */
struct pqconn	*pqconn_start(struct event_base *base,
		    const char *const *keys, const char *const *vals,
		    const char *label, pqconn_ready_cb *ready, void *arg,
		    char *why, size_t whylen);
void		 pqconn_close(struct pqconn **cp);
PGconn		*pqconn_pg(const struct pqconn *c);

/* Connecting: PQconnectPoll each time the socket is as it last asked.
 * DONE once made (then non-blocking). */
enum pqconn_result pqconn_poll(struct pqconn *c, char *why, size_t whylen);

/* Sends sql (once), then collects its results: DONE with *res (the first
 * error, or the last result; CopyBoth at once), which stays the
 * connection's until pqconn_forget() or the next query. */
enum pqconn_result pqconn_query(struct pqconn *c, const char *sql,
		    const PGresult **res, char *why, size_t whylen);
/* Done with the query: the next pqconn_query() sends its own. */
void		 pqconn_forget(struct pqconn *c);

/* Sends what libpq holds, and watches for writing while some is left.
 * 0, or -1 with why. */
int		 pqconn_flush(struct pqconn *c, char *why, size_t whylen);

#endif
