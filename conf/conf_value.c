/* SPDX-License-Identifier: MIT */
/*
 * The value types of the key table (conf_int.h): each type's syntax,
 * parsed into the row's place in struct conf, conf_pool or conf_route,
 * and its numbers formatted back in the file's units. check_range() is
 * the one place where values are range-checked. value_set() parses a
 * value for any row, the defaults too (conf_table.c). Calls conf_pool.c,
 * conf_key.c and conf_host.c for the types they own; called by the
 * loader (conf.c), the table and the manual (conf_manual.c).
 */

#include "conf/conf_int.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "common/util.h"
#include "conf/conf_key.h"
#include "conf/conf_pool.h"
#include "conf/conf_show.h"

#define STATUS_TTL_MAX	(8760 * MS_HOUR)	/* as for ttl */
#define UNIX_PREFIX	"unix:"
#define UNIX_PATH_LIMIT	(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

_Static_assert(UNIX_PATH_LIMIT < CONF_PATH_MAX, "redis_unix holds sun_path");

static void
format_size(int64_t v, char *out, size_t outlen)
{
	if (v != 0 && v % GIB == 0)
		snprintf(out, outlen, "%" PRId64 "g", v / GIB);
	else if (v != 0 && v % MIB == 0)
		snprintf(out, outlen, "%" PRId64 "m", v / MIB);
	else if (v != 0 && v % KIB == 0)
		snprintf(out, outlen, "%" PRId64 "k", v / KIB);
	else
		snprintf(out, outlen, "%" PRId64, v);
}

/* A number of a row's type, in its units ("0" for no time). */
void
value_format_number(const struct key *k, int64_t v, char *out, size_t outlen)
{
	if (k->type == T_DURATION && v != 0)
		util_format_duration(v, out, outlen);
	else if (k->type == T_FLOAT)
		snprintf(out, outlen, "%g", (double)v / 1000);
	else if (k->type == T_SIZE)
		format_size(v, out, outlen);
	else
		snprintf(out, outlen, "%" PRId64, v);
}

void
value_format_hostport(const char *host, int port, char *out, size_t outlen)
{
	if (strchr(host, ':') != NULL)
		snprintf(out, outlen, "[%s]:%d", host, port);
	else
		snprintf(out, outlen, "%s:%d", host, port);
}

/* The one place where values are range-checked. */
static int
check_range(const struct key *k, int64_t v, const char *text, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF], limit[TEXT_MAX];

	if (v < k->min) {
		value_format_number(k, k->min, limit, sizeof(limit));
		snprintf(err, errlen, "%s is below the minimum %s",
		    conf_show(text, SIZE_MAX, shown), limit);
		return -1;
	}
	if (v > k->max) {
		value_format_number(k, k->max, limit, sizeof(limit));
		snprintf(err, errlen, "%s is above the maximum %s",
		    conf_show(text, SIZE_MAX, shown), limit);
		return -1;
	}
	return 0;
}

static int
parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || errno == ERANGE ||
	    isspace((unsigned char)*s))
		return -1;
	*out = v;
	return 0;
}

static int
set_string(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	size_t len = strlen(v);

	assert((size_t)k->max < k->size);
	if ((int64_t)len < k->min || (int64_t)len > k->max) {
		if (k->min > 0)
			snprintf(err, errlen, "must be %" PRId64 " to %" PRId64
			    " characters long", k->min, k->max);
		else
			snprintf(err, errlen, "must be at most %" PRId64
			    " characters long", k->max);
		return -1;
	}
	memcpy(field, v, len + 1);
	return 0;
}

