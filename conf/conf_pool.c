/* SPDX-License-Identifier: MIT */
/*
 * The upstream pools of a configuration: the server list of url (each a
 * base URL, http(s)://host[:port][/path], with an optional weight=N),
 * balance, the [upstream NAME] headers, and the checks that need the
 * whole file (a named pool needs url; a route's upstream names a pool).
 *
 * Called by the loader (conf.c) and the value types (conf_value.c);
 * calls nothing outside common/.
 */

#include "conf/conf_pool.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

#define WEIGHT_KEY	"weight="
#define ITEM_MAX	(CONF_SERVER_URL_MAX + 32)
#define MSG_MAX		256

/* http(s)://host[:port][/path] (len bytes of v), stored in out without
 * trailing '/'. */
static int
parse_url(const char *v, size_t len, char *out, size_t outsize, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF], host[CONF_HOST_MAX], auth[CONF_URL_MAX];
	const char *start, *slash, *after, *end = v + len;
	size_t alen;
	int port;

	conf_show(v, len, shown);
	if (len > strlen("http://") &&
	    strncasecmp(v, "http://", strlen("http://")) == 0)
		start = v + strlen("http://");
	else if (len > strlen("https://") &&
	    strncasecmp(v, "https://", strlen("https://")) == 0)
		start = v + strlen("https://");
	else {
		snprintf(err, errlen, "\"%s\" must start with http:// or "
		    "https://", shown);
		return -1;
	}
	for (const char *p = v; p < end; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p) ||
		    *p == '?' || *p == '#') {
			snprintf(err, errlen, "\"%s\" must not contain spaces, "
			    "control characters, a query or a fragment", shown);
			return -1;
		}
	}

	/* The authority: host, [v6 host], host:port or [v6 host]:port. */
	slash = memchr(start, '/', (size_t)(end - start));
	alen = (size_t)((slash != NULL ? slash : end) - start);
	if (alen == 0 || alen >= sizeof(auth)) {
		snprintf(err, errlen, "\"%s\" has no host", shown);
		return -1;
	}
	memcpy(auth, start, alen);
	auth[alen] = '\0';
	after = auth[0] == '[' ? strchr(auth, ']') : auth;
	if (after != NULL && strchr(after, ':') != NULL) {
		if (util_parse_hostport(auth, host, sizeof(host), &port) == -1)
			after = NULL;
	} else if (after != NULL && auth[0] == '[' && after[1] != '\0')
		after = NULL;
	if (after == NULL) {
		snprintf(err, errlen, "\"%s\" has a bad host or port", shown);
		return -1;
	}

	while (len > 0 && v[len - 1] == '/')
		len--;
	if (len >= outsize) {
		snprintf(err, errlen, "a server URL is longer than %zu "
		    "characters", outsize - 1);
		return -1;
	}
	memcpy(out, v, len);
	out[len] = '\0';
	return 0;
}

/* "weight=N" (len bytes of s) into *w. */
static int
parse_weight(const char *s, size_t len, int *w, char *err, size_t errlen)
{
	char shown[CONF_SHOW_BUF], num[16];
	char *end;
	long n;

	conf_show(s, len, shown);
	if (len <= strlen(WEIGHT_KEY) ||
	    strncmp(s, WEIGHT_KEY, strlen(WEIGHT_KEY)) != 0 ||
	    len - strlen(WEIGHT_KEY) >= sizeof(num)) {
		snprintf(err, errlen, "\"%s\" is not weight=N after a server "
		    "URL", shown);
		return -1;
	}
	snprintf(num, sizeof(num), "%.*s", (int)(len - strlen(WEIGHT_KEY)),
	    s + strlen(WEIGHT_KEY));
	errno = 0;
	n = strtol(num, &end, 10);
	if (*end != '\0' || end == num || errno != 0 || n < 1 ||
	    n > CONF_WEIGHT_MAX) {
		snprintf(err, errlen, "\"%s\": a weight is 1 to %d", shown,
		    CONF_WEIGHT_MAX);
		return -1;
	}
	*w = (int)n;
	return 0;
}

/* One "URL [weight=N]" of the list (len bytes of item) into s. */
static int
parse_server(const char *item, size_t len, struct conf_server *s, char *err,
    size_t errlen)
{
	size_t ulen = 0, rest;
	const char *w;

	while (ulen < len && !isspace((unsigned char)item[ulen]))
		ulen++;
	if (parse_url(item, ulen, s->url, sizeof(s->url), err, errlen) == -1)
		return -1;
	s->weight = 1;
	for (w = item + ulen; w < item + len && isspace((unsigned char)*w); w++)
		;
	rest = (size_t)(item + len - w);
	while (rest > 0 && isspace((unsigned char)w[rest - 1]))
		rest--;
	return rest == 0 ? 0 : parse_weight(w, rest, &s->weight, err, errlen);
}

