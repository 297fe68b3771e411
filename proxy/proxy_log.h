#ifndef PROXY_PROXY_LOG_H
#define PROXY_PROXY_LOG_H

/* The access log: one line per finished request. */

#include <stdint.h>

struct proxy;

struct access_record {
	const char	*client;	/* address, or "-" */
	const char	*method;
	const char	*uri;
	int		 proto_major, proto_minor;
	int		 status;
	uint64_t	 bytes;		/* body bytes sent */
	const char	*referer;	/* or NULL */
	const char	*user_agent;	/* or NULL */
	const char	*cache;		/* hit stale miss collapsed bypass error */
	const char	*route;		/* prefix, or NULL */
	int64_t		 upstream_ms;	/* -1: no upstream fetch for it */
	int64_t		 lock_wait_ms;	/* -1: did not wait */
	int64_t		 total_ms;
};

void	access_log_write(struct proxy *px, const struct access_record *r);

#endif
