/* SPDX-License-Identifier: MIT */
/*
 * The change feed's connection (changes.h), on the caller's libevent loop
 * with libpq in non-blocking mode: every step waits for the socket's
 * events or the one timer, never blocks.
 *
 *	CONNECT -> POLL -> IDENTIFY -> CHECK -> START -> STREAM
 *	                               CHECK -> CREATE -> START  (no slot yet)
 *	                               CHECK -> DROP -> CREATE   (slot lost)
 *	           POLL -> LISTEN -> NOTIFY                      (mode notify)
 *	any step -> DOWN -> WAIT -> CONNECT ...  (after a backoff, doubled)
 *
 * Each step is one function that returns the next step, or ST_PARK to
 * wait; feed_run() drives them and runs each step's entry (enter()).
 * The socket and timer callbacks only note what happened and re-enter
 * feed_run(). The caller's callbacks run from inside steps; a
 * changes_stop() from one of them is noted (stopping) and done by the
 * driver once the step returns.
 *
 * What the stream says, and how far it has come, is progress.c's: the
 * flush position sent to the server is only ever what the caller
 * acknowledged (changes_ack), so a commit not yet applied comes again
 * after a reconnect.
 *
 * Calls pqconn.c (the connection on the loop), slot.c (its commands and
 * answers), progress.c, feed_why.c, libpq, libevent, common/log.c.
 */

#include "changes/changes.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <libpq-fe.h>

#include "changes/feed_int.h"
#include "changes/pgoutput.h"
#include "changes/pqconn.h"
#include "changes/progress.h"
#include "changes/slot.h"
#include "common/log.h"
#include "common/util.h"

#define CHANGES_MAGIC		0x43484e47u	/* "CHNG" */

/* Reconnecting: the first wait, doubled after each failure up to the
 * last, less a random quarter so a fleet does not retry in step. */
#define BACKOFF_MIN_MS		500
#define BACKOFF_MAX_MS		30000
/* From the start of a connection to streaming (or listening): libpq's
 * connect_timeout does not apply to PQconnectPoll. */
#define SETUP_TIMEOUT_MS	15000
/* An acknowledgement reaches the server within this. */
#define ACK_DELAY_MS		100
/* Status intervals without a byte from the server (each of our status
 * updates asks for a reply once it has been quiet): it is gone. */
#define SILENT_INTERVALS	3
/*
 * PostgreSQL's walsender, shutting down, waits until its client confirms
 * all it sent, asking for a reply again as soon as it has one. With
 * commits not yet acknowledged that never comes, and the server never
 * stops: this many requests within the window, with commits
 * outstanding, close the connection (they come again after).
 */
#define SHUTDOWN_PINGS		10
#define PING_WINDOW_MS		1000
#define SQL_MAX			1024

enum feed_step {
	ST_CONNECT,	/* PQconnectStartParams */
	ST_POLL,	/* PQconnectPoll until the connection is made */
	ST_IDENTIFY,	/* IDENTIFY_SYSTEM */
	ST_CHECK,	/* wal_level, the publication, the slot */
	ST_DROP,	/* DROP_REPLICATION_SLOT: it was invalidated */
	ST_CREATE,	/* CREATE_REPLICATION_SLOT */
	ST_START,	/* START_REPLICATION, until CopyBoth */
	ST_STREAM,	/* the replication stream */
	ST_LISTEN,	/* notify: LISTEN */
	ST_NOTIFY,	/* notify: the payloads */
	ST_DOWN,	/* closes, tells */
	ST_WAIT,	/* waits out the backoff */
	ST_PARK,	/* not a step: wait for a callback */
};

struct changes {
	uint32_t		 magic;
	struct event_base	*base;
	enum changes_mode	 mode;
	char			 label[CHANGES_LABEL_MAX];	/* its logs' */
	char			*conninfo, *password;
	char			 slot[CHANGES_NAME_MAX + 1];
	char			 publication[CHANGES_NAME_MAX + 1];
	char			 channel[CHANGES_NAME_MAX + 1];
	int64_t			 interval_ms;	/* of status updates */
	changes_state_cb	*on_state;
	changes_event_cb	*on_slot_created, *on_reconnect;
	void			*arg;