/* Field names (tokens, RFC 9110 5.1) or host names, stored as "A, B". */
static int
set_fields(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	const char *tchar = k->type == T_HOSTS ? "-.:[]*" :
	    "!#$%&'*+-.^_`|~";
	char norm[CONF_FIELDS_MAX * 2], shown[CONF_SHOW_BUF];
	size_t used = 0;

	norm[0] = '\0';
	for (const char *p = v; *p != '\0'; p += strspn(p, ", \t")) {
		size_t len = strcspn(p, ", \t");

		if (len == 0)
			continue;
		for (size_t i = 0; i < len; i++) {
			if (!isalnum((unsigned char)p[i]) &&
			    strchr(tchar, p[i]) == NULL) {
				snprintf(err, errlen, "\"%s\" is not a %s name",
				    conf_show(p, len, shown), k->type == T_HOSTS ?
				    "host" : "field");
				return -1;
			}
		}
		if (k->type == T_HOSTS && !host_pattern_valid(p, len)) {
			snprintf(err, errlen, "\"%s\" is not a host pattern "
			    "(name, *.name or *; then :port, :* or nothing)",
			    conf_show(p, len, shown));
			return -1;
		}
		used += (size_t)snprintf(norm + used, sizeof(norm) - used,
		    "%s%.*s", used > 0 ? ", " : "", (int)len, p);
		if (used >= sizeof(norm))
			used = sizeof(norm) - 1;
		p += len;
	}
	return set_string(k, field, norm, err, errlen);
}

/* One host[:port] (common/host.h), stored in normal form, or "". */
static int
set_authority(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF];
	struct host h;

	assert(k->size >= HOST_TEXT_MAX);
	if (*v == '\0') {
		field[0] = '\0';
		return 0;
	}
	if (host_parse(v, strlen(v), &h) == -1) {
		snprintf(err, errlen, "\"%s\" is not host[:port] (a name or "
		    "[IPv6], then a port 1..65535 or nothing)",
		    conf_show(v, SIZE_MAX, shown));
		return -1;
	}
	host_format(&h, field);
	return 0;
}

static int
set_prefix(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF];

	for (const char *p = v; *p != '\0'; p++) {
		if (*p == '{' || *p == '}' || isspace((unsigned char)*p) ||
		    iscntrl((unsigned char)*p)) {
			snprintf(err, errlen, "\"%s\" must not contain '{', "
			    "'}', spaces or control characters",
			    conf_show(v, SIZE_MAX, shown));
			return -1;
		}
	}
	return set_string(k, field, v, err, errlen);
}

static int
set_hostport(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF];
	int port;

	if (util_parse_hostport(v, base + k->off, k->size, &port) == -1) {
		snprintf(err, errlen, "\"%s\" is not host:port (such as "
		    "127.0.0.1:8080 or [::1]:8080, port 1 to 65535)",
		    conf_show(v, SIZE_MAX, shown));
		return -1;
	}
	*(int *)(void *)(base + k->off_port) = port;
	return 0;
}

/* One "host:port [tls]" of a listen list, the n bytes at p, into l. */
static int
set_one_listen(const char *p, size_t n, struct conf_listen *l, char *err,
    size_t errlen)
{
	char item[CONF_HOST_MAX + 32], shown[CONF_SHOW_BUF];
	size_t addr_len;

	if (n >= sizeof(item)) {
		snprintf(err, errlen, "\"%s\" is too long",
		    conf_show(p, n, shown));
		return -1;
	}
	memcpy(item, p, n);
	item[n] = '\0';
	addr_len = strcspn(item, " \t");
	l->tls = 0;
	if (item[addr_len] != '\0') {
		const char *flag = item + addr_len + strspn(item + addr_len,
		    " \t");

		if (strcmp(flag, "tls") != 0) {
			snprintf(err, errlen, "\"%s\": after an address only "
			    "\"tls\" may come", conf_show(item, SIZE_MAX,
			    shown));
			return -1;
		}
		l->tls = 1;
		item[addr_len] = '\0';
	}
	if (util_parse_hostport(item, l->host, sizeof(l->host),
	    &l->port) == -1) {
		snprintf(err, errlen, "\"%s\" is not host:port (such as "
		    "127.0.0.1:8080 or [::1]:8443 tls, port 1 to 65535)",
		    conf_show(item, SIZE_MAX, shown));
		return -1;
	}
	return 0;
}

