/* SPDX-License-Identifier: MIT */
/*
 * The replication stream's messages, decoded (pgoutput.h): the CopyData
 * framing ('w', 'k') and pgoutput protocol version 1 (PostgreSQL's
 * "Logical Replication Message Formats"). One reader walks each message;
 * every field is taken through it, so nothing is read past the end, and
 * the first field that does not fit or does not make sense fails the
 * whole message with its offset.
 *
 * Calls common/dict.c only (the relation table). No I/O.
 */

#include "changes/pgoutput.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dict.h"

#define PGOUTPUT_MAGIC		0x50474f55u	/* "PGOU" */
#define PG_EPOCH_MS		946684800000LL	/* 2000-01-01 in Unix ms */
#define OID_KEY_MAX		16		/* "4294967295" and a NUL */
#define TRUNCATE_OPTIONS	0x3		/* cascade, restart identity */

struct pgoutput {
	uint32_t		 magic;
	struct dict		*rels;		/* "oid" -> struct pgoutput_relation */
	struct pgoutput_tuple	 old, new;
	uint32_t		*relids;	/* a Truncate's */
	const struct pgoutput_relation **trels;	/* ... and their relations */
	int			 relids_cap;
};

/* One message being read: where we are, and what to blame. */
struct reader {
	const uint8_t	*buf;
	size_t		 len;
	size_t		 off;
	const char	*what;		/* "Insert", "XLogData", ... */
	char		*err;
	size_t		 errlen;
};

