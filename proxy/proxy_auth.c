/*
 * Who may ask the admin listener what, in three gates, each answered
 * with one status and one log line (never a token):
 *
 *  1. admin_allow: a peer outside its blocks gets 403 (not a closed
 *     connection: the operator who forgot an address sees why, and the
 *     log names the peer). /health is open to every peer, for load
 *     balancers.
 *  2. A change (any method but GET and HEAD), with or without tokens: its
 *     Host must name the admin listener (an IP address, localhost, the
 *     admin_listen host, or an admin_hosts pattern), else a page whose
 *     name was rebound to this address could change the cache (DNS
 *     rebinding); and its Origin (or, without one, its Referer) must name
 *     that same host, else a page of another site could (CSRF). 403.
 *  3. With admin_token_file: "Authorization: Bearer TOKEN". No token or a
 *     token that is not in the file: 401 with WWW-Authenticate; a read
 *     token asking for a change: 403. /health and the dashboard's page
 *     (static; it asks for /stats with the token it was opened with) are
 *     open.
 */

#include <arpa/inet.h>
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "common/host.h"
#include "common/log.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_control.h"

#define AUTH_LOG_PER_S		20	/* refusals logged a second, at most */
#define AUTH_REALM		"Bearer realm=\"corral admin\""
#define AUTH_BEARER		"Bearer "
#define AUTH_SUFFIX_LOCAL	".localhost"	/* RFC 6761: never rebound */

static int64_t	 log_second;	/* the second being counted */
static int	 log_count;	/* refusals in it */
static int	 log_hidden;	/* ... not logged */

/* One refusal: counted, and logged unless too many come at once. */
static void
refused(struct evhttp_request *ev, int code, const char *why)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(ev));
	char *addr = NULL;
	ev_uint16_t port = 0;
	int64_t now = util_now_ms() / 1000;

	if (now != log_second) {
		if (log_hidden > 0)
			log_warn("admin: %d more refusals not logged", log_hidden);
		log_second = now;
		log_count = log_hidden = 0;
	}
	if (++log_count > AUTH_LOG_PER_S) {
		log_hidden++;
		return;
	}
	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &addr, &port);
	log_warn("admin: %d %s %s from %s: %s", code,
	    evhttp_request_get_command(ev) == EVHTTP_REQ_GET ? "GET" :
	    evhttp_request_get_command(ev) == EVHTTP_REQ_HEAD ? "HEAD" : "POST",
	    path != NULL ? path : "?", addr != NULL ? addr : "?", why);
}

static void
answer(struct evhttp_request *ev, int code, const char *why)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(ev);
	struct evbuffer *body = evbuffer_new();

	refused(ev, code, why);
	if (code == HTTP_UNAUTHORIZED)
		evhttp_add_header(out, "WWW-Authenticate", AUTH_REALM);
	evhttp_add_header(out, "Content-Type", "text/plain");
	evhttp_add_header(out, "Cache-Control", "no-store");
	if (body != NULL)
		evbuffer_add_printf(body, "%d %s\n", code, why);
	evhttp_send_reply(ev, code, NULL, body);
	if (body != NULL)
		evbuffer_free(body);
}

/* May a page at host (n bytes) be this listener's? */
static int
host_is_ours(const struct conf *c, const char *s, size_t n)
{
	struct host h;
	char name[HOST_NAME_MAX_LEN + 1];
	unsigned char addr[16];
	size_t ls = strlen(AUTH_SUFFIX_LOCAL);

	if (host_parse(s, n, &h) == -1)
		return 0;
	if (h.name[0] == '[')
		return 1;	/* an IPv6 address: no name to rebind */
	snprintf(name, sizeof(name), "%.*s", (int)h.len, h.name);
	if (inet_pton(AF_INET, name, addr) == 1 ||
	    strcasecmp(name, "localhost") == 0 ||
	    (h.len > ls && strcasecmp(name + h.len - ls, AUTH_SUFFIX_LOCAL) == 0) ||
	    strcasecmp(name, c->admin_host) == 0)
		return 1;
	for (const char *p = c->admin_hosts; *p != '\0'; p += strspn(p, ", \t")) {
		size_t len = strcspn(p, ", \t");

		if (len > 0 && host_pattern_match(p, len, &h, c->admin_port))
			return 1;
		p += len;
	}
	return 0;
}

