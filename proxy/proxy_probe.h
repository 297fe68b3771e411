#ifndef PROXY_PROXY_PROBE_H
#define PROXY_PROXY_PROBE_H

/*
 * Active health checks ([upstream] health_path): one probe per server of
 * a pool, in each worker (each keeps its own view of its servers, as it
 * keeps its own connections). A probe GETs the server's base URL and
 * health_path every interval_ms (the first at once) and tells its owner
 * whether the answer came within timeout_ms with the expected status.
 */

#include <stdint.h>

struct proxy;
struct probe;

/* ok: the expected status in time; why: else, what went wrong. */
typedef void probe_cb(int ok, const char *why, void *arg);

struct probe_args {
	const char	*url;		/* the server's base URL */
	const char	*path;		/* health_path */
	int64_t		 interval_ms;
	int64_t		 timeout_ms;
	int64_t		 connect_timeout_ms;
	int		 status;	/* the one expected */
	probe_cb	*cb;
	void		*arg;
};

/* Starts probing (a's strings are copied). NULL: no memory. */
struct probe	*probe_start(struct proxy *px, const struct probe_args *a);
/* Stops, a probe in flight included; cb will not run. Sets *pp NULL. */
void		 probe_stop(struct probe **pp);

#endif
