/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_INSPECT_H
#define PROXY_PROXY_INSPECT_H

struct hreq;

/* GET /entry?url=URL on the admin listener: what Redis holds for the key
 * a request for URL maps to, field by field, in one round trip. */


struct proxy;

void	admin_inspect(struct proxy *px, struct hreq *ev);

#endif
