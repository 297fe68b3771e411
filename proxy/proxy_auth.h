/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_AUTH_H
#define PROXY_PROXY_AUTH_H

struct hreq;

/*
 * Who may ask the admin listener what: admin_allow, the request's own
 * site (Host, Origin, Referer), the Bearer token's scope.
 */


struct proxy;

#define HTTP_UNAUTHORIZED	401
#define HTTP_FORBIDDEN		403

/* 1 when ev may be served; else it is answered (401 with
 * WWW-Authenticate, or 403) and the refusal logged, without the token. */
int	auth_admit(struct proxy *px, struct hreq *ev, const char *path);

#endif
