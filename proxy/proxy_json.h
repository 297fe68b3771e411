/* SPDX-License-Identifier: MIT */
/*
 * JSON answers of the admin listener: a string escaped for JSON, and a
 * reply that is never cached. It depends on the connection's replies
 * only, so every admin endpoint can use it without calling back into
 * proxy_admin.c.
 */

#ifndef PROXY_JSON_H
#define PROXY_JSON_H

struct hreq;

struct evbuffer;

/* s as a JSON string, quotes and all: ASCII, each byte past it \u00XX
 * (as the access log's JSON writes it). */
void	json_string(struct evbuffer *out, const char *s);
/* Sends out (NULL: no body) with the content type, never cached. */
void	json_reply(struct hreq *ev, int code, const char *type,
	    struct evbuffer *out);
/* Sends out as JSON, never cached, and frees it (NULL: no body). */
void	json_send(struct hreq *ev, int code, struct evbuffer *out);
/* {"error": msg} with code. */
void	json_error(struct hreq *ev, int code, const char *msg);

#endif
