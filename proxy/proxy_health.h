/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HEALTH_H
#define PROXY_PROXY_HEALTH_H

/*
 * Active health checks ([upstream] health_path): one probe per server of
 * a pool, in each worker (each keeps its own view of its servers, as it
 * keeps its own connections). A probe GETs the server's base URL and
 * health_path every interval_ms (the first at once) and tells its owner
 * whether the answer came within timeout_ms with the expected status.
 */

#include <stdint.h>

struct proxy;
struct health_check;

/* ok: the expected status in time; why: else, what went wrong. */
typedef void health_cb(int ok, const char *why, void *arg);

struct health_args {
	const char	*url;		/* the server's base URL */
	const char	*path;		/* health_path */
	int64_t		 interval_ms;
	int64_t		 timeout_ms;
	int64_t		 connect_timeout_ms;
	int		 status;	/* the one expected */
	health_cb	*cb;
	void		*arg;
};

/* Starts probing (a's strings are copied). NULL: no memory. */
struct health_check	*health_start(struct proxy *px,
			    const struct health_args *a);
/* Stops, a probe in flight included; cb will not run. Sets *hp NULL. */
void			 health_stop(struct health_check **hp);

#endif
