/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_INSPECT_H
#define PROXY_PROXY_INSPECT_H

/* GET /entry?url=URL on the admin listener: what Redis holds for the key
 * a request for URL maps to, field by field, in one round trip. */

#include <event2/http.h>

struct proxy;

void	admin_inspect(struct proxy *px, struct evhttp_request *ev);

#endif
