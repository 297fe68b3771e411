/* SPDX-License-Identifier: MIT */
/*
 * Asking the sentinels who the primary is, and listening to one of them
 * for +switch-master. See cache_sentinel.h.
 *
 * Calls: cache_adapter.c (the question's connection), cache_sub.c (the
 * feed). Called by cache_route.c, which hears back through its hooks.
 */

#include "cache/cache_sentinel.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "cache/cache_adapter.h"
#include "cache/cache_sub.h"
#include "common/log.h"
#include "common/util.h"

#define SENTINEL_MAGIC		0x53454e54u	/* "SENT" */
#define FEED_RETRY_MS		100	/* the next sentinel's feed, after, */
#define FEED_RETRY_MAX_MS	2000	/* doubling to this while none takes */
#define SWITCH_CHANNEL		"+switch-master"
#define SWITCH_FORMAT		"%63s %*s %*s %255s %d"	/* name, new host, port */

_Static_assert(CONF_NAME_MAX == 64 && CONF_HOST_MAX == 256,
    "SWITCH_FORMAT's widths");

struct sentinel {
	uint32_t		 magic;
	struct event_base	*base;
	char			 unix_path[CONF_PATH_MAX];
	char			 master_name[CONF_NAME_MAX];
	int64_t			 timeout_ms;
	int			 nseeds;
	struct conf_hostport	 seeds[CONF_REDIS_ADDRS_MAX];
	const struct sentinel_hooks *hooks;
	void			*arg;
	struct cache_counters	*counters;
	int			 closing;
	struct adapter_auth	 auth;		/* sentinel_username, _password */
	char			 reason[CACHE_REASON_MAX];	/* the last
						 * refusal, "" once answered */

	/* The question's connection, and the sentinel it goes to. */
	redisAsyncContext	*ask;
	struct event		*ask_timer;
	int			 ask_at;
	/* The +switch-master feed. */
	struct sub		*feed;
	int			 feed_at;	/* which sentinel it listens to */
	struct event		*feed_retry;
	struct event		*feed_timer;	/* its SUBSCRIBE unconfirmed */
	int64_t			 feed_backoff_ms;
};

/* The question is over; the next one goes to the next sentinel unless it
 * was answered. */
static void
ask_done(struct sentinel *s, int ok)
{
	evtimer_del(s->ask_timer);
	if (s->ask != NULL) {
		s->ask->data = NULL;
		redisAsyncDisconnect(s->ask);
		s->ask = NULL;
	}
	if (!ok)
		s->ask_at++;
	s->hooks->answered(ok, s->arg);
}

static const struct conf_hostport *
asked(const struct sentinel *s)
{
	return &s->seeds[s->ask_at % s->nseeds];
}

/* A sentinel refused who we are (AUTH, or NOAUTH): said once while the
 * refusal stays the same, whichever sentinel is asked. */
static void
refused(struct sentinel *s, const char *err)
{
	char reason[CACHE_REASON_MAX];

	snprintf(reason, sizeof(reason), "sentinel auth failed: %s", err);
	if (strcmp(reason, s->reason) != 0)
		log_error("redis: sentinel %s:%d: %s (check [redis] "
		    "sentinel_username and sentinel_password or "
		    "sentinel_password_file)", asked(s)->host, asked(s)->port,
		    reason);
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
	s->counters->auth_failures++;
	ask_done(s, 0);
}

static void
on_ask_auth(redisAsyncContext *ac, void *r, void *privdata)
{
	struct sentinel *s = ac->data;
	redisReply *reply = r;

	if (s == NULL || s->closing || reply == NULL)
		return;		/* a disconnect: its callback handles it */
	assert(s->magic == SENTINEL_MAGIC);
	if (reply->type == REDIS_REPLY_ERROR &&
	    !adapter_auth_not_needed(reply->str))
		refused(s, reply->str);
}

