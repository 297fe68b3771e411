/* SPDX-License-Identifier: MIT */
/*
 * The change feed's pure parts: the replication stream's decoder
 * (changes/pgoutput.c) on byte vectors built here, every truncation of
 * each message refused; the assembler's tags (changes/txn.c,
 * changes/rules.c); and the positions and status updates of
 * changes/progress.c.
 */

#include "changes/changes.h"
#include "changes/pgoutput.h"
#include "changes/progress.h"
#include "changes/rules.h"
#include "changes/txn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "tests/unit/unit.h"

#define BUF_MAX		8192
#define OUT_MAX		4096
#define ERR_MAX		256
#define OID_ORDERS	16384
#define OID_ITEMS	16390
#define OID_SALES	16400
#define OID_FULL	16410
#define OID_NOKEY	16420
#define OID_TYPE	16500

/* ---- building messages ------------------------------------------------ */

struct buf {
	uint8_t	 b[BUF_MAX];
	size_t	 n;
};

static void
put8(struct buf *b, unsigned v)
{
	b->b[b->n++] = (uint8_t)v;
}

static void
put16(struct buf *b, unsigned v)
{
	put8(b, (v >> 8) & 0xff);
	put8(b, v & 0xff);
}

static void
put32(struct buf *b, uint32_t v)
{
	put16(b, v >> 16);
	put16(b, v & 0xffff);
}

static void
put64(struct buf *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b, (uint32_t)v);
}

static void
putstr(struct buf *b, const char *s)
{
	size_t n = strlen(s) + 1;

	memcpy(b->b + b->n, s, n);
	b->n += n;
}

static void
putbytes(struct buf *b, const char *s, size_t n)
{
	memcpy(b->b + b->n, s, n);
	b->n += n;
}

/* A column of a Relation message. */
struct col {
	int		 key;
	const char	*name;
};

static void
msg_relation(struct buf *b, uint32_t oid, const char *schema,
    const char *name, char ident, const struct col *cols, int ncols)
{
	int i;

	b->n = 0;
	put8(b, 'R');
	put32(b, oid);
	putstr(b, schema);
	putstr(b, name);
	put8(b, (unsigned)ident);
	put16(b, (unsigned)ncols);
	for (i = 0; i < ncols; i++) {
		put8(b, (unsigned)cols[i].key);
		putstr(b, cols[i].name);
		put32(b, 23);		/* int4 */
		put32(b, 0xffffffffu);	/* typmod -1 */
	}
}

/* TupleData from a spec: one word a column, "n" null, "u" unchanged,
 * anything else its text ("=" for the empty string). */
static void
put_tuple(struct buf *b, const char *const *vals, int ncols)
{
	int i;

	put16(b, (unsigned)ncols);
	for (i = 0; i < ncols; i++) {
		if (strcmp(vals[i], "n") == 0 || strcmp(vals[i], "u") == 0) {
			put8(b, (unsigned)vals[i][0]);
			continue;
		}
		put8(b, 't');
		if (strcmp(vals[i], "=") == 0) {
			put32(b, 0);
			continue;
		}
		put32(b, (uint32_t)strlen(vals[i]));
		putbytes(b, vals[i], strlen(vals[i]));
	}
}

static void
msg_begin(struct buf *b, uint64_t lsn)
{
	b->n = 0;
	put8(b, 'B');
	put64(b, lsn);
	put64(b, 700000000000000ULL);	/* 2022-03-07 */
	put32(b, 742);
}

static void
msg_commit(struct buf *b, uint64_t lsn, uint64_t end)
{
	b->n = 0;
	put8(b, 'C');
	put8(b, 0);
	put64(b, lsn);
	put64(b, end);
	put64(b, 700000000000000ULL);
}

static void
msg_insert(struct buf *b, uint32_t rel, const char *const *vals, int ncols)
{
	b->n = 0;
	put8(b, 'I');
	put32(b, rel);
	put8(b, 'N');
	put_tuple(b, vals, ncols);
}

/* old_kind 0: no old row. */
static void
msg_update(struct buf *b, uint32_t rel, char old_kind,
    const char *const *old, const char *const *new, int ncols)
{
	b->n = 0;
	put8(b, 'U');
	put32(b, rel);
	if (old_kind != 0) {
		put8(b, (unsigned)old_kind);
		put_tuple(b, old, ncols);
	}
	put8(b, 'N');
	put_tuple(b, new, ncols);
}

static void
msg_delete(struct buf *b, uint32_t rel, char kind, const char *const *old,
    int ncols)
{
	b->n = 0;
	put8(b, 'D');
	put32(b, rel);
	put8(b, (unsigned)kind);
	put_tuple(b, old, ncols);
}

static void
msg_truncate(struct buf *b, const uint32_t *rels, int n, unsigned options)
{
	int i;

	b->n = 0;
	put8(b, 'T');
	put32(b, (uint32_t)n);
	put8(b, options);
	for (i = 0; i < n; i++)
		put32(b, rels[i]);
}

static void
msg_message(struct buf *b, int transactional, uint64_t lsn,
    const char *prefix, const char *content)
{
	b->n = 0;
	put8(b, 'M');
	put8(b, (unsigned)transactional);
	put64(b, lsn);
	putstr(b, prefix);
	put32(b, (uint32_t)strlen(content));
	putbytes(b, content, strlen(content));
}

static void
msg_origin(struct buf *b)
{
	b->n = 0;
	put8(b, 'O');
	put64(b, 0x1234);
	putstr(b, "upstream");
}

