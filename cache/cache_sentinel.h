/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_SENTINEL_H
#define CACHE_CACHE_SENTINEL_H

/*
 * The sentinels, for the routing table in sentinel mode: the question
 * "who is the primary of [redis] master_name" (SENTINEL
 * get-master-addr-by-name), put to one sentinel at a time, each in turn,
 * within [redis] timeout; and a feed of +switch-master from one of them,
 * which says at once when a failover names another primary. Private to
 * cache/.
 */

#include <event2/event.h>

#include "cache/cache.h"
#include "conf/conf.h"

struct sentinel;

/* What the routing table hears. */
struct sentinel_hooks {
	/* host:port is the primary (an answer, or a +switch-master). */
	void	(*primary)(const char *host, int port, void *arg);
	/* The question is over: answered (ok), or not; the next question
	 * goes to the next sentinel. */
	void	(*answered)(int ok, void *arg);
	/* The feed is listening (again): a switch may have been missed. */
	void	(*listening)(void *arg);
};

/* Opens the feed. NULL on no memory. */
struct sentinel	*sentinel_new(struct event_base *base, const struct conf *conf,
		    const struct sentinel_hooks *hooks, void *arg,
		    struct cache_counters *counters);
void		 sentinel_free(struct sentinel **sp);
/* Asks the next sentinel: 0 while the question is out (answered follows,
 * through the loop), -1 when it could not be put. */
int		 sentinel_ask(struct sentinel *s);
/* A reload's sentinel_username and sentinel_password: the next question
 * and feed use them (a feed that is down tries them at once). */
void		 sentinel_credentials(struct sentinel *s,
		    const struct conf *conf);
/* Why the sentinels did not answer ("sentinel auth failed: ..."), or "". */
const char	*sentinel_reason(const struct sentinel *s);

#endif
