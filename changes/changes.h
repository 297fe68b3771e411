/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_CHANGES_H
#define CHANGES_CHANGES_H

/*
 * The change feed: which cache tags to soft-purge because data changed in
 * PostgreSQL, on the caller's libevent loop. Non-blocking throughout,
 * but for one thing: libpq resolves a host name synchronously (give an
 * address, or hostaddr, to spare the loop a DNS wait). libpq is hidden
 * behind this face (only changes/ includes libpq-fe.h). docs/operations.md
 * ("Fresh on change") says what the database needs.
 *
 * mode CHANGES_REPLICATION reads a logical replication slot (pgoutput,
 * protocol version 1) of one publication. Each committed transaction
 * becomes one on_commit() with its tags and its end LSN; the caller
 * applies the purges, then calls changes_ack() with that LSN. Only what
 * was acknowledged is reported to the server as flushed, so the slot
 * keeps (and after a reconnect sends again) every commit not yet
 * acknowledged: delivery is at least once. A commit with no tags (say,
 * one of another prefix's messages only) is not handed out.
 *
 * Tags, per table (schema-qualified "schema.table", or "table" for
 * public): by default a row change of T with replica identity key K
 * purges "T:K" (a composite key's values joined with ','), and an insert,
 * a delete, an update of the key and a truncate also purge "T". A table's
 * rule replaces that with templates over the row's columns:
 *	orders:{id} customers:{customer_id} orders
 * An update purges the tags of the old row and of the new one. Where an
 * old value is not in the stream (a column outside the replica identity,
 * unless the table has REPLICA IDENTITY FULL), the update purges the
 * template's broad tag instead. A NULL value gives no tag; a tag over
 * CHANGES_TAG_MAX bytes becomes its broad tag; a table with REPLICA
 * IDENTITY FULL or NOTHING and no rule purges T only.
 *
 * Broad tags stand for many tags at once. The family of the tags that
 * begin "P:" is the tag "P:*" (CHANGES_FAMILY): the cache files every key
 * stored under a tag "P:x" under "P:*" too (cache.h), so a purge of
 * "P:*" reaches them all. The broad tag of T:K is T's family "T:*"; of a
 * template whose text before the first '{' ends in ':', that text's
 * family ("customers:{customer_id}": "customers:*"); of a template with
 * no column, itself ("orders"); of any other, T.
 *
 * Values in tags are escaped: every byte outside A-Z a-z 0-9 - . _ ~ is
 * written %XX (upper-case hex), so ':', ',', ' ', '%' and any non-ASCII
 * byte never appear raw; it is Python's urllib.parse.quote(v, safe="")
 * and what an application computes to tag its own responses. Schema and
 * table names in tags are escaped the same way.
 *
 * A logical decoding message with prefix CHANGES_MESSAGE_PREFIX adds the
 * tags of its content (separated by spaces, tabs or newlines, taken as
 * they are): a transactional one at its transaction's commit, any other
 * at once (lsn: the message's own).
 *
 * mode CHANGES_NOTIFY runs LISTEN on a channel over a plain connection:
 * each payload is a tag list, delivered through on_commit() with lsn 0
 * (nothing to acknowledge). Notifications sent while nobody listened are
 * lost: after every connect, on_reconnect() lets the caller purge broadly.
 */

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#define CHANGES_TAG_MAX		128	/* bytes of a tag (cache.h's CACHE_TAG_MAX) */
#define CHANGES_FAMILY		"*"	/* "P:" CHANGES_FAMILY: the tags "P:..." */
#define CHANGES_TXN_TAGS_MAX	10000	/* distinct tags of one transaction */
#define CHANGES_MESSAGE_PREFIX	"corral"
#define CHANGES_LSN_LEN		18	/* "FFFFFFFF/FFFFFFFF" and a NUL */
#define CHANGES_ERR_MAX		512	/* a state's detail, an error */
#define CHANGES_NAME_MAX	63	/* a slot, publication or channel name */
/* Standby status updates, when nothing else sends one: under the
 * server's wal_sender_timeout (60 s by default) with room to spare. A
 * configuration may set another within the bounds. */
#define CHANGES_STATUS_INTERVAL_MS	10000
#define CHANGES_STATUS_INTERVAL_MIN_MS	100
#define CHANGES_STATUS_INTERVAL_MAX_MS	50000

enum changes_mode {
	CHANGES_REPLICATION,
	CHANGES_NOTIFY,
};

enum changes_state {
	CHANGES_CONNECTING,	/* not streaming yet (the first attempt) */
	CHANGES_STREAMING,	/* streaming (notify: listening) */
	CHANGES_DOWN,		/* lost or refused, retrying: detail says why */
};

/* A table's tags (see above): table is "schema.table" or "table" (public),
 * tags its space-separated templates; hard: its tags are purged hard
 * (deleted, not made stale). */
struct changes_rule {
	const char	*table;
	const char	*tags;
	int		 hard;
};

enum changes_breadth {
	CHANGES_EXACT,		/* the transaction's tags */
	CHANGES_BROAD,		/* over CHANGES_TXN_TAGS_MAX: the broad tags
				 * of what it changed, and its messages' */
	CHANGES_EVERYTHING,	/* even those were too many: no tags, purge
				 * everything */
};