static void
msg_type(struct buf *b)
{
	b->n = 0;
	put8(b, 'Y');
	put32(b, OID_TYPE);
	putstr(b, "public");
	putstr(b, "mood");
}

/* The frames around a pgoutput message. */
static void
frame_xlog(struct buf *out, uint64_t start, const struct buf *msg)
{
	out->n = 0;
	put8(out, 'w');
	put64(out, start);
	put64(out, start);
	put64(out, 700000000000000ULL);
	putbytes(out, (const char *)msg->b, msg->n);
}

static void
frame_keepalive(struct buf *out, uint64_t end, int reply)
{
	out->n = 0;
	put8(out, 'k');
	put64(out, end);
	put64(out, 700000000000000ULL);
	put8(out, (unsigned)reply);
}

/* ---- the tables the tests use --------------------------------------- */

static const struct col orders_cols[] = {
	{ 1, "id" }, { 0, "customer_id" }, { 0, "note" },
};
static const struct col items_cols[] = {
	{ 1, "order_id" }, { 0, "qty" }, { 1, "line" },
};
static const struct col sales_cols[] = { { 1, "id" } };
static const struct col full_cols[] = { { 1, "id" }, { 1, "name" } };
static const struct col nokey_cols[] = { { 0, "v" } };

/* The buffer the last event points into. */
static uint8_t *decoded_copy;

/* Decodes b with d into ev, from a copy of exactly its size (ASan sees a
 * read past it), kept until the next call; 0 or -1 (err). */
static int
decode(struct pgoutput *d, const struct buf *b, struct pgoutput_event *ev,
    char *err)
{
	free(decoded_copy);
	decoded_copy = malloc(b->n > 0 ? b->n : 1);
	memcpy(decoded_copy, b->b, b->n);
	return pgoutput_decode(d, decoded_copy, b->n, ev, err, ERR_MAX);
}

/* ---- the decoder ------------------------------------------------------ */

