/*
 * The applier of a change feed: each commit's tags purged, and the
 * commit's position handed back (the applied hook, which acknowledges it
 * to PostgreSQL) only once every purge of it and of every commit before
 * it is applied in Redis.
 *
 * Commits wait in a queue, in the order they came. Their tags are purged
 * through the cache's purges by tag (cache_purge_tag: soft, or hard where
 * a rule says so), APPLY_RUNNING_MAX at once across the queue, each of
 * which invalidates its keys a batch at a time: a bulk change of many
 * rows is a number of batched purges, never a flood of commands. A purge
 * that fails (Redis down, a purge cut short) goes back to waiting and is
 * tried again after a pause that doubles (RETRY_FIRST_MS to
 * RETRY_MAX_MS); nothing after it is acknowledged meanwhile. A queue past
 * APPLY_JOBS_MAX commits or APPLY_TAGS_MAX tags says so (the level hook:
 * the feed stops reading until it is empty); the commits it did not read
 * are still in the slot.
 *
 * A commit sent again (after a reconnect, or to a new leader) that was
 * applied already is acknowledged at once, and one still in the queue is
 * not queued twice.
 *
 * Calls cache/ (the purges) and the hooks its runner gave
 * (proxy_feed.c).
 */

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "cache/cache.h"
#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_feed_int.h"

#define APPLY_MAGIC		0x41504c59u	/* "APLY" */
#define APPLY_RUNNING_MAX	8	/* tag purges at once */
#define APPLY_JOBS_MAX		4096	/* commits queued: more, and it is full */
#define APPLY_TAGS_MAX		200000	/* tags queued: the same */
#define RETRY_FIRST_MS		100	/* after a failed purge */
#define RETRY_MAX_MS		5000
#define EVERYTHING		""	/* the prefix of every key */

enum tag_state { TAG_WAITING, TAG_RUNNING, TAG_DONE };

/* One commit's purges. */
struct job {
	TAILQ_ENTRY(job)	 link;
	uint64_t		 lsn;		/* 0: nothing to acknowledge */
	int64_t			 time_ms;	/* its commit's, or when queued */
	int			 everything;	/* one purge of every key */
	int			 n;		/* tags */
	int			 done;
	int			 next;		/* no tag before it waits */
	char			**tags;
	unsigned char		*hard;
	unsigned char		*state;		/* enum tag_state */
};

/* One tag purge under way. */
struct run {
	struct apply		*ap;
	struct job		*job;		/* NULL: a free run */
	int			 i;
};

struct apply {
	uint32_t		 magic;
	struct proxy		*px;
	char			 name[CONF_CHANGES_NAME_MAX];
	struct apply_hooks	 hooks;
	TAILQ_HEAD(, job)	 jobs;
	int			 njobs;
	int64_t			 ntags;		/* of the queued jobs */
	int			 full;		/* said so through level */
	struct run		 runs[APPLY_RUNNING_MAX];
	int			 running;
	struct event		*retry_ev;
	int64_t			 retry_ms;	/* the next pause */
	int			 failing;	/* said so in the log */
	uint64_t		 queued_lsn;	/* the last commit queued */
	struct apply_figures	 fig;
};

static void	pump(struct apply *ap);

static void
job_free(struct job *j)
{
	free(j->tags);
	free(j);
}

/* A job of c's tags, in one allocation: pointers, flags, text. */
static struct job *
job_new(const struct changes_commit *c, int64_t now_ms)
{
	size_t n = c->breadth == CHANGES_EVERYTHING ? 1 : c->n, bytes = 0;
	struct job *j;
	char *text;

	for (size_t i = 0; c->breadth != CHANGES_EVERYTHING && i < n; i++)
		bytes += strlen(c->tags[i]) + 1;
	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->tags = malloc(n * (sizeof(char *) + 2) + bytes + 1)) == NULL) {
		free(j);
		return NULL;
	}
	j->hard = (unsigned char *)(j->tags + n);
	j->state = j->hard + n;
	text = (char *)(j->state + n);
	j->n = (int)n;
	j->lsn = c->lsn;
	j->time_ms = c->time_ms != 0 ? c->time_ms : now_ms;
	j->everything = c->breadth == CHANGES_EVERYTHING;
	for (size_t i = 0; i < n; i++) {
		const char *t = j->everything ? EVERYTHING : c->tags[i];

		j->tags[i] = strcpy(text, t);
		text += strlen(t) + 1;
		j->hard[i] = c->hard != NULL && !j->everything ? c->hard[i] : 0;
		j->state[i] = TAG_WAITING;
	}
	return j;
}

