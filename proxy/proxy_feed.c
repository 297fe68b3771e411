/*
 * A change feed's runner, one per [changes NAME] section in worker slot 0
 * of each instance (proxy_feed.h): its claim on the fleet's leader lease,
 * and, while it leads, the feed itself and its applier.
 *
 *	FOLLOW --claim: held--> LEAD (the feed runs, commits applied, acked)
 *	LEAD --claim: another's--> FOLLOW      (lost: stops at once)
 *	LEAD --the lease's time passed unrenewed--> FOLLOW   (Redis away)
 *	LEAD --queue full--> LEAD, paused (not reading) --empty--> LEAD
 *	any --stop--> resigned (compare-and-delete), another leads at once
 *
 * The claim runs every lease / CLAIM_DIVISOR (cache_leader.h): it takes
 * the lease when it is free, renews it when it is ours, and reads who
 * holds it and the leader's status line otherwise. A leader counts its
 * lease as held until the time of its last answered claim's sending plus
 * the lease, which Redis's own expiry never precedes; past it, and at
 * once when a claim finds another holder, it stops reading and
 * acknowledging. PostgreSQL's rule that one session reads a slot at a
 * time backs this up: a new leader whose predecessor's session lingers
 * is refused ("is active for PID", SQLSTATE 55006) and tries again with
 * the feed's backoff until that session is gone.
 *
 * Calls changes/ (the feed), cache/ (the lease), proxy_apply.c (through
 * the feed's callbacks) and proxy_feed_check.c (the section as the feed
 * takes it).
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "cache/cache_leader.h"
#include "changes/changes.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_feed_int.h"

#define FEED_MAGIC		0x46454544u	/* "FEED" */
#define CLAIM_DIVISOR		3	/* a claim every lease / 3 */
#define STATUS_TTL_DIVISOR	1	/* the status lives one lease */

struct feed {
	uint32_t		 magic;
	struct proxy		*px;
	struct feeds		*all;
	int			 index;		/* its row */
	struct conf_changes	 cc;		/* its section, copied */
	struct feed_config	 fc;		/* ... as the feed takes it */
	char			 broad[FEED_BROAD_MAX];
	char			 instance[FEED_INSTANCE_MAX];
	char			 value[LEADER_VALUE_MAX];	/* our claim */
	struct event		*tick_ev;	/* the next claim */
	struct event		*expiry_ev;	/* our lease may be gone */
	struct cache_op		*claim_op;
	int64_t			 claim_sent_us;
	int			 leading;
	int64_t			 lease_until_us;	/* ours until then */
	struct changes		*ch;		/* while leading, not paused */
	struct apply		*ap;
	int			 paused;	/* the queue is full */
	int			 resigning;	/* a stop: no more claims */
	/* What it knows. */
	enum changes_state	 ch_state;
	char			 ch_detail[CHANGES_ERR_MAX];
	int			 answered;	/* -1: no claim yet; 0: the last
						 * failed; 1: answered */
	char			 holder[LEADER_VALUE_MAX];
	char			 status[LEADER_STATUS_MAX];
	struct changes_figures	 fig;		/* the feed's, last read */
	uint64_t		 commits, leaderships;
	uint64_t		 reconnects, slots_created, malformed;
};

struct feeds {
	struct feed		*v[CONF_CHANGES_MAX];
	int			 pending;	/* resignations under way */
};

static void	feed_publish(struct feed *f);
static void	claim(struct feed *f);

/* ---- the feed, while leading ------------------------------------------- */

/* The figures of a feed that stops are kept, its counters added up. */
static void
keep_figures(struct feed *f)
{
	struct changes_figures now;

	if (f->ch == NULL)
		return;
	changes_figures(f->ch, &now);
	f->reconnects += now.reconnects;
	f->slots_created += now.slots_created;
	f->malformed += now.malformed;
	now.reconnects = now.slots_created = now.malformed = 0;
	f->fig = now;
}

static void
stop_feed(struct feed *f)
{
	keep_figures(f);
	changes_stop(&f->ch);	/* a last status: what was acknowledged */
	apply_reset(f->ap);
	f->paused = 0;
}