static void
fail(struct reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
fail(struct reader *r, const char *fmt, ...)
{
	char why[PGOUTPUT_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s at offset %zu: %s", r->what, r->off,
	    why);
}

/* n more bytes are there, or the message fails as truncated. */
static int
need(struct reader *r, size_t n, const char *field)
{
	if (r->len - r->off >= n)
		return 0;
	fail(r, "truncated in %s (%zu bytes left, %zu wanted)", field,
	    r->len - r->off, n);
	return -1;
}

static int
get_u8(struct reader *r, uint8_t *v, const char *field)
{
	if (need(r, 1, field) == -1)
		return -1;
	*v = r->buf[r->off++];
	return 0;
}

static int
get_u16(struct reader *r, uint16_t *v, const char *field)
{
	if (need(r, 2, field) == -1)
		return -1;
	*v = (uint16_t)(r->buf[r->off] << 8 | r->buf[r->off + 1]);
	r->off += 2;
	return 0;
}

static int
get_u32(struct reader *r, uint32_t *v, const char *field)
{
	const uint8_t *p = r->buf + r->off;

	if (need(r, 4, field) == -1)
		return -1;
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
	r->off += 4;
	return 0;
}

static int
get_u64(struct reader *r, uint64_t *v, const char *field)
{
	uint32_t hi, lo;

	if (need(r, 8, field) == -1)
		return -1;
	(void)get_u32(r, &hi, field);
	(void)get_u32(r, &lo, field);
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

static int
get_i64(struct reader *r, int64_t *v, const char *field)
{
	uint64_t u;

	if (get_u64(r, &u, field) == -1)
		return -1;
	*v = (int64_t)u;
	return 0;
}

/* A NUL-terminated string, left in the buffer. */
static int
get_str(struct reader *r, const char **s, const char *field)
{
	const uint8_t *nul;

	if (need(r, 1, field) == -1)
		return -1;
	nul = memchr(r->buf + r->off, '\0', r->len - r->off);
	if (nul == NULL) {
		fail(r, "%s has no terminating NUL", field);
		return -1;
	}
	*s = (const char *)(r->buf + r->off);
	r->off = (size_t)(nul - r->buf) + 1;
	return 0;
}

/* The message must end where its last field did. */
static int
at_end(struct reader *r)
{
	if (r->off == r->len)
		return 0;
	fail(r, "%zu bytes past its end", r->len - r->off);
	return -1;
}

/* ---- framing ------------------------------------------------------------ */

int
pgoutput_frame(const uint8_t *buf, size_t len, struct pgoutput_frame *out,
    char *err, size_t errlen)
{
	struct reader r = { buf, len, 0, "CopyData", err, errlen };
	uint64_t time;
	uint8_t type, reply;

	memset(out, 0, sizeof(*out));
	if (get_u8(&r, &type, "its type") == -1)
		return -1;
	if (type == 'w') {
		r.what = "XLogData";
		if (get_u64(&r, &out->start_lsn, "the start LSN") == -1 ||
		    get_u64(&r, &out->end_lsn, "the end LSN") == -1 ||
		    get_u64(&r, &time, "the send time") == -1)
			return -1;
		out->kind = PGOUTPUT_XLOGDATA;
		out->send_time = (int64_t)time;
		out->data = buf + r.off;
		out->len = len - r.off;
		return 0;
	}
	if (type != 'k') {
		r.off = 0;
		fail(&r, "unknown type 0x%02x", type);
		return -1;
	}
	r.what = "Keepalive";
	if (get_u64(&r, &out->end_lsn, "the end LSN") == -1 ||
	    get_u64(&r, &time, "the send time") == -1 ||
	    get_u8(&r, &reply, "the reply flag") == -1)
		return -1;
	if (reply > 1) {
		r.off--;
		fail(&r, "reply flag %u is neither 0 nor 1", reply);
		return -1;
	}
	out->kind = PGOUTPUT_KEEPALIVE;
	out->send_time = (int64_t)time;
	out->reply = reply;
	return at_end(&r);
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)(v & 0xff);
}

void
pgoutput_status(uint8_t out[PGOUTPUT_STATUS_BYTES], uint64_t written,
    uint64_t flushed, uint64_t applied, int64_t time, int reply)
{
	out[0] = 'r';
	put_u64(out + 1, written);
	put_u64(out + 9, flushed);
	put_u64(out + 17, applied);
	put_u64(out + 25, (uint64_t)time);
	out[33] = (uint8_t)(reply != 0);
}

/* ---- the relation table ------------------------------------------------- */

static void
relation_free(struct pgoutput_relation *rel)
{
	int i;

	if (rel == NULL)
		return;
	for (i = 0; i < rel->ncols; i++)
		free(rel->cols[i].name);
	free(rel->cols);
	free(rel->schema);
	free(rel->name);
	free(rel);
}

static void
oid_key(uint32_t oid, char key[OID_KEY_MAX])
{
	snprintf(key, OID_KEY_MAX, "%" PRIu32, oid);
}

const struct pgoutput_relation *
pgoutput_relation(const struct pgoutput *p, uint32_t oid)
{
	char key[OID_KEY_MAX];

	oid_key(oid, key);
	return dict_get(p->rels, key);
}

static void
on_free_relation(const char *key, void *value, void *arg)
{
	relation_free(value);
}

struct pgoutput *
pgoutput_new(void)
{
	struct pgoutput *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->magic = PGOUTPUT_MAGIC;
	p->rels = dict_new();
	p->old.cols = calloc(PGOUTPUT_COLUMNS_MAX, sizeof(*p->old.cols));
	p->new.cols = calloc(PGOUTPUT_COLUMNS_MAX, sizeof(*p->new.cols));
	if (p->rels == NULL || p->old.cols == NULL || p->new.cols == NULL)
		pgoutput_free(&p);
	return p;
}

void
pgoutput_free(struct pgoutput **pp)
{
	struct pgoutput *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	assert(p->magic == PGOUTPUT_MAGIC);
	p->magic = 0;
	if (p->rels != NULL)
		dict_foreach(p->rels, on_free_relation, NULL);
	dict_free(&p->rels);
	free(p->old.cols);
	free(p->new.cols);
	free(p->relids);
	free(p->trels);
	free(p);
}

/* ---- messages ----------------------------------------------------------- */

static int
decode_begin(struct reader *r, struct pgoutput_event *ev)
{
	if (get_u64(r, &ev->lsn, "the final LSN") == -1 ||
	    get_i64(r, &ev->time, "the commit time") == -1 ||
	    get_u32(r, &ev->xid, "the xid") == -1)
		return -1;
	return at_end(r);
}

static int
decode_commit(struct reader *r, struct pgoutput_event *ev)
{
	uint8_t flags;

	if (get_u8(r, &flags, "the flags") == -1)
		return -1;
	if (flags != 0) {
		r->off--;
		fail(r, "flags 0x%02x, where version 1 has none", flags);
		return -1;
	}
	if (get_u64(r, &ev->lsn, "the commit LSN") == -1 ||
	    get_u64(r, &ev->end_lsn, "the end LSN") == -1 ||
	    get_i64(r, &ev->time, "the commit time") == -1)
		return -1;
	if (ev->end_lsn < ev->lsn) {
		fail(r, "its end LSN is before its commit LSN");
		return -1;
	}
	return at_end(r);
}

static int
decode_origin(struct reader *r, struct pgoutput_event *ev)
{
	if (get_u64(r, &ev->lsn, "the origin LSN") == -1 ||
	    get_str(r, &ev->name, "the origin name") == -1)
		return -1;
	return at_end(r);
}

static int
decode_type(struct reader *r, struct pgoutput_event *ev)
{
	if (get_u32(r, &ev->type, "the type oid") == -1 ||
	    get_str(r, &ev->schema, "the namespace") == -1 ||
	    get_str(r, &ev->name, "the type name") == -1)
		return -1;
	return at_end(r);
}

/* One column of a Relation message, into col (its name copied). */
static int
relation_column(struct reader *r, struct pgoutput_column *col, int i)
{
	uint32_t type, typmod;
	const char *name;
	uint8_t flags;

	if (get_u8(r, &flags, "a column's flags") == -1)
		return -1;
	if (flags > 1) {
		r->off--;
		fail(r, "column %d's flags 0x%02x", i + 1, flags);
		return -1;
	}
	if (get_str(r, &name, "a column's name") == -1 ||
	    get_u32(r, &type, "a column's type") == -1 ||
	    get_u32(r, &typmod, "a column's typmod") == -1)
		return -1;
	if ((col->name = strdup(name)) == NULL) {
		fail(r, "out of memory");
		return -1;
	}
	col->key = flags;
	col->type = type;
	col->typmod = (int32_t)typmod;
	return 0;
}

/* A Relation message's fields up to its columns, into rel. */
static int
relation_head(struct reader *r, struct pgoutput_relation *rel)
{
	const char *schema, *name;
	uint16_t ncols;
	uint8_t ident;

	if (get_u32(r, &rel->oid, "the relation oid") == -1 ||
	    get_str(r, &schema, "the namespace") == -1 ||
	    get_str(r, &name, "the relation name") == -1 ||
	    get_u8(r, &ident, "the replica identity") == -1)
		return -1;
	if (strchr("dnfi", ident) == NULL || ident == '\0') {
		r->off--;
		fail(r, "replica identity 0x%02x", ident);
		return -1;
	}
	if (get_u16(r, &ncols, "the column count") == -1)
		return -1;
	if ((int16_t)ncols < 0 || ncols > PGOUTPUT_COLUMNS_MAX) {
		r->off -= 2;
		fail(r, "%d columns", (int16_t)ncols);
		return -1;
	}
	rel->identity = (char)ident;
	rel->schema = strdup(schema);
	rel->name = strdup(name);
	rel->cols = calloc(ncols > 0 ? ncols : 1, sizeof(*rel->cols));
	if (rel->schema == NULL || rel->name == NULL || rel->cols == NULL) {
		fail(r, "out of memory");
		return -1;
	}
	return ncols;
}

static int
decode_relation(struct pgoutput *p, struct reader *r, struct pgoutput_event *ev)
{
	struct pgoutput_relation *rel, *was;
	char key[OID_KEY_MAX];
	int i, ncols;

	if ((rel = calloc(1, sizeof(*rel))) == NULL) {
		fail(r, "out of memory");
		return -1;
	}
	if ((ncols = relation_head(r, rel)) == -1)
		goto fail;
	for (i = 0; i < ncols; i++) {
		if (relation_column(r, &rel->cols[i], i) == -1)
			goto fail;
		rel->ncols = i + 1;
	}
	if (at_end(r) == -1)
		goto fail;
	oid_key(rel->oid, key);
	was = dict_get(p->rels, key);
	if (was == NULL && dict_count(p->rels) >= PGOUTPUT_RELATIONS_MAX) {
		fail(r, "more than %d relations", PGOUTPUT_RELATIONS_MAX);
		goto fail;
	}
	if (dict_set(p->rels, key, rel) == -1) {
		fail(r, "out of memory");
		goto fail;
	}
	relation_free(was);
	ev->rel = rel;
	return 0;
fail:
	relation_free(rel);
	return -1;
}

/* TupleData, for rel, into t. */
static int
decode_tuple(struct reader *r, const struct pgoutput_relation *rel,
    struct pgoutput_tuple *t)
{
	uint16_t ncols;
	uint32_t len;
	uint8_t kind;
	int i;

	if (get_u16(r, &ncols, "the tuple's column count") == -1)
		return -1;
	if (ncols != rel->ncols) {
		r->off -= 2;
		fail(r, "%u columns, where relation %" PRIu32 " has %d", ncols,
		    rel->oid, rel->ncols);
		return -1;
	}
	t->ncols = ncols;
	for (i = 0; i < ncols; i++) {
		struct pgoutput_value *v = &t->cols[i];

		memset(v, 0, sizeof(*v));
		if (get_u8(r, &kind, "a column's kind") == -1)
			return -1;
		if (kind == 'n') {
			v->kind = PGOUTPUT_NULL;
		} else if (kind == 'u') {
			v->kind = PGOUTPUT_UNCHANGED;
		} else if (kind == 't') {
			if (get_u32(r, &len, "a column's length") == -1 ||
			    need(r, len, "a column's value") == -1)
				return -1;
			v->kind = PGOUTPUT_TEXT;
			v->data = (const char *)(r->buf + r->off);
			v->len = len;
			r->off += len;
		} else {
			r->off--;
			fail(r, "column %d of kind 0x%02x (binary was not "
			    "asked for)", i + 1, kind);
			return -1;
		}
	}
	return 0;
}

/* A change's relation oid: one the stream described. */
static int
change_relation(struct pgoutput *p, struct reader *r, struct pgoutput_event *ev)
{
	uint32_t oid;

	if (get_u32(r, &oid, "the relation oid") == -1)
		return -1;
	if ((ev->rel = pgoutput_relation(p, oid)) == NULL) {
		r->off -= 4;
		fail(r, "relation %" PRIu32 " was never described", oid);
		return -1;
	}
	return 0;
}

/* One tuple, announced by a byte that must be one of allowed. */
static int
tagged_tuple(struct reader *r, const struct pgoutput_relation *rel,
    const char *allowed, uint8_t *tag, struct pgoutput_tuple *t)
{
	if (get_u8(r, tag, "the tuple's tag") == -1)
		return -1;
	if (*tag == '\0' || strchr(allowed, *tag) == NULL) {
		r->off--;
		fail(r, "tuple tag 0x%02x where %s was due", *tag, allowed);
		return -1;
	}
	return decode_tuple(r, rel, t);
}

static int
decode_change(struct pgoutput *p, struct reader *r, struct pgoutput_event *ev)
{
	uint8_t tag;

	if (change_relation(p, r, ev) == -1)
		return -1;
	switch (ev->kind) {
	case PGOUTPUT_INSERT:
		if (tagged_tuple(r, ev->rel, "N", &tag, &p->new) == -1)
			return -1;
		ev->new = &p->new;
		break;
	case PGOUTPUT_DELETE:
		if (tagged_tuple(r, ev->rel, "KO", &tag, &p->old) == -1)
			return -1;
		ev->old_kind = (char)tag;
		ev->old = &p->old;
		break;
	default:	/* UPDATE: an old row first, maybe */
		if (need(r, 1, "the tuple's tag") == -1)
			return -1;
		if (r->buf[r->off] == 'K' || r->buf[r->off] == 'O') {
			if (tagged_tuple(r, ev->rel, "KO", &tag, &p->old) == -1)
				return -1;
			ev->old_kind = (char)tag;
			ev->old = &p->old;
		}
		if (tagged_tuple(r, ev->rel, "N", &tag, &p->new) == -1)
			return -1;
		ev->new = &p->new;
		break;
	}
	return at_end(r);
}

/* Room for n relids and their relations. */
static int
relids_room(struct pgoutput *p, uint32_t n)
{
	const struct pgoutput_relation **rels;
	uint32_t *ids;

	if ((int)n <= p->relids_cap)
		return 0;
	if ((ids = realloc(p->relids, n * sizeof(*ids))) == NULL)
		return -1;
	p->relids = ids;
	if ((rels = realloc(p->trels, n * sizeof(*rels))) == NULL)
		return -1;
	p->trels = rels;
	p->relids_cap = (int)n;
	return 0;
}

static int
decode_truncate(struct pgoutput *p, struct reader *r, struct pgoutput_event *ev)
{
	uint32_t nrels;
	uint8_t options;
	uint32_t i;

	if (get_u32(r, &nrels, "the relation count") == -1 ||
	    get_u8(r, &options, "the options") == -1)
		return -1;
	if ((options & ~TRUNCATE_OPTIONS) != 0) {
		r->off--;
		fail(r, "options 0x%02x", options);
		return -1;
	}
	if (nrels == 0 || nrels > (r->len - r->off) / 4) {
		size_t left = r->len - r->off;

		r->off -= 5;
		fail(r, "%" PRIu32 " relations in %zu bytes", nrels, left);
		return -1;
	}
	if (relids_room(p, nrels) == -1) {
		fail(r, "out of memory");
		return -1;
	}
	for (i = 0; i < nrels; i++) {
		(void)get_u32(r, &p->relids[i], "a relation oid");
		p->trels[i] = pgoutput_relation(p, p->relids[i]);
		if (p->trels[i] == NULL) {
			r->off -= 4;
			fail(r, "relation %" PRIu32 " was never described",
			    p->relids[i]);
			return -1;
		}
	}
	ev->flags = options;
	ev->nrels = (int)nrels;
	ev->relids = p->relids;
	ev->rels = p->trels;
	return at_end(r);
}

static int
decode_message(struct reader *r, struct pgoutput_event *ev)
{
	uint32_t len;
	uint8_t flags;

	if (get_u8(r, &flags, "the flags") == -1)
		return -1;
	if (flags > 1) {
		r->off--;
		fail(r, "flags 0x%02x", flags);
		return -1;
	}
	if (get_u64(r, &ev->lsn, "the LSN") == -1 ||
	    get_str(r, &ev->name, "the prefix") == -1 ||
	    get_u32(r, &len, "the content length") == -1 ||
	    need(r, len, "the content") == -1)
		return -1;
	ev->flags = flags;
	ev->content = (const char *)(r->buf + r->off);
	ev->content_len = len;
	r->off += len;
	return at_end(r);
}

static const struct {
	char			 type;
	enum pgoutput_kind	 kind;
	const char		*name;
} kinds[] = {
	{ 'B', PGOUTPUT_BEGIN, "Begin" },
	{ 'C', PGOUTPUT_COMMIT, "Commit" },
	{ 'O', PGOUTPUT_ORIGIN, "Origin" },
	{ 'R', PGOUTPUT_RELATION, "Relation" },
	{ 'Y', PGOUTPUT_TYPE, "Type" },
	{ 'I', PGOUTPUT_INSERT, "Insert" },
	{ 'U', PGOUTPUT_UPDATE, "Update" },
	{ 'D', PGOUTPUT_DELETE, "Delete" },
	{ 'T', PGOUTPUT_TRUNCATE, "Truncate" },
	{ 'M', PGOUTPUT_MESSAGE, "Message" },
};

const char *
pgoutput_kind_name(enum pgoutput_kind kind)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == kind)
			return kinds[i].name;
	return "?";
}

