/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HTTP_H
#define PROXY_PROXY_HTTP_H

/* The public, admin and peer listeners, and the door and pump of their
 * connections. */

#include <stddef.h>

#include <event2/http.h>

struct conf;
struct proxy;

int	http_listen(struct proxy *px, char *err, size_t errlen);
void	http_close(struct proxy *px);
/* Sets a listener's request limits (headers, body, client timeout) from
 * c: when it starts, and again on a reload. */
void	http_limits(struct evhttp *http, const struct conf *c);

#endif
