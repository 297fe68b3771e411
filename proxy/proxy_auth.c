/* SPDX-License-Identifier: MIT */
/*
 * Who may ask the admin listener what, in three gates, each answered
 * with one status and one log line (never a token):
 *
 *  1. admin_allow: a peer outside its blocks gets 403 (not a closed
 *     connection: the operator who forgot an address sees why, and the
 *     log names the peer). /health is open to every peer, for load
 *     balancers; proxy_http.c keeps such peers' connections apart from
 *     the allowed ones', so that they cannot fill admin_max_connections.
 *  2. Every request but /health: its Host must name the admin listener
 *     (an IP address, localhost, the admin_listen host, or an admin_hosts
 *     pattern), else a page whose name was rebound to this address could
 *     read or change the cache (DNS rebinding). A change (any method but
 *     GET and HEAD), with or without tokens: its Origin (or, without one,
 *     its Referer) must be this listener's own origin, http:// and the
 *     Host it was sent to, same name and port, else a page of another
 *     site, or of another port or scheme of this host, could change it
 *     (CSRF). 403.
 *  3. With admin_token_file: "Authorization: Bearer TOKEN" (RFC 6750
 *     2.1: the scheme in any case, one or more spaces, the token and
 *     nothing else; one Authorization field). No token, a token that is
 *     not in the file or a field of any other form: 401 with
 *     WWW-Authenticate; a read token asking for a change: 403. /health
 *     and the dashboard's page (static; it asks for /stats with the token
 *     it was opened with) are open.
 */

#include <arpa/inet.h>
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>

#include "common/hlist.h"
#include "common/host.h"
#include "common/log.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_auth.h"
#include "proxy/proxy_conn.h"

#define AUTH_LOG_PER_S		20	/* refusals logged a second, at most */
#define AUTH_REALM		"Bearer realm=\"corral admin\""
#define AUTH_BEARER		"Bearer"	/* then 1*SP b64token */
#define AUTH_OWN_SCHEME		"http://"	/* the listener's origin */
#define AUTH_SUFFIX_LOCAL	".localhost"	/* RFC 6761: never rebound */

static int64_t	 log_second;	/* the second being counted */
static int	 log_count;	/* refusals in it */
static int	 log_hidden;	/* ... not logged */

/* One refusal: counted, and logged unless too many come at once. */
static void
refused(struct hreq *ev, int code, const char *why)
{
	const char *path = ev->path;
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
	log_warn("admin: %d %s %s from %s: %s", code, ev->method_name,
	    path[0] != '\0' ? path : "?", hreq_client(ev), why);
}

