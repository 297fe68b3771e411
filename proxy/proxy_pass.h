/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_PASS_H
#define PROXY_PROXY_PASS_H

/*
 * struct pass: a request's own fetch, past the cache (uncacheable, a
 * credential on an off route, hit-for-miss, an unsafe method). It fetches
 * through the origin budget, streams a long response to its waiter (a
 * stream of one), and answers a whole one through the waiter's answer op,
 * as a flight would; a successful write's invalidation is in place
 * before either ends. It never points back at its request: only its
 * waiter's ops, which its starter registered.
 */

#include <stddef.h>

#include "proxy/proxy_flow.h"

struct conf_route;
struct pass;
struct proxy;

struct pass_args {
	struct waiter		*waiter;	/* it answers and streams to it */
	const char		*method;
	const void		*body;		/* must outlive the pass */
	size_t			 body_len;
	int			 route;		/* for counters, or -1 */
	const struct conf_route	*rt;		/* copied; NULL: no route */
	const char		*uri;		/* path[?query] */
	const char		*key;		/* its URL's key, or "" */
	enum outcome		 kind;		/* OUT_BYPASS or OUT_METHOD */
	int			 unsafe;	/* an unsafe method: once sent, it
						 * goes on without its waiter */
	int			 write;		/* ... and invalidates its target */
	int			 hit_for_miss;	/* passed for it: may end it */
	int			 authorized;	/* key_authorized() */
};

/* Starts the fetch; NULL when it cannot (no memory). It answers (or ends
 * its stream) once, never from inside this call. */
struct pass *pass_start(struct proxy *px, const struct pass_args *a);
/* May it stop now, its waiter gone? Not once its answer is on its way,
 * nor an unsafe request that went (its write, and its invalidation,
 * stand); a safe one, or one not sent yet, may. */
int	pass_stoppable(const struct pass *p);
/* Its waiter is gone: the fetch stops, sent or not, and nothing more is
 * said. Sets *pp to NULL. */
void	pass_cancel(struct pass **pp);

#endif
