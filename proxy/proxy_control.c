/* SPDX-License-Identifier: MIT */
/*
 * POST /refresh and POST /warm: a job of keys, each looked up and then,
 * if it should be, refreshed through proxy_refresh.c's usual path (the
 * lock, the fetch, the fenced store), ranked last by the origin budget.
 *
 *	POST /refresh?url=URL       that URL's entry (fetched if not stored)
 *	POST /refresh?prefix=P      every entry whose key starts with P
 *	POST /refresh?tag=T         every entry stored with tag T
 *	POST /warm                  a body of URLs, one a line ('#' comments):
 *	                            the ones not stored are fetched
 *
 * A refresh first purges its entries softly (cache_soften, or the soft
 * purge by prefix or tag, which names every key it reached): every
 * process drops its near copies and serves the stale entry meanwhile,
 * and a request that comes first refreshes it under the same lock. Then
 * the job looks each key up: an entry stored since the job began was
 * refreshed already (by a request, or by another instance's refresh) and
 * is skipped; the rest is refreshed with the generation seen, so that of
 * every refresh in the fleet the lock lets one fetch. The answer comes
 * once every key is looked up: {"scheduled": N, "skipped": N, ...}; the
 * refreshes go on after it, JOB_REFRESHES at a time (at most
 * CONTROL_JOBS_MAX jobs a process, JOB_KEYS_MAX keys a job, WARM_URLS_MAX
 * URLs a warm-up: 413 beyond).
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/buffer.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_keyrule.h"
#include "common/hlist.h"
#include "common/uri.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_control.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_json.h"
#include "proxy/proxy_maint.h"
#include "proxy/proxy_near.h"
#include "proxy/proxy_purge.h"
#include "proxy/proxy_refresh.h"

#define CONTROL_MAGIC		0x43544c53u	/* "CTLS" */
#define JOB_MAGIC		0x4a4f4253u	/* "JOBS" */
#define CONTROL_JOBS_MAX	8	/* jobs a process runs at once */
#define JOB_LOOKUPS		32	/* a job's lookups in flight */
#define JOB_REFRESHES		16	/* a job's refreshes at once */
#define JOB_KEYS_MAX		100000	/* keys one job takes */
#define WARM_URLS_MAX		1000	/* URLs one warm-up takes */
#define JOB_RETRY_AFTER		"1"	/* s, when too many jobs run */
#define ENTITY_TOO_LARGE	413

enum job_kind { JOB_REFRESH, JOB_WARM };

struct job_key {
	TAILQ_ENTRY(job_key)	 link;
	int			 absent_ok;	/* fetch it even if not stored */
	char			 seen_gen[ENTRY_GEN_LEN + 1];
	char			 key[];
};
TAILQ_HEAD(job_keys, job_key);

/* One lookup or refresh of a job. */
struct job_op {
	struct job		*job;
	struct job_key		*k;
	struct cache_op		*op;
	struct refresh		*rf;
};

struct job {
	uint32_t		 magic;
	struct proxy		*px;
	enum job_kind		 kind;
	int64_t			 since_ms;	/* entries stored since: fresh */
	struct hreq *ev;		/* NULL once answered */
	int			 listing;	/* more keys may come */
	int			 listed_ok;	/* ... and every one came */
	struct cache_op		*soften_op;	/* url=: its soft purge */
	char			*url_key;	/* url=: its key */
	struct job_keys		 look;		/* to look up */
	struct job_keys		 fetch;		/* to refresh */
	int			 nkeys;
	int64_t			 over;		/* past JOB_KEYS_MAX */
	struct job_op		 lookups[JOB_LOOKUPS];
	struct job_op		 refreshes[JOB_REFRESHES];
	int			 nlooking;
	int			 nrefreshing;
	int64_t			 urls, invalid, cached, scheduled, skipped;
	int64_t			 refreshed, failed;
	TAILQ_ENTRY(job)	 link;
};

struct control {
	uint32_t		 magic;
	TAILQ_HEAD(, job)	 jobs;
	int			 njobs;
};

static void job_pump(struct job *job);

