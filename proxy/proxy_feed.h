#ifndef PROXY_PROXY_FEED_H
#define PROXY_PROXY_FEED_H

/*
 * The change feeds ([changes NAME]): the tags a database's commits make
 * stale, purged fleet-wide through the cache's purges by tag.
 *
 * Each section has a runner in worker slot 0 of every instance (the
 * other workers only show its figures). The runners of a fleet elect one
 * leader per section with a lease in Redis (cache_leader.h); only the
 * leader reads the feed (changes/changes.h), and stops reading and
 * acknowledging at once when it loses the lease, or when the lease it
 * could not renew may have expired. Each commit's tags are purged
 * (proxy_apply.c: soft unless a rule says hard, batched, a bounded number
 * at once), and only once all of them are applied in Redis is the
 * commit's position acknowledged to PostgreSQL; what was not is sent
 * again to the next reader. PostgreSQL itself lets one session read a
 * slot at a time, so two readers never overlap, whatever the lease says.
 *
 * Every runner writes its section's row in the memory the workers share
 * (slot 0's), which /stats, /metrics and /health read in any worker: the
 * leader's own state, or the leader's status as it keeps it beside the
 * lease.
 */

#include <stdint.h>
#include <stdio.h>

#include <event2/buffer.h>

#include "changes/changes.h"
#include "conf/conf.h"

#define FEED_INSTANCE_MAX	128	/* "host:pid:port" */

/* A section's state, as this instance sees it. */
enum feed_state {
	FEED_OFF,		/* no such section (a free row) */
	FEED_STARTING,		/* no answer from Redis yet */
	FEED_STREAMING,		/* the leader reads (notify: listens) */
	FEED_CONNECTING,	/* the leader is connecting */
	FEED_DOWN,		/* the leader's feed is down: detail says why */
	FEED_NO_LEADER,		/* nobody holds the lease */
	FEED_UNKNOWN,		/* Redis does not answer: nobody can tell */
};

/* One section's figures, in the workers' shared memory. -1: not known
 * here (figures only the leader has). */
struct feed_row {
	char		 name[CONF_CHANGES_NAME_MAX];	/* "": a free row */
	int		 mode;		/* enum conf_changes_mode */
	int		 state;		/* enum feed_state */
	int		 leader;	/* this instance leads */
	int		 paused;	/* its queue is full: not reading */
	char		 detail[CHANGES_ERR_MAX];
	char		 leader_instance[FEED_INSTANCE_MAX];	/* "": none */
	int64_t		 lag_bytes;	/* WAL the slot keeps unacknowledged */
	int64_t		 lag_ms;	/* age of the oldest commit unapplied */
	int64_t		 max_lag;
	int64_t		 max_lag_time_ms;
	uint64_t	 acked_lsn;
	uint64_t	 server_lsn;
	int64_t		 queued;	/* commits waiting for their purges */
	/* Counters of this instance (while it led). */
	uint64_t	 commits;	/* received */
	uint64_t	 applied;	/* all their purges applied */
	uint64_t	 tags;		/* tag purges applied */
	uint64_t	 purged;	/* entries they made stale or deleted */
	uint64_t	 purge_retries;	/* tag purges that failed, tried again */
	uint64_t	 broad;		/* broad purges (changes maybe missed) */
	uint64_t	 reconnects;	/* the feed's connections lost/refused */
	uint64_t	 slots_created;
	uint64_t	 malformed;
	uint64_t	 leaderships;	/* times it became the leader */
};

struct proxy;

/* Worker slot 0: a runner per [changes] section. 0, or -1 (no memory). */
int	feeds_start(struct proxy *px);
/* A reload: runners of sections that changed start again (their lease
 * and feed with them), those of removed sections stop. */
void	feeds_reload(struct proxy *px, const struct conf *new);
/* A stop begins: every leader stops its feed (a last acknowledgement of
 * what was applied) and gives its lease up, so another instance leads at
 * once. */
void	feeds_drain(struct proxy *px);
/* Resignations still on their way to Redis (a stop waits for them). */
int	feeds_pending(const struct proxy *px);
void	feeds_stop(struct proxy *px);

/* proxy_feed_view.c: the rows as /stats, /metrics and /health say them;
 * feeds_health is 1 when a section is down or past its max_lag. */
void	feeds_json(const struct proxy *px, struct evbuffer *out);
void	feeds_prometheus(const struct proxy *px, struct evbuffer *out);
int	feeds_health(const struct proxy *px, struct evbuffer *out);
const char *feed_state_name(enum feed_state s);

/* proxy_feed_check.c: the feed's own checks of each section (its rules,
 * its connection string), "path:line: what" into errs; their number.
 * feeds_check_servers: what each server says now (corral -t), as
 * warnings into out. */
int	feeds_check(const struct conf *c, FILE *errs);
void	feeds_check_servers(const struct conf *c, FILE *out);

#endif