int
pgoutput_decode(struct pgoutput *p, const uint8_t *msg, size_t len,
    struct pgoutput_event *ev, char *err, size_t errlen)
{
	struct reader r = { msg, len, 0, "pgoutput message", err, errlen };
	uint8_t type;
	size_t i;

	assert(p->magic == PGOUTPUT_MAGIC);
	memset(ev, 0, sizeof(*ev));
	if (get_u8(&r, &type, "its type") == -1)
		return -1;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].type == (char)type)
			break;
	if (i == sizeof(kinds) / sizeof(kinds[0])) {
		r.off = 0;
		fail(&r, "unknown type 0x%02x", type);
		return -1;
	}
	r.what = kinds[i].name;
	ev->kind = kinds[i].kind;
	switch (ev->kind) {
	case PGOUTPUT_BEGIN:
		return decode_begin(&r, ev);
	case PGOUTPUT_COMMIT:
		return decode_commit(&r, ev);
	case PGOUTPUT_ORIGIN:
		return decode_origin(&r, ev);
	case PGOUTPUT_RELATION:
		return decode_relation(p, &r, ev);
	case PGOUTPUT_TYPE:
		return decode_type(&r, ev);
	case PGOUTPUT_TRUNCATE:
		return decode_truncate(p, &r, ev);
	case PGOUTPUT_MESSAGE:
		return decode_message(&r, ev);
	default:
		return decode_change(p, &r, ev);
	}
}

int64_t
pgoutput_time_ms(int64_t pg_us)
{
	return pg_us / 1000 + PG_EPOCH_MS;
}

int64_t
pgoutput_pg_time(int64_t unix_ms)
{
	return (unix_ms - PG_EPOCH_MS) * 1000;
}