/* A 503 says when to try again. */
static void
job_error(struct hreq *ev, int code, const char *msg)
{
	if (code == HTTP_SERVUNAVAIL)
		hl_add(&ev->out,
		    "Retry-After", JOB_RETRY_AFTER);
	json_error(ev, code, msg);
}

int
control_new(struct proxy *px)
{
	struct control *ctl;

	if ((ctl = calloc(1, sizeof(*ctl))) == NULL)
		return -1;
	ctl->magic = CONTROL_MAGIC;
	TAILQ_INIT(&ctl->jobs);
	px->control = ctl;
	return 0;
}

int
control_jobs(const struct proxy *px)
{
	return px->control != NULL ? px->control->njobs : 0;
}

static void
keys_free(struct job_keys *q)
{
	struct job_key *k;

	while ((k = TAILQ_FIRST(q)) != NULL) {
		TAILQ_REMOVE(q, k, link);
		free(k);
	}
}

static void
job_free(struct job *job)
{
	struct control *ctl = job->px->control;

	assert(job->magic == JOB_MAGIC);
	TAILQ_REMOVE(&ctl->jobs, job, link);
	ctl->njobs--;
	cache_op_cancel(&job->soften_op);
	for (int i = 0; i < JOB_LOOKUPS; i++) {
		cache_op_cancel(&job->lookups[i].op);
		free(job->lookups[i].k);
	}
	for (int i = 0; i < JOB_REFRESHES; i++) {
		if (job->refreshes[i].rf != NULL)
			refresh_detach(job->refreshes[i].rf);
		free(job->refreshes[i].k);
	}
	keys_free(&job->look);
	keys_free(&job->fetch);
	free(job->url_key);
	job->magic = 0;
	free(job);
}

void
control_shutdown(struct proxy *px)
{
	struct control *ctl = px->control;
	struct job *job;

	if (ctl == NULL)
		return;
	assert(ctl->magic == CONTROL_MAGIC);
	while ((job = TAILQ_FIRST(&ctl->jobs)) != NULL) {
		if (job->ev != NULL)
			job_error(job->ev, HTTP_SERVUNAVAIL, "stopping");
		job_free(job);
	}
	ctl->magic = 0;
	free(ctl);
	px->control = NULL;
}

static struct job *
job_new(struct proxy *px, struct hreq *ev, enum job_kind kind)
{
	struct control *ctl = px->control;
	struct job *job;

	assert(ctl->magic == CONTROL_MAGIC);
	if (ctl->njobs >= CONTROL_JOBS_MAX) {
		job_error(ev, HTTP_SERVUNAVAIL, "too many refreshes running");
		return NULL;
	}
	if ((job = calloc(1, sizeof(*job))) == NULL) {
		job_error(ev, HTTP_SERVUNAVAIL, "out of memory");
		return NULL;
	}
	job->magic = JOB_MAGIC;
	job->px = px;
	job->kind = kind;
	job->ev = ev;
	job->since_ms = util_now_ms();
	job->listed_ok = 1;
	TAILQ_INIT(&job->look);
	TAILQ_INIT(&job->fetch);
	for (int i = 0; i < JOB_LOOKUPS; i++)
		job->lookups[i].job = job;
	for (int i = 0; i < JOB_REFRESHES; i++)
		job->refreshes[i].job = job;
	TAILQ_INSERT_TAIL(&ctl->jobs, job, link);
	ctl->njobs++;
	return job;
}

/* One more key to look at (absent_ok: fetched even if not stored). */
static void
job_take(struct job *job, const char *key, int absent_ok)
{
	struct job_key *k;
	size_t len = strlen(key);

	if (job->nkeys >= JOB_KEYS_MAX) {
		job->over++;
		return;
	}
	if ((k = calloc(1, sizeof(*k) + len + 1)) == NULL) {
		job->failed++;
		return;
	}
	memcpy(k->key, key, len + 1);
	k->absent_ok = absent_ok;
	TAILQ_INSERT_TAIL(&job->look, k, link);
	job->nkeys++;
}