/* listen: one address or several, comma-separated, each maybe "tls". */
static int
set_listen(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	struct conf_listen *list = (struct conf_listen *)(void *)(base + k->off);
	int *n = (int *)(void *)(base + k->off_port), count = 0;
	char shown[CONF_SHOW_BUF];
	const char *p = v + strspn(v, " \t"), *e, *next;

	/* Every item is parsed, an empty one after a comma too. */
	while (*p != '\0') {
		next = p + strcspn(p, ",");
		e = next;
		while (p < e && isspace((unsigned char)*p))
			p++;
		while (e > p && isspace((unsigned char)e[-1]))
			e--;
		if (count == k->max) {
			snprintf(err, errlen, k->max == 1 ? "one address only" :
			    "at most %" PRId64 " addresses", k->max);
			return -1;
		}
		if (set_one_listen(p, (size_t)(e - p), &list[count], err,
		    errlen) == -1)
			return -1;
		count++;
		if (*next == '\0')
			break;
		p = next + 1;
		if (*p == '\0') {
			snprintf(err, errlen, "\"%s\" ends in a comma",
			    conf_show(v, SIZE_MAX, shown));
			return -1;
		}
	}
	if (count < k->min) {
		snprintf(err, errlen, "missing value");
		return -1;
	}
	*n = count;
	return 0;
}

static int
set_address(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	char shown[CONF_SHOW_BUF];
	const char *path;
	char *host = base + k->off;
	int *port = (int *)(void *)(base + k->off_port);
	char *unix_path = base + k->off_path;

	if (strncmp(v, UNIX_PREFIX, strlen(UNIX_PREFIX)) != 0) {
		if (util_parse_hostport(v, host, k->size, port) == -1) {
			snprintf(err, errlen, "\"%s\" is not host:port or "
			    "unix:/path", conf_show(v, SIZE_MAX, shown));
			return -1;
		}
		unix_path[0] = '\0';
		return 0;
	}
	path = v + strlen(UNIX_PREFIX);
	if (path[0] != '/') {
		snprintf(err, errlen, "\"%s\" needs an absolute socket path, "
		    "such as unix:/run/redis/redis.sock",
		    conf_show(v, SIZE_MAX, shown));
		return -1;
	}
	if (strlen(path) > UNIX_PATH_LIMIT) {
		snprintf(err, errlen, "the socket path is longer than %zu "
		    "characters", UNIX_PATH_LIMIT);
		return -1;
	}
	memcpy(unix_path, path, strlen(path) + 1);
	host[0] = '\0';
	*port = 0;
	return 0;
}

/*
 * "host:port, host:port, ...": the first as a T_ADDRESS (so it may be a
 * unix socket), every one also into redis_addrs. The mode decides later
 * how many it may have (check_redis).
 */
static int
set_addresses(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	struct conf *c = (struct conf *)(void *)base;
	char item[CONF_HOST_MAX + TEXT_MAX], shown[CONF_SHOW_BUF];
	int n = 0;

	for (const char *p = v; *p != '\0'; p += strspn(p, ", \t")) {
		size_t len = strcspn(p, ", \t");

		if (len == 0)
			continue;
		if (len >= sizeof(item)) {
			snprintf(err, errlen, "an address is longer than %zu "
			    "characters", sizeof(item) - 1);
			return -1;
		}
		if (n >= k->max) {
			snprintf(err, errlen, "at most %" PRId64 " addresses",
			    k->max);
			return -1;
		}
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		p += len;
		if (n == 0 && set_address(k, base, item, err, errlen) == -1)
			return -1;
		if (n == 0 && c->redis_unix[0] != '\0') {
			n++;
			continue;
		}
		if (util_parse_hostport(item, c->redis_addrs[n].host,
		    sizeof(c->redis_addrs[n].host),
		    &c->redis_addrs[n].port) == -1) {
			snprintf(err, errlen, "\"%s\" is not host:port",
			    conf_show(item, SIZE_MAX, shown));
			return -1;
		}
		n++;
	}
	if (c->redis_unix[0] != '\0' && n > 1) {
		snprintf(err, errlen, "a unix socket must be the only address");
		return -1;
	}
	c->redis_naddrs = c->redis_unix[0] != '\0' ? 0 : n;
	return 0;
}

