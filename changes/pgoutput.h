/* SPDX-License-Identifier: MIT */
#ifndef CHANGES_PGOUTPUT_H
#define CHANGES_PGOUTPUT_H

/*
 * The logical replication stream, decoded (no I/O): the CopyData payloads
 * a walsender sends after START_REPLICATION (XLogData 'w', primary
 * keepalive 'k'), and the pgoutput protocol version 1 messages inside an
 * XLogData. Every read is bounds-checked: a truncated or malformed
 * message is refused with an error naming its type and the offset where
 * it went wrong, never read past its end.
 *
 * A decoder keeps the relations the stream described (Relation messages,
 * by relation oid): a change names its relation by oid only. The table
 * outlives reconnects (a walsender sends a relation again before its
 * first change anyway) and a new Relation message for an oid replaces
 * the old description (a schema change).
 *
 * What an event points to (names, values, relids) lives in the message
 * buffer or the decoder: valid until the next pgoutput_decode() call or
 * until the buffer is freed.
 */

#include <stddef.h>
#include <stdint.h>

/* Columns of one relation or tuple: PostgreSQL's MaxTupleAttributeNumber. */
#define PGOUTPUT_COLUMNS_MAX	1664
/* Relations the table keeps (dropped tables' oids are never forgotten). */
#define PGOUTPUT_RELATIONS_MAX	65536
/* A readable error: the type, the offset and what was wrong. */
#define PGOUTPUT_ERR_MAX	160

/* ---- CopyData framing --------------------------------------------------- */

enum pgoutput_frame_kind {
	PGOUTPUT_XLOGDATA,	/* 'w': a pgoutput message */
	PGOUTPUT_KEEPALIVE,	/* 'k': the server's position, maybe a ping */
};

struct pgoutput_frame {
	enum pgoutput_frame_kind kind;
	uint64_t		 start_lsn;	/* 'w' only */
	uint64_t		 end_lsn;	/* 'w': the server's WAL end; 'k': its
						 * position (for a logical walsender:
						 * what it has decoded and sent) */
	int64_t			 send_time;	/* us since 2000-01-01, the server's clock */
	int			 reply;		/* 'k': answer at once */
	const uint8_t		*data;		/* 'w': the pgoutput message */
	size_t			 len;
};

/* 0, or -1 with err ("XLogData at offset 9: truncated"). */
int	pgoutput_frame(const uint8_t *buf, size_t len, struct pgoutput_frame *out,
	    char *err, size_t errlen);

/* A standby status update ('r'), the client's side: written, flushed and
 * applied up to, its time (us since 2000-01-01), answer at once. */
#define PGOUTPUT_STATUS_BYTES	34
void	pgoutput_status(uint8_t out[PGOUTPUT_STATUS_BYTES], uint64_t written,
	    uint64_t flushed, uint64_t applied, int64_t time, int reply);

/* ---- pgoutput messages -------------------------------------------------- */

enum pgoutput_kind {
	PGOUTPUT_BEGIN,
	PGOUTPUT_COMMIT,
	PGOUTPUT_ORIGIN,
	PGOUTPUT_RELATION,
	PGOUTPUT_TYPE,
	PGOUTPUT_INSERT,
	PGOUTPUT_UPDATE,
	PGOUTPUT_DELETE,
	PGOUTPUT_TRUNCATE,
	PGOUTPUT_MESSAGE,
};

struct pgoutput_column {
	char		*name;
	uint32_t	 type;		/* type oid */
	int32_t		 typmod;
	int		 key;		/* part of the replica identity */
};

struct pgoutput_relation {
	uint32_t		 oid;
	char			*schema;	/* "" for pg_catalog */
	char			*name;
	char			 identity;	/* 'd'efault, 'n'othing, 'f'ull, 'i'ndex */
	int			 ncols;
	struct pgoutput_column	*cols;
};

enum pgoutput_value_kind {
	PGOUTPUT_NULL,		/* 'n' (in a 'K' old tuple: also "not sent") */
	PGOUTPUT_UNCHANGED,	/* 'u': a TOASTed value the update left alone */
	PGOUTPUT_TEXT,		/* 't': the type's text output */
};

struct pgoutput_value {
	enum pgoutput_value_kind kind;
	const char		*data;	/* TEXT: not NUL-terminated */
	size_t			 len;
};

struct pgoutput_tuple {
	int			 ncols;	/* the relation's */
	struct pgoutput_value	*cols;
};

/* One decoded message: the fields of its kind are set, the others zero. */
struct pgoutput_event {
	enum pgoutput_kind	 kind;
	uint64_t		 lsn;	/* BEGIN: the commit's; COMMIT: the commit
					 * record's; ORIGIN: on the origin;
					 * MESSAGE: the message's */
	uint64_t		 end_lsn;	/* COMMIT: the transaction's end */
	int64_t			 time;	/* BEGIN, COMMIT: us since 2000-01-01 */
	uint32_t		 xid;	/* BEGIN */
	int			 flags;	/* COMMIT: 0; TRUNCATE: 1 cascade,
					 * 2 restart identity; MESSAGE: 1
					 * transactional */
	const char		*name;	/* ORIGIN, TYPE: its name; MESSAGE: prefix */
	const char		*schema;	/* TYPE */
	uint32_t		 type;	/* TYPE: its oid */
	/* RELATION and the changes: the relation as the table has it. */
	const struct pgoutput_relation *rel;
	/* UPDATE, DELETE: 'K' (replica identity columns only, the others
	 * NULL) or 'O' (the whole old row, REPLICA IDENTITY FULL); 0 when
	 * an UPDATE sent no old row (its key did not change). */
	char			 old_kind;
	const struct pgoutput_tuple *old;	/* or NULL */
	const struct pgoutput_tuple *new;	/* INSERT, UPDATE */
	int			 nrels;		/* TRUNCATE: its relations */
	const uint32_t		*relids;
	const struct pgoutput_relation *const *rels;
	const char		*content;	/* MESSAGE: not NUL-terminated */
	size_t			 content_len;
};

struct pgoutput;

struct pgoutput	*pgoutput_new(void);
void		 pgoutput_free(struct pgoutput **pp);
/* Decodes one message (an XLogData's data) into *ev. 0, or -1 with err
 * ("Insert at offset 7: ..."); a Relation message that was refused
 * leaves the table as it was. */
int		 pgoutput_decode(struct pgoutput *p, const uint8_t *msg,
		    size_t len, struct pgoutput_event *ev, char *err,
		    size_t errlen);
/* The relation the table has for oid, or NULL. */
const struct pgoutput_relation *pgoutput_relation(const struct pgoutput *p,
		    uint32_t oid);
/* "Insert", "Begin", ...: for messages. */
const char	*pgoutput_kind_name(enum pgoutput_kind kind);

/* PostgreSQL's times: us since 2000-01-01 to ms since 1970-01-01. */
int64_t		 pgoutput_time_ms(int64_t pg_us);
/* ms since 1970-01-01 to PostgreSQL's us since 2000-01-01. */
int64_t		 pgoutput_pg_time(int64_t unix_ms);

#endif