static void
on_commit(const struct changes_commit *c, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	f->commits++;
	apply_commit(f->ap, c);
}

static void
on_state(enum changes_state state, const char *detail, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	f->ch_state = state;
	snprintf(f->ch_detail, sizeof(f->ch_detail), "%s", detail);
	feed_publish(f);
}

/* The slot was missing, or lost: what changed before it is unknown. */
static void
on_slot_created(void *arg)
{
	struct feed *f = arg;
	char why[CHANGES_ERR_MAX];

	assert(f->magic == FEED_MAGIC);
	snprintf(why, sizeof(why), "replication slot %s was created: changes "
	    "before it are unknown", f->cc.slot);
	apply_broad(f->ap, f->broad, f->cc.hard, why);
}

/* Notify: listening again; what was sent meanwhile is lost. */
static void
on_reconnect(void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	apply_broad(f->ap, f->broad, f->cc.hard, "listening again: "
	    "notifications sent meanwhile are lost");
}

static void
start_feed(struct feed *f)
{
	char err[CHANGES_ERR_MAX];

	f->fc.cfg.on_commit = on_commit;
	f->fc.cfg.on_state = on_state;
	f->fc.cfg.on_slot_created = on_slot_created;
	f->fc.cfg.on_reconnect = on_reconnect;
	f->fc.cfg.arg = f;
	f->ch_state = CHANGES_CONNECTING;
	f->ch_detail[0] = '\0';
	if ((f->ch = changes_start(f->px->base, &f->fc.cfg, err,
	    sizeof(err))) == NULL) {
		log_error("changes %s: cannot start the feed: %s", f->cc.name,
		    err);
		f->ch_state = CHANGES_DOWN;
		snprintf(f->ch_detail, sizeof(f->ch_detail), "%s", err);
	}
}

/* Every commit up to lsn is applied: acknowledged, while the lease is
 * surely ours (a leader that may have lost it acknowledges nothing). */
static void
on_applied(uint64_t lsn, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	if (f->ch != NULL && f->leading &&
	    util_mono_us() < f->lease_until_us)
		changes_ack(f->ch, lsn);
	feed_publish(f);
}

/* The queue is full: stop reading (what is not read stays in the slot);
 * empty: read again. */
static void
on_level(int full, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	if (full && f->ch != NULL) {
		keep_figures(f);
		changes_stop(&f->ch);
		f->paused = 1;
	} else if (!full && f->paused) {
		f->paused = 0;
		if (f->leading)
			start_feed(f);
	}
	feed_publish(f);
}

/* ---- the lease --------------------------------------------------------- */

static void
lead(struct feed *f)
{
	f->leading = 1;
	f->leaderships++;
	log_info("changes %s: leading the fleet's feed (lease %" PRId64
	    " ms)", f->cc.name, f->cc.lease_ms);
	start_feed(f);
}

static void
step_down(struct feed *f, const char *why)
{
	if (!f->leading)
		return;
	f->leading = 0;
	evtimer_del(f->expiry_ev);
	log_warn("changes %s: no longer leading: %s; the feed stops",
	    f->cc.name, why);
	stop_feed(f);
}

static void
on_expiry(evutil_socket_t fd, short what, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	if (f->leading && util_mono_us() >= f->lease_until_us)
		step_down(f, "the lease could not be renewed within its time "
		    "(Redis did not answer)");
	feed_publish(f);
}

static void
on_claimed(const struct leader_answer *a, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	f->claim_op = NULL;
	f->answered = a->r != LEADER_ERROR;
	if (a->r != LEADER_ERROR) {
		snprintf(f->holder, sizeof(f->holder), "%s", a->holder);
		snprintf(f->status, sizeof(f->status), "%s", a->status);
	}
	if (a->r == LEADER_HELD && !f->resigning) {
		f->lease_until_us = f->claim_sent_us + f->cc.lease_ms * 1000;
		timer_arm(f->expiry_ev, f->cc.lease_ms);
		if (!f->leading)
			lead(f);
	} else if (a->r == LEADER_OTHER && f->leading) {
		step_down(f, a->holder[0] != '\0' ? "another instance holds "
		    "the lease" : "the lease expired");
	}
	feed_publish(f);
}

