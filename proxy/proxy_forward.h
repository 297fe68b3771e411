/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_FORWARD_H
#define PROXY_PROXY_FORWARD_H

/*
 * The request as it goes upstream: its target as the origin resolves it,
 * what its headers and method say of it, and the headers sent, with who
 * asked written by Corral, not taken from the client.
 */

#include "proxy/proxy_method.h"

struct conf;
struct hlist;
struct hreq;

/* The client's address, or NULL for a Unix socket's (a sibling's). */
const char *forward_client(const struct hreq *r);
/*
 * The host and the target of r as the origin resolves them: *hostp (the
 * absolute-form target's, else Host's, in normal form: common/host.h),
 * *urip (path[?query]) and *pathp the normalized path ("//a/b" is a path,
 * not the authority "a"), all in r's scratch (hreq_alloc()). -1 when out
 * of memory.
 */
int	forward_target(struct hreq *r, char **hostp, char **urip,
	    const char **pathp);
/* Appends to dst what goes upstream for ev: its end-to-end headers less
 * those flags name and its Host; Host: asked if keyed; and who asked
 * (X-Forwarded-*, kept from a trusted proxy only), with X-Forwarded-Host
 * asked if keyed, else conf's forwarded_host (if any), never the
 * client's. */
void	forward_headers(struct hreq *ev, const struct conf *conf,
	    const char *asked, int keyed, struct hlist *dst, int flags);

/* Notes what the request's headers say of it: credentials (Authorization
 * or Cookie) and a condition (If-None-Match or If-Modified-Since). */
void	forward_note(struct hreq *ev, int *credentials,
	    int *conditional);
/* Does the method change the resource (RFC 9110 9.2.1)? */
int	forward_unsafe(enum hmethod cmd);

#endif
