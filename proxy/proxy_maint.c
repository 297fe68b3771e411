/* SPDX-License-Identifier: MIT */
/*
 * Maintenance modes: POST /maintenance?route=PREFIX&mode=avoid|normal.
 * A route (a path prefix) in "avoid" never reaches the origin: what is
 * stored is served however stale, nothing is refreshed, and what is not
 * stored gets 503 with Retry-After (origin_fetch() refuses every fetch
 * of it; proxy_refresh.c starts no background refresh of it; a flight
 * serves the entry it saw). The modes live in Redis (cache_maint_set), so
 * that they hold fleet-wide, across restarts, and for instances started
 * later: each process reads them all when it subscribes and whenever one
 * changes, and keeps its copy here. While Redis is unreachable a process
 * keeps the modes it read last; one that never read them runs normally.
 * A route covers a path however it is spelt: the route is kept plain
 * (%XX decoded, "//" merged, dot segments removed) and matched against
 * the target as sent and the paths an origin may decode it to.
 *
 *	GET  /maintenance                    the routes in maintenance (JSON)
 *	POST /maintenance?route=/api/&mode=avoid
 *	POST /maintenance?route=/api/&mode=normal
 */

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "cache/cache.h"
#include "common/hlist.h"
#include "common/uri.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_json.h"
#include "proxy/proxy_maint.h"

#define MAINT_MAGIC		0x4d41494eu	/* "MAIN" */
#define MAINT_RETRY_MS		1000	/* a failed read is tried again */
#define MODE_AVOID		"avoid"
#define MODE_NORMAL		"normal"
#define DECODE_ROUNDS		4	/* %XX decoded again, at most */

struct maint {
	uint32_t		 magic;
	struct proxy		*px;
	struct cache_maint	 list[CACHE_MAINT_MAX];
	int			 n;
	struct cache_op		*load_op;
	int			 again;		/* news came while reading */
	struct event		*retry_ev;
};

/* What the POST that set a mode waits for. */
struct maint_set {
	struct maint		*m;
	struct hreq *ev;
	char			 route[CONF_ROUTE_PREFIX_MAX];
	int			 avoid;
};

static void maint_load(struct maint *m);

/* Applies one change at once (the news that follows reads them all). */
static void
apply(struct maint *m, const char *route, int avoid)
{
	int i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->list[i].route, route) == 0)
			break;
	if (!avoid && i < m->n)
		m->list[i] = m->list[--m->n];
	else if (avoid && i == m->n && m->n < CACHE_MAINT_MAX) {
		snprintf(m->list[m->n].route, sizeof(m->list[m->n].route), "%s",
		    route);
		m->list[m->n++].since_ms = util_now_ms();
	}
}

static void
on_maint_loaded(const struct cache_maint *list, int n, int ok, void *arg)
{
	struct maint *m = arg;
	struct timeval tv = util_timeval(MAINT_RETRY_MS);

	assert(m->magic == MAINT_MAGIC);
	m->load_op = NULL;
	if (!ok) {
		evtimer_add(m->retry_ev, &tv);
	} else {
		for (int i = 0; i < n; i++) {
			int j;

			for (j = 0; j < m->n; j++)
				if (strcmp(m->list[j].route, list[i].route) == 0)
					break;
			if (j == m->n)
				log_warn("maintenance: %s avoids the origin",
				    list[i].route);
		}
		for (int j = 0; j < m->n; j++) {
			int i;

			for (i = 0; i < n; i++)
				if (strcmp(m->list[j].route, list[i].route) == 0)
					break;
			if (i == n)
				log_warn("maintenance: %s back to normal",
				    m->list[j].route);
		}
		memcpy(m->list, list, (size_t)n * sizeof(*list));
		m->n = n;
	}
	if (m->again) {
		m->again = 0;
		maint_load(m);
	}
}

static void
maint_load(struct maint *m)
{
	struct timeval tv = util_timeval(MAINT_RETRY_MS);

	if (m->load_op != NULL) {
		m->again = 1;
		return;
	}
	if ((m->load_op = cache_maint_load(m->px->cache, on_maint_loaded,
	    m)) == NULL)
		evtimer_add(m->retry_ev, &tv);	/* Redis is down */
}

/* The modes changed somewhere, or this process (re)subscribed. */
static void
on_maint_news(void *arg)
{
	struct proxy *px = arg;

	assert(px->magic == PROXY_MAGIC);
	if (px->maint != NULL)
		maint_load(px->maint);
}

static void
on_maint_retry(evutil_socket_t fd, short what, void *arg)
{
	struct maint *m = arg;

	assert(m->magic == MAINT_MAGIC);
	maint_load(m);
}

int
maint_new(struct proxy *px)
{
	struct maint *m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return -1;
	m->magic = MAINT_MAGIC;
	m->px = px;
	if ((m->retry_ev = evtimer_new(px->base, on_maint_retry, m)) == NULL) {
		free(m);
		return -1;
	}
	px->maint = m;
	cache_on_maint(px->cache, on_maint_news);
	return 0;
}