	enum feed_step		 step;
	struct pqconn		*pq;
	PGconn			*conn;		/* pq's */
	struct event		*tick_ev;	/* deadline, status, backoff */
	int64_t			 tick_at_us;	/* when it fires, if pending */
	struct progress		*p;

	/* What callbacks left for the step. */
	int			 ticked;	/* the timer fired */
	/* The step's own. */
	const PGresult		*res;		/* its query's result (pq's) */
	char			 why[CHANGES_ERR_MAX];	/* going DOWN: why */

	/* The stream's timing. */
	uint64_t		 reported;	/* the flush it was last told */
	int64_t			 heard_us;	/* the last byte from the server */
	int64_t			 status_us;	/* our last status update */
	int			 reply_due;	/* it asked for a status now */
	int			 pings;		/* requests in this window */
	int64_t			 pings_since_us;

	/* What the caller sees. */
	enum changes_state	 state;
	char			 detail[CHANGES_ERR_MAX];
	int			 attempts;	/* failures since streaming */
	uint64_t		 reconnects, slots_created;
	int			 busy;		/* inside feed_run() */
	int			 stopping;	/* changes_stop() from a callback */
};

static void	feed_run(struct changes *f);
static void	on_ready(void *arg);
static void	on_tick(evutil_socket_t fd, short what, void *arg);

/* ---- plumbing: the timer, the connection, the state --------------------- */

static void
arm(struct changes *f, int64_t ms)
{
	struct timeval tv = util_timeval(ms > 0 ? ms : 0);

	evtimer_add(f->tick_ev, &tv);
	f->tick_at_us = util_mono_us() + (ms > 0 ? ms : 0) * 1000;
}

static void
disarm(struct changes *f)
{
	evtimer_del(f->tick_ev);
	f->tick_at_us = 0;
}

static int
flush(struct changes *f)
{
	return pqconn_flush(f->pq, f->why, sizeof(f->why));
}

static void
close_conn(struct changes *f)
{
	f->res = NULL;
	f->conn = NULL;
	pqconn_close(&f->pq);
}

/* Tells the caller, and the log, of a new state or a new reason; the
 * same failure again (a retry) says nothing. */
static void
set_state(struct changes *f, enum changes_state state, const char *detail)
{
	if (state == f->state && strcmp(detail, f->detail) == 0)
		return;
	if (state == CHANGES_DOWN)
		log_warn("%s: down: %s", f->label, detail);
	else if (state == CHANGES_STREAMING && f->attempts > 0)
		log_info("%s: %s (after %d failed attempts)", f->label, detail,
		    f->attempts);
	else
		log_info("%s: %s", f->label, detail);
	f->state = state;
	snprintf(f->detail, sizeof(f->detail), "%s", detail);
	if (f->on_state != NULL)
		f->on_state(state, f->detail, f->arg);
}