/* Do two hosts ("name[:port]") name the same site (the same name)? */
static int
same_site(const char *a, size_t alen, const char *b)
{
	struct host ha, hb;

	return host_parse(a, alen, &ha) == 0 &&
	    host_parse(b, strlen(b), &hb) == 0 && ha.len == hb.len &&
	    strncasecmp(ha.name, hb.name, ha.len) == 0;
}

/* The authority of "scheme://authority[/...]", into *n bytes; or NULL. */
static const char *
authority(const char *url, size_t *n)
{
	const char *p = strstr(url, "://");

	if (p == NULL || strcspn(url, ":/") != (size_t)(p - url) || p == url)
		return NULL;
	p += 3;
	*n = strcspn(p, "/?#");
	return *n > 0 ? p : NULL;
}

/* Gate 2: NULL when the change is asked by this listener's own site. */
static const char *
foreign_change(const struct conf *c, const struct evkeyvalq *in)
{
	const char *host = evhttp_find_header(in, "Host");
	const char *origin = evhttp_find_header(in, "Origin");
	const char *from = origin != NULL ? origin :
	    evhttp_find_header(in, "Referer");
	const char *a;
	size_t n;

	if (host == NULL || !host_is_ours(c, host, strlen(host)))
		return "a change must name this listener in Host (DNS "
		    "rebinding?): see admin_hosts";
	if (from == NULL)
		return NULL;	/* not a browser's, or one that hides it */
	if ((a = authority(from, &n)) == NULL || !same_site(a, n, host))
		return origin != NULL ? "a change from another site (Origin)" :
		    "a change from another site (Referer)";
	return NULL;
}

/* Gate 3: the scope of the request's Bearer token. */
static enum admin_scope
bearer_scope(const struct conf *c, const struct evkeyvalq *in, int *given)
{
	const char *v = evhttp_find_header(in, "Authorization");
	size_t n;

	*given = 0;
	if (v == NULL || strncasecmp(v, AUTH_BEARER, strlen(AUTH_BEARER)) != 0)
		return SCOPE_NONE;
	v += strlen(AUTH_BEARER);
	v += strspn(v, " ");
	n = strcspn(v, " \t");
	*given = n > 0;
	return conf_token_scope(c, v, n);
}

int
auth_admit(struct proxy *px, struct evhttp_request *ev, const char *path)
{
	const struct conf *c = px->conf;
	struct evkeyvalq *in = evhttp_request_get_input_headers(ev);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(ev);
	int change = cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD;
	int page = !change && (strcmp(path, "/") == 0 ||
	    strcmp(path, "/index.html") == 0);
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
	char *addr = NULL;
	ev_uint16_t port = 0;
	const char *why;
	enum admin_scope scope;
	int given;

	assert(px->magic == PROXY_MAGIC);
	if (strcmp(path, "/health") == 0 && !change)
		return 1;
	if (c->nadmin_allow > 0) {
		if (evcon != NULL)
			evhttp_connection_get_peer(evcon, &addr, &port);
		if (addr == NULL ||
		    !conf_cidrs_match(c->admin_allow, c->nadmin_allow, addr)) {
			answer(ev, HTTP_FORBIDDEN, "not in admin_allow");
			return 0;
		}
	}
	if (change && (why = foreign_change(c, in)) != NULL) {
		answer(ev, HTTP_FORBIDDEN, why);
		return 0;
	}
	if (c->nadmin_tokens == 0 || page)
		return 1;
	scope = bearer_scope(c, in, &given);
	if (scope == SCOPE_NONE) {
		answer(ev, HTTP_UNAUTHORIZED, given ? "unknown token" :
		    "no Bearer token");
		return 0;
	}
	if (change && scope != SCOPE_ALL) {
		answer(ev, HTTP_FORBIDDEN, "a read token cannot change anything");
		return 0;
	}
	return 1;
}
