/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text format's pieces (proxy_prom.h), for /metrics's
 * families wherever they are written. Calls nothing of Corral.
 */

#include "proxy/proxy_prom.h"

#include <event2/buffer.h>

void
prom_label(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, "\"", 1);
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			evbuffer_add_printf(out, "\\%c", *s);
		else if (*s == '\n')
			evbuffer_add(out, "\\n", 2);
		else
			evbuffer_add(out, s, 1);
	}
	evbuffer_add(out, "\"", 1);
}

void
prom_family(struct evbuffer *out, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}