/* Every key is looked up: the answer. */
static void
job_answer(struct job *job)
{
	struct evbuffer *out = evbuffer_new();
	int code = job->listed_ok ? HTTP_OK : HTTP_SERVUNAVAIL;

	if (out != NULL && job->kind == JOB_WARM)
		evbuffer_add_printf(out, "{\"urls\": %" PRId64 ", \"cached\": %"
		    PRId64 ", \"scheduled\": %" PRId64 ", \"invalid\": %" PRId64
		    ", \"failed\": %" PRId64 "}\n", job->urls, job->cached,
		    job->scheduled, job->invalid, job->failed);
	else if (out != NULL)
		evbuffer_add_printf(out, "{\"scheduled\": %" PRId64 ", \"skipped\": %"
		    PRId64 ", \"failed\": %" PRId64 ", \"over_limit\": %" PRId64
		    "%s}\n", job->scheduled, job->skipped, job->failed, job->over,
		    job->listed_ok ? "" : ", \"error\": \"redis unavailable: "
		    "not every entry was reached, retry it\"");
	if (code != HTTP_OK)
		hl_add((&(job->ev)->out),
		    "Retry-After", JOB_RETRY_AFTER);
	json_send(job->ev, code, out);
	job->ev = NULL;
}

static void
on_job_refreshed(struct refresh_report *rep, void *arg)
{
	struct job_op *jo = arg;
	struct job *job = jo->job;

	assert(job->magic == JOB_MAGIC);
	jo->rf = NULL;
	job->nrefreshing--;
	if ((rep->result == RFR_FETCHED && rep->stored) ||
	    rep->result == RFR_BUSY || rep->result == RFR_CHANGED)
		job->refreshed++;	/* here, or by whoever holds the lock */
	else
		job->failed++;
	free(jo->k);
	jo->k = NULL;
	job_pump(job);
}

/* What goes upstream for a key of host: as for a request of the route. */
static void
job_headers(const struct proxy *px, const struct conf_route *rt,
    const char *host, struct hlist *h)
{
	const char *name = rt->key_host ? host : px->conf->forwarded_host;

	if (rt->key_host)
		hl_add(h, "Host", host);
	if (name[0] != '\0')
		hl_add(h, "X-Forwarded-Host", name);
	hl_add(h, "X-Forwarded-Proto", "http");
}

/* Starts jo's refresh of its key: 0, or -1 (not refreshed). */
static int
job_refresh(struct job *job, struct job_op *jo)
{
	struct proxy *px = job->px;
	const char *key = jo->k->key, *uri = key + strcspn(key, "/");
	char host[CACHE_KEY_MAX + 1], path[CACHE_KEY_MAX + 1];
	const struct conf_route *rt;
	struct hlist headers;
	struct refresh_args a;

	snprintf(host, sizeof(host), "%.*s", (int)(uri - key), key);
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(uri, "?"), uri);
	if (*uri != '/' || (rt = conf_route_match(px->conf, path)) == NULL ||
	    maint_avoids(px, uri))
		return -1;
	hl_init(&headers);
	job_headers(px, rt, host, &headers);
	memset(&a, 0, sizeof(a));
	a.mode = RF_LOCKED;
	a.key = key;
	a.uri = uri;
	a.route = (int)(rt - px->conf->routes);
	a.rt = rt;
	a.headers = &headers;
	a.seen_gen = jo->k->seen_gen;
	a.waited = "";
	a.lowest = 1;
	jo->rf = refresh_start(px, &a, on_job_refreshed, jo);
	hl_free(&headers);
	return jo->rf != NULL ? 0 : -1;
}

static void
on_job_lookup(enum cache_result r, struct cache_entry *e, void *arg)
{
	struct job_op *jo = arg;
	struct job *job = jo->job;
	struct job_key *k = jo->k;

	assert(job->magic == JOB_MAGIC);
	jo->op = NULL;
	jo->k = NULL;
	job->nlooking--;
	if (r == CACHE_ERROR) {
		job->failed++;
	} else if (r == CACHE_FOUND && job->kind == JOB_WARM) {
		job->cached++;
	} else if (r == CACHE_FOUND && e->stored_ms > job->since_ms) {
		job->skipped++;		/* stored after the job began */
	} else if (strchr(k->key, KEYRULE_SEP) != NULL) {
		job->skipped++;		/* a credential's or a body's: stale */
	} else if (r == CACHE_FOUND || k->absent_ok) {
		snprintf(k->seen_gen, sizeof(k->seen_gen), "%s",
		    e != NULL ? e->gen : "");
		TAILQ_INSERT_TAIL(&job->fetch, k, link);
		job->scheduled++;
		k = NULL;
	} else {
		job->skipped++;		/* gone since it was listed */
	}
	free(k);
	entry_unref(&e);
	job_pump(job);
}