/* The leader's status line, for the others: its state, lag, position. */
static void
status_line(struct feed *f, char *out, size_t outlen)
{
	const struct feed_row *r = &f->px->slots[0].feeds[f->index];

	snprintf(out, outlen, "%d\t%" PRId64 "\t%" PRId64 "\t%" PRIu64 "\t%"
	    PRIu64 "\t%" PRId64 "\t%d\t%s", r->state, r->lag_bytes, r->lag_ms,
	    r->acked_lsn, r->server_lsn, r->queued, r->paused, r->detail);
}

static void
claim(struct feed *f)
{
	char status[LEADER_STATUS_MAX] = "";

	if (f->claim_op != NULL || f->resigning)
		return;
	if (f->leading)
		status_line(f, status, sizeof(status));
	f->claim_sent_us = util_mono_us();
	f->claim_op = leader_claim(f->px->cache, f->cc.name, f->value,
	    !f->px->draining, f->cc.lease_ms, status,
	    f->cc.lease_ms / STATUS_TTL_DIVISOR, on_claimed, f);
	if (f->claim_op == NULL) {
		f->answered = 0;
		feed_publish(f);
	}
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct feed *f = arg;

	assert(f->magic == FEED_MAGIC);
	claim(f);
	timer_arm(f->tick_ev, f->cc.lease_ms / CLAIM_DIVISOR);
}

static void
on_resigned(enum fence_result r, void *arg)
{
	struct feeds *all = arg;

	all->pending--;
}

/* Stops reading (a last acknowledgement) and gives the lease up at once,
 * so that another instance leads without waiting for it to expire. */
static void
resign(struct feed *f)
{
	f->resigning = 1;
	evtimer_del(f->tick_ev);
	cache_op_cancel(&f->claim_op);
	if (!f->leading)
		return;
	f->leading = 0;
	evtimer_del(f->expiry_ev);
	stop_feed(f);
	log_info("changes %s: giving the lease up", f->cc.name);
	if (leader_resign(f->px->cache, f->cc.name, f->value, on_resigned,
	    f->all) != NULL)
		f->all->pending++;
}

/* ---- the row ----------------------------------------------------------- */

/* The leader's status line read into r; 0, or -1 if it does not read. */
static int
read_status(const char *s, struct feed_row *r)
{
	int state, paused, used = 0;

	if (sscanf(s, "%d\t%" SCNd64 "\t%" SCNd64 "\t%" SCNu64 "\t%" SCNu64
	    "\t%" SCNd64 "\t%d\t%n", &state, &r->lag_bytes, &r->lag_ms,
	    &r->acked_lsn, &r->server_lsn, &r->queued, &paused, &used) < 7 ||
	    used == 0 || state < FEED_OFF || state > FEED_UNKNOWN)
		return -1;
	r->state = state;
	r->paused = paused;
	snprintf(r->detail, sizeof(r->detail), "%s", s + used);
	return 0;
}

static enum feed_state
own_state(const struct feed *f)
{
	if (f->paused)
		return FEED_STREAMING;
	switch (f->ch_state) {
	case CHANGES_STREAMING:
		return FEED_STREAMING;
	case CHANGES_CONNECTING:
		return FEED_CONNECTING;
	case CHANGES_DOWN:
		break;
	}
	return FEED_DOWN;
}