int
conf_pool_servers(struct conf_pool *p, const char *v, char *err,
    size_t errlen)
{
	struct conf_server s;
	int n = 0;

	for (const char *q = v; *q != '\0';) {
		size_t len = strcspn(q, ",");

		if (strspn(q, " \t") >= len) {
			snprintf(err, errlen, "an empty server in the list");
			return -1;
		}
		if (n == CONF_SERVERS_MAX) {
			snprintf(err, errlen, "at most %d servers",
			    CONF_SERVERS_MAX);
			return -1;
		}
		q += strspn(q, " \t");
		len = strcspn(q, ",");
		if (parse_server(q, len, &s, err, errlen) == -1)
			return -1;
		for (int i = 0; i < n; i++) {
			if (strcasecmp(p->servers[i].url, s.url) == 0) {
				snprintf(err, errlen, "%s is listed twice",
				    s.url);
				return -1;
			}
		}
		p->servers[n++] = s;
		q += len;
		if (*q == ',' && *++q == '\0') {
			snprintf(err, errlen, "an empty server in the list");
			return -1;
		}
	}
	p->nservers = n;
	return 0;
}

int
conf_pool_balance(enum conf_balance *b, const char *v, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF];

	if (strcmp(v, "least_outstanding") == 0)
		*b = BALANCE_LEAST;
	else if (strcmp(v, "round-robin") == 0 ||
	    strcmp(v, "round_robin") == 0)
		*b = BALANCE_ROUND_ROBIN;
	else {
		snprintf(err, errlen, "\"%s\" is not a balance (use "
		    "least_outstanding or round-robin)",
		    conf_show(v, strlen(v), shown));
		return -1;
	}
	return 0;
}

int
conf_pool_begin(struct conf *c, const char *name, size_t len, int line,
    char *err, size_t errlen)
{
	char shown[CONF_SHOW_BUF];

	conf_show(name, len, shown);
	if (len >= CONF_POOL_NAME_MAX) {
		snprintf(err, errlen, "pool name \"%s\" is longer than %d "
		    "characters", shown, CONF_POOL_NAME_MAX - 1);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (!isalnum((unsigned char)name[i]) && name[i] != '_' &&
		    name[i] != '-') {
			snprintf(err, errlen, "pool name \"%s\" may have only "
			    "letters, digits, '_' and '-'", shown);
			return -1;
		}
	}
	if (len == strlen(POOL_DEFAULT_NAME) &&
	    memcmp(name, POOL_DEFAULT_NAME, len) == 0) {
		snprintf(err, errlen, "pool name \"%s\" is what /metrics calls "
		    "the [upstream] section's pool: choose another", shown);
		return -1;
	}
	for (int i = 1; i < c->npools; i++) {
		if (strlen(c->pools[i].name) == len &&
		    memcmp(c->pools[i].name, name, len) == 0) {
			snprintf(err, errlen, "duplicate pool [upstream %s] "
			    "(first on line %d)", shown, c->pools[i].line);
			return -1;
		}
	}
	if (c->npools == CONF_POOLS_MAX) {
		snprintf(err, errlen, "too many pools (at most %d with "
		    "[upstream])", CONF_POOLS_MAX);
		return -1;
	}
	memcpy(c->pools[c->npools].name, name, len);
	c->pools[c->npools].name[len] = '\0';
	c->pools[c->npools].line = line;
	return c->npools++;
}

static int	report(const char *path, FILE *errs, int line,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
report(const char *path, FILE *errs, int line, const char *fmt, ...)
{
	va_list ap;

	if (errs == NULL)
		return 1;
	fprintf(errs, "%s:%d: ", path, line);
	va_start(ap, fmt);
	vfprintf(errs, fmt, ap);
	va_end(ap);
	fputc('\n', errs);
	return 1;
}

int
conf_pool_check(struct conf *c, const char *path, FILE *errs)
{
	int nerr = 0;

	for (int i = 0; i < c->npools; i++) {
		const struct conf_pool *p = &c->pools[i];
		const char *label = i == 0 ? "[upstream]" : "[upstream ";

		if (p->nservers == 0)
			nerr += report(path, errs, p->line, "%s%s%s needs url "
			    "(its servers)", label, p->name, i == 0 ? "" : "]");
		if (p->health_path[0] != '\0' && p->health_path[0] != '/')
			nerr += report(path, errs, p->line, "%s%s%s: "
			    "health_path \"%s\" must start with '/'", label,
			    p->name, i == 0 ? "" : "]", p->health_path);
	}
	for (int i = 0; i < c->nroutes; i++) {
		const struct conf_route *r = &c->routes[i];

		if (r->upstream[0] != '\0' &&
		    conf_pool_find(c, r->upstream) == NULL)
			nerr += report(path, errs, r->upstream_line, "upstream: "
			    "no pool [upstream %s] in the file", r->upstream);
	}
	if (c->pools[0].nservers > 0)
		snprintf(c->upstream_url, sizeof(c->upstream_url), "%s",
		    c->pools[0].servers[0].url);
	return nerr;
}

const struct conf_pool *
conf_pool_find(const struct conf *c, const char *name)
{
	if (name == NULL || name[0] == '\0')
		return &c->pools[0];
	for (int i = 1; i < c->npools; i++)
		if (strcmp(c->pools[i].name, name) == 0)
			return &c->pools[i];
	return NULL;
}

const struct conf_pool *
conf_route_pool(const struct conf *c, const struct conf_route *r)
{
	const struct conf_pool *p = r != NULL ? conf_pool_find(c, r->upstream) :
	    NULL;

	return p != NULL ? p : &c->pools[0];
}

int64_t
conf_timeout_max(const struct conf *c)
{
	int64_t ms = 0;

	for (int i = 0; i < c->npools; i++)
		if (c->pools[i].timeout_ms > ms)
			ms = c->pools[i].timeout_ms;
	return ms;
}
