/* SPDX-License-Identifier: MIT */
#ifndef COMMON_HOST_H
#define COMMON_HOST_H

/*
 * A request's host as Corral takes it: uri-host [ ":" port ] (RFC 9110
 * 7.2, RFC 3986 3.2.2 and 3.2.3), stricter than the RFC. The name is
 * letters, digits, '-', '.', '_' and '~' (no percent-encoding, no
 * sub-delims, no empty label but a final one), or an IPv6 literal in
 * brackets; the port 1 to 5 digits naming 1..65535. An empty port or one
 * that is not digits is not a host. And the [server] hosts patterns that
 * allow names and ports. Calls nothing of Corral.
 */

#include <stddef.h>

#define HOST_NAME_MAX_LEN	255	/* bytes of a name (DNS: 253) */
#define HOST_PORT_DEFAULT	80	/* the port of a host that gives none */
#define HOST_TEXT_MAX		(HOST_NAME_MAX_LEN + sizeof(":65535"))

struct host {
	const char	*name;		/* not NUL-terminated */
	size_t		 len;
	int		 port;		/* 1..65535; HOST_PORT_DEFAULT if none */
};

/* Reads the n bytes at s as a host into h (which points into s). 0, or
 * -1 when s is not one (an empty s is not). */
int	host_parse(const char *s, size_t n, struct host *h);
/* h's normal form into out: the name lower-cased, then ":port" unless
 * the port is HOST_PORT_DEFAULT. */
void	host_format(const struct host *h, char out[HOST_TEXT_MAX]);

/*
 * Patterns: a name part ("app.test", "[::1]", "*.example.com" for the
 * names below example.com, or "*" for any name) and a port part (":8443"
 * that port, ":*" any port, or none: HOST_PORT_DEFAULT and listen_port).
 */
/* Is the n bytes at p a pattern? */
int	host_pattern_valid(const char *p, size_t n);
/* Does pattern p (n bytes) allow h, for a listener on listen_port? */
int	host_pattern_match(const char *p, size_t n, const struct host *h,
	    int listen_port);
/* The host a pattern names, in normal form into out, when its name part
 * is one name (its port part too when it is one port). 0, or -1 for a
 * wildcard name. */
int	host_pattern_name(const char *p, size_t n, char out[HOST_TEXT_MAX]);

#endif
