/* SPDX-License-Identifier: MIT */
/*
 * JSON answers of the admin listener (proxy_json.h).
 */

#include "common/hlist.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_json.h"

#include <stddef.h>

#include <event2/buffer.h>

void
json_string(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			evbuffer_add_printf(out, "\\%c", ch);
		else if (ch < 0x20 || ch > 0x7e)	/* never invalid UTF-8 */
			evbuffer_add_printf(out, "\\u%04x", ch);
		else
			evbuffer_add(out, s, 1);
	}
	evbuffer_add(out, "\"", 1);
}

void
json_reply(struct hreq *ev, int code, const char *type,
    struct evbuffer *out)
{
	struct hlist *headers = &ev->out;

	hl_add(headers, "Content-Type", type);
	hl_add(headers, "Cache-Control", "no-store");
	hreq_reply(ev, code, NULL, out);
}

void
json_send(struct hreq *ev, int code, struct evbuffer *out)
{
	json_reply(ev, code, "application/json", out);
	if (out != NULL)
		evbuffer_free(out);
}

void
json_error(struct hreq *ev, int code, const char *msg)
{
	struct evbuffer *out = evbuffer_new();

	if (out != NULL)
		evbuffer_add_printf(out, "{\"error\": \"%s\"}\n", msg);
	json_send(ev, code, out);
}
