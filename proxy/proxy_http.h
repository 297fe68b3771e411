/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HTTP_H
#define PROXY_PROXY_HTTP_H

/* The public, admin and peer listeners, and the door and pump of their
 * connections. */

#include <stddef.h>

#include <event2/http.h>

struct conf;
struct listen_socks;
struct proxy;

/* Makes the listening sockets of conf's listen and admin_listen ("listen
 * 127.0.0.1:8080: Address already in use" in err when one cannot be had),
 * once per instance: its workers share them. 0 or -1. */
int	http_bind(const struct conf *conf, struct listen_socks *ls, char *err,
	    size_t errlen);
void	http_unbind(struct listen_socks *ls);
int	http_listen(struct proxy *px, char *err, size_t errlen);
void	http_close(struct proxy *px);
/* Sets a listener's request limits (headers, body, client timeout) from
 * c: when it starts, and again on a reload. */
void	http_limits(struct evhttp *http, const struct conf *c);

#endif
