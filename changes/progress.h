/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_PROGRESS_H
#define CHANGES_PROGRESS_H

/*
 * Inside changes/ only: how far the feed has come through the server's
 * WAL, across connections (no I/O). It takes each CopyData message of
 * the replication stream (or a NOTIFY payload), decodes it
 * (pgoutput.c), assembles transactions (txn.c), hands each commit to the
 * caller's on_commit, and keeps the positions: received, delivered,
 * acknowledged, the server's. It writes the standby status updates, whose
 * flush position is only ever the acknowledged one.
 *
 * The one exception keeps an idle slot from holding WAL for ever: when
 * every commit delivered has been acknowledged and no transaction is
 * open, a keepalive's position counts as acknowledged (nothing before it
 * is left to apply).
 */

#include <stddef.h>
#include <stdint.h>

#include "changes/changes.h"
#include "changes/pgoutput.h"

struct progress;

/* NULL with err (a rule that is not usable, or out of memory). */
/* label names it in the logs (and must outlive it). */
struct progress	*progress_new(const struct changes_rule *rules, size_t nrules,
		    int hard, const char *label, changes_commit_cb *on_commit,
		    void *arg, char *err, size_t errlen);
void		 progress_free(struct progress **pp);

/* One CopyData message: at most one on_commit. 0 (*reply set if the
 * server asked for a status update now), or -1 with why: a message that
 * makes no sense, named with its LSN; reconnect without acknowledging. */
int		 progress_data(struct progress *p, const uint8_t *buf,
		    size_t len, int *reply, char *why, size_t whylen);
/* A NOTIFY payload: one on_commit, lsn 0. 0, or -1 (out of memory). */
int		 progress_payload(struct progress *p, const char *payload,
		    char *why, size_t whylen);
/* The connection went: an open transaction comes again from its Begin. */
void		 progress_reset(struct progress *p);

/* The caller applied what was delivered up to lsn (no further). */
void		 progress_ack(struct progress *p, uint64_t lsn);
/* The slot is at least at lsn (its confirmed position when we connect,
 * or where it was created): never tell the server less. */
void		 progress_raise(struct progress *p, uint64_t lsn);
uint64_t	 progress_acked(const struct progress *p);
/* Has a commit been delivered and not acknowledged? */
int		 progress_unacked(const struct progress *p);
/* Seen a position from the server (IDENTIFY_SYSTEM). */
void		 progress_server(struct progress *p, uint64_t lsn);

/* A standby status update for now: written up to what was received,
 * flushed and applied up to what was acknowledged. */
void		 progress_status(const struct progress *p,
		    uint8_t out[PGOUTPUT_STATUS_BYTES], int reply);
/* The positions, lag and counters of changes_figures (not the state,
 * reconnects, slots_created). */
void		 progress_figures(const struct progress *p,
		    struct changes_figures *out);

#endif
