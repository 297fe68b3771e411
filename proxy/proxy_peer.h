/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_PEER_H
#define PROXY_PROXY_PEER_H

/*
 * Peer streaming, with more than one worker: the table in shared memory
 * that says which keys each worker fetches right now, and asking a
 * sibling for the response it has in flight. The listener that answers
 * siblings is proxy_http.c's.
 */

#include <sys/types.h>

#include "upstream/upstream.h"

#define PEER_KEY_HEADER		"Corral-Peer-Key"
#define PEER_NAME_MAX		64

struct peer_row;
struct proxy;

/* Says in the shared table that this worker fetches key under the lock
 * (while peer siblings may ask): an entry for peer_withdraw(), or -1. */
int	peer_publish(struct proxy *px, const char *key);
void	peer_withdraw(struct proxy *px, int *entry);
/* The sibling slot whose table says it fetches key, or -1. */
int	peer_find(struct proxy *px, const char *key);
/* Asks sibling slot for its response in flight for key, as upstream.h's
 * fetch (on_data gets it as it arrives). NULL if it cannot be asked. */
struct upstream_fetch *peer_fetch(struct proxy *px, int slot, const char *key,
	    const char *uri, upstream_data_cb *on_data, upstream_done_cb *cb,
	    void *arg);
enum peer_claim {
	CLAIM_TAKEN,		/* this worker fetches key for the instance */
	CLAIM_SIBLING,		/* a sibling does: its entry comes to the
				 * shared near cache */
	CLAIM_NONE,		/* no claim to be had (one worker, or the
				 * cell is another key's): fetch alone */
};

/* Takes the instance's claim on key, while Redis cannot lock it. */
enum peer_claim peer_claim(struct proxy *px, const char *key);
/* Lets this worker's claim on key go. */
void	peer_unclaim(struct proxy *px, const char *key);
/* Does a running sibling still hold the claim on key? */
int	peer_claimed(struct proxy *px, const char *key);
/* Clears a row's fetches (the worker starts, stops, or died). */
void	peer_forget(struct peer_row *row);
/* The abstract socket worker slot (process pid) listens on. */
void	peer_socket_name(const struct proxy *px, int slot, pid_t pid,
	    char out[PEER_NAME_MAX]);

#endif
