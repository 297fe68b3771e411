/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_ADMIN_H
#define PROXY_PROXY_ADMIN_H

/* The admin listener's dispatch: each request, once admitted
 * (proxy_auth.h), to the endpoint its path names. */

#include <event2/http.h>

void	admin_handle(struct evhttp_request *ev, void *arg);

#endif