/* "404:30s, 410:5m": statuses 100..599 with a duration each. */
static int
set_status_ttls(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	struct conf_route *r = (struct conf_route *)(void *)base;
	char item[TEXT_MAX * 2], shown[CONF_SHOW_BUF];
	const char *p = v;
	int n = 0;

	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		char *colon, *end;
		long status;
		int64_t ms;

		while (len > 0 && isspace((unsigned char)*p)) {
			p++;
			len--;
		}
		if (len == 0 || len >= sizeof(item))
			goto bad;
		memcpy(item, p, len);
		item[len] = '\0';
		while (len > 0 && isspace((unsigned char)item[len - 1]))
			item[--len] = '\0';
		if ((colon = strchr(item, ':')) == NULL)
			goto bad;
		*colon = '\0';
		status = strtol(item, &end, 10);
		if (end == item || *end != '\0' || status < 100 || status > 599 ||
		    util_parse_duration(colon + 1, &ms) == -1)
			goto bad;
		if (ms > STATUS_TTL_MAX) {
			snprintf(err, errlen, "%s is above the maximum 8760h",
			    conf_show(colon + 1, SIZE_MAX, shown));
			return -1;
		}
		if (n >= k->max) {
			snprintf(err, errlen, "at most %" PRId64 " statuses",
			    k->max);
			return -1;
		}
		r->status_ttls[n].status = (int)status;
		r->status_ttls[n].ttl_ms = ms;
		n++;
		p += strcspn(p, ",");
		if (*p == ',')
			p++;
	}
	r->nstatus_ttls = n;
	return 0;
bad:
	snprintf(err, errlen, "\"%s\" is not a list of status:duration "
	    "(like 404:30s,410:5m)", conf_show(v, SIZE_MAX, shown));
	return -1;
}

/* trusted_proxies, admin_allow: every entry is checked, and every bad one
 * named. */
static int
set_cidrs(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	struct conf_cidr *list = (struct conf_cidr *)(void *)(base + k->off);
	char item[64], shown[CONF_SHOW_BUF];
	size_t used = 0;
	int n = 0, bad = 0;

	err[0] = '\0';
	for (const char *p = v; *p != '\0'; p += strspn(p, ", \t")) {
		size_t len = strcspn(p, ", \t");

		if (len == 0)
			continue;
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		p += len;
		if (n >= k->max) {
			snprintf(err, errlen, "at most %" PRId64 " entries",
			    k->max);
			return -1;
		}
		if (host_parse_cidr(item, &list[n]) == 0) {
			n++;
			continue;
		}
		conf_show(item, SIZE_MAX, shown);
		used += (size_t)snprintf(err + used, used < errlen ?
		    errlen - used : 0, "%s\"%s\"", bad++ > 0 ? ", " : "", shown);
		if (used >= errlen)
			used = errlen - 1;
	}
	if (bad > 0) {
		snprintf(err + used, errlen - used, " %s not an address or "
		    "address/bits", bad == 1 ? "is" : "are");
		return -1;
	}
	*(int *)(void *)(base + k->off_port) = n;
	return 0;
}

/* Writes "\"v\" is not what" into err for a value that does not parse. */
static int
refuse(const char *v, const char *what, char *err, size_t errlen)
{
	char shown[CONF_SHOW_BUF];

	snprintf(err, errlen, "\"%s\" is not %s", conf_show(v, SIZE_MAX, shown),
	    what);
	return -1;
}