/* A free op of n, or NULL. */
static struct job_op *
free_op(struct job_op *ops, int n)
{
	for (int i = 0; i < n; i++)
		if (ops[i].k == NULL)
			return &ops[i];
	return NULL;
}

/* Starts what may start; answers, or ends the job, when it is time. The
 * job may be gone after it. */
static void
job_pump(struct job *job)
{
	struct proxy *px = job->px;
	struct job_op *jo;
	struct job_key *k;

	if (px->draining) {	/* once a stop begins, nothing new starts */
		keys_free(&job->look);
		keys_free(&job->fetch);
	}
	while (job->nlooking < JOB_LOOKUPS &&
	    (k = TAILQ_FIRST(&job->look)) != NULL &&
	    (jo = free_op(job->lookups, JOB_LOOKUPS)) != NULL) {
		TAILQ_REMOVE(&job->look, k, link);
		jo->k = k;
		job->nlooking++;
		if ((jo->op = cache_lookup(px->cache, k->key, on_job_lookup,
		    jo)) == NULL) {
			job->nlooking--;
			job->failed++;
			free(jo->k);
			jo->k = NULL;
		}
	}
	while (job->nrefreshing < JOB_REFRESHES &&
	    (k = TAILQ_FIRST(&job->fetch)) != NULL &&
	    (jo = free_op(job->refreshes, JOB_REFRESHES)) != NULL) {
		TAILQ_REMOVE(&job->fetch, k, link);
		jo->k = k;
		job->nrefreshing++;
		if (job_refresh(job, jo) == -1) {
			job->nrefreshing--;
			job->failed++;
			free(jo->k);
			jo->k = NULL;
		}
	}
	if (job->listing || job->nlooking > 0 || !TAILQ_EMPTY(&job->look))
		return;
	if (job->ev != NULL)
		job_answer(job);
	if (job->nrefreshing == 0 && TAILQ_EMPTY(&job->fetch)) {
		log_info("admin: %s done: %" PRId64 " refreshed, %" PRId64
		    " failed", job->kind == JOB_WARM ? "warm-up" : "refresh",
		    job->refreshed, job->failed);
		job_free(job);
	}
}

/* The soft purge named a key. */
static void
on_job_visit(const char *key, void *arg)
{
	struct job *job = arg;

	assert(job->magic == JOB_MAGIC);
	job_take(job, key, 0);
	job_pump(job);
}

/* The soft purge is over: every key it reached was named, if ok. */
static void
on_job_listed(int64_t n, int ok, void *arg)
{
	struct job *job = arg;

	assert(job->magic == JOB_MAGIC);
	job->listing = 0;
	job->listed_ok = ok;
	job_pump(job);
}

/* url=: its soft purge is done (the entry stale, or not there). */
static void
on_url_softened(enum fence_result r, void *arg)
{
	struct job *job = arg;

	assert(job->magic == JOB_MAGIC);
	job->soften_op = NULL;
	job->listing = 0;
	if (r == FENCE_ERROR)
		job->listed_ok = 0;
	else
		job_take(job, job->url_key, 1);
	job_pump(job);
}

/* Starts the listing of url=, prefix= or tag=: 0, or an HTTP status with
 * the answer given (*why). */