static void
answer(struct hreq *ev, int code, const char *why)
{
	struct hlist *out = &ev->out;
	struct evbuffer *body = evbuffer_new();

	refused(ev, code, why);
	if (code == HTTP_UNAUTHORIZED)
		hl_add(out, "WWW-Authenticate", AUTH_REALM);
	hl_add(out, "Content-Type", "text/plain");
	hl_add(out, "Cache-Control", "no-store");
	if (body != NULL)
		evbuffer_add_printf(body, "%d %s\n", code, why);
	hreq_reply(ev, code, NULL, body);
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

/*
 * Is url ("scheme://authority[/...]", an Origin or a Referer) of the
 * listener's own origin, http://host: the same scheme, name and port (80
 * when none is given)? A page on another port of this host is another
 * site to a browser, and must be one here.
 */
static int
same_origin(const char *url, const char *host)
{
	size_t sl = strlen(AUTH_OWN_SCHEME), n;
	struct host hu, hh;

	if (strncasecmp(url, AUTH_OWN_SCHEME, sl) != 0)
		return 0;
	url += sl;
	n = strcspn(url, "/?#");
	return host_parse(url, n, &hu) == 0 &&
	    host_parse(host, strlen(host), &hh) == 0 && hu.len == hh.len &&
	    strncasecmp(hu.name, hh.name, hu.len) == 0 && hu.port == hh.port;
}

static int fields(const struct hlist *in, const char *name);

/*
 * Gate 2: NULL when the host the request names (its absolute-form
 * target's authority, which RFC 9112 3.2.2 puts before Host, else its one
 * Host) is this listener (and a change comes from its own origin), else
 * why not. Two Host, Origin or Referer lines are refused: which one would
 * count?
 */
static const char *
foreign(const struct conf *c, const struct hlist *in, const char *target,
    int change, char *authority, size_t authlen)
{
	const char *host = hl_find(in, "Host");
	const char *origin = hl_find(in, "Origin");
	const char *from = origin != NULL ? origin :
	    hl_find(in, "Referer");
	size_t sl = strlen(AUTH_OWN_SCHEME);

	if (fields(in, "Host") > 1 || fields(in, "Origin") > 1 ||
	    fields(in, "Referer") > 1)
		return "more than one Host, Origin or Referer line";
	if (target[0] != '/' && target[0] != '*') {
		if (strncasecmp(target, AUTH_OWN_SCHEME, sl) != 0)
			return "an absolute target other than http://";
		snprintf(authority, authlen, "%.*s",
		    (int)strcspn(target + sl, "/?#"), target + sl);
		host = authority;
	}
	if (host == NULL || !host_is_ours(c, host, strlen(host)))
		return "Host must name this listener (DNS rebinding?): see "
		    "admin_hosts";
	if (!change || from == NULL)
		return NULL;	/* not a browser's, or one that hides it */
	if (!same_origin(from, host))
		return origin != NULL ? "a change from another origin (Origin)" :
		    "a change from another origin (Referer)";
	return NULL;
}

/* How many fields named name in. */
static int
fields(const struct hlist *in, const char *name)
{
	const struct hfield *h;
	int n = 0;

	HL_FOREACH(h, in)
		if (strcasecmp(h->key, name) == 0)
			n++;
	return n;
}

/* Gate 3: the scope of the request's Bearer token; *why says why none. */
static enum admin_scope
bearer_scope(const struct conf *c, const struct hlist *in,
    const char **why)
{
	const char *v = hl_find(in, "Authorization");
	size_t sl = strlen(AUTH_BEARER), sp, n;

	*why = "no Bearer token";
	if (v == NULL)
		return SCOPE_NONE;
	*why = "not \"Authorization: Bearer TOKEN\"";
	if (fields(in, "Authorization") != 1 ||
	    strncasecmp(v, AUTH_BEARER, sl) != 0)
		return SCOPE_NONE;
	sp = strspn(v + sl, " ");
	v += sl + sp;
	n = strlen(v);
	if (sp == 0 || n == 0 || strcspn(v, " \t") != n)
		return SCOPE_NONE;
	*why = "unknown token";
	return conf_token_scope(c, v, n);
}

int
auth_admit(struct proxy *px, struct hreq *ev, const char *path)
{
	const struct conf *c = px->conf;
	struct hlist *in = &ev->in;
	enum hmethod cmd = ev->method;
	int change = cmd != HM_GET && cmd != HM_HEAD;
	int page = !change && (strcmp(path, "/") == 0 ||
	    strcmp(path, "/index.html") == 0);
	const char *addr = hreq_client(ev);
	const char *why;
	char authority[CONF_HOST_MAX + 8];
	enum admin_scope scope;

	assert(px->magic == PROXY_MAGIC);
	if (strcmp(path, "/health") == 0 && !change)
		return 1;
	if (c->nadmin_allow > 0) {
		if (!conf_cidrs_match(c->admin_allow, c->nadmin_allow, addr)) {
			answer(ev, HTTP_FORBIDDEN, "not in admin_allow");
			return 0;
		}
	}
	if ((why = foreign(c, in, ev->target, change,
	    authority, sizeof(authority))) != NULL) {
		answer(ev, HTTP_FORBIDDEN, why);
		return 0;
	}
	if (c->nadmin_tokens == 0 || page)
		return 1;
	if ((scope = bearer_scope(c, in, &why)) == SCOPE_NONE) {
		answer(ev, HTTP_UNAUTHORIZED, why);
		return 0;
	}
	if (change && scope != SCOPE_ALL) {
		answer(ev, HTTP_FORBIDDEN, "a read token cannot change anything");
		return 0;
	}
	return 1;
}
