/* SPDX-License-Identifier: MIT */
/*
 * How far the feed has come (progress.h): the stream's messages through
 * the decoder and the assembler to the caller, and the positions that
 * say what the server may forget.
 *
 * Calls pgoutput.c, txn.c, common/log.c, common/util.c. No I/O.
 */

#include "changes/progress.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes/txn.h"
#include "common/log.h"
#include "common/util.h"

#define PROGRESS_MAGIC		0x50524f47u	/* "PROG" */

struct progress {
	uint32_t		 magic;
	struct pgoutput		*dec;
	struct txn		*txn;
	changes_commit_cb	*on_commit;
	void			*arg;
	const char		*label;		/* its logs' */
	uint64_t		 received;	/* the last position received */
	uint64_t		 delivered;	/* the last commit handed out */
	uint64_t		 acked;		/* what the server may forget */
	uint64_t		 server;	/* the server's, as last told */
	struct changes_figures	 fig;		/* the counters */
};

static void
lift(uint64_t *at, uint64_t lsn)
{
	if (lsn > *at)
		*at = lsn;
}

/* A commit (or a message, or a NOTIFY) to the caller. One with no tags
 * (a transaction of other prefixes' messages) is applied as it is: at
 * once if nothing waits for its acknowledgement, or by a keepalive once
 * the caller caught up. */
static void
deliver(struct progress *p)
{
	const struct changes_commit *c = txn_output(p->txn);
	char at[CHANGES_LSN_LEN];

	if (c->n == 0 && c->breadth == CHANGES_EXACT) {
		if (p->acked >= p->delivered) {
			lift(&p->acked, c->lsn);
			lift(&p->delivered, c->lsn);
		}
		return;
	}

	if (c->breadth != CHANGES_EXACT) {
		p->fig.broadened++;
		changes_lsn_format(c->lsn, at);
		log_warn("%s: the transaction ending at %s changed over "
		    "%d distinct tags: %s", p->label, at, CHANGES_TXN_TAGS_MAX,
		    c->breadth == CHANGES_BROAD ? "purging the broad tags of "
		    "its tables instead" : "purging everything");
	}
	p->fig.commits++;
	p->fig.tags += c->n;
	lift(&p->delivered, c->lsn);
	if (c->time_ms != 0)
		p->fig.last_commit_ms = c->time_ms;
	p->on_commit(c, p->arg);
}

/* A message that makes no sense, named with where it was. */
static int
malformed(struct progress *p, uint64_t lsn, const char *err, char *why,
    size_t whylen)
{
	char at[CHANGES_LSN_LEN];

	p->fig.malformed++;
	changes_lsn_format(lsn, at);
	snprintf(why, whylen, "malformed message at LSN %s: %s; reconnecting "
	    "without acknowledging past it", at, err);
	return -1;
}

/* Where the server is; with every commit handed out acknowledged and
 * none open, its position counts as acknowledged too. */
static void
keepalive(struct progress *p, const struct pgoutput_frame *fr)
{
	lift(&p->server, fr->end_lsn);
	lift(&p->received, fr->end_lsn);
	if (!txn_open(p->txn) && p->acked >= p->delivered) {
		lift(&p->acked, fr->end_lsn);
		lift(&p->delivered, p->acked);
	}
}

int
progress_data(struct progress *p, const uint8_t *buf, size_t len, int *reply,
    char *why, size_t whylen)
{
	char err[CHANGES_ERR_MAX];
	struct pgoutput_frame fr;
	struct pgoutput_event ev;

	assert(p->magic == PROGRESS_MAGIC);
	if (pgoutput_frame(buf, len, &fr, err, sizeof(err)) == -1)
		return malformed(p, p->received, err, why, whylen);
	if (fr.kind == PGOUTPUT_KEEPALIVE) {
		keepalive(p, &fr);
		*reply |= fr.reply;
		return 0;
	}
	lift(&p->received, fr.start_lsn);
	lift(&p->server, fr.end_lsn);
	if (pgoutput_decode(p->dec, fr.data, fr.len, &ev, err,
	    sizeof(err)) == -1)
		return malformed(p, fr.start_lsn, err, why, whylen);
	switch (txn_add(p->txn, &ev, err, sizeof(err))) {
	case TXN_ERROR:
		return malformed(p, fr.start_lsn, err, why, whylen);
	case TXN_NOTE:
		log_warn("%s: %s", p->label, err);
		break;
	case TXN_READY:
		if (err[0] != '\0')
			log_warn("%s: %s", p->label, err);
		deliver(p);
		break;
	case TXN_MORE:
		break;
	}
	return 0;
}

int
progress_payload(struct progress *p, const char *payload, char *why,
    size_t whylen)
{
	assert(p->magic == PROGRESS_MAGIC);
	if (txn_payload(p->txn, payload, strlen(payload), 0, why, whylen) ==
	    TXN_ERROR)
		return -1;
	if (why[0] != '\0')
		log_warn("%s: %s", p->label, why);
	deliver(p);
	return 0;
}

void
progress_reset(struct progress *p)
{
	txn_reset(p->txn);
}

void
progress_ack(struct progress *p, uint64_t lsn)
{
	assert(p->magic == PROGRESS_MAGIC);
	lift(&p->acked, lsn < p->delivered ? lsn : p->delivered);
}

void
progress_raise(struct progress *p, uint64_t lsn)
{
	lift(&p->acked, lsn);
	lift(&p->delivered, lsn);
}

uint64_t
progress_acked(const struct progress *p)
{
	return p->acked;
}

int
progress_unacked(const struct progress *p)
{
	return p->delivered > p->acked;
}

void
progress_server(struct progress *p, uint64_t lsn)
{
	lift(&p->server, lsn);
}

void
progress_status(const struct progress *p, uint8_t out[PGOUTPUT_STATUS_BYTES],
    int reply)
{
	pgoutput_status(out, p->received > p->acked ? p->received : p->acked,
	    p->acked, p->acked, pgoutput_pg_time(util_now_ms()), reply);
}

void
progress_figures(const struct progress *p, struct changes_figures *out)
{
	out->received_lsn = p->received;
	out->delivered_lsn = p->delivered;
	out->acked_lsn = p->acked;
	out->server_lsn = p->server;
	out->lag_bytes = p->server > p->acked ? p->server - p->acked : 0;
	out->last_commit_ms = p->fig.last_commit_ms;
	out->commit_age_ms = p->fig.last_commit_ms == 0 ? -1 :
	    util_now_ms() - p->fig.last_commit_ms;
	out->commits = p->fig.commits;
	out->tags = p->fig.tags;
	out->broadened = p->fig.broadened;
	out->malformed = p->fig.malformed;
}

struct progress *
progress_new(const struct changes_rule *rules, size_t nrules, int hard,
    const char *label, changes_commit_cb *on_commit, void *arg, char *err,
    size_t errlen)
{
	struct progress *p;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->magic = PROGRESS_MAGIC;
	p->on_commit = on_commit;
	p->arg = arg;
	p->label = label;
	if ((p->txn = txn_new(rules, nrules, hard, err, errlen)) == NULL)
		goto fail;
	if ((p->dec = pgoutput_new()) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return p;
fail:
	progress_free(&p);
	return NULL;
}

void
progress_free(struct progress **pp)
{
	struct progress *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	assert(p->magic == PROGRESS_MAGIC);
	pgoutput_free(&p->dec);
	txn_free(&p->txn);
	p->magic = 0;
	free(p);
}