static int
refresh_list(struct job *job, const char *url, const char *prefix,
    const char *tag, const char **why)
{
	struct proxy *px = job->px;
	char key[CACHE_KEY_MAX + 1];
	enum purge_start r;
	int rc;

	*why = "redis unavailable";
	job->listing = 1;
	if (url != NULL) {
		if ((rc = admin_url_key(px, url, key, NULL, NULL)) != 0) {
			*why = "url must be absolute, like http://host/path";
			return rc;
		}
		if ((job->url_key = strdup(key)) == NULL)
			return HTTP_SERVUNAVAIL;
		near_drop(px, key);	/* the others hear by broadcast */
		job->soften_op = cache_soften(px->cache, key, on_url_softened,
		    job);
		return job->soften_op != NULL ? 0 : HTTP_SERVUNAVAIL;
	}
	if (prefix != NULL && *prefix != '\0') {
		admin_prefix_key(px, prefix, key);
		near_drop_prefix(px, key);
		r = cache_soften_prefix_each(px->cache, key, on_job_visit,
		    on_job_listed, job);
	} else if (tag != NULL && *tag != '\0' && strlen(tag) <= CACHE_TAG_MAX) {
		r = cache_soften_tag_each(px->cache, tag, on_job_visit,
		    on_job_listed, job);
	} else {
		*why = "need url=URL, prefix=PREFIX or tag=TAG";
		return HTTP_BADREQUEST;
	}
	if (r == PURGE_BUSY)
		*why = "too many purges running";
	return r == PURGE_STARTED ? 0 : HTTP_SERVUNAVAIL;
}

void
admin_refresh(struct proxy *px, struct hreq *ev)
{
	const char *query = ev->query;
	struct hlist params;
	struct job *job;
	const char *why;
	int rc;

	assert(px->magic == PROXY_MAGIC);
	if (ev->method != HM_POST) {
		job_error(ev, HTTP_BADMETHOD, "use POST /refresh?url=URL, "
		    "?prefix=PREFIX or ?tag=TAG");
		return;
	}
	hl_init(&params);
	if (query != NULL)
		(void)uri_query_parse(query, strlen(query), &params);
	if ((job = job_new(px, ev, JOB_REFRESH)) != NULL) {
		rc = refresh_list(job, hl_find(&params, "url"),
		    hl_find(&params, "prefix"),
		    hl_find(&params, "tag"), &why);
		if (rc != 0) {
			job_error(ev, rc, why);
			job->ev = NULL;
			job_free(job);
		} else {
			log_info("admin: refresh %s", query);
		}
	}
	hl_free(&params);
}

/* The URLs of a warm-up's body: each line's key taken; -1 when there
 * are more than WARM_URLS_MAX. */
static int
warm_urls(struct job *job, struct evbuffer *body)
{
	char key[CACHE_KEY_MAX + 1], *line, *s;
	size_t len;

	while ((line = evbuffer_readln(body, &len, EVBUFFER_EOL_CRLF)) !=
	    NULL || (len = evbuffer_get_length(body)) > 0) {
		if (line == NULL && (line = calloc(1, len + 1)) != NULL)
			evbuffer_remove(body, line, len);	/* the last */
		if (line == NULL)
			return -1;
		s = line + strspn(line, " \t");
		s[strcspn(s, " \t")] = '\0';
		if (*s != '\0' && *s != '#' && ++job->urls <= WARM_URLS_MAX) {
			if (admin_url_key(job->px, s, key, NULL, NULL) != 0)
				job->invalid++;
			else
				job_take(job, key, 1);
		}
		free(line);
	}
	return job->urls <= WARM_URLS_MAX ? 0 : -1;
}

void
admin_warm(struct proxy *px, struct hreq *ev)
{
	struct job *job;

	assert(px->magic == PROXY_MAGIC);
	if (ev->method != HM_POST) {
		job_error(ev, HTTP_BADMETHOD, "use POST /warm with URLs, one "
		    "a line");
		return;
	}
	if ((job = job_new(px, ev, JOB_WARM)) == NULL)
		return;
	if (warm_urls(job, ev->body) == -1) {
		job_error(ev, ENTITY_TOO_LARGE, "at most 1000 URLs a warm-up");
		job->ev = NULL;
		job_free(job);
		return;
	}
	log_info("admin: warm-up of %" PRId64 " URLs", job->urls);
	job_pump(job);
}
