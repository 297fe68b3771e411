/* SPDX-License-Identifier: MIT */
/*
 * Hosts and the patterns that allow them (host.h). Pure: calls nothing of
 * Corral.
 */

#include "common/host.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define PORT_DIGITS_MAX	5
#define PORT_MAX	65535

/* RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~" */
static int
name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* A reg-name of unreserved bytes whose labels are not empty (a final
 * dot, as in "app.test.", ends the name at the root). */
static int
name_valid(const char *s, size_t n)
{
	if (n == 0 || n > HOST_NAME_MAX_LEN || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)s[i]) ||
		    (i > 0 && s[i] == '.' && s[i - 1] == '.'))
			return 0;
	return 1;
}

/* IP-literal, as RFC 9110 takes it: "[" IPv6address "]". */
static int
literal_valid(const char *s, size_t n)
{
	char text[INET6_ADDRSTRLEN];
	struct in6_addr a;

	if (n < 3 || s[0] != '[' || s[n - 1] != ']' ||
	    n - 2 >= sizeof(text))
		return 0;
	memcpy(text, s + 1, n - 2);
	text[n - 2] = '\0';
	return inet_pton(AF_INET6, text, &a) == 1;
}

/* 1 to PORT_DIGITS_MAX digits naming 1..PORT_MAX. 0 or -1. */
static int
port_parse(const char *s, size_t n, int *port)
{
	int v = 0;

	if (n == 0 || n > PORT_DIGITS_MAX)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > PORT_MAX)
		return -1;
	*port = v;
	return 0;
}

/* Splits s at the colon before the port: the name part's length, and
 * the port part (*port NULL when there is no colon). */
static void
split(const char *s, size_t n, size_t *namelen, const char **port,
    size_t *portlen)
{
	const char *colon = NULL, *close;

	if (n > 0 && s[0] == '[') {
		close = memchr(s, ']', n);
		if (close != NULL && close + 1 < s + n && close[1] == ':')
			colon = close + 1;
	} else {
		colon = memchr(s, ':', n);
	}
	*namelen = colon != NULL ? (size_t)(colon - s) : n;
	*port = colon != NULL ? colon + 1 : NULL;
	*portlen = colon != NULL ? n - *namelen - 1 : 0;
}

static int
any_port(const char *port, size_t portlen)
{
	return port != NULL && portlen == 1 && port[0] == '*';
}

int
host_parse(const char *s, size_t n, struct host *h)
{
	const char *port;
	size_t namelen, portlen;

	if (n == 0)
		return -1;
	split(s, n, &namelen, &port, &portlen);
	if (!(s[0] == '[' ? literal_valid(s, namelen) :
	    name_valid(s, namelen)))
		return -1;
	h->name = s;
	h->len = namelen;
	h->port = HOST_PORT_DEFAULT;
	return port == NULL ? 0 : port_parse(port, portlen, &h->port);
}

void
host_format(const struct host *h, char out[HOST_TEXT_MAX])
{
	size_t i;

	for (i = 0; i < h->len && i < HOST_NAME_MAX_LEN; i++)
		out[i] = (char)tolower((unsigned char)h->name[i]);
	out[i] = '\0';
	if (h->port != HOST_PORT_DEFAULT)
		snprintf(out + i, HOST_TEXT_MAX - i, ":%d", h->port);
}

int
host_pattern_valid(const char *p, size_t n)
{
	const char *port;
	size_t namelen, portlen;
	int v;

	if (n == 0)
		return 0;
	split(p, n, &namelen, &port, &portlen);
	if (port != NULL && !any_port(port, portlen) &&
	    port_parse(port, portlen, &v) == -1)
		return 0;
	if (namelen == 1 && p[0] == '*')
		return 1;
	if (namelen > 2 && p[0] == '*' && p[1] == '.')
		return name_valid(p + 2, namelen - 2);
	return p[0] == '[' ? literal_valid(p, namelen) :
	    name_valid(p, namelen);
}

int
host_pattern_match(const char *p, size_t n, const struct host *h,
    int listen_port)
{
	const char *port;
	size_t namelen, portlen, sfx;
	int v;

	split(p, n, &namelen, &port, &portlen);
	if (port == NULL) {
		if (h->port != HOST_PORT_DEFAULT && h->port != listen_port)
			return 0;
	} else if (!any_port(port, portlen)) {
		if (port_parse(port, portlen, &v) == -1 || v != h->port)
			return 0;
	}
	if (namelen == 1 && p[0] == '*')
		return 1;
	if (namelen > 2 && p[0] == '*' && p[1] == '.') {
		/* ".example.com" ends the name, after at least one label */
		sfx = namelen - 1;
		return h->len > sfx && strncasecmp(h->name + h->len - sfx,
		    p + 1, sfx) == 0;
	}
	return h->len == namelen && strncasecmp(h->name, p, namelen) == 0;
}

int
host_pattern_name(const char *p, size_t n, char out[HOST_TEXT_MAX])
{
	const char *port;
	size_t namelen, portlen;
	struct host h = { p, 0, HOST_PORT_DEFAULT };

	split(p, n, &namelen, &port, &portlen);
	if (namelen == 0 || p[0] == '*' || namelen > HOST_NAME_MAX_LEN)
		return -1;
	h.len = namelen;
	if (port != NULL && !any_port(port, portlen) &&
	    port_parse(port, portlen, &h.port) == -1)
		return -1;
	host_format(&h, out);
	return 0;
}
