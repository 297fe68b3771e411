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
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "common/host.h"
#include "conf/conf.h"
#include "proxy/proxy_forward.h"
#include "proxy/proxy_hdr.h"

char *
forward_client(struct evhttp_request *ev)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	char *peer = NULL;
	ev_uint16_t port;

	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &peer, &port);
	return peer;
}

/*
 * The host a request names: its absolute-form target's authority (RFC
 * 9112 3.2.2: a Host that says otherwise is ignored), else its Host, in
 * normal form (common/host.h), so that one name is one key and one Host
 * upstream. Kept as given when it is not a host: then it is not served.
 */
static char *
asked_host(struct evhttp_request *ev, const struct evhttp_uri *u)
{
	const char *uhost = u != NULL ? evhttp_uri_get_host(u) : NULL;
	const char *host = evhttp_find_header(
	    evhttp_request_get_input_headers(ev), "Host");
	size_t len = strlen(uhost != NULL ? uhost : host != NULL ? host : "") +
	    sizeof(":65535");
	char *raw = malloc(len), *out;
	struct host h;

	if (raw == NULL)
		return NULL;
	if (uhost != NULL)
		snprintf(raw, len, evhttp_uri_get_port(u) >= 0 ? "%s:%d" : "%s",
		    uhost, evhttp_uri_get_port(u));
	else
		snprintf(raw, len, "%s", host != NULL ? host : "");
	if (raw[0] == '\0' || host_parse(raw, strlen(raw), &h) == -1)
		return raw;
	if ((out = malloc(HOST_TEXT_MAX)) != NULL)
		host_format(&h, out);
	free(raw);
	return out;
}

int
forward_target(struct evhttp_request *ev, char **hostp, char **urip,
    const char **pathp, char **copyp)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(ev);
	const char *raw = evhttp_request_get_uri(ev);
	const char *target = u != NULL ? evhttp_uri_get_path(u) : NULL;
	const char *query = u != NULL ? evhttp_uri_get_query(u) : NULL;
	/* "//m/new" is a path whose first segment is empty (RFC 9112 3.2.1,
	 * RFC 3986 3.3), which libevent reads as the authority "m" and the
	 * path "/new": the path is the target's, up to its query. */
	int empty_first = raw != NULL && strncmp(raw, "//", 2) == 0;
	size_t len;
	int dots;

	*copyp = NULL;
	*urip = NULL;
	*hostp = asked_host(ev, empty_first ? NULL : u);
	if (empty_first &&
	    (target = *copyp = strndup(raw, strcspn(raw, "?"))) == NULL)
		return -1;
	if (target == NULL || target[0] == '\0')
		target = "/";
	/* The path the origin resolves is the one routed, keyed and sent;
	 * only a '.' or a %-escape (%2E) can make it another. */
	dots = strpbrk(target, ".%") != NULL;
	*pathp = target;
	if (dots && *copyp == NULL)
		*copyp = strdup(target);
	if (dots && *copyp != NULL) {
		hdr_normalize_path(*copyp);
		*pathp = *copyp;
	}
	len = strlen(target) + (query != NULL ? strlen(query) + 1 : 0) + 1;
	if ((dots && *copyp == NULL) || (*urip = malloc(len)) == NULL ||
	    *hostp == NULL)
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
forward_headers(struct evhttp_request *ev, const struct conf *conf,
    const char *asked, int keyed, struct evkeyvalq *dst, int flags)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(ev);
	char *peer = forward_client(ev), *fwd;
	int trusted = peer != NULL && conf_trusted_proxy(conf, peer);
	const char *name = keyed ? asked : conf->forwarded_host;
	const char *proto = NULL;
	const struct evkeyval *h;
	struct evbuffer *xff;

	hdr_copy(in, dst, flags | HDR_DROP_HOST | HDR_DROP_FORWARDED |
	    HDR_DROP_UNDERSCORED);
	/* Corral has the body already: libevent answered any 100-continue. */
	evhttp_remove_header(dst, "Expect");
	if (keyed && asked[0] != '\0')
		evhttp_add_header(dst, "Host", asked);	/* it is keyed */
	if ((xff = evbuffer_new()) == NULL)
		return;
	TAILQ_FOREACH(h, in, next) {
		if (!trusted)
			break;
		if (strcasecmp(h->key, "X-Forwarded-For") == 0)
			evbuffer_add_printf(xff, "%s, ", h->value);
		else if (proto == NULL &&
		    strcasecmp(h->key, "X-Forwarded-Proto") == 0)
			proto = h->value;
		else if (strcasecmp(h->key, "Forwarded") == 0 &&
		    (fwd = hdr_forwarded_without(h->value, "host")) != NULL) {
			evhttp_add_header(dst, h->key, fwd);
			free(fwd);
		}
	}
	if (peer != NULL) {
		evbuffer_add_printf(xff, "%s", peer);
		evbuffer_add(xff, "", 1);
		evhttp_add_header(dst, "X-Forwarded-For",
		    (const char *)evbuffer_pullup(xff, -1));
	}
	evbuffer_free(xff);
	if (name[0] != '\0')
		evhttp_add_header(dst, "X-Forwarded-Host", name);
	evhttp_add_header(dst, "X-Forwarded-Proto", proto != NULL ? proto :
	    "http");
}

/*
 * Notes what later steps ask of the request's headers. Whether it may be
 * forwarded at all (framing, lengths, the head's size) was decided by the
 * strict reader before libevent saw it (proxy_frame.c).
 */
void
forward_note(struct evhttp_request *ev, int *credentials, int *conditional)
{
	const struct evkeyval *h;

	TAILQ_FOREACH(h, evhttp_request_get_input_headers(ev), next) {
		if (strcasecmp(h->key, "Authorization") == 0 ||
		    strcasecmp(h->key, "Cookie") == 0)
			*credentials = 1;
		else if (strcasecmp(h->key, "If-None-Match") == 0 ||
		    strcasecmp(h->key, "If-Modified-Since") == 0)
			*conditional = 1;
	}
}

int
forward_unsafe(enum evhttp_cmd_type cmd)
{
	return cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
	    cmd == EVHTTP_REQ_DELETE || cmd == EVHTTP_REQ_PATCH;
}