static void
on_master_addr(redisAsyncContext *ac, void *r, void *privdata)
{
	struct sentinel *s = ac->data;
	redisReply *reply = r;

	if (s == NULL || s->closing)
		return;
	assert(s->magic == SENTINEL_MAGIC);
	if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
	    adapter_auth_refused(reply->str)) {
		refused(s, reply->str);
		return;
	}
	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements != 2 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    reply->element[1]->type != REDIS_REPLY_STRING) {
		log_warn("redis: sentinel %s:%d does not know %s",
		    asked(s)->host, asked(s)->port, s->master_name);
		ask_done(s, 0);
		return;
	}
	s->counters->map_refreshes++;
	if (s->reason[0] != '\0')
		log_info("redis: sentinel %s:%d answers", asked(s)->host,
		    asked(s)->port);
	s->reason[0] = '\0';
	s->hooks->primary(reply->element[0]->str,
	    atoi(reply->element[1]->str), s->arg);
	ask_done(s, 1);
}

static void
on_ask_connect(const redisAsyncContext *ac, int status)
{
	struct sentinel *s = ac->data;

	if (s == NULL || status == REDIS_OK)
		return;
	s->ask = NULL;	/* hiredis frees it */
	ask_done(s, 0);
}

static void
on_ask_disconnect(const redisAsyncContext *ac, int status)
{
	struct sentinel *s = ac->data;

	if (s == NULL)
		return;
	s->ask = NULL;
	ask_done(s, 0);
}

static void
on_ask_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct sentinel *s = arg;

	assert(s->magic == SENTINEL_MAGIC);
	log_warn("redis: sentinel %s:%d did not answer", asked(s)->host,
	    asked(s)->port);
	if (s->ask != NULL) {
		s->ask->data = NULL;
		redisAsyncFree(s->ask);
		s->ask = NULL;
	}
	ask_done(s, 0);
}

int
sentinel_ask(struct sentinel *s)
{
	const struct conf_hostport *hp = asked(s);
	struct timeval tv = util_timeval(s->timeout_ms);

	s->ask = adapter_connect(s->base, hp->host, hp->port, s->unix_path, s,
	    on_ask_connect, on_ask_disconnect);
	if (s->ask == NULL) {
		s->ask_at++;
		return -1;
	}
	evtimer_add(s->ask_timer, &tv);
	(void)adapter_auth(s->ask, &s->auth, on_ask_auth, NULL);
	redisAsyncCommand(s->ask, on_master_addr, NULL,
	    "SENTINEL get-master-addr-by-name %s", s->master_name);
	return 0;
}

/* The next sentinel's feed, a little later: later each time until one
 * listens (a refused password must not become a connect a tick). */
static void
retry_feed(struct sentinel *s)
{
	struct timeval tv = util_timeval(s->feed_backoff_ms);

	s->feed_at++;
	s->feed_backoff_ms = s->feed_backoff_ms * 2 > FEED_RETRY_MAX_MS ?
	    FEED_RETRY_MAX_MS : s->feed_backoff_ms * 2;
	if (!s->closing)
		evtimer_add(s->feed_retry, &tv);
}

/* "+switch-master": "<name> <old ip> <old port> <new ip> <new port>". */
static void
on_feed_reply(const void *r, void *arg)
{
	struct sentinel *s = arg;
	const redisReply *reply = r;
	char name[CONF_NAME_MAX], host[CONF_HOST_MAX];
	int port;

	assert(s->magic == SENTINEL_MAGIC);
	if (reply == NULL) {
		evtimer_del(s->feed_timer);
		sub_close(&s->feed);
		retry_feed(s);
		return;
	}
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
	    reply->element[0]->type != REDIS_REPLY_STRING)
		return;
	if (strcmp(reply->element[0]->str, "subscribe") == 0) {
		evtimer_del(s->feed_timer);
		s->feed_backoff_ms = FEED_RETRY_MS;
		/* A switch may have happened while nobody listened. */
		s->hooks->listening(s->arg);
		return;
	}
	if (strcmp(reply->element[0]->str, "message") != 0 ||
	    reply->element[2]->type != REDIS_REPLY_STRING ||
	    sscanf(reply->element[2]->str, SWITCH_FORMAT, name,
	    host, &port) != 3 || strcmp(name, s->master_name) != 0)
		return;
	log_info("redis: +switch-master %s: %s:%d", name, host, port);
	s->hooks->primary(host, port, s->arg);
}

