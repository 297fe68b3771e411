#ifndef CACHE_CACHE_LEADER_H
#define CACHE_CACHE_LEADER_H

/*
 * A fleet's one leader for a named job (the change feed of a [changes
 * NAME] section), elected by a lease in Redis with the lock's own
 * pattern: SET NX PX with the candidate's value (a random token and who
 * it is), renewed by compare-then-PEXPIRE, given up by compare-and-
 * delete. A leader whose renewal finds another value has lost the lease
 * (FENCE_LOST, here LEADER_OTHER) and must stop at once; one whose
 * renewals fail (Redis away) must stop when the lease it last renewed
 * could have expired. The leader also keeps a line of status beside the
 * lease, which every instance reads with its own claim.
 *
 * Both keys share the hash tag {leader:NAME}:
 *   <prefix>{leader:NAME}:lease    the holder's value, PX the lease
 *   <prefix>{leader:NAME}:status   the leader's status line, PX its own
 */

#include <stdint.h>

#include "cache/cache.h"

#define LEADER_VALUE_MAX	192	/* "TOKEN host:pid:port" */
#define LEADER_STATUS_MAX	1024	/* the status line */

enum leader_result {
	LEADER_HELD,		/* the lease is ours (taken or renewed) */
	LEADER_OTHER,		/* another holds it, or nobody (want 0) */
	LEADER_ERROR,		/* Redis failed or timed out */
};

struct leader_answer {
	enum leader_result	 r;
	char			 holder[LEADER_VALUE_MAX];	/* "": none */
	char			 status[LEADER_STATUS_MAX];	/* "": none */
	int64_t			 pttl_ms;	/* the lease's; -2: none */
};

typedef void leader_cb(const struct leader_answer *a, void *arg);

/*
 * Takes the lease of name for value (want 1) if nobody holds it, renews
 * it (px_ms) if value holds it already, or only reads who does (want 0).
 * While held, status (when not "") is written beside it for status_ms.
 * The answer says who holds it and the leader's last status.
 */
struct cache_op	*leader_claim(struct cache *c, const char *name,
		    const char *value, int want, int64_t px_ms,
		    const char *status, int64_t status_ms, leader_cb *cb,
		    void *arg);
/* Gives the lease up if value still holds it (and its status with it).
 * cb may be NULL; FENCE_LOST: value did not hold it. */
struct cache_op	*leader_resign(struct cache *c, const char *name,
		    const char *value, fence_cb *cb, void *arg);

#endif
