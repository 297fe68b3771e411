/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_MAINT_H
#define PROXY_PROXY_MAINT_H

/*
 * Maintenance mode: the routes whose requests never reach the origin,
 * fleet-wide (POST /maintenance), and the one question the request flow
 * asks of it (maint_avoids).
 */

#include <event2/buffer.h>

struct hreq;

struct proxy;

int	maint_new(struct proxy *px);
void	maint_free(struct proxy *px);
/* Does a route in maintenance cover uri (path[?query]), however an
 * origin may read it? Then nothing of it goes to the origin: no refresh,
 * no fetch. */
int	maint_avoids(const struct proxy *px, const char *uri);
/* "[{"route": "/api/", "mode": "avoid", "since_ms": N}, ...]" */
void	maint_json(const struct proxy *px, struct evbuffer *out);
/* " maintenance=/api/,/b/" for /health, or nothing. */
void	maint_health(const struct proxy *px, struct evbuffer *out);
/* GET or POST /maintenance?route=PREFIX&mode=avoid|normal */
void	admin_maintenance(struct proxy *px, struct hreq *ev);

#endif
