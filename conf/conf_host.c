/* SPDX-License-Identifier: MIT */
/*
 * Hosts and addresses of a configuration: the syntax of an address block
 * (trusted_proxies, admin_allow), whether two listeners overlap, what a
 * loaded file derives (the upstream's authority, the X-Forwarded-Host of
 * routes without key_host), and the answers the proxy asks of it: is a
 * Host served, is a peer trusted or allowed. Calls common/host.c only;
 * called by the loader (conf.c), the value types (conf_value.c) and the
 * proxy (conf.h).
 */

#include "conf/conf_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "addr" or "addr/bits", IPv4 or IPv6, into *c. 0 or -1. */
int
host_parse_cidr(const char *item, struct conf_cidr *c)
{
	char addr[INET6_ADDRSTRLEN + 1], *slash, *end;
	long bits;
	int max;

	if (strlen(item) >= sizeof(addr) + 4)
		return -1;
	snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(item, "/"), item);
	memset(c, 0, sizeof(*c));
	if (inet_pton(AF_INET, addr, c->addr) == 1) {
		c->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, c->addr) == 1) {
		c->family = AF_INET6;
		max = 128;
	} else {
		return -1;
	}
	c->bits = max;
	if ((slash = strchr(item, '/')) != NULL) {
		bits = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end != '\0' || bits < 0 || bits > max ||
		    !isdigit((unsigned char)slash[1]))
			return -1;
		c->bits = (int)bits;
	}
	return 0;
}

static int
is_wildcard(const char *host)
{
	return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
	    strcmp(host, "*") == 0;
}

/* admin_listen and listen on one port: the same host, or a wildcard. */
int
host_listeners_overlap(const char *a, const char *b)
{
	return strcasecmp(a, b) == 0 || is_wildcard(a) || is_wildcard(b);
}

/*
 * The upstream URL's authority, lower-cased and without the scheme's
 * default port: by default the host part of every cache key, as nginx's
 * proxy_cache_key keys on the proxied host.
 */
static void
upstream_authority(struct conf *c)
{
	const char *p = strstr(c->upstream_url, "://");
	int https = strncasecmp(c->upstream_url, "https", 5) == 0;
	size_t n;

	p = p != NULL ? p + 3 : c->upstream_url;
	n = strcspn(p, "/");
	snprintf(c->upstream_authority, sizeof(c->upstream_authority), "%.*s",
	    (int)n, p);
	for (char *q = c->upstream_authority; *q != '\0'; q++)
		*q = (char)tolower((unsigned char)*q);
	n = strlen(c->upstream_authority);
	if (n > 3 && !https && strcmp(c->upstream_authority + n - 3, ":80") == 0)
		c->upstream_authority[n - 3] = '\0';
	else if (n > 4 && https &&
	    strcmp(c->upstream_authority + n - 4, ":443") == 0)
		c->upstream_authority[n - 4] = '\0';
}

/*
 * What routes without key_host send as X-Forwarded-Host: one name for
 * every client, since their key has none (canonical_host, else the first
 * pattern of hosts that names one host, else none).
 */
static void
forwarded_host(struct conf *c)
{
	c->forwarded_host[0] = '\0';
	if (c->canonical_host[0] != '\0') {
		snprintf(c->forwarded_host, sizeof(c->forwarded_host), "%s",
		    c->canonical_host);
		return;
	}
	for (const char *p = c->hosts; *p != '\0'; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");

		if (host_pattern_name(p, len, c->forwarded_host) == 0)
			return;
		p += len;
	}
}

/* What the keys decide, once the whole file is loaded. */
void
host_derive(struct conf *c)
{
	upstream_authority(c);
	forwarded_host(c);
}

/* Does the pattern at p (n bytes) take h, on the port of any listener? */
static int
pattern_takes(const struct conf *c, const char *p, size_t n,
    const struct host *h)
{
	for (int i = 0; i < c->nlisteners; i++)
		if (host_pattern_match(p, n, h, c->listeners[i].port))
			return 1;
	return host_pattern_match(p, n, h, c->listen_port);
}

int
conf_host_allowed(const struct conf *c, const char *host, int keyed)
{
	struct host h;

	if (host[0] == '\0')
		return c->hosts[0] == '\0';	/* RFC 9112 3.2: no authority */
	if (host_parse(host, strlen(host), &h) == -1)
		return 0;
	if (c->hosts[0] == '\0')
		return !keyed || pattern_takes(c, "*", 1, &h);
	for (const char *p = c->hosts; *p != '\0'; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");

		if (pattern_takes(c, p, len, &h))
			return 1;
		p += len;
	}
	return 0;
}

int
conf_trusted_proxy(const struct conf *c, const char *addr)
{
	return conf_cidrs_match(c->trusted_proxies, c->ntrusted_proxies, addr);
}

int
conf_cidrs_match(const struct conf_cidr *list, int n, const char *addr)
{
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct conf_cidr a;

	if (n == 0 || host_parse_cidr(addr, &a) == -1)
		return 0;
	if (a.family == AF_INET6 && memcmp(a.addr, mapped, 12) == 0) {
		a.family = AF_INET;	/* ::ffff:a.b.c.d: a.b.c.d */
		memmove(a.addr, a.addr + 12, 4);
	}
	for (int i = 0; i < n; i++) {
		const struct conf_cidr *t = &list[i];
		int whole = t->bits / 8, rest = t->bits % 8;

		if (t->family != a.family ||
		    memcmp(t->addr, a.addr, (size_t)whole) != 0)
			continue;
		if (rest == 0 || ((t->addr[whole] ^ a.addr[whole]) &
		    (0xff << (8 - rest)) & 0xff) == 0)
			return 1;
	}
	return 0;
}