/* What the leader (this instance, or another as its status says) is. */
static void
row_state(struct feed *f, struct feed_row *r)
{
	struct apply_figures af;
	const char *inst = strchr(f->holder, ' ');

	snprintf(r->leader_instance, sizeof(r->leader_instance), "%s",
	    inst != NULL ? inst + 1 : "");
	r->lag_bytes = r->lag_ms = -1;
	r->acked_lsn = r->server_lsn = 0;
	r->queued = 0;
	r->paused = 0;
	r->detail[0] = '\0';
	if (f->leading) {
		if (f->ch != NULL)
			changes_figures(f->ch, &f->fig);
		apply_figures(f->ap, &af);
		r->state = own_state(f);
		r->paused = f->paused;
		snprintf(r->detail, sizeof(r->detail), "%s", f->paused ?
		    "paused: commits wait for their purges" : f->ch_detail);
		r->lag_bytes = (int64_t)f->fig.lag_bytes;
		r->lag_ms = af.queued > 0 ? MAX(0, util_now_ms() -
		    af.oldest_ms) : 0;
		r->acked_lsn = f->fig.acked_lsn;
		r->server_lsn = f->fig.server_lsn;
		r->queued = af.queued;
	} else if (f->answered == -1) {
		r->state = FEED_STARTING;
	} else if (f->answered == 0) {
		r->state = FEED_UNKNOWN;
		snprintf(r->detail, sizeof(r->detail), "Redis does not answer: "
		    "who leads is not known");
	} else if (f->holder[0] == '\0') {
		r->state = FEED_NO_LEADER;
		snprintf(r->detail, sizeof(r->detail), "no instance holds the "
		    "lease");
	} else if (read_status(f->status, r) == -1) {
		r->state = FEED_STARTING;
	}
}

static void
feed_publish(struct feed *f)
{
	struct feed_row *r = &f->px->slots[0].feeds[f->index];
	struct apply_figures af;

	row_state(f, r);
	apply_figures(f->ap, &af);
	r->leader = f->leading;
	r->commits = f->commits;
	r->applied = af.applied;
	r->tags = af.tags;
	r->purged = af.purged;
	r->purge_retries = af.retries;
	r->broad = af.broad;
	r->reconnects = f->reconnects + (f->ch != NULL ? f->fig.reconnects : 0);
	r->slots_created = f->slots_created + (f->ch != NULL ?
	    f->fig.slots_created : 0);
	r->malformed = f->malformed + (f->ch != NULL ? f->fig.malformed : 0);
	r->leaderships = f->leaderships;
}

/* ---- the runners ------------------------------------------------------- */

static void
feed_free(struct feed **fp)
{
	struct feed *f = *fp;

	if (f == NULL)
		return;
	*fp = NULL;
	assert(f->magic == FEED_MAGIC);
	cache_op_cancel(&f->claim_op);
	changes_stop(&f->ch);
	apply_free(&f->ap);
	if (f->tick_ev != NULL)
		event_free(f->tick_ev);
	if (f->expiry_ev != NULL)
		event_free(f->expiry_ev);
	memset(&f->px->slots[0].feeds[f->index], 0, sizeof(struct feed_row));
	explicit_bzero(&f->cc, sizeof(f->cc));	/* its password */
	f->magic = 0;
	free(f);
}

/* Who this instance is, as the budget names it, and its claim's value. */
static int
feed_name(struct feed *f)
{
	char host[FEED_INSTANCE_MAX / 2] = "", token[UTIL_TOKEN_HEX + 1];
	struct proxy *px = f->px;

	(void)gethostname(host, sizeof(host) - 1);
	snprintf(f->instance, sizeof(f->instance), "%s:%d:%d", host,
	    (int)(px->nslots > 1 ? getppid() : getpid()),
	    px->conf->listen_port);
	if (util_random_token(token) == -1)
		return -1;
	snprintf(f->value, sizeof(f->value), "%s %s", token, f->instance);
	return 0;
}

static struct feed *
feed_new(struct proxy *px, struct feeds *all, int index,
    const struct conf_changes *cc)
{
	struct apply_hooks hooks = { on_applied, on_level, NULL };
	struct feed_row *r = &px->slots[0].feeds[index];
	struct feed *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->magic = FEED_MAGIC;
	f->px = px;
	f->all = all;
	f->index = index;
	f->cc = *cc;
	f->answered = -1;
	feed_config(&f->cc, &f->fc);
	(void)feed_broad_tags(&f->cc, f->broad, sizeof(f->broad));
	hooks.arg = f;
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", cc->name);
	r->mode = cc->mode;
	r->max_lag = cc->max_lag;
	r->max_lag_time_ms = cc->max_lag_time_ms;
	if (feed_name(f) == -1 ||
	    (f->ap = apply_new(px, cc->name, &hooks)) == NULL ||
	    (f->tick_ev = evtimer_new(px->base, on_tick, f)) == NULL ||
	    (f->expiry_ev = evtimer_new(px->base, on_expiry, f)) == NULL) {
		feed_free(&f);
		return NULL;
	}
	feed_publish(f);
	timer_arm(f->tick_ev, 0);
	return f;
}

