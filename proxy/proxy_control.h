/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_CONTROL_H
#define PROXY_PROXY_CONTROL_H

struct hreq;

/*
 * POST /refresh and POST /warm on the admin listener: jobs of lookups and
 * refreshes through the lock (proxy_refresh.c), at the origin budget's
 * lowest rank.
 */


struct proxy;

int	control_new(struct proxy *px);
/* Every job ends: its request, if not answered yet, gets a 503, and its
 * refreshes go on alone. */
void	control_shutdown(struct proxy *px);
/* Jobs running in this process, for /stats. */
int	control_jobs(const struct proxy *px);
/* POST /refresh?url=URL | prefix=PREFIX | tag=TAG */
void	admin_refresh(struct proxy *px, struct hreq *ev);
/* POST /warm, a body of URLs, one a line */
void	admin_warm(struct proxy *px, struct hreq *ev);

#endif