static void
t_frames_decode(void)
{
	struct pgoutput_frame fr;
	struct buf msg, b;
	char err[ERR_MAX];

	msg_begin(&msg, 0x16B374D848ULL);
	frame_xlog(&b, 0x16B374D848ULL, &msg);
	CHECK(pgoutput_frame(b.b, b.n, &fr, err, sizeof(err)) == 0);
	CHECK(fr.kind == PGOUTPUT_XLOGDATA);
	CHECK(fr.start_lsn == 0x16B374D848ULL && fr.len == msg.n);
	CHECK(memcmp(fr.data, msg.b, msg.n) == 0);
	frame_keepalive(&b, 0x2000, 1);
	CHECK(pgoutput_frame(b.b, b.n, &fr, err, sizeof(err)) == 0);
	CHECK(fr.kind == PGOUTPUT_KEEPALIVE && fr.end_lsn == 0x2000);
	CHECK(fr.reply == 1 && fr.send_time == 700000000000000LL);
	b.b[0] = 'x';
	CHECK(pgoutput_frame(b.b, b.n, &fr, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown type 0x78") != NULL);
	frame_keepalive(&b, 0x2000, 2);
	CHECK(pgoutput_frame(b.b, b.n, &fr, err, sizeof(err)) == -1);
	CHECK(strstr(err, "Keepalive at offset 17") != NULL);
	frame_keepalive(&b, 0x2000, 0);
	put8(&b, 0);
	CHECK(pgoutput_frame(b.b, b.n, &fr, err, sizeof(err)) == -1);
	CHECK(strstr(err, "1 bytes past its end") != NULL);
}

/* Every prefix of a frame's head is refused, never read past. */
static void
t_frames_truncated_refused(void)
{
	struct pgoutput_frame fr;
	struct buf msg, b;
	char err[ERR_MAX];
	size_t n;

	msg_begin(&msg, 1);
	frame_xlog(&b, 1, &msg);
	for (n = 0; n < 25; n++) {
		uint8_t *copy = malloc(n > 0 ? n : 1);

		memcpy(copy, b.b, n);
		CHECK(pgoutput_frame(copy, n, &fr, err, sizeof(err)) == -1);
		free(copy);
		CHECK(strstr(err, n == 0 ? "CopyData" : "XLogData") != NULL);
	}
	frame_keepalive(&b, 1, 0);
	for (n = 1; n < b.n; n++) {
		uint8_t *copy = malloc(n);

		memcpy(copy, b.b, n);
		CHECK(pgoutput_frame(copy, n, &fr, err, sizeof(err)) == -1);
		free(copy);
		CHECK(strstr(err, "Keepalive at offset") != NULL);
		CHECK(strstr(err, "truncated") != NULL);
	}
}

static struct pgoutput *
decoder_with_tables(void)
{
	struct pgoutput *d = pgoutput_new();
	struct pgoutput_event ev;
	char err[ERR_MAX];
	struct buf b;

	msg_relation(&b, OID_ORDERS, "public", "orders", 'd', orders_cols, 3);
	(void)decode(d, &b, &ev, err);
	msg_relation(&b, OID_ITEMS, "public", "line_items", 'd', items_cols, 3);
	(void)decode(d, &b, &ev, err);
	msg_relation(&b, OID_SALES, "sales", "orders", 'i', sales_cols, 1);
	(void)decode(d, &b, &ev, err);
	msg_relation(&b, OID_FULL, "public", "people", 'f', full_cols, 2);
	(void)decode(d, &b, &ev, err);
	msg_relation(&b, OID_NOKEY, "public", "log", 'n', nokey_cols, 1);
	(void)decode(d, &b, &ev, err);
	return d;
}

static void
t_every_message_decodes(void)
{
	static const char *const row[] = { "1", "9", "n" };
	static const char *const key[] = { "1", "n", "n" };
	static const char *const newrow[] = { "2", "10", "u" };
	static const uint32_t rels[] = { OID_ORDERS, OID_ITEMS };
	struct pgoutput *d = decoder_with_tables();
	struct pgoutput_event ev;
	char err[ERR_MAX];
	struct buf b;
	int ok;

	msg_begin(&b, 0x100);
	ok = decode(d, &b, &ev, err) == 0 && ev.kind == PGOUTPUT_BEGIN &&
	    ev.lsn == 0x100 && ev.xid == 742 && ev.time == 700000000000000LL;
	msg_commit(&b, 0x100, 0x180);
	ok = ok && decode(d, &b, &ev, err) == 0 &&
	    ev.kind == PGOUTPUT_COMMIT && ev.lsn == 0x100 &&
	    ev.end_lsn == 0x180;
	msg_origin(&b);
	ok = ok && decode(d, &b, &ev, err) == 0 &&
	    ev.kind == PGOUTPUT_ORIGIN && strcmp(ev.name, "upstream") == 0;
	msg_type(&b);
	ok = ok && decode(d, &b, &ev, err) == 0 && ev.kind == PGOUTPUT_TYPE &&
	    ev.type == OID_TYPE && strcmp(ev.name, "mood") == 0;
	msg_insert(&b, OID_ORDERS, row, 3);
	ok = ok && decode(d, &b, &ev, err) == 0 &&
	    ev.kind == PGOUTPUT_INSERT && ev.new->ncols == 3 &&
	    ev.new->cols[1].len == 1 && ev.new->cols[1].data[0] == '9' &&
	    ev.new->cols[2].kind == PGOUTPUT_NULL && ev.old == NULL;
	pgoutput_free(&d);
	CHECK(ok);
	d = decoder_with_tables();
	msg_update(&b, OID_ORDERS, 'K', key, newrow, 3);
	ok = decode(d, &b, &ev, err) == 0 && ev.kind == PGOUTPUT_UPDATE &&
	    ev.old_kind == 'K' && ev.old->cols[0].data[0] == '1' &&
	    ev.new->cols[2].kind == PGOUTPUT_UNCHANGED;
	msg_update(&b, OID_ORDERS, 0, NULL, newrow, 3);
	ok = ok && decode(d, &b, &ev, err) == 0 && ev.old == NULL;
	msg_delete(&b, OID_ORDERS, 'O', row, 3);
	ok = ok && decode(d, &b, &ev, err) == 0 &&
	    ev.kind == PGOUTPUT_DELETE && ev.old_kind == 'O';
	msg_truncate(&b, rels, 2, 3);
	ok = ok && decode(d, &b, &ev, err) == 0 &&
	    ev.kind == PGOUTPUT_TRUNCATE && ev.nrels == 2 && ev.flags == 3 &&
	    ev.rels[1]->oid == OID_ITEMS;
	msg_message(&b, 1, 0x200, "corral", "a b");
	ok = ok && decode(d, &b, &ev, err) == 0 &&
	    ev.kind == PGOUTPUT_MESSAGE && ev.flags == 1 && ev.lsn == 0x200 &&
	    strcmp(ev.name, "corral") == 0 && ev.content_len == 3;
	pgoutput_free(&d);
	CHECK(ok);
}

/* The vectors of every message type, for the truncation test. */
static int
vectors(struct buf *v)
{
	static const char *const row[] = { "1", "9", "hello" };
	static const char *const key[] = { "1", "n", "n" };
	static const uint32_t rels[] = { OID_ORDERS };
	int n = 0;

	msg_begin(&v[n++], 0x100);
	msg_commit(&v[n++], 0x100, 0x180);
	msg_origin(&v[n++]);
	msg_relation(&v[n++], 17000, "public", "t", 'd', orders_cols, 3);
	msg_type(&v[n++]);
	msg_insert(&v[n++], OID_ORDERS, row, 3);
	msg_update(&v[n++], OID_ORDERS, 'K', key, row, 3);
	msg_update(&v[n++], OID_ORDERS, 'O', row, row, 3);
	msg_update(&v[n++], OID_ORDERS, 0, NULL, row, 3);
	msg_delete(&v[n++], OID_ORDERS, 'K', key, 3);
	msg_truncate(&v[n++], rels, 1, 0);
	msg_message(&v[n++], 0, 0x200, "corral", "a b");
	return n;
}

/* Every prefix of every message is refused with its type and an offset;
 * each is decoded from a buffer of exactly its length (ASan would see a
 * read past it). */
static void
t_every_truncation_refused(void)
{
	static const char *const names[] = { "Begin", "Commit", "Origin",
	    "Relation", "Type", "Insert", "Update", "Update", "Update",
	    "Delete", "Truncate", "Message" };
	struct pgoutput *d = decoder_with_tables();
	struct pgoutput_event ev;
	struct buf *v = calloc(16, sizeof(*v));
	char err[ERR_MAX];
	int i, nv = vectors(v), bad = 0;
	struct buf cut;
	size_t n;

	for (i = 0; i < nv; i++) {
		if (decode(d, &v[i], &ev, err) != 0) {
			printf("# vector %d refused whole: %s\n", i, err);
			bad++;
		}
		for (n = 0; n < v[i].n; n++) {
			memcpy(cut.b, v[i].b, n);
			cut.n = n;
			if (decode(d, &cut, &ev, err) != -1 ||
			    strstr(err, "at offset") == NULL ||
			    (n > 0 && strstr(err, names[i]) == NULL)) {
				printf("# %s cut at %zu: %s\n", names[i], n,
				    err);
				bad++;
			}
		}
	}
	free(v);
	pgoutput_free(&d);
	CHECK(bad == 0);
}

/* Is b refused, with expect in the error? Says what it got if not. */
static int
refused_with(struct pgoutput *d, const struct buf *b, const char *expect)
{
	struct pgoutput_event ev;
	char err[ERR_MAX] = "";

	if (decode(d, b, &ev, err) == -1 && strstr(err, expect) != NULL)
		return 1;
	printf("# wanted \"%s\", got \"%s\"\n", expect, err);
	return 0;
}

static void
t_malformed_refused_with_offset(void)
{
	static const char *const row[] = { "1", "9", "x" };
	struct pgoutput *d = decoder_with_tables();
	struct buf b;
	int ok = 1;

	msg_insert(&b, OID_ORDERS, row, 3);
	b.b[8] = 'b';		/* the first column's kind: binary */
	ok &= refused_with(d, &b, "Insert at offset 8: column 1 of kind 0x62");
	msg_insert(&b, 99999, row, 3);
	ok &= refused_with(d, &b, "Insert at offset 1: relation 99999 was "
	    "never described");
	msg_insert(&b, OID_ORDERS, row, 2);
	ok &= refused_with(d, &b, "Insert at offset 6: 2 columns, where "
	    "relation 16384 has 3");
	msg_commit(&b, 0x100, 0x180);
	b.b[1] = 4;
	ok &= refused_with(d, &b, "Commit at offset 1: flags 0x04");
	msg_begin(&b, 1);
	put8(&b, 0);
	ok &= refused_with(d, &b, "Begin at offset 21: 1 bytes past its end");
	msg_type(&b);
	b.n--;			/* the name's NUL */
	ok &= refused_with(d, &b, "has no terminating NUL");
	b.n = 0;
	put8(&b, 'Z');
	ok &= refused_with(d, &b, "unknown type 0x5a");
	msg_relation(&b, 17001, "public", "t", 'x', orders_cols, 3);
	ok &= refused_with(d, &b, "replica identity 0x78");
	ok &= pgoutput_relation(d, 17001) == NULL;
	pgoutput_free(&d);
	CHECK(ok);
}

static void
t_relation_replaced_on_schema_change(void)
{
	static const struct col two[] = { { 1, "id" }, { 0, "a" } };
	static const struct col three[] = { { 1, "id" }, { 0, "a" },
	    { 0, "b" } };
	static const char *const row2[] = { "1", "x" };
	static const char *const row3[] = { "1", "x", "y" };
	struct pgoutput *d = pgoutput_new();
	const struct pgoutput_relation *rel;
	struct pgoutput_event ev;
	char err[ERR_MAX];
	struct buf b;
	int ok;

	msg_relation(&b, 17100, "public", "t", 'd', two, 2);
	ok = decode(d, &b, &ev, err) == 0;
	msg_insert(&b, 17100, row2, 2);
	ok = ok && decode(d, &b, &ev, err) == 0;
	msg_relation(&b, 17100, "public", "t2", 'f', three, 3);
	ok = ok && decode(d, &b, &ev, err) == 0;
	rel = pgoutput_relation(d, 17100);
	ok = ok && rel != NULL && rel->ncols == 3 && rel->identity == 'f' &&
	    strcmp(rel->name, "t2") == 0 && strcmp(rel->cols[2].name, "b") == 0;
	msg_insert(&b, 17100, row2, 2);
	ok = ok && decode(d, &b, &ev, err) == -1;
	msg_insert(&b, 17100, row3, 3);
	ok = ok && decode(d, &b, &ev, err) == 0 && ev.new->ncols == 3;
	pgoutput_free(&d);
	CHECK(ok);
}

/* ---- the assembler ---------------------------------------------------- */

struct asm_ctx {
	struct pgoutput		*dec;
	struct txn		*txn;
	int			 ready;		/* outputs so far */
	char			 tags[OUT_MAX];	/* the last one's, joined */
	enum changes_breadth	 breadth;
	size_t			 n;
	uint64_t		 lsn;
	char			 err[ERR_MAX];
	enum txn_result		 last;
};

static void
asm_init(struct asm_ctx *c, const struct changes_rule *rules, size_t n)
{
	memset(c, 0, sizeof(*c));
	c->dec = decoder_with_tables();
	c->txn = txn_new(rules, n, 0, c->err, sizeof(c->err));
}

static void
asm_done(struct asm_ctx *c)
{
	pgoutput_free(&c->dec);
	txn_free(&c->txn);
}

static void
asm_output(struct asm_ctx *c)
{
	const struct changes_commit *o = txn_output(c->txn);
	size_t i;

	c->ready++;
	c->tags[0] = '\0';
	for (i = 0; i < o->n; i++) {
		if (i > 0)
			strcat(c->tags, " ");
		strncat(c->tags, o->tags[i], OUT_MAX - strlen(c->tags) - 2);
	}
	c->breadth = o->breadth;
	c->n = o->n;
	c->lsn = o->lsn;
}

static enum txn_result
add(struct asm_ctx *c, const struct buf *b)
{
	struct pgoutput_event ev;

	if (decode(c->dec, b, &ev, c->err) == -1)
		return c->last = TXN_ERROR;
	c->last = txn_add(c->txn, &ev, c->err, sizeof(c->err));
	if (c->last == TXN_READY)
		asm_output(c);
	return c->last;
}

static void
begin(struct asm_ctx *c)
{
	struct buf b;

	msg_begin(&b, 0x500);
	(void)add(c, &b);
}

static enum txn_result
commit(struct asm_ctx *c)
{
	struct buf b;

	msg_commit(&b, 0x500, 0x580);
	return add(c, &b);
}

static void
t_insert_purges_row_and_table_at_commit(void)
{
	static const char *const row[] = { "1", "9", "n" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_insert(&b, OID_ORDERS, row, 3);
	CHECK(add(&c, &b) == TXN_MORE && c.ready == 0);
	CHECK(commit(&c) == TXN_READY);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:1 orders");
	CHECK(c.lsn == 0x580 && c.breadth == CHANGES_EXACT);
}

static void
t_update_purges_row_only(void)
{
	static const char *const row[] = { "1", "10", "u" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_update(&b, OID_ORDERS, 0, NULL, row, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:1");
}

static void
t_update_of_key_purges_old_new_and_table(void)
{
	static const char *const old[] = { "1", "n", "n" };
	static const char *const row[] = { "2", "10", "x" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_update(&b, OID_ORDERS, 'K', old, row, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:2 orders:1 orders");
}

static void
t_delete_and_truncate_purge_table(void)
{
	static const char *const old[] = { "7", "n", "n" };
	static const uint32_t rels[] = { OID_ORDERS, OID_SALES };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_delete(&b, OID_ORDERS, 'K', old, 3);
	(void)add(&c, &b);
	msg_truncate(&b, rels, 2, 0);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:7 orders sales.orders");
}

static void
t_composite_key_and_schema(void)
{
	static const char *const item[] = { "7", "2", "3" };
	static const char *const sale[] = { "5" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_insert(&b, OID_ITEMS, item, 3);
	(void)add(&c, &b);
	msg_insert(&b, OID_SALES, sale, 1);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "line_items:7,3 line_items sales.orders:5 "
	    "sales.orders");
}

static void
t_values_escaped(void)
{
	static const char *const row[] = { "a b:c,d%\xc3\xa9~_.-", "n", "n" };
	char out[64];
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_insert(&b, OID_ORDERS, row, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:a%20b%3Ac%2Cd%25%C3%A9~_.- orders");
	CHECK(rules_escape("", 0, out, sizeof(out)) == 0 && out[0] == '\0');
	CHECK(rules_escape("abc", 3, out, 3) == -1);
	CHECK(rules_escape(":", 1, out, 3) == -1);
	CHECK(rules_escape(":", 1, out, 4) == 3);
}

static void
t_full_or_no_identity_purges_table_only(void)
{
	static const char *const person[] = { "1", "ann" };
	static const char *const line[] = { "x" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_update(&b, OID_FULL, 'O', person, person, 2);
	(void)add(&c, &b);
	msg_insert(&b, OID_NOKEY, line, 1);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "people log");
}

static const struct changes_rule order_rule[] = {
	{ "orders", "orders:{id} customers:{customer_id} orders", 0 },
	{ "public.people", "person:{id}/{name} people", 0 },
};

static void
t_rule_templates_on_insert(void)
{
	static const char *const row[] = { "1", "9", "n" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, order_rule, 2);
	begin(&c);
	msg_insert(&b, OID_ORDERS, row, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:1 customers:9 orders");
}

/* REPLICA IDENTITY FULL: the old row is known, both values purge. */
static void
t_rule_update_purges_old_and_new_value(void)
{
	static const char *const old[] = { "1", "ann" };
	static const char *const row[] = { "1", "bob" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, order_rule, 2);
	begin(&c);
	msg_update(&b, OID_FULL, 'O', old, row, 2);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "person:1/bob people person:1/ann");
}

/* No old row: customer_id's old value is unknown, so its broad tag. */
static void
t_rule_update_unknown_old_value_purges_broad(void)
{
	static const char *const row[] = { "1", "10", "u" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, order_rule, 2);
	begin(&c);
	msg_update(&b, OID_ORDERS, 0, NULL, row, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:1 customers:10 orders customers:*");
}

/* A hard rule's tags are hard, the default rule's and messages' follow
 * the configuration; a tag both name is hard. */
static void
t_hard_rules_mark_their_tags(void)
{
	static const struct changes_rule hard_rule[] = {
		{ "orders", "orders:{id} shared", 1 },
		{ "public.people", "person:{id} shared", 0 },
	};
	static const char *const row[] = { "1", "9", "n" };
	static const char *const person[] = { "5", "ann" };
	static const char *const line[] = { "3", "1", "2" };
	const struct changes_commit *o;
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, hard_rule, 2);
	begin(&c);
	msg_insert(&b, OID_FULL, person, 2);
	(void)add(&c, &b);
	msg_insert(&b, OID_ORDERS, row, 3);
	(void)add(&c, &b);
	msg_insert(&b, OID_ITEMS, line, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	o = txn_output(c.txn);
	CHECK_STR(c.tags, "person:5 shared orders:1 line_items:3,2 line_items");
	CHECK(o->hard != NULL && !o->hard[0] && o->hard[1] && o->hard[2] &&
	    !o->hard[3] && !o->hard[4]);
	asm_done(&c);
	asm_init(&c, NULL, 0);
	begin(&c);
	msg_insert(&b, OID_ITEMS, line, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	CHECK(txn_output(c.txn)->hard == NULL);
	asm_done(&c);
}

/* A NULL value gives no tag; a delete's 'K' row knows only the key. */
static void
t_rule_null_and_key_only_rows(void)
{
	static const char *const row[] = { "1", "n", "n" };
	static const char *const old[] = { "2", "n", "n" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, order_rule, 2);
	begin(&c);
	msg_insert(&b, OID_ORDERS, row, 3);
	(void)add(&c, &b);
	msg_delete(&b, OID_ORDERS, 'K', old, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:1 orders orders:2 customers:*");
}

static void
t_rule_truncate_purges_broad_tags(void)
{
	static const uint32_t rels[] = { OID_ORDERS };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, order_rule, 2);
	begin(&c);
	msg_truncate(&b, rels, 1, 1);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:* customers:* orders");
}

static void
t_rule_names_missing_column(void)
{
	static const struct changes_rule bad[] = {
		{ "orders", "orders:{idd}", 0 },
	};
	static const char *const row[] = { "1", "9", "n" };
	struct asm_ctx c;
	struct buf b;
	int noted;

	asm_init(&c, bad, 1);
	msg_relation(&b, OID_ORDERS, "public", "orders", 'd', orders_cols, 3);
	noted = add(&c, &b) == TXN_NOTE && strstr(c.err, "column idd") != NULL;
	begin(&c);
	msg_insert(&b, OID_ORDERS, row, 3);
	(void)add(&c, &b);
	(void)commit(&c);
	asm_done(&c);
	CHECK(noted);
	CHECK_STR(c.tags, "orders:*");
}

static void
t_rules_refused(void)
{
	static const struct changes_rule bad[][2] = {
		{ { "orders", "orders:{id", 0 } },
		{ { "orders", "orders:{}", 0 } },
		{ { "orders", "a}b", 0 } },
		{ { "orders", "   ", 0 } },
		{ { "a.b.c", "x", 0 } },
		{ { ".t", "x", 0 } },
		{ { "orders", "x", 0 }, { "public.orders", "y", 0 } },
	};
	static const size_t nbad[] = { 1, 1, 1, 1, 1, 1, 2 };
	char err[ERR_MAX];
	struct rules *r;
	size_t i;

	for (i = 0; i < sizeof(nbad) / sizeof(nbad[0]); i++) {
		err[0] = '\0';
		r = rules_new(bad[i], nbad[i], 0, err, sizeof(err));
		CHECK(r == NULL && err[0] != '\0');
	}
	r = rules_new(order_rule, 2, 0, err, sizeof(err));
	CHECK(r != NULL);
	rules_free(&r);
}

static void
t_messages_at_commit_or_at_once(void)
{
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_message(&b, 1, 0x510, "corral", "a  b\ta");
	CHECK(add(&c, &b) == TXN_MORE && c.ready == 0);
	msg_message(&b, 1, 0x520, "other", "zzz");
	CHECK(add(&c, &b) == TXN_MORE);
	CHECK(commit(&c) == TXN_READY);
	CHECK_STR(c.tags, "a b");
	msg_message(&b, 0, 0x600, "corral", "now later");
	CHECK(add(&c, &b) == TXN_READY && c.ready == 2);
	CHECK_STR(c.tags, "now later");
	CHECK(c.lsn == 0x600);
	msg_message(&b, 1, 0x610, "corral", "x");
	CHECK(add(&c, &b) == TXN_ERROR);	/* outside a transaction */
	asm_done(&c);
}

static void
t_one_row_three_times_tags_once(void)
{
	static const char *const row[] = { "1", "9", "n" };
	struct asm_ctx c;
	struct buf b;
	int i;

	asm_init(&c, NULL, 0);
	begin(&c);
	for (i = 0; i < 3; i++) {
		msg_update(&b, OID_ORDERS, 0, NULL, row, 3);
		(void)add(&c, &b);
	}
	(void)commit(&c);
	asm_done(&c);
	CHECK_STR(c.tags, "orders:1");
}

static void
t_nothing_without_commit(void)
{
	static const char *const row[] = { "1", "9", "n" };
	struct asm_ctx c;
	struct buf b;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_insert(&b, OID_ORDERS, row, 3);
	(void)add(&c, &b);
	CHECK(txn_open(c.txn));
	txn_reset(c.txn);	/* the connection was lost */
	CHECK(!txn_open(c.txn));
	CHECK(commit(&c) == TXN_ERROR && c.ready == 0);
	msg_insert(&b, OID_ORDERS, row, 3);
	CHECK(add(&c, &b) == TXN_ERROR);
	begin(&c);
	msg_begin(&b, 0x900);
	CHECK(add(&c, &b) == TXN_ERROR);	/* a Begin inside one */
	msg_commit(&b, 0x901, 0x980);
	CHECK(add(&c, &b) == TXN_ERROR);	/* not its Begin's */
	asm_done(&c);
	CHECK(c.ready == 0);
}

static void
t_bound_collapses_to_broad_tags(void)
{
	static const char *row[] = { NULL, "9", "n" };
	static const char *const item[] = { "1", "1", "1" };
	char id[16];
	struct asm_ctx c;
	struct buf b;
	int i;

	asm_init(&c, NULL, 0);
	begin(&c);
	msg_insert(&b, OID_ITEMS, item, 3);
	(void)add(&c, &b);
	for (i = 0; i <= CHANGES_TXN_TAGS_MAX; i++) {
		snprintf(id, sizeof(id), "%d", i);
		row[0] = id;
		msg_update(&b, OID_ORDERS, 0, NULL, row, 3);
		(void)add(&c, &b);
	}
	(void)commit(&c);
	asm_done(&c);
	CHECK(c.breadth == CHANGES_BROAD);
	CHECK_STR(c.tags, "line_items:* line_items orders:*");
}

/* A transactional message with more distinct tags than the bound: even
 * the broad set overflows, and the commit says to purge everything. */
static void
t_bound_of_broad_tags_purges_everything(void)
{
	size_t len = 0, n, cap = (size_t)(CHANGES_TXN_TAGS_MAX + 1) * 8;
	uint8_t *m = malloc(1 + 1 + 8 + 7 + 4 + cap);
	struct pgoutput_event ev;
	struct asm_ctx c;
	int i, decoded, added;

	for (i = 0; i <= CHANGES_TXN_TAGS_MAX; i++)
		len += (size_t)sprintf((char *)m + 21 + len, "t%d ", i);
	m[0] = 'M';
	m[1] = 1;			/* transactional */
	memset(m + 2, 0, 8);		/* its LSN */
	memcpy(m + 10, "corral", 7);
	m[17] = (uint8_t)(len >> 24);
	m[18] = (uint8_t)(len >> 16);
	m[19] = (uint8_t)(len >> 8);
	m[20] = (uint8_t)len;
	n = 21 + len;
	asm_init(&c, NULL, 0);
	begin(&c);
	decoded = pgoutput_decode(c.dec, m, n, &ev, c.err, ERR_MAX) == 0;
	added = decoded && txn_add(c.txn, &ev, c.err, ERR_MAX) == TXN_MORE;
	free(m);
	(void)commit(&c);
	asm_done(&c);
	CHECK(decoded && added);
	CHECK(c.breadth == CHANGES_EVERYTHING && c.n == 0);
}

static void
t_payload_as_tags(void)
{
	char err[ERR_MAX];
	struct txn *t = txn_new(NULL, 0, 0, err, sizeof(err));
	const struct changes_commit *o;
	char long_tag[CHANGES_TAG_MAX + 8];
	char payload[CHANGES_TAG_MAX + 32];

	memset(long_tag, 'x', sizeof(long_tag) - 1);
	long_tag[sizeof(long_tag) - 1] = '\0';
	snprintf(payload, sizeof(payload), "a %s b a", long_tag);
	CHECK(txn_payload(t, payload, strlen(payload), 0, err,
	    sizeof(err)) == TXN_READY);
	o = txn_output(t);
	CHECK(o->n == 2 && strcmp(o->tags[0], "a") == 0 &&
	    strcmp(o->tags[1], "b") == 0 && o->lsn == 0);
	CHECK(strstr(err, "1 tags over 128 bytes") != NULL);
	txn_free(&t);
}

/* ---- progress: positions and acknowledgements ---------------------- */

struct seen {
	int		 commits;
	uint64_t	 lsn;
	char		 tags[OUT_MAX];
};

static void
on_commit(const struct changes_commit *c, void *arg)
{
	struct seen *s = arg;
	size_t i;

	s->commits++;
	s->lsn = c->lsn;
	s->tags[0] = '\0';
	for (i = 0; i < c->n; i++) {
		strcat(s->tags, i > 0 ? " " : "");
		strcat(s->tags, c->tags[i]);
	}
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The flush position of a status update now. */
static uint64_t
flushed(const struct progress *p)
{
	uint8_t m[PGOUTPUT_STATUS_BYTES];

	progress_status(p, m, 0);
	return m[0] == 'r' && get64(m + 9) == get64(m + 17) ? get64(m + 9) :
	    UINT64_MAX;
}

/* One pgoutput message through the frame, at lsn. */
static int
stream(struct progress *p, uint64_t lsn, const struct buf *msg, char *why)
{
	struct buf fr;
	int reply = 0;

	frame_xlog(&fr, lsn, msg);
	return progress_data(p, fr.b, fr.n, &reply, why, ERR_MAX);
}

static void
one_commit(struct progress *p, char *why)
{
	static const struct col cols[] = { { 1, "id" } };
	static const char *const row[] = { "4" };
	struct buf b;

	msg_relation(&b, 18000, "public", "t", 'd', cols, 1);
	(void)stream(p, 0x1000, &b, why);
	msg_begin(&b, 0x1100);
	(void)stream(p, 0x1000, &b, why);
	msg_insert(&b, 18000, row, 1);
	(void)stream(p, 0x1010, &b, why);
	msg_commit(&b, 0x1100, 0x1180);
	(void)stream(p, 0x1100, &b, why);
}

static void
t_progress_flushes_only_what_was_acknowledged(void)
{
	char why[ERR_MAX], err[ERR_MAX];
	struct seen s = { 0 };
	struct progress *p = progress_new(NULL, 0, 0, "changes", on_commit, &s,
	    err, sizeof(err));
	struct changes_figures fig;
	struct buf k;
	int reply = 0;

	progress_raise(p, 0x800);	/* the slot's position */
	one_commit(p, why);
	CHECK(s.commits == 1 && s.lsn == 0x1180);
	CHECK_STR(s.tags, "t:4 t");
	CHECK(flushed(p) == 0x800);
	frame_keepalive(&k, 0x2000, 1);	/* not acknowledged: no move */
	CHECK(progress_data(p, k.b, k.n, &reply, why, sizeof(why)) == 0);
	CHECK(reply == 1 && flushed(p) == 0x800);
	progress_ack(p, 0x9999);	/* no further than delivered */
	CHECK(flushed(p) == 0x1180);
	frame_keepalive(&k, 0x3000, 0);	/* all acknowledged: idle moves */
	CHECK(progress_data(p, k.b, k.n, &reply, why, sizeof(why)) == 0);
	CHECK(flushed(p) == 0x3000);
	memset(&fig, 0, sizeof(fig));
	progress_figures(p, &fig);
	CHECK(fig.server_lsn == 0x3000 && fig.acked_lsn == 0x3000 &&
	    fig.lag_bytes == 0 && fig.commits == 1 && fig.tags == 2);
	CHECK(fig.last_commit_ms == 946684800000LL + 700000000000LL);
	progress_free(&p);
}

static void
t_progress_malformed_names_lsn_and_keeps_ack(void)
{
	static const char *const row[] = { "4" };
	char why[ERR_MAX], err[ERR_MAX];
	struct seen s = { 0 };
	struct progress *p = progress_new(NULL, 0, 0, "changes", on_commit, &s,
	    err, sizeof(err));
	struct buf b;

	one_commit(p, why);
	progress_ack(p, 0x1180);
	msg_begin(&b, 0x2100);
	CHECK(stream(p, 0x2000, &b, why) == 0);
	msg_insert(&b, 18000, row, 1);
	b.n -= 2;		/* cut */
	CHECK(stream(p, 0x2010, &b, why) == -1);
	CHECK(strstr(why, "malformed message at LSN 0/2010: Insert at "
	    "offset") != NULL);
	CHECK(strstr(why, "without acknowledging") != NULL);
	progress_reset(p);	/* reconnect: the Begin comes again */
	CHECK(flushed(p) == 0x1180 && s.commits == 1);
	msg_begin(&b, 0x2100);
	CHECK(stream(p, 0x2000, &b, why) == 0);
	progress_free(&p);
}

static void
t_lsn_text(void)
{
	char out[CHANGES_LSN_LEN];
	uint64_t lsn;

	changes_lsn_format(0x16B374D848ULL, out);
	CHECK_STR(out, "16/B374D848");
	changes_lsn_format(UINT64_MAX, out);
	CHECK_STR(out, "FFFFFFFF/FFFFFFFF");
	CHECK(changes_lsn_parse("16/b374d848", &lsn) == 0 &&
	    lsn == 0x16B374D848ULL);
	CHECK(changes_lsn_parse("0/0", &lsn) == 0 && lsn == 0);
	CHECK(changes_lsn_parse("/1", &lsn) == -1);
	CHECK(changes_lsn_parse("1/", &lsn) == -1);
	CHECK(changes_lsn_parse("1/2/3", &lsn) == -1);
	CHECK(changes_lsn_parse("123456789/0", &lsn) == -1);
	CHECK(changes_lsn_parse("g/0", &lsn) == -1);
}

static void
on_ignore(const struct changes_commit *c, void *arg)
{
}

static void
t_config_checked(void)
{
	struct changes_config cfg = {
		.mode = CHANGES_REPLICATION, .conninfo = "dbname=app",
		.slot = "corral_feed", .publication = "Corral_pub",
		.on_commit = on_ignore,
	};
	char err[ERR_MAX];

	CHECK(changes_check(&cfg, err, sizeof(err)) == 0);
	cfg.slot = "Corral";
	CHECK(changes_check(&cfg, err, sizeof(err)) == -1 &&
	    strstr(err, "slot") != NULL);
	cfg.slot = "s";
	cfg.publication = "pub'; DROP";
	CHECK(changes_check(&cfg, err, sizeof(err)) == -1);
	cfg.publication = "pub";
	cfg.status_interval_ms = 60000;
	CHECK(changes_check(&cfg, err, sizeof(err)) == -1);
	cfg.status_interval_ms = 0;
	cfg.rules = order_rule;
	cfg.nrules = 2;
	CHECK(changes_check(&cfg, err, sizeof(err)) == 0);
	cfg.mode = CHANGES_NOTIFY;
	CHECK(changes_check(&cfg, err, sizeof(err)) == -1);
	cfg.channel = "corral_tags";
	CHECK(changes_check(&cfg, err, sizeof(err)) == 0);
}

int
main(void)
{
	log_set_level(LOGL_ERROR);
	RUN(t_frames_decode);
	RUN(t_frames_truncated_refused);
	RUN(t_every_message_decodes);
	RUN(t_every_truncation_refused);
	RUN(t_malformed_refused_with_offset);
	RUN(t_relation_replaced_on_schema_change);
	RUN(t_insert_purges_row_and_table_at_commit);
	RUN(t_update_purges_row_only);
	RUN(t_update_of_key_purges_old_new_and_table);
	RUN(t_delete_and_truncate_purge_table);
	RUN(t_composite_key_and_schema);
	RUN(t_values_escaped);
	RUN(t_full_or_no_identity_purges_table_only);
	RUN(t_rule_templates_on_insert);
	RUN(t_rule_update_purges_old_and_new_value);
	RUN(t_rule_update_unknown_old_value_purges_broad);
	RUN(t_hard_rules_mark_their_tags);
	RUN(t_rule_null_and_key_only_rows);
	RUN(t_rule_truncate_purges_broad_tags);
	RUN(t_rule_names_missing_column);
	RUN(t_rules_refused);
	RUN(t_messages_at_commit_or_at_once);
	RUN(t_one_row_three_times_tags_once);
	RUN(t_nothing_without_commit);
	RUN(t_bound_collapses_to_broad_tags);
	RUN(t_bound_of_broad_tags_purges_everything);
	RUN(t_payload_as_tags);
	RUN(t_progress_flushes_only_what_was_acknowledged);
	RUN(t_progress_malformed_names_lsn_and_keeps_ack);
	RUN(t_lsn_text);
	RUN(t_config_checked);
	free(decoded_copy);
	return unit_exit();
}