int
feeds_start(struct proxy *px)
{
	struct feeds *all;

	if (px->slot != 0)
		return 0;	/* slot 0's runners; the others show its rows */
	memset(px->slots[0].feeds, 0, sizeof(px->slots[0].feeds));
	if (px->conf->nchanges == 0)
		return 0;
	if ((all = calloc(1, sizeof(*all))) == NULL)
		return -1;
	px->feeds = all;
	for (int i = 0; i < px->conf->nchanges; i++)
		if ((all->v[i] = feed_new(px, all, i,
		    &px->conf->changes[i])) == NULL)
			return -1;
	return 0;
}

/* A runner whose section changed or went: it resigns, and goes. */
static void
retire(struct feed **fp)
{
	resign(*fp);
	feed_free(fp);
}

/* The runner of a section of that name and the same settings, taken
 * out of old; or NULL, the one of that name (if any) retired. */
static struct feed *
keep_same(struct feed *old[CONF_CHANGES_MAX], const struct conf_changes *cc)
{
	struct feed *f;

	for (int i = 0; i < CONF_CHANGES_MAX; i++) {
		if (old[i] == NULL || strcmp(old[i]->cc.name, cc->name) != 0)
			continue;
		if (memcmp(&old[i]->cc, cc, sizeof(*cc)) != 0) {
			log_info("changes %s: its settings changed: it starts "
			    "again", cc->name);
			retire(&old[i]);
			return NULL;
		}
		f = old[i];
		old[i] = NULL;
		return f;
	}
	return NULL;
}

void
feeds_reload(struct proxy *px, const struct conf *new)
{
	struct feed *old[CONF_CHANGES_MAX];
	struct feeds *all = px->feeds;

	if (px->slot != 0 || (all == NULL && new->nchanges == 0))
		return;
	if (all == NULL && (all = px->feeds = calloc(1, sizeof(*all))) ==
	    NULL) {
		log_error("reload: out of memory: [changes] sections not run");
		return;
	}
	memcpy(old, all->v, sizeof(old));
	memset(all->v, 0, sizeof(all->v));
	memset(px->slots[0].feeds, 0, sizeof(px->slots[0].feeds));
	for (int i = 0; i < new->nchanges; i++) {
		all->v[i] = keep_same(old, &new->changes[i]);
		if (all->v[i] != NULL) {
			all->v[i]->index = i;
			feed_publish(all->v[i]);
		} else if ((all->v[i] = feed_new(px, all, i,
		    &new->changes[i])) == NULL) {
			log_error("reload: out of memory: [changes %s] not run",
			    new->changes[i].name);
		}
	}
	for (int i = 0; i < CONF_CHANGES_MAX; i++) {
		if (old[i] == NULL)
			continue;
		if (old[i]->cc.mode == CHANGES_MODE_REPLICATION)
			log_warn("changes %s: the section is gone; its slot "
			    "keeps WAL until dropped: SELECT "
			    "pg_drop_replication_slot('%s');", old[i]->cc.name,
			    old[i]->cc.slot);
		retire(&old[i]);
	}
}

void
feeds_drain(struct proxy *px)
{
	struct feeds *all = px->feeds;

	for (int i = 0; all != NULL && i < CONF_CHANGES_MAX; i++) {
		if (all->v[i] == NULL)
			continue;
		resign(all->v[i]);
		feed_publish(all->v[i]);
	}
}

int
feeds_pending(const struct proxy *px)
{
	return px->feeds != NULL ? px->feeds->pending : 0;
}

void
feeds_stop(struct proxy *px)
{
	struct feeds *all = px->feeds;

	if (all == NULL)
		return;
	for (int i = 0; i < CONF_CHANGES_MAX; i++)
		feed_free(&all->v[i]);
	free(all);
	px->feeds = NULL;
}