static void
enqueue(struct apply *ap, struct job *j)
{
	TAILQ_INSERT_TAIL(&ap->jobs, j, link);
	ap->njobs++;
	ap->ntags += j->n;
	if (j->lsn > ap->queued_lsn)
		ap->queued_lsn = j->lsn;
	if (!ap->full && (ap->njobs >= APPLY_JOBS_MAX ||
	    ap->ntags >= APPLY_TAGS_MAX)) {
		ap->full = 1;
		log_warn("changes %s: %d commits (%" PRId64 " tags) wait for "
		    "their purges: reading stops until they are applied",
		    ap->name, ap->njobs, ap->ntags);
		ap->hooks.level(1, ap->hooks.arg);
	}
}

/* The jobs at the head whose purges are all done leave the queue, each
 * position handed back in turn. */
static void
complete(struct apply *ap)
{
	struct job *j;

	while ((j = TAILQ_FIRST(&ap->jobs)) != NULL && j->done == j->n) {
		TAILQ_REMOVE(&ap->jobs, j, link);
		ap->njobs--;
		ap->ntags -= j->n;
		ap->fig.applied++;
		if (j->lsn > ap->fig.applied_lsn)
			ap->fig.applied_lsn = j->lsn;
		if (j->lsn != 0)
			ap->hooks.applied(j->lsn, ap->hooks.arg);
		job_free(j);
	}
	if (ap->full && ap->njobs == 0) {
		ap->full = 0;
		log_info("changes %s: the queue is applied: reading again",
		    ap->name);
		ap->hooks.level(0, ap->hooks.arg);
	}
}

/* A purge failed or could not start: the tag waits again, and nothing
 * starts until a pause has passed. */
static void
failed(struct apply *ap, struct job *j, int i, const char *why)
{
	j->state[i] = TAG_WAITING;
	if (i < j->next)
		j->next = i;
	ap->fig.retries++;
	if (!ap->failing)
		log_warn("changes %s: purging tag %s failed (%s): trying again, "
		    "and acknowledging nothing past it meanwhile", ap->name,
		    j->everything ? "(every key)" : j->tags[i], why);
	ap->failing = 1;
	if (!evtimer_pending(ap->retry_ev, NULL)) {
		timer_arm(ap->retry_ev, ap->retry_ms);
		ap->retry_ms = MIN(ap->retry_ms * 2, RETRY_MAX_MS);
	}
}

static void
on_purged(int64_t purged, int ok, void *arg)
{
	struct run *r = arg;
	struct apply *ap = r->ap;
	struct job *j = r->job;
	int i = r->i;

	assert(ap->magic == APPLY_MAGIC && j != NULL);
	r->job = NULL;
	ap->running--;
	if (!ok) {
		failed(ap, j, i, "Redis failed part-way");
	} else {
		j->state[i] = TAG_DONE;
		j->done++;
		ap->fig.tags++;
		ap->fig.purged += (uint64_t)(purged > 0 ? purged : 0);
		if (ap->failing && !evtimer_pending(ap->retry_ev, NULL)) {
			log_info("changes %s: purges applied again", ap->name);
			ap->failing = 0;
			ap->retry_ms = RETRY_FIRST_MS;
		}
	}
	complete(ap);
	pump(ap);
}

/* Starts tag i of j in a free run. 0, or -1 (it could not start). */
static int
start(struct apply *ap, struct job *j, int i)
{
	struct run *r = NULL;
	enum purge_start s;

	for (int k = 0; k < APPLY_RUNNING_MAX && r == NULL; k++)
		if (ap->runs[k].job == NULL)
			r = &ap->runs[k];
	assert(r != NULL);
	r->job = j;
	r->i = i;
	s = j->everything ? cache_purge_prefix(ap->px->cache, EVERYTHING,
	    !j->hard[i], on_purged, r) : cache_purge_tag(ap->px->cache,
	    j->tags[i], !j->hard[i], on_purged, r);
	if (s != PURGE_STARTED) {
		r->job = NULL;
		failed(ap, j, i, s == PURGE_BUSY ? "too many purges run" :
		    "Redis unavailable");
		return -1;
	}
	j->state[i] = TAG_RUNNING;
	ap->running++;
	return 0;
}

/* Starts waiting tags, in the queue's order, while runs are free and no
 * pause after a failure is under way. */