static void
open_feed(struct sentinel *s)
{
	const struct conf_hostport *hp = &s->seeds[s->feed_at % s->nseeds];
	const char *argv[] = { "SUBSCRIBE", SWITCH_CHANNEL };
	struct timeval tv = util_timeval(s->timeout_ms);

	s->feed = sub_open(s->base, hp->host, hp->port, NULL, s->auth.user,
	    s->auth.pass, NULL, on_feed_reply, s);
	if (s->feed == NULL || sub_send(s->feed, 2, argv) == -1) {
		sub_close(&s->feed);
		retry_feed(s);
		return;
	}
	evtimer_add(s->feed_timer, &tv);
}

/* The feed's sentinel took the connection (or not even that) and did not
 * confirm the subscription within [redis] timeout: it hangs, and would
 * keep every +switch-master from us. The next one's feed. */
static void
on_feed_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct sentinel *s = arg;
	const struct conf_hostport *hp;

	assert(s->magic == SENTINEL_MAGIC);
	hp = &s->seeds[s->feed_at % s->nseeds];
	log_warn("redis: sentinel %s:%d did not confirm the %s subscription",
	    hp->host, hp->port, SWITCH_CHANNEL);
	sub_close(&s->feed);
	retry_feed(s);
}

static void
on_feed_retry(evutil_socket_t fd, short what, void *arg)
{
	struct sentinel *s = arg;

	assert(s->magic == SENTINEL_MAGIC);
	if (s->feed == NULL && !s->closing)
		open_feed(s);
}

struct sentinel *
sentinel_new(struct event_base *base, const struct conf *conf,
    const struct sentinel_hooks *hooks, void *arg,
    struct cache_counters *counters)
{
	struct sentinel *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->magic = SENTINEL_MAGIC;
	s->base = base;
	snprintf(s->unix_path, sizeof(s->unix_path), "%s", conf->redis_unix);
	snprintf(s->master_name, sizeof(s->master_name), "%s",
	    conf->redis_master_name);
	s->timeout_ms = conf->redis_timeout_ms;
	s->nseeds = conf->redis_naddrs;
	memcpy(s->seeds, conf->redis_addrs, sizeof(s->seeds));
	s->hooks = hooks;
	s->arg = arg;
	s->counters = counters;
	s->feed_backoff_ms = FEED_RETRY_MS;
	adapter_auth_set(&s->auth, conf->redis_sentinel_username,
	    conf->redis_sentinel_password);
	s->ask_timer = evtimer_new(base, on_ask_timeout, s);
	s->feed_retry = evtimer_new(base, on_feed_retry, s);
	s->feed_timer = evtimer_new(base, on_feed_timeout, s);
	if (s->ask_timer == NULL || s->feed_retry == NULL ||
	    s->feed_timer == NULL) {
		sentinel_free(&s);
		return NULL;
	}
	open_feed(s);
	return s;
}

void
sentinel_free(struct sentinel **sp)
{
	struct sentinel *s = *sp;

	if (s == NULL)
		return;
	assert(s->magic == SENTINEL_MAGIC);
	s->closing = 1;
	if (s->ask != NULL) {
		s->ask->data = NULL;
		redisAsyncFree(s->ask);
	}
	sub_close(&s->feed);
	if (s->ask_timer != NULL)
		event_free(s->ask_timer);
	if (s->feed_retry != NULL)
		event_free(s->feed_retry);
	if (s->feed_timer != NULL)
		event_free(s->feed_timer);
	s->magic = 0;
	free(s);
	*sp = NULL;
}

void
sentinel_credentials(struct sentinel *s, const struct conf *conf)
{
	assert(s->magic == SENTINEL_MAGIC);
	if (!adapter_auth_set(&s->auth, conf->redis_sentinel_username,
	    conf->redis_sentinel_password))
		return;
	log_info("redis: new credentials for the sentinels");
	s->feed_backoff_ms = FEED_RETRY_MS;
	if (s->feed == NULL && evtimer_pending(s->feed_retry, NULL)) {
		evtimer_del(s->feed_retry);
		open_feed(s);
	}
}

const char *
sentinel_reason(const struct sentinel *s)
{
	return s->reason;
}
