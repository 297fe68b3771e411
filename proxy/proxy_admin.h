/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_ADMIN_H
#define PROXY_PROXY_ADMIN_H

struct hreq;
struct proxy;

/* The admin listener's dispatch: each request, once admitted
 * (proxy_auth.h), to the endpoint its path names. */
void	admin_handle(struct proxy *px, struct hreq *r);

#endif
