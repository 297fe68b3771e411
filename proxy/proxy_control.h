#ifndef PROXY_PROXY_CONTROL_H
#define PROXY_PROXY_CONTROL_H

/*
 * The admin API's control plane, behind proxy_admin.c's dispatch:
 *
 *	proxy_auth.c	who may ask: admin_allow, the change's own site
 *			(Origin, Referer, Host), the Bearer token's scope
 *	proxy_control.c	POST /refresh and POST /warm: jobs of lookups and
 *			refreshes through the lock (proxy_refresh.c)
 *	proxy_entry.c	GET /entry: what Redis holds for a URL's key
 *	proxy_maint.c	POST /maintenance: the routes whose requests never
 *			reach the origin, fleet-wide
 */

#include <event2/buffer.h>
#include <event2/http.h>

struct proxy;

#define HTTP_UNAUTHORIZED	401
#define HTTP_FORBIDDEN		403

/* proxy_auth.c: 1 when ev may be served; else it is answered (401 with
 * WWW-Authenticate, or 403) and the refusal logged, without the token. */
int	auth_admit(struct proxy *px, struct evhttp_request *ev, const char *path);

/* proxy_control.c */
int	control_new(struct proxy *px);
/* Every job ends: its request, if not answered yet, gets a 503, and its
 * refreshes go on alone. */
void	control_shutdown(struct proxy *px);
/* Jobs running in this process, for /stats. */
int	control_jobs(const struct proxy *px);
/* POST /refresh?url=URL | prefix=PREFIX | tag=TAG */
void	admin_refresh(struct proxy *px, struct evhttp_request *ev);
/* POST /warm, a body of URLs, one a line */
void	admin_warm(struct proxy *px, struct evhttp_request *ev);

/* proxy_entry.c: GET /entry?url=URL */
void	admin_entry(struct proxy *px, struct evhttp_request *ev);

/* proxy_maint.c */
int	maint_new(struct proxy *px);
void	maint_free(struct proxy *px);
/* Does a route in maintenance cover uri (path[?query])? Then nothing of
 * it goes to the origin: no refresh, no fetch. */
int	maint_avoids(const struct proxy *px, const char *uri);
/* "[{"route": "/api/", "mode": "avoid", "since_ms": N}, ...]" */
void	maint_json(const struct proxy *px, struct evbuffer *out);
/* " maintenance=/api/,/b/" for /health, or nothing. */
void	maint_health(const struct proxy *px, struct evbuffer *out);
/* GET or POST /maintenance?route=PREFIX&mode=avoid|normal */
void	admin_maintenance(struct proxy *px, struct evhttp_request *ev);

#endif