static void
pump(struct apply *ap)
{
	struct job *j;

	TAILQ_FOREACH(j, &ap->jobs, link) {
		while (j->next < j->n && ap->running < APPLY_RUNNING_MAX) {
			if (evtimer_pending(ap->retry_ev, NULL))
				return;
			if (j->state[j->next] != TAG_WAITING) {
				j->next++;
				continue;
			}
			if (start(ap, j, j->next) == -1)
				return;
		}
		if (ap->running == APPLY_RUNNING_MAX)
			return;
	}
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct apply *ap = arg;

	assert(ap->magic == APPLY_MAGIC);
	pump(ap);
}

void
apply_commit(struct apply *ap, const struct changes_commit *c)
{
	struct job *j;

	assert(ap->magic == APPLY_MAGIC);
	if (c->lsn != 0 && c->lsn <= ap->fig.applied_lsn) {
		ap->hooks.applied(c->lsn, ap->hooks.arg);	/* sent again */
		return;
	}
	if (c->lsn != 0 && c->lsn <= ap->queued_lsn)
		return;		/* queued already: acknowledged once applied */
	if ((j = job_new(c, util_now_ms())) == NULL) {
		log_error("changes %s: out of memory: a commit's purges wait "
		    "for the next reader", ap->name);
		ap->hooks.level(1, ap->hooks.arg);
		ap->full = 1;
		return;
	}
	enqueue(ap, j);
	pump(ap);
}

void
apply_broad(struct apply *ap, const char *tags, int hard, const char *why)
{
	char *copy = strdup(tags), *save = NULL, *t;
	const char *v[CONF_CHANGES_TAGS_MAX];
	unsigned char h[CONF_CHANGES_TAGS_MAX];
	struct changes_commit c = { v, 0, CHANGES_EXACT, 0, 0, h };
	struct job *j;

	assert(ap->magic == APPLY_MAGIC);
	for (t = copy != NULL ? strtok_r(copy, " \t", &save) : NULL;
	    t != NULL && c.n < CONF_CHANGES_TAGS_MAX;
	    t = strtok_r(NULL, " \t", &save)) {
		h[c.n] = (unsigned char)hard;
		v[c.n++] = t;
	}
	ap->fig.broad++;
	if (c.n == 0)
		log_warn("changes %s: %s, but no broad tag is known to purge: "
		    "name them in broad_tags", ap->name, why);
	else if ((j = job_new(&c, util_now_ms())) != NULL) {
		log_warn("changes %s: %s: purging %zu broad tag%s", ap->name,
		    why, c.n, c.n == 1 ? "" : "s");
		enqueue(ap, j);
		pump(ap);
	}
	free(copy);
}

void
apply_reset(struct apply *ap)
{
	struct job *j;

	assert(ap->magic == APPLY_MAGIC);
	for (int k = 0; k < APPLY_RUNNING_MAX; k++) {
		if (ap->runs[k].job != NULL)
			cache_purge_forget(ap->px->cache, &ap->runs[k]);
		ap->runs[k].job = NULL;
	}
	ap->running = 0;
	while ((j = TAILQ_FIRST(&ap->jobs)) != NULL) {
		TAILQ_REMOVE(&ap->jobs, j, link);
		job_free(j);
	}
	ap->njobs = 0;
	ap->ntags = 0;
	ap->full = 0;
	ap->queued_lsn = ap->fig.applied_lsn;
	evtimer_del(ap->retry_ev);
	ap->retry_ms = RETRY_FIRST_MS;
}

void
apply_figures(const struct apply *ap, struct apply_figures *out)
{
	const struct job *j = TAILQ_FIRST(&ap->jobs);

	*out = ap->fig;
	out->queued = ap->njobs;
	out->oldest_ms = j != NULL ? j->time_ms : 0;
}

struct apply *
apply_new(struct proxy *px, const char *name, const struct apply_hooks *hooks)
{
	struct apply *ap;

	if ((ap = calloc(1, sizeof(*ap))) == NULL)
		return NULL;
	ap->magic = APPLY_MAGIC;
	ap->px = px;
	snprintf(ap->name, sizeof(ap->name), "%s", name);
	ap->hooks = *hooks;
	TAILQ_INIT(&ap->jobs);
	for (int k = 0; k < APPLY_RUNNING_MAX; k++)
		ap->runs[k].ap = ap;
	ap->retry_ms = RETRY_FIRST_MS;
	if ((ap->retry_ev = evtimer_new(px->base, on_retry, ap)) == NULL) {
		free(ap);
		return NULL;
	}
	return ap;
}

void
apply_free(struct apply **app)
{
	struct apply *ap = *app;

	if (ap == NULL)
		return;
	*app = NULL;
	assert(ap->magic == APPLY_MAGIC);
	apply_reset(ap);
	event_free(ap->retry_ev);
	ap->magic = 0;
	free(ap);
}