/* One commit (or a non-transactional message, or a NOTIFY), valid during
 * the callback only. */
struct changes_commit {
	const char *const	*tags;
	size_t			 n;
	enum changes_breadth	 breadth;
	uint64_t		 lsn;	/* to changes_ack() once applied; 0: none */
	int64_t			 time_ms;	/* its commit time, server clock; or 0 */
	/* Per tag, 1 where it is to be purged hard (its rule says so, or
	 * the configuration's hard for the default rule, messages and
	 * payloads); NULL when none is. */
	const unsigned char	*hard;
};

typedef void changes_commit_cb(const struct changes_commit *c, void *arg);
/* detail: what happened, and for a refusal the fix ("" if nothing). */
typedef void changes_state_cb(enum changes_state state, const char *detail,
    void *arg);
/* on_slot_created: the slot was missing and was created; changes before
 * it are unknown. on_reconnect (notify): listening again after a gap. */
typedef void changes_event_cb(void *arg);

/* What the logs call a feed: "changes NAME", or "changes" with no name. */
#define CHANGES_LABEL_MAX	(CHANGES_NAME_MAX + 16)

struct changes_config {
	const char		*name;		/* its logs' (NULL: none) */
	enum changes_mode	 mode;
	/* A libpq connection string or URI, without the password: it is
	 * never logged. password (or NULL) is passed as a keyword. */
	const char		*conninfo;
	const char		*password;
	const char		*slot;		/* replication: [a-z0-9_], <= 63 */
	const char		*publication;	/* replication */
	const char		*channel;	/* notify */
	const struct changes_rule *rules;
	size_t			 nrules;
	int			 hard;	/* the default rule's, messages' and
					 * payloads' tags purge hard */
	/* 0: CHANGES_STATUS_INTERVAL_MS. */
	int64_t			 status_interval_ms;
	changes_commit_cb	*on_commit;
	changes_state_cb	*on_state;	/* may be NULL */
	changes_event_cb	*on_slot_created;	/* may be NULL */
	changes_event_cb	*on_reconnect;	/* may be NULL */
	void			*arg;
};

/*
 * Where the feed is. A logical walsender's keepalives carry the position
 * it has read the WAL up to (not the server's insert position): lag_bytes
 * is how far the acknowledged position trails it, which is also about
 * how much WAL the slot makes the server keep.
 */
struct changes_figures {
	enum changes_state	 state;
	uint64_t		 received_lsn;	/* the last position received */
	uint64_t		 delivered_lsn;	/* the last commit handed out */
	uint64_t		 acked_lsn;	/* acknowledged (at least the
						 * slot's position at connect) */
	uint64_t		 server_lsn;	/* the server's, from keepalives */
	uint64_t		 lag_bytes;	/* server_lsn - acked_lsn, or 0 */
	int64_t			 last_commit_ms;	/* server clock; 0: none yet */
	int64_t			 commit_age_ms;	/* since it; -1: none yet */
	uint64_t		 commits;	/* delivered (and NOTIFYs) */
	uint64_t		 tags;		/* delivered */
	uint64_t		 broadened;	/* commits over CHANGES_TXN_TAGS_MAX */
	uint64_t		 reconnects;	/* connections lost or refused */
	uint64_t		 malformed;	/* messages refused */
	uint64_t		 slots_created;
};

/* Is the configuration usable (names, rules)? 0, or -1 with err. */
int	changes_check(const struct changes_config *cfg, char *err,
	    size_t errlen);
/* Starts connecting (the configuration is copied). NULL with err if it
 * is not usable or memory ran out. */
struct changes *changes_start(struct event_base *base,
	    const struct changes_config *cfg, char *err, size_t errlen);
/* The caller applied every commit delivered up to lsn. Any time, from a
 * callback too; the server hears of it within a moment. */
void	changes_ack(struct changes *f, uint64_t lsn);
/* Closes (a last status update with the acknowledged position, CopyDone,
 * then the connection) and frees; no callback runs after it. Safe from
 * inside a callback of f. Sets *fp to NULL. */
void	changes_stop(struct changes **fp);
void	changes_figures(const struct changes *f, struct changes_figures *out);
const char *changes_state_name(enum changes_state state);

/*
 * What the server says of a configuration now, asked without side
 * effects (no slot is created, nothing is acknowledged), for a
 * configuration check: one blocking connection of at most timeout_s
 * seconds to connect, made as the feed makes it, and the feed's own
 * check of wal_level, the publication and the slot. Not for the event
 * loop: it blocks.
 */
enum changes_verdict {
	CHANGES_READY,		/* it would stream (out may note something:
				 * the slot is to be created, or in use) */
	CHANGES_REFUSED,	/* out says what is missing and the fix */
	CHANGES_UNREACHABLE,	/* no answer: out says why */
};
enum changes_verdict changes_inspect(const struct changes_config *cfg,
	    int timeout_s, char *out, size_t outlen);

/* "16/B374D848", PostgreSQL's way. */
void	changes_lsn_format(uint64_t lsn, char out[CHANGES_LSN_LEN]);
/* 0, or -1 if s is not that form. */
int	changes_lsn_parse(const char *s, uint64_t *lsn);

#endif
