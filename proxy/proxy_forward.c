/* SPDX-License-Identifier: MIT */
/*
 * The request as it goes upstream: its target as the origin resolves it,
 * and its headers, with who asked written by Corral (h2o's build_request
 * is the same on its side). Calls proxy_hdr.c and conf/ only.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>

#include "common/hlist.h"
#include "common/host.h"
#include "conf/conf.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_forward.h"
#include "proxy/proxy_hdr.h"

const char *
forward_client(const struct hreq *r)
{
	const char *peer = hreq_client(r);

	return strcmp(peer, "-") != 0 ? peer : NULL;
}

/*
 * The host a request names: its absolute-form target's authority (RFC
 * 9112 3.2.2: a Host that says otherwise is ignored), else its Host, in
 * normal form (common/host.h), so that one name is one key and one Host
 * upstream. Kept as given when it is not a host: then it is not served.
 * In r's scratch; NULL when out of memory.
 */
static char *
asked_host(struct hreq *r)
{
	const struct uri *u = &r->uri;
	const char *host = hl_find(&r->in, "Host");
	size_t len = (u->host != NULL ? u->host_len : host != NULL ?
	    strlen(host) : 0) + sizeof(":65535");
	char *raw = hreq_alloc(r, len), *out;
	struct host h;

	if (raw == NULL)
		return NULL;
	if (u->host != NULL)
		snprintf(raw, len, u->port >= 0 ? "%.*s:%d" : "%.*s",
		    (int)u->host_len, u->host, u->port);
	else
		snprintf(raw, len, "%s", host != NULL ? host : "");
	if (raw[0] == '\0' || host_parse(raw, strlen(raw), &h) == -1)
		return raw;
	if ((out = hreq_alloc(r, HOST_TEXT_MAX)) != NULL)
		host_format(&h, out);
	return out;
}

int
forward_target(struct hreq *r, char **hostp, char **urip, const char **pathp)
{
	const char *target = r->path, *query = r->query;
	char *plain;
	size_t len;

	*urip = NULL;
	*hostp = asked_host(r);
	if (target[0] == '\0')
		target = "/";
	/* The path the origin resolves is the one routed, keyed and sent;
	 * only a '.' or a %-escape (%2E) can make it another. */
	*pathp = target;
	if (strpbrk(target, ".%") != NULL) {
		if ((plain = hreq_strndup(r, target, strlen(target))) == NULL)
			return -1;
		hdr_normalize_path(plain);
		*pathp = plain;
	}
	len = strlen(*pathp) + (query != NULL ? strlen(query) + 1 : 0) + 1;
	if ((*urip = hreq_alloc(r, len)) == NULL || *hostp == NULL)
		return -1;
	snprintf(*urip, len, "%s%s%s", *pathp, query != NULL ? "?" : "",
	    query != NULL ? query : "");
	return 0;
}

/*
 * Who asked. A client's own X-Forwarded-* and Forwarded are dropped, so
 * that it cannot speak for Corral; only a peer in trusted_proxies (a
 * proxy in front of Corral) has its X-Forwarded-For (the peer appended),
 * X-Forwarded-Proto and Forwarded kept. The origin hears of one host
 * only, the one the key holds: with keyed (key_host), the asked host, as
 * Host and X-Forwarded-Host; else the upstream's own Host and the
 * configured name (forwarded_host) or none. No one's Host reaches the
 * origin unless it is in the key, not even a trusted proxy's: what a
 * shared fetch gets must not vary with what its key ignores.
 */
void
forward_headers(struct hreq *ev, const struct conf *conf,
    const char *asked, int keyed, struct hlist *dst, int flags)
{
	const struct hlist *in = &ev->in;
	const char *peer = forward_client(ev);
	char *fwd;
	int trusted = peer != NULL && conf_trusted_proxy(conf, peer);
	const char *name = keyed ? asked : conf->forwarded_host;
	const char *proto = NULL;
	const struct hfield *h;
	struct evbuffer *xff;

	hdr_copy(in, dst, flags | HDR_DROP_HOST | HDR_DROP_FORWARDED |
	    HDR_DROP_UNDERSCORED);
	/* Corral has the body already: libevent answered any 100-continue. */
	hl_remove(dst, "Expect");
	if (keyed && asked[0] != '\0')
		hl_add(dst, "Host", asked);	/* it is keyed */
	if ((xff = evbuffer_new()) == NULL)
		return;
	HL_FOREACH(h, in) {
		if (!trusted)
			break;
		if (strcasecmp(h->key, "X-Forwarded-For") == 0)
			evbuffer_add_printf(xff, "%s, ", h->value);
		else if (proto == NULL &&
		    strcasecmp(h->key, "X-Forwarded-Proto") == 0)
			proto = h->value;
		else if (strcasecmp(h->key, "Forwarded") == 0 &&
		    (fwd = hdr_forwarded_without(h->value, "host")) != NULL) {
			hl_add(dst, h->key, fwd);
			free(fwd);
		}
	}
	if (peer != NULL) {
		evbuffer_add_printf(xff, "%s", peer);
		evbuffer_add(xff, "", 1);
		hl_add(dst, "X-Forwarded-For",
		    (const char *)evbuffer_pullup(xff, -1));
	}
	evbuffer_free(xff);
	if (name[0] != '\0')
		hl_add(dst, "X-Forwarded-Host", name);
	hl_add(dst, "X-Forwarded-Proto", proto != NULL ? proto :
	    hreq_tls(ev) ? "https" : "http");
}

/*
 * Notes what later steps ask of the request's headers. Whether it may be
 * forwarded at all (framing, lengths, the head's size) was decided by the
 * strict reader before libevent saw it (proxy_frame.c).
 */
void
forward_note(struct hreq *ev, int *credentials, int *conditional)
{
	const struct hfield *h;

	HL_FOREACH(h, &ev->in) {
		if (strcasecmp(h->key, "Authorization") == 0 ||
		    strcasecmp(h->key, "Cookie") == 0)
			*credentials = 1;
		else if (strcasecmp(h->key, "If-None-Match") == 0 ||
		    strcasecmp(h->key, "If-Modified-Since") == 0)
			*conditional = 1;
	}
}

int
forward_unsafe(enum hmethod cmd)
{
	return cmd == HM_POST || cmd == HM_PUT ||
	    cmd == HM_DELETE || cmd == HM_PATCH;
}
