/* SPDX-License-Identifier: MIT */
/*
 * One libpq connection on a libevent loop (pqconn.h). One persistent
 * event on the socket, made again when the socket or what to watch
 * changes (the socket can while a connection is made: libpq tries each
 * address in turn).
 *
 * Calls libpq, libevent, feed_why.c and common/log.c (the server's
 * notices, which libpq would print on stderr).
 */

#include "changes/pqconn.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes/feed_int.h"
#include "common/log.h"

#define PQCONN_MAGIC		0x5051434eu	/* "PQCN" */

struct pqconn {
	uint32_t		 magic;
	struct event_base	*base;
	PGconn			*pg;
	struct event		*ev;
	evutil_socket_t		 fd;
	short			 what;
	int			 ready;		/* the socket was, since we last looked */
	int			 sent;		/* the query went */
	PGresult		*res;
	pqconn_ready_cb		*cb;
	void			*arg;
	const char		*label;		/* its logs' */
};

/* A NOTICE or WARNING from the server: to the log, in one line. */
static void
on_notice(void *arg, const char *msg)
{
	const struct pqconn *c = arg;

	log_info("%s: the server says: %.*s", c->label,
	    (int)strcspn(msg, "\n"), msg);
}

static void
on_socket(evutil_socket_t fd, short what, void *arg)
{
	struct pqconn *c = arg;

	assert(c->magic == PQCONN_MAGIC);
	c->ready = 1;
	c->cb(c->arg);	/* may close c: not touched after */
}

/* Watches the socket for what (EV_READ, EV_WRITE or both). 0 or -1. */
static int
watch(struct pqconn *c, short what, char *why, size_t whylen)
{
	evutil_socket_t fd = PQsocket(c->pg);

	if (fd < 0) {
		snprintf(why, whylen, "the connection has no socket");
		return -1;
	}
	if (c->ev != NULL && fd == c->fd && what == c->what)
		return 0;
	if (c->ev != NULL)
		event_free(c->ev);
	c->fd = fd;
	c->what = what;
	if ((c->ev = event_new(c->base, fd, what | EV_PERSIST, on_socket,
	    c)) == NULL || event_add(c->ev, NULL) == -1) {
		snprintf(why, whylen, "cannot watch the connection's socket");
		return -1;
	}
	return 0;
}

struct pqconn *
pqconn_start(struct event_base *base, const char *const *keys,
    const char *const *vals, const char *label, pqconn_ready_cb *ready,
    void *arg, char *why, size_t whylen)
{
	struct pqconn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	c->magic = PQCONN_MAGIC;
	c->label = label;
	c->base = base;
	c->fd = -1;
	c->cb = ready;
	c->arg = arg;
	if ((c->pg = PQconnectStartParams(keys, vals, 1)) == NULL) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	if (PQstatus(c->pg) == CONNECTION_BAD) {
		why_conn(c->pg, why, whylen);
		goto fail;
	}
	(void)PQsetNoticeProcessor(c->pg, on_notice, c);
	/* As if PQconnectPoll had said PGRES_POLLING_WRITING. */
	if (watch(c, EV_WRITE, why, whylen) == -1)
		goto fail;
	return c;
fail:
	pqconn_close(&c);
	return NULL;
}

void
pqconn_close(struct pqconn **cp)
{
	struct pqconn *c = *cp;

	if (c == NULL)
		return;
	*cp = NULL;
	assert(c->magic == PQCONN_MAGIC);
	if (c->ev != NULL)
		event_free(c->ev);
	PQclear(c->res);
	if (c->pg != NULL)
		PQfinish(c->pg);
	c->magic = 0;
	free(c);
}

PGconn *
pqconn_pg(const struct pqconn *c)
{
	return c->pg;
}

enum pqconn_result
pqconn_poll(struct pqconn *c, char *why, size_t whylen)
{
	if (!c->ready)
		return PQC_WAIT;
	c->ready = 0;
	switch (PQconnectPoll(c->pg)) {
	case PGRES_POLLING_READING:
		return watch(c, EV_READ, why, whylen) == -1 ? PQC_FAILED :
		    PQC_WAIT;
	case PGRES_POLLING_WRITING:
		return watch(c, EV_WRITE, why, whylen) == -1 ? PQC_FAILED :
		    PQC_WAIT;
	case PGRES_POLLING_OK:
		break;
	default:
		why_conn(c->pg, why, whylen);
		return PQC_FAILED;
	}
	if (PQsetnonblocking(c->pg, 1) == -1) {
		why_conn(c->pg, why, whylen);
		return PQC_FAILED;
	}
	return watch(c, EV_READ, why, whylen) == -1 ? PQC_FAILED : PQC_DONE;
}

int
pqconn_flush(struct pqconn *c, char *why, size_t whylen)
{
	int r = PQflush(c->pg);

	if (r == -1) {
		why_conn(c->pg, why, whylen);
		return -1;
	}
	return watch(c, (short)(r == 1 ? EV_READ | EV_WRITE : EV_READ), why,
	    whylen);
}

/* The results in so far, the first error kept; DONE at the end. */
static enum pqconn_result
collect(struct pqconn *c, const PGresult **res)
{
	PGresult *r;

	while (!PQisBusy(c->pg)) {
		if ((r = PQgetResult(c->pg)) == NULL)
			break;
		if (PQresultStatus(r) == PGRES_COPY_BOTH) {
			/* No more results until the COPY ends. */
			PQclear(c->res);
			c->res = r;
			break;
		}
		if (c->res != NULL && PQresultStatus(c->res) ==
		    PGRES_FATAL_ERROR) {
			PQclear(r);
			continue;
		}
		PQclear(c->res);
		c->res = r;
	}
	if (PQisBusy(c->pg) && (c->res == NULL ||
	    PQresultStatus(c->res) != PGRES_COPY_BOTH))
		return PQC_WAIT;
	*res = c->res;
	return c->res != NULL ? PQC_DONE : PQC_FAILED;
}

enum pqconn_result
pqconn_query(struct pqconn *c, const char *sql, const PGresult **res,
    char *why, size_t whylen)
{
	enum pqconn_result r;

	if (!c->sent) {
		if (!PQsendQuery(c->pg, sql)) {
			why_conn(c->pg, why, whylen);
			return PQC_FAILED;
		}
		c->sent = 1;
	}
	if (pqconn_flush(c, why, whylen) == -1)
		return PQC_FAILED;
	if (!PQconsumeInput(c->pg)) {
		why_conn(c->pg, why, whylen);
		return PQC_FAILED;
	}
	if ((r = collect(c, res)) == PQC_FAILED)
		snprintf(why, whylen, "the server sent no result to: %.80s",
		    sql);
	return r;
}

void
pqconn_forget(struct pqconn *c)
{
	PQclear(c->res);
	c->res = NULL;
	c->sent = 0;
}