/* Goes DOWN for why (printf-style). */
static enum feed_step
down(struct changes *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum feed_step
down(struct changes *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return ST_DOWN;
}

/* ---- queries ------------------------------------------------------------ */

/* The result is an error (f->why) or not what was expected (status, and
 * at least ncols columns in rows rows)? */
static int
refused(struct changes *f, ExecStatusType status, int rows, int ncols,
    const char *what)
{
	ExecStatusType got = PQresultStatus(f->res);

	if (got == PGRES_FATAL_ERROR || got == PGRES_NONFATAL_ERROR) {
		why_result(f->res, f->conn, f->slot, f->publication, f->why,
		    sizeof(f->why));
		return 1;
	}
	if (got != status || PQntuples(f->res) < rows || PQnfields(f->res) <
	    ncols) {
		snprintf(f->why, sizeof(f->why), "%s: unexpected answer (%s, "
		    "%d rows)", what, PQresStatus(got), PQntuples(f->res));
		return 1;
	}
	return 0;
}

/* A setup step's query: parks until its result is in, then done(). */
static enum feed_step
ask(struct changes *f, const char *sql,
    enum feed_step (*done)(struct changes *))
{
	switch (pqconn_query(f->pq, sql, &f->res, f->why, sizeof(f->why))) {
	case PQC_WAIT:
		return ST_PARK;
	case PQC_FAILED:
		return ST_DOWN;
	case PQC_DONE:
		break;
	}
	return done(f);
}

/* ---- connecting --------------------------------------------------------- */

static void
announce(struct changes *f)
{
	char detail[CHANGES_ERR_MAX];

	if (f->mode == CHANGES_REPLICATION)
		snprintf(detail, sizeof(detail), "connecting (slot %s, "
		    "publication %s)", f->slot, f->publication);
	else
		snprintf(detail, sizeof(detail), "connecting (channel %s)",
		    f->channel);
	set_state(f, CHANGES_CONNECTING, detail);
}

/* Defaults the connection string may override (they come before it),
 * then what it may not (after it). */
#define APPLICATION_NAME	"corral"
#define KEEPALIVES_IDLE_S	"30"
#define KEEPALIVES_INTERVAL_S	"10"
#define KEEPALIVES_COUNT	"3"
#define KEYWORDS_MAX		10

static enum feed_step
feed_connect(struct changes *f)
{
	const char *keys[KEYWORDS_MAX] = { "application_name",
	    "keepalives_idle", "keepalives_interval", "keepalives_count",
	    "dbname" };
	const char *vals[KEYWORDS_MAX] = { APPLICATION_NAME,
	    KEEPALIVES_IDLE_S, KEEPALIVES_INTERVAL_S, KEEPALIVES_COUNT,
	    f->conninfo };
	int n = 5;

	if (f->mode == CHANGES_REPLICATION) {
		keys[n] = "replication";
		vals[n++] = "database";
	}
	if (f->password != NULL) {
		keys[n] = "password";
		vals[n++] = f->password;
	}
	keys[n] = NULL;
	vals[n] = NULL;
	if (f->state == CHANGES_CONNECTING && f->detail[0] == '\0')
		announce(f);	/* the first time only: not each retry */
	if (f->stopping)
		return ST_PARK;
	arm(f, SETUP_TIMEOUT_MS);
	if ((f->pq = pqconn_start(f->base, keys, vals, f->label, on_ready, f,
	    f->why, sizeof(f->why))) == NULL)
		return ST_DOWN;
	f->conn = pqconn_pg(f->pq);
	return ST_POLL;
}

static enum feed_step
feed_poll(struct changes *f)
{
	switch (pqconn_poll(f->pq, f->why, sizeof(f->why))) {
	case PQC_WAIT:
		return ST_PARK;
	case PQC_FAILED:
		return ST_DOWN;
	case PQC_DONE:
		break;
	}
	return f->mode == CHANGES_NOTIFY ? ST_LISTEN : ST_IDENTIFY;
}

static enum feed_step
identified(struct changes *f)
{
	if (refused(f, PGRES_TUPLES_OK, 1, 4, "IDENTIFY_SYSTEM"))
		return ST_DOWN;
	if (PQgetisnull(f->res, 0, 3))
		return down(f, "the connection is to no database: name one "
		    "(dbname) in the connection string");
	progress_server(f->p, slot_lsn(f->res, 0, 2));
	return ST_CHECK;
}

static enum feed_step
feed_identify(struct changes *f)
{
	return ask(f, "IDENTIFY_SYSTEM", identified);
}

/* What the check found (slot.c): the slot is created if missing,
 * dropped first if invalidated, refused if another kind or another
 * reader has it. */
static enum feed_step
checked(struct changes *f)
{
	uint64_t confirmed = 0;

	if (refused(f, PGRES_TUPLES_OK, 1, 0, "the slot check"))
		return ST_DOWN;
	switch (slot_verdict(f->res, f->slot, f->publication, &confirmed,
	    f->why, sizeof(f->why))) {
	case SLOT_MISSING:
		return ST_CREATE;
	case SLOT_LOST:
		log_warn("%s: replication slot %s was invalidated (it fell "
		    "behind max_slot_wal_keep_size): dropping and creating it; "
		    "the changes in between are unknown", f->label, f->slot);
		return ST_DROP;
	case SLOT_REFUSED:
		return ST_DOWN;
	case SLOT_READY:
		break;
	}
	progress_raise(f->p, confirmed);	/* never tell the server less */
	return ST_START;
}

static enum feed_step
dropped(struct changes *f)
{
	return refused(f, PGRES_COMMAND_OK, 0, 0, "DROP_REPLICATION_SLOT") ?
	    ST_DOWN : ST_CREATE;
}

/* The slot was missing: created where the server's WAL is now, so the
 * changes before are unknown to us; the caller hears of it. */
static enum feed_step
created(struct changes *f)
{
	char at[CHANGES_LSN_LEN];

	if (refused(f, PGRES_TUPLES_OK, 1, 2, "CREATE_REPLICATION_SLOT"))
		return ST_DOWN;
	progress_raise(f->p, slot_lsn(f->res, 0, 1));
	f->slots_created++;
	changes_lsn_format(slot_lsn(f->res, 0, 1), at);
	log_warn("%s: created replication slot %s at %s: changes before it "
	    "are unknown", f->label, f->slot, at);
	if (f->on_slot_created != NULL)
		f->on_slot_created(f->arg);
	return ST_START;
}

static enum feed_step
started(struct changes *f)
{
	char detail[CHANGES_ERR_MAX], at[CHANGES_LSN_LEN];

	if (refused(f, PGRES_COPY_BOTH, 0, 0, "START_REPLICATION"))
		return ST_DOWN;
	changes_lsn_format(progress_acked(f->p), at);
	snprintf(detail, sizeof(detail), "streaming from slot %s "
	    "(publication %s), acknowledged up to %s", f->slot,
	    f->publication, at);
	set_state(f, CHANGES_STREAMING, detail);
	f->attempts = 0;
	return ST_STREAM;
}

/* CHECK, DROP, CREATE and START: the slot's command, then what its
 * answer means. */
static enum feed_step
feed_slot(struct changes *f, enum slot_command cmd)
{
	static enum feed_step (*const done[])(struct changes *) = {
		[SLOT_CHECK] = checked, [SLOT_DROP] = dropped,
		[SLOT_CREATE] = created, [SLOT_START] = started,
	};
	char sql[SLOT_SQL_MAX];

	slot_sql(cmd, f->slot, f->publication, sql);
	return ask(f, sql, done[cmd]);
}

/* ---- streaming ---------------------------------------------------------- */

/* A standby status update (progress.c's); reply: ask the server to
 * answer at once (it has been quiet). */
static int
send_status(struct changes *f, int reply)
{
	uint8_t m[PGOUTPUT_STATUS_BYTES];

	progress_status(f->p, m, reply);
	switch (PQputCopyData(f->conn, (const char *)m, sizeof(m))) {
	case 1:
		break;
	case 0:		/* libpq's buffer is full: once it drains */
		f->reply_due = 1;
		return flush(f);
	default:
		why_conn(f->conn, f->why, sizeof(f->why));
		return -1;
	}
	f->reported = progress_acked(f->p);
	f->status_us = util_mono_us();
	f->reply_due = 0;
	return flush(f);
}

/* The timer, while streaming: the server's silence, and a status update
 * when one is due (the interval, or an acknowledgement to pass on). */
static int
stream_tick(struct changes *f)
{
	int64_t now = util_mono_us(), iv = f->interval_ms * 1000;
	int64_t quiet = now - f->heard_us;

	if (quiet > SILENT_INTERVALS * iv) {
		(void)down(f, "the server sent nothing for %" PRId64 " s",
		    quiet / 1000000);
		return -1;
	}
	if ((now - f->status_us >= iv || progress_acked(f->p) > f->reported) &&
	    send_status(f, quiet >= iv) == -1)
		return -1;
	arm(f, (f->status_us + iv - util_mono_us()) / 1000);
	return 0;
}

/* The server ended the stream: its error, or that it ended. */
static enum feed_step
copy_ended(struct changes *f)
{
	PGresult *r;

	snprintf(f->why, sizeof(f->why), "the server ended the stream");
	while ((r = PQgetResult(f->conn)) != NULL) {
		if (PQresultStatus(r) == PGRES_FATAL_ERROR)
			why_result(r, f->conn, f->slot, f->publication, f->why,
			    sizeof(f->why));
		PQclear(r);
		if (PQisBusy(f->conn))
			break;
	}
	return ST_DOWN;
}

/* The server asked for a status update now: at once, unless it asks
 * without pause while commits are outstanding (SHUTDOWN_PINGS). */
static int
pinged(struct changes *f)
{
	int64_t now = util_mono_us();

	f->reply_due = 1;
	if (now - f->pings_since_us > PING_WINDOW_MS * 1000) {
		f->pings_since_us = now;
		f->pings = 0;
	}
	if (++f->pings < SHUTDOWN_PINGS || !progress_unacked(f->p))
		return 0;
	(void)down(f, "the server asks for replies without pause: it is "
	    "shutting down and waits for commits not yet acknowledged; "
	    "closing (they come again)");
	return -1;
}

/* Reads what came, each message through progress.c (which hands the
 * commits out); answers a keepalive that asks at once. */
static enum feed_step
feed_stream(struct changes *f)
{
	char *buf;
	int n, rc, reply;

	if (f->ticked && stream_tick(f) == -1)
		return ST_DOWN;
	f->ticked = 0;
	if (!PQconsumeInput(f->conn)) {
		why_conn(f->conn, f->why, sizeof(f->why));
		return ST_DOWN;
	}
	while ((n = PQgetCopyData(f->conn, &buf, 1)) > 0) {
		f->heard_us = util_mono_us();
		reply = 0;
		rc = progress_data(f->p, (const uint8_t *)buf, (size_t)n,
		    &reply, f->why, sizeof(f->why));
		PQfreemem(buf);
		if (rc == -1 || (reply && pinged(f) == -1))
			return ST_DOWN;
		if (f->stopping)
			return ST_PARK;
	}
	if (n == -1)
		return copy_ended(f);
	if (n == -2) {
		why_conn(f->conn, f->why, sizeof(f->why));
		return ST_DOWN;
	}
	if (f->reply_due && send_status(f, 0) == -1)
		return ST_DOWN;
	return flush(f) == -1 ? ST_DOWN : ST_PARK;
}

/* ---- notify ------------------------------------------------------------- */

static enum feed_step
listening(struct changes *f)
{
	char detail[CHANGES_ERR_MAX];

	if (refused(f, PGRES_COMMAND_OK, 0, 0, "LISTEN"))
		return ST_DOWN;
	snprintf(detail, sizeof(detail), "listening on channel %s", f->channel);
	set_state(f, CHANGES_STREAMING, detail);
	f->attempts = 0;
	/* What was sent while nobody listened is lost. */
	if (f->on_reconnect != NULL && !f->stopping)
		f->on_reconnect(f->arg);
	return ST_NOTIFY;
}

static enum feed_step
feed_listen(struct changes *f)
{
	char sql[SQL_MAX];

	snprintf(sql, sizeof(sql), "LISTEN \"%s\"", f->channel);
	return ask(f, sql, listening);
}

static enum feed_step
feed_notify(struct changes *f)
{
	PGnotify *n;
	int rc;

	if (!PQconsumeInput(f->conn)) {
		why_conn(f->conn, f->why, sizeof(f->why));
		return ST_DOWN;
	}
	while ((n = PQnotifies(f->conn)) != NULL) {
		rc = progress_payload(f->p, n->extra, f->why, sizeof(f->why));
		PQfreemem(n);
		if (rc == -1)
			return ST_DOWN;
		if (f->stopping)
			return ST_PARK;
	}
	if (PQstatus(f->conn) == CONNECTION_BAD) {
		why_conn(f->conn, f->why, sizeof(f->why));
		return ST_DOWN;
	}
	return ST_PARK;
}

/* ---- down, and back ----------------------------------------------------- */

/* The next wait: BACKOFF_MIN_MS doubled per failure, up to
 * BACKOFF_MAX_MS, less up to a quarter at random. */
static int64_t
backoff_ms(const struct changes *f)
{
	int64_t ms = BACKOFF_MIN_MS;
	int i;

	for (i = 1; i < f->attempts && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	return ms - (int64_t)((double)ms / 4 * util_random_unit());
}

static enum feed_step
feed_down(struct changes *f)
{
	close_conn(f);
	progress_reset(f->p);	/* an open transaction comes again */
	f->attempts++;
	f->reconnects++;
	arm(f, backoff_ms(f));
	set_state(f, CHANGES_DOWN, f->why);
	return ST_WAIT;
}

static enum feed_step
feed_wait(struct changes *f)
{
	return f->ticked ? ST_CONNECT : ST_PARK;
}

/* ---- the driver --------------------------------------------------------- */

static const char *const step_names[] = {
	[ST_CONNECT] = "connecting", [ST_POLL] = "connecting",
	[ST_IDENTIFY] = "IDENTIFY_SYSTEM", [ST_CHECK] = "checking the slot",
	[ST_DROP] = "DROP_REPLICATION_SLOT",
	[ST_CREATE] = "CREATE_REPLICATION_SLOT",
	[ST_START] = "START_REPLICATION", [ST_STREAM] = "streaming",
	[ST_LISTEN] = "LISTEN", [ST_NOTIFY] = "listening",
	[ST_DOWN] = "down", [ST_WAIT] = "waiting", [ST_PARK] = "parked",
};

/* A step's entry: what it starts from. */
static void
enter(struct changes *f, enum feed_step next)
{
	f->step = next;
	f->ticked = 0;
	f->res = NULL;
	if (f->pq != NULL)
		pqconn_forget(f->pq);
	if (next == ST_STREAM) {
		f->heard_us = f->status_us = util_mono_us();
		f->reported = 0;	/* a first status soon */
		f->reply_due = 0;
		arm(f, ACK_DELAY_MS);
	} else if (next == ST_NOTIFY) {
		disarm(f);
	}
}

static enum feed_step
step(struct changes *f)
{
	/* From POLL to START (or LISTEN), the timer is the deadline. */
	if (f->ticked && f->step != ST_CONNECT && f->step != ST_STREAM &&
	    f->step != ST_NOTIFY && f->step != ST_WAIT)
		return down(f, "no answer within %d s (%s)", SETUP_TIMEOUT_MS /
		    1000, step_names[f->step]);
	switch (f->step) {
	case ST_CONNECT:
		return feed_connect(f);
	case ST_POLL:
		return feed_poll(f);
	case ST_IDENTIFY:
		return feed_identify(f);
	case ST_CHECK:
		return feed_slot(f, SLOT_CHECK);
	case ST_DROP:
		return feed_slot(f, SLOT_DROP);
	case ST_CREATE:
		return feed_slot(f, SLOT_CREATE);
	case ST_START:
		return feed_slot(f, SLOT_START);
	case ST_STREAM:
		return feed_stream(f);
	case ST_LISTEN:
		return feed_listen(f);
	case ST_NOTIFY:
		return feed_notify(f);
	case ST_DOWN:
		return feed_down(f);
	case ST_WAIT:
		return feed_wait(f);
	case ST_PARK:
		break;
	}
	return ST_PARK;
}

static void	finish(struct changes *f);

static void
feed_run(struct changes *f)
{
	enum feed_step next;

	assert(f->magic == CHANGES_MAGIC && !f->busy);
	f->busy = 1;
	for (;;) {
		if (f->stopping) {
			finish(f);	/* changes_stop() from a callback */
			return;
		}
		if ((next = step(f)) == ST_PARK) {
			if (f->stopping)
				continue;
			break;
		}
		enter(f, next);
	}
	f->ticked = 0;
	f->busy = 0;
}

/* ---- callbacks: each notes what happened and re-enters feed_run() ------- */

static void
on_ready(void *arg)
{
	struct changes *f = arg;

	assert(f->magic == CHANGES_MAGIC);
	feed_run(f);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct changes *f = arg;

	assert(f->magic == CHANGES_MAGIC);
	f->tick_at_us = 0;
	f->ticked = 1;
	feed_run(f);
}

/* ---- the face ----------------------------------------------------------- */

static struct changes *
feed_new(struct event_base *base, const struct changes_config *cfg, char *err,
    size_t errlen)
{
	struct changes *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->magic = CHANGES_MAGIC;
	f->base = base;
	f->mode = cfg->mode;
	if (cfg->name != NULL && cfg->name[0] != '\0')
		snprintf(f->label, sizeof(f->label), "changes %.*s",
		    CHANGES_NAME_MAX, cfg->name);
	else
		snprintf(f->label, sizeof(f->label), "changes");
	f->interval_ms = cfg->status_interval_ms > 0 ? cfg->status_interval_ms :
	    CHANGES_STATUS_INTERVAL_MS;
	snprintf(f->slot, sizeof(f->slot), "%s", cfg->slot ? cfg->slot : "");
	snprintf(f->publication, sizeof(f->publication), "%s",
	    cfg->publication ? cfg->publication : "");
	snprintf(f->channel, sizeof(f->channel), "%s",
	    cfg->channel ? cfg->channel : "");
	f->on_state = cfg->on_state;
	f->on_slot_created = cfg->on_slot_created;
	f->on_reconnect = cfg->on_reconnect;
	f->arg = cfg->arg;
	f->state = CHANGES_CONNECTING;
	f->conninfo = strdup(cfg->conninfo);
	f->password = cfg->password != NULL ? strdup(cfg->password) : NULL;
	f->tick_ev = evtimer_new(base, on_tick, f);
	f->p = progress_new(cfg->rules, cfg->nrules, cfg->hard, f->label,
	    cfg->on_commit, cfg->arg, err, errlen);
	if (f->conninfo == NULL || (cfg->password != NULL &&
	    f->password == NULL) || f->tick_ev == NULL || f->p == NULL) {
		finish(f);
		return NULL;
	}
	return f;
}

struct changes *
changes_start(struct event_base *base, const struct changes_config *cfg,
    char *err, size_t errlen)
{
	struct changes *f;

	if (changes_check(cfg, err, errlen) == -1)
		return NULL;
	snprintf(err, errlen, "out of memory");
	if ((f = feed_new(base, cfg, err, errlen)) == NULL)
		return NULL;
	err[0] = '\0';
	f->step = ST_CONNECT;
	arm(f, 0);	/* from the loop: no callback before we return */
	return f;
}

void
changes_ack(struct changes *f, uint64_t lsn)
{
	assert(f->magic == CHANGES_MAGIC);
	progress_ack(f->p, lsn);	/* nothing past what it was given */
	if (progress_acked(f->p) <= f->reported)
		return;
	if (f->step == ST_STREAM && (f->tick_at_us == 0 || f->tick_at_us >
	    util_mono_us() + ACK_DELAY_MS * 1000))
		arm(f, ACK_DELAY_MS);
}

/* A last status update and CopyDone if streaming, then the connection
 * and everything else. No callback. */
static void
finish(struct changes *f)
{
	if (f->conn != NULL && f->step == ST_STREAM) {
		(void)send_status(f, 0);
		(void)PQputCopyEnd(f->conn, NULL);
		(void)PQflush(f->conn);
	}
	close_conn(f);
	if (f->tick_ev != NULL)
		event_free(f->tick_ev);
	progress_free(&f->p);
	if (f->password != NULL)
		explicit_bzero(f->password, strlen(f->password));
	free(f->password);
	free(f->conninfo);
	f->magic = 0;
	free(f);
}

void
changes_stop(struct changes **fp)
{
	struct changes *f = *fp;

	if (f == NULL)
		return;
	*fp = NULL;
	assert(f->magic == CHANGES_MAGIC);
	if (f->busy)
		f->stopping = 1;	/* feed_run() finishes it */
	else
		finish(f);
}

void
changes_figures(const struct changes *f, struct changes_figures *out)
{
	assert(f->magic == CHANGES_MAGIC);
	memset(out, 0, sizeof(*out));
	progress_figures(f->p, out);
	out->state = f->state;
	out->reconnects = f->reconnects;
	out->slots_created = f->slots_created;
}
