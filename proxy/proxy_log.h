/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_LOG_H
#define PROXY_PROXY_LOG_H

/*
 * The access log: one line per finished request, in the combined log
 * format with Corral's fields after it (docs/operations.md, "The access log"):
 *
 *   127.0.0.1 - - [02/Mar/2025:10:00:00 +0000] "GET /users/1 HTTP/1.1" 200
 *   57 "-" "curl/7.88.1" cache=hit route=/ upstream_ms=- lock_wait_ms=-
 *   total_ms=1 key=credential
 *
 * (one line; key= only when a key rule made the key, cache_keyrule.h). Quoted fields escape '"', '\\' and bytes outside printable
 * ASCII as \xHH; "-" stands for a missing value. With log_format = json,
 * one JSON object a line instead, with the same fields (null for a missing
 * value) and the Cache-Status header sent.
 */

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct evbuffer;
struct proxy;
struct access_log;

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
	const char	*cache_status;	/* the Cache-Status sent, or NULL */
	const char	*route;		/* prefix, or NULL */
	int64_t		 upstream_ms;	/* -1: no upstream fetch for it */
	int64_t		 lock_wait_ms;	/* -1: did not wait */
	int64_t		 total_ms;
	const char	*key;		/* the key rule, if not the URL's
					 * alone: "credential", ...; or NULL */
};

/* path: a file (appended to, created 0644), "-" for stdout, or "off",
 * which sets *out to NULL. 0, or -1 with err filled in. */
int	access_log_open(const char *path, struct access_log **out, char *err,
	    size_t errlen);
/* Opens the file again at its path (logrotate moved it). On failure the
 * old file stays in use and -1 is returned with err filled in. */
int	access_log_reopen(struct access_log *al, char *err, size_t errlen);
/* Sets *alp to NULL. */
void	access_log_close(struct access_log **alp);

/* Appends the line of r, newline included, as it was at time now. */
void	access_log_format(const struct access_record *r, time_t now,
	    struct evbuffer *out);
/* Writes the line to px's access log; with the access log off, to the
 * error log at level debug. */
void	access_log_write(struct proxy *px, const struct access_record *r);

#endif