/* Strings and lists may be empty; every other type needs a value. */
static int
may_be_empty(enum type type)
{
	return type == T_STRING || type == T_PREFIX || type == T_FIELDS ||
	    type == T_POOL_NAME ||
	    type == T_HOSTS || type == T_STATUS_TTLS || type == T_CIDRS ||
	    type == T_AUTHORITY || type == T_QUERY_NAMES || type == T_COOKIE;
}

static int
set_mode(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	enum redis_mode *mode = (enum redis_mode *)(void *)field;

	if (strcmp(v, "single") == 0)
		*mode = REDIS_SINGLE;
	else if (strcmp(v, "cluster") == 0)
		*mode = REDIS_CLUSTER;
	else if (strcmp(v, "sentinel") == 0)
		*mode = REDIS_SENTINEL;
	else
		return refuse(v, "a mode (use single, cluster or sentinel)",
		    err, errlen);
	return 0;
}

/* [changes] mode. */
static int
set_changes_mode(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	int *mode = (int *)(void *)field;

	if (strcmp(v, "replication") == 0)
		*mode = CHANGES_MODE_REPLICATION;
	else if (strcmp(v, "notify") == 0)
		*mode = CHANGES_MODE_NOTIFY;
	else
		return refuse(v, "a mode (use replication or notify)", err,
		    errlen);
	return 0;
}

/* purge, purge.TABLE: soft 0, hard 1. */
int
value_purge(const char *v, int *hard, char *err, size_t errlen)
{
	if (strcmp(v, "soft") == 0)
		*hard = 0;
	else if (strcmp(v, "hard") == 0)
		*hard = 1;
	else
		return refuse(v, "a purge (use soft or hard)", err, errlen);
	return 0;
}

static int
set_loglevel(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	enum log_level level;

	if (log_parse_level(v, &level) == -1)
		return refuse(v, "a log level (use error, warn, info or debug)",
		    err, errlen);
	*(enum log_level *)(void *)field = level;
	return 0;
}

static int
set_logformat(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	enum log_format format;

	if (log_parse_format(v, &format) == -1)
		return refuse(v, "a log format (use text or json)", err,
		    errlen);
	*(enum log_format *)(void *)field = format;
	return 0;
}

static int
set_bool(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	int b;

	if (util_parse_bool(v, &b) == -1)
		return refuse(v, "a boolean (use on/off, yes/no, true/false "
		    "or 1/0)", err, errlen);
	*(int *)(void *)field = b;
	return 0;
}

/* A double, range-checked in thousandths. */
static int
set_float(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end != '\0' || errno == ERANGE ||
	    isspace((unsigned char)*v) || d != d)
		return refuse(v, "a number", err, errlen);
	/* In thousandths, rounded away from the range when outside. */
	if (check_range(k, d * 1000 < (double)k->min ?
	    (int64_t)floor(d * 1000) : d * 1000 > (double)k->max ?
	    (int64_t)ceil(d * 1000) : (int64_t)(d * 1000), v, err,
	    errlen) == -1)
		return -1;
	*(double *)(void *)field = d;
	return 0;
}

/* T_SIZE, T_DURATION or T_INT: parsed, range-checked, then stored. */
static int
set_number(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	int64_t n;

	switch (k->type) {
	case T_SIZE:
		if (util_parse_size(v, &n) == -1)
			return refuse(v, "a size (use a number of bytes, or "
			    "k, m, g)", err, errlen);
		break;
	case T_DURATION:
		if (util_parse_duration(v, &n) == -1)
			return refuse(v, "a duration (use ms, s, m, h)", err,
			    errlen);
		break;
	default:
		assert(k->type == T_INT);
		if (parse_int(v, &n) == -1)
			return refuse(v, "a whole number", err, errlen);
		break;
	}
	if (check_range(k, n, v, err, errlen) == -1)
		return -1;
	if (k->type == T_INT)
		*(int *)(void *)field = (int)n;
	else
		*(int64_t *)(void *)field = n;
	return 0;
}