void
maint_free(struct proxy *px)
{
	struct maint *m = px->maint;

	if (m == NULL)
		return;
	assert(m->magic == MAINT_MAGIC);
	cache_op_cancel(&m->load_op);
	event_free(m->retry_ev);
	m->magic = 0;
	free(m);
	px->maint = NULL;
}

/*
 * A route as it is kept (plain): every %XX decoded (but %00), runs of '/'
 * made one (nginx's merge_slashes), then dot segments removed. So
 * "/%6D//" is kept as "/m/". A new string for free(), or NULL without
 * memory.
 */
static char *
plain_path(const char *uri)
{
	size_t n = strcspn(uri, "?"), o = 0;
	char *out = malloc(n + 1);
	int hi, lo;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char c = uri[i];

		if (c == '%' && i + 2 < n && (hi = util_hex_value(uri[i + 1])) >= 0 &&
		    (lo = util_hex_value(uri[i + 2])) >= 0 && (hi | lo) != 0) {
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '/' && o > 0 && out[o - 1] == '/')
			continue;
		out[o++] = c;
	}
	out[o] = '\0';
	hdr_normalize_path(out);
	return out;
}

/* Decodes every %XX of s (but %00) in place: did any? */
static int
decode_once(char *s)
{
	char *in = s, *out = s;
	int hi, lo, any = 0;

	while (*in != '\0') {
		if (in[0] == '%' && (hi = util_hex_value(in[1])) >= 0 &&
		    (lo = util_hex_value(in[2])) >= 0 && (hi | lo) != 0) {
			*out++ = (char)(hi << 4 | lo);
			in += 3;
			any = 1;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
	return any;
}

/* An overlong UTF-8 form of an ASCII byte (C0/C1 xx, E0 80|81 xx) read
 * as that byte, as decoders that do not check read it; in place. */
static void
fold_overlong(char *s)
{
	unsigned char *in = (unsigned char *)s, *out = in;

	while (*in != '\0') {
		if ((in[0] == 0xc0 || in[0] == 0xc1) && (in[1] & 0xc0) == 0x80) {
			*out++ = (unsigned char)((in[0] & 0x1f) << 6 | (in[1] & 0x3f));
			in += 2;
		} else if (in[0] == 0xe0 && (in[1] & 0xfe) == 0x80 &&
		    (in[2] & 0xc0) == 0x80) {
			*out++ = (unsigned char)((in[1] & 0x3f) << 6 |
			    (in[2] & 0x3f));
			in += 3;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
}

/*
 * Each segment of s as the loosest origins read it, in place (a case
 * the origin ignores, covered() ignores too): '\\' as '/', without its ";parameters" (Tomcat, Jetty) or its
 * trailing dots and spaces (IIS), slashes merged; "." and ".." stay, for
 * hdr_normalize_path().
 */
static void
fold_segments(char *s)
{
	char *in = s, *out = s;

	while (*in != '\0') {
		char *seg = out;

		while (*in != '\0' && *in != '/' && *in != '\\') {
			if (*in == ';')
				in += strcspn(in, "/\\");
			else
				*out++ = *in++;
		}
		if (!(out - seg == 1 && seg[0] == '.') &&
		    !(out - seg == 2 && seg[0] == '.' && seg[1] == '.'))
			while (out > seg && (out[-1] == '.' || out[-1] == ' '))
				out--;
		if (*in == '\0')
			break;
		in++;
		if (out == s || out[-1] != '/')
			*out++ = '/';
	}
	*out = '\0';
}

/*
 * uri's path as the loosest origin may read it: %XX decoded until none is
 * left (a double encoding too, at most DECODE_ROUNDS times), overlong
 * UTF-8 read as ASCII, then each segment folded (fold_segments) and dot
 * segments removed. A path in maintenance under any of those readings is
 * not sent: the price is only that a path an origin would not read so is
 * held back too. A new string for free(), or NULL without memory.
 */
static char *
loose_path(const char *uri)
{
	char *out = strndup(uri, strcspn(uri, "?"));

	if (out == NULL)
		return NULL;
	for (int i = 0; i < DECODE_ROUNDS && decode_once(out); i++)
		;
	fold_overlong(out);
	fold_segments(out);
	hdr_normalize_path(out);
	return out;
}

/* Does a route in maintenance start path (any case: with loose)? */
static int
covered(const struct maint *m, const char *path, int loose)
{
	for (int i = 0; i < m->n; i++) {
		size_t n = strlen(m->list[i].route);

		if ((loose ? strncasecmp : strncmp)(path, m->list[i].route,
		    n) == 0)
			return 1;
	}
	return 0;
}

/*
 * The route is matched against uri as sent, and against the loosest
 * reading an origin may give it (loose_path): whichever way an origin
 * reads "/%6D//new", "/M;v=1/new" or "/%256d\\new", it is not asked for a
 * route in maintenance. Without memory to tell, nothing is sent.
 */
int
maint_avoids(const struct proxy *px, const char *uri)
{
	const struct maint *m = px->maint;
	char *loose;
	int avoid;

	if (m == NULL || m->n == 0)
		return 0;
	if (covered(m, uri, 0))
		return 1;
	loose = loose_path(uri);
	avoid = loose == NULL || covered(m, loose, 1);
	free(loose);
	return avoid;
}

void
maint_json(const struct proxy *px, struct evbuffer *out)
{
	const struct maint *m = px->maint;

	evbuffer_add(out, "[", 1);
	for (int i = 0; m != NULL && i < m->n; i++) {
		evbuffer_add_printf(out, "%s{\"route\": ", i > 0 ? ", " : "");
		json_string(out, m->list[i].route);
		evbuffer_add_printf(out, ", \"mode\": \"%s\", \"since_ms\": %"
		    PRId64 "}", MODE_AVOID, m->list[i].since_ms);
	}
	evbuffer_add(out, "]", 1);
}

void
maint_health(const struct proxy *px, struct evbuffer *out)
{
	const struct maint *m = px->maint;

	for (int i = 0; m != NULL && i < m->n; i++)
		evbuffer_add_printf(out, "%s%s", i == 0 ? " maintenance=" : ",",
		    m->list[i].route);
}

static void
on_maint_set(enum fence_result r, void *arg)
{
	struct maint_set *ms = arg;
	struct evbuffer *out;

	assert(ms->m->magic == MAINT_MAGIC);
	if (r == FENCE_ERROR) {
		json_error(ms->ev, HTTP_SERVUNAVAIL, "redis unavailable");
	} else if (r == FENCE_LOST) {
		json_error(ms->ev, HTTP_SERVUNAVAIL, "too many routes in "
		    "maintenance already");
	} else {
		apply(ms->m, ms->route, ms->avoid);
		log_warn("maintenance: %s set to %s", ms->route,
		    ms->avoid ? MODE_AVOID : MODE_NORMAL);
		if ((out = evbuffer_new()) != NULL) {
			evbuffer_add_printf(out, "{\"route\": ");
			json_string(out, ms->route);
			evbuffer_add_printf(out, ", \"mode\": \"%s\"}\n",
			    ms->avoid ? MODE_AVOID : MODE_NORMAL);
		}
		json_send(ms->ev, HTTP_OK, out);
	}
	free(ms);
}

/* A route is a path prefix: '/' first, no query, no spaces or control
 * bytes. */
static int
route_valid(const char *route)
{
	if (route == NULL || route[0] != '/' ||
	    strlen(route) >= CONF_ROUTE_PREFIX_MAX)
		return 0;
	for (const char *p = route; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '?')
			return 0;
	return 1;
}

/* Starts the change; it answers later (or now, when it cannot start). */
static void
maint_set(struct proxy *px, struct hreq *ev, const char *route,
    int avoid)
{
	struct maint_set *ms;

	if ((ms = calloc(1, sizeof(*ms))) == NULL) {
		json_error(ev, HTTP_SERVUNAVAIL, "out of memory");
		return;
	}
	ms->m = px->maint;
	ms->ev = ev;
	ms->avoid = avoid;
	snprintf(ms->route, sizeof(ms->route), "%s", route);
	if (cache_maint_set(px->cache, route, avoid, on_maint_set, ms) == NULL) {
		free(ms);
		json_error(ev, HTTP_SERVUNAVAIL, "redis unavailable: the mode "
		    "is kept in Redis for the whole fleet");
	}
}

void
admin_maintenance(struct proxy *px, struct hreq *ev)
{
	const char *query = ev->query;
	struct hlist params;
	const char *route, *mode;
	char *plain;
	struct evbuffer *out;

	assert(px->magic == PROXY_MAGIC && px->maint != NULL);
	if (ev->method != HM_POST) {
		if ((out = evbuffer_new()) != NULL) {
			maint_json(px, out);
			evbuffer_add(out, "\n", 1);
		}
		json_send(ev, HTTP_OK, out);
		return;
	}
	hl_init(&params);
	if (query != NULL)
		(void)uri_query_parse(query, strlen(query), &params);
	route = hl_find(&params, "route");
	mode = hl_find(&params, "mode");
	/* Kept plain, as the paths it is matched against. */
	plain = route_valid(route) ? plain_path(route) : NULL;
	if (route_valid(route) && plain == NULL)
		json_error(ev, HTTP_SERVUNAVAIL, "out of memory");
	else if (!route_valid(plain))
		json_error(ev, HTTP_BADREQUEST, "need route=PREFIX (a path "
		    "prefix, like /api/)");
	else if (mode == NULL || (strcmp(mode, MODE_AVOID) != 0 &&
	    strcmp(mode, MODE_NORMAL) != 0))
		json_error(ev, HTTP_BADREQUEST, "need mode=avoid or mode=normal");
	else
		maint_set(px, ev, plain, strcmp(mode, MODE_AVOID) == 0);
	free(plain);
	hl_free(&params);
}
