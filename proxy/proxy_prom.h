/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_PROM_H
#define PROXY_PROXY_PROM_H

/*
 * The Prometheus text format's pieces, shared by proxy_metrics.c and the
 * change feeds' families (proxy_feed_view.c).
 */

struct evbuffer;

/* A family's # HELP and # TYPE lines. */
void	prom_family(struct evbuffer *out, const char *name, const char *type,
	    const char *help);
/* A label's value, quoted and escaped. */
void	prom_label(struct evbuffer *out, const char *s);

#endif