/* A keyword: a mode, log level or format, boolean, balance,
 * cache_authorized, a [changes] mode or purge. */
static int
set_word(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	switch (k->type) {
	case T_MODE:
		return set_mode(k, field, v, err, errlen);
	case T_LOGLEVEL:
		return set_loglevel(k, field, v, err, errlen);
	case T_LOGFORMAT:
		return set_logformat(k, field, v, err, errlen);
	case T_BALANCE:
		return conf_pool_balance((enum conf_balance *)(void *)field, v,
		    err, errlen);
	case T_AUTHZ:
		return conf_key_set_authz(v, (int *)(void *)field, err, errlen);
	case T_CHANGES_MODE:
		return set_changes_mode(k, field, v, err, errlen);
	case T_PURGE:
		return value_purge(v, (int *)(void *)field, err, errlen);
	default:
		assert(k->type == T_BOOL);
		return set_bool(k, field, v, err, errlen);
	}
}

/* A string, kept as written or in a normal form its type checks. */
static int
set_text(const struct key *k, char *field, const char *v, char *err,
    size_t errlen)
{
	switch (k->type) {
	case T_PREFIX:
		return set_prefix(k, field, v, err, errlen);
	case T_FIELDS:
	case T_HOSTS:
		return set_fields(k, field, v, err, errlen);
	case T_AUTHORITY:
		return set_authority(k, field, v, err, errlen);
	case T_QUERY_NAMES:
		return conf_key_set_names(v, field, k->size, err, errlen);
	case T_COOKIE:
		return conf_key_set_cookie(v, field, k->size, err, errlen);
	case T_HEADER:
		return conf_key_set_header(v, field, k->size, err, errlen);
	default:
		assert(k->type == T_STRING || k->type == T_POOL_NAME);
		return set_string(k, field, v, err, errlen);
	}
}

/*
 * Parses v for row k and stores it in base (a struct conf, conf_pool or
 * conf_route, as the row's section says). A value of several members
 * (an address, a list) is stored from base, any other in its one field.
 * 0, or -1 with the reason in err.
 */
int
value_set(const struct key *k, char *base, const char *v, char *err,
    size_t errlen)
{
	char *field = base + k->off;

	if (*v == '\0' && !may_be_empty(k->type)) {
		snprintf(err, errlen, "missing value");
		return -1;
	}
	switch (k->type) {
	case T_HOSTPORT:
		return set_hostport(k, base, v, err, errlen);
	case T_LISTEN:
		return set_listen(k, base, v, err, errlen);
	case T_ADDRESS:
		return set_address(k, base, v, err, errlen);
	case T_ADDRESSES:
		return set_addresses(k, base, v, err, errlen);
	case T_SERVERS:
		return conf_pool_servers((struct conf_pool *)(void *)base, v,
		    err, errlen);
	case T_STATUS_TTLS:
		return set_status_ttls(k, base, v, err, errlen);
	case T_CIDRS:
		return set_cidrs(k, base, v, err, errlen);
	case T_MODE:
	case T_LOGLEVEL:
	case T_LOGFORMAT:
	case T_BOOL:
	case T_BALANCE:
	case T_AUTHZ:
	case T_CHANGES_MODE:
	case T_PURGE:
		return set_word(k, field, v, err, errlen);
	case T_TAG_RULE:	/* conf_changes.c's, by table */
		assert(!"a per-table key through value_set");
		return -1;
	case T_STRING:
	case T_PREFIX:
	case T_FIELDS:
	case T_HOSTS:
	case T_AUTHORITY:
	case T_POOL_NAME:
	case T_QUERY_NAMES:
	case T_COOKIE:
	case T_HEADER:
		return set_text(k, field, v, err, errlen);
	case T_FLOAT:
		return set_float(k, field, v, err, errlen);
	case T_SIZE:
	case T_DURATION:
	case T_INT:
		break;
	}
	return set_number(k, field, v, err, errlen);
}
