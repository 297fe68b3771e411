/*
 * The configuration file.
 *
 * libinih splits "name = value" lines and strips inline comments, but the
 * packaged library (Debian's r55) has no line number in its handler, a
 * 200-byte line buffer, joins an indented line to the previous value, cuts
 * section names at 49 bytes and reports only the first bad line. So it
 * reads through our own reader, read_line(), which numbers the lines,
 * drops indentation, rejects lines too long for inih's buffer, checks the
 * syntax of every line and handles [section] headers itself. inih is
 * handed only key lines; every other line reaches it as an empty line, so
 * that its line count stays equal to ours.
 *
 * Every key is one row of keys[] below. set_value() parses a value for any
 * row, and check_range() is the one place where values are range-checked;
 * defaults are written in the file's own syntax and go through the same
 * code.
 */

#include "conf/conf.h"
#include "conf/conf_pool.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include <ini.h>

#include "common/util.h"
#include "conf/conf_key.h"
#include "conf/conf_secret.h"
#include "conf/conf_show.h"

#define MS_SECOND	INT64_C(1000)
#define MS_MINUTE	(60 * MS_SECOND)
#define MS_HOUR		(60 * MS_MINUTE)
#define STATUS_TTL_MAX	(8760 * MS_HOUR)	/* as for ttl */
#define KIB		INT64_C(1024)
#define MIB		(1024 * KIB)
#define GIB		(1024 * MIB)

#define LINE_BUF	1024	/* bytes of a line kept (inih takes fewer) */
#define MSG_MAX		256	/* one error message, before "file:line: " */
#define TEXT_MAX	32	/* a formatted number */
#define RANGE_MAX	(2 * TEXT_MAX + 32)	/* "min..max" and the like */
#define SECTION_MAX	(CONF_ROUTE_PREFIX_MAX + 16)
#define DB_MAX		255
#define UNIX_PREFIX	"unix:"
#define UNIX_PATH_LIMIT	(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

_Static_assert(UNIX_PATH_LIMIT < CONF_PATH_MAX, "redis_unix holds sun_path");

enum sect {
	SECT_NONE,		/* before the first section header */
	SECT_SERVER,
	SECT_REDIS,
	SECT_UPSTREAM,		/* [upstream] alone */
	SECT_POOL,		/* [upstream] and [upstream NAME] */
	SECT_ROUTE,
	SECT_SKIP		/* after a bad header: its keys are ignored */
};

static const char *const sect_labels[] = {
	[SECT_SERVER] = "[server]",
	[SECT_REDIS] = "[redis]",
	[SECT_UPSTREAM] = "[upstream]",
	[SECT_POOL] = "[upstream]",
	[SECT_ROUTE] = "[route PREFIX]",
};

enum type {
	T_HOSTPORT,		/* "host:port": host at off, port at off_port */
	T_ADDRESS,		/* T_HOSTPORT or "unix:/path" into off_path */
	T_ADDRESSES,		/* a T_ADDRESS, or several host:port into
				 * redis_addrs */
	T_MODE,			/* enum redis_mode */
	T_LOGLEVEL,		/* enum log_level */
	T_LOGFORMAT,		/* enum log_format */
	T_SIZE,			/* int64_t bytes */
	T_DURATION,		/* int64_t milliseconds */
	T_INT,			/* int */
	T_BOOL,			/* int, 0 or 1 */
	T_STRING,		/* char[size]; min..max is its length */
	T_PREFIX,		/* T_STRING without '{', '}', space, control */
	T_FIELDS,		/* T_STRING: field names, comma-separated */
	T_HOSTS,		/* T_STRING: host patterns, comma-separated */
	T_AUTHORITY,		/* T_STRING: one host[:port], in normal form */
	T_SERVERS,		/* url: base URLs into a conf_pool */
	T_BALANCE,		/* enum conf_balance */
	T_POOL_NAME,		/* T_STRING: a route's [upstream NAME] */
	T_STATUS_TTLS,		/* "404:30s,410:5m" into a conf_route */
	T_CIDRS,		/* "10.0.0.0/8, ::1" into trusted_proxies */
	T_FLOAT,		/* double; min..max in thousandths */
	T_AUTHZ,		/* enum conf_authz (conf_key.c) */
	T_QUERY_NAMES,		/* T_STRING: names and prefix* patterns */
	T_COOKIE,		/* T_STRING: a cookie name, or "" */
	T_HEADER		/* T_STRING: a field name a credential is in */
};

struct key {
	const char	*name;
	enum sect	 sect;
	enum type	 type;
	const char	*def;		/* the default, in the file's syntax */
	int64_t		 min;		/* value range, or length for strings */
	int64_t		 max;
	size_t		 off;		/* in struct conf, conf_pool or
					 * conf_route */
	size_t		 size;
	size_t		 off_port;	/* T_HOSTPORT, T_ADDRESS */
	size_t		 off_path;	/* T_ADDRESS: the unix socket path */
	const char	*help;
};

/* off, size, off_port, off_path of a row. */
#define FIELD(type, m)		offsetof(type, m), sizeof(((type *)0)->m)
#define IN_CONF(m)		FIELD(struct conf, m), 0, 0
#define IN_ROUTE(m)		FIELD(struct conf_route, m), 0, 0
#define IN_POOL(m)		FIELD(struct conf_pool, m), 0, 0
#define HOSTPORT(h, p)		FIELD(struct conf, h), \
				offsetof(struct conf, p), 0
#define CIDRS(list, n)		FIELD(struct conf, list), \
				offsetof(struct conf, n), 0
#define ADDRESS(h, p, u)	FIELD(struct conf, h), \
				offsetof(struct conf, p), \
				offsetof(struct conf, u)

static const struct key keys[] = {
	{ "listen", SECT_SERVER, T_HOSTPORT, "127.0.0.1:8080", 0, 0,
	  HOSTPORT(listen_host, listen_port), "where clients connect" },
	{ "admin_listen", SECT_SERVER, T_HOSTPORT, "127.0.0.1:8081", 0, 0,
	  HOSTPORT(admin_host, admin_port), "stats and control; not listen" },
	{ "log_level", SECT_SERVER, T_LOGLEVEL, "info", 0, 0,
	  IN_CONF(log_level), "least important messages logged" },
	{ "max_header_bytes", SECT_SERVER, T_SIZE, "16k", 1 * KIB, 1 * MIB,
	  IN_CONF(max_header_bytes), "largest request head accepted" },
	{ "max_body_bytes", SECT_SERVER, T_SIZE, "10m", 1 * KIB, 1 * GIB,
	  IN_CONF(max_body_bytes), "largest request body accepted" },
	{ "client_timeout", SECT_SERVER, T_DURATION, "30s", 1 * MS_SECOND,
	  1 * MS_HOUR, IN_CONF(client_timeout_ms),
	  "a client's silence: sending, idle, or taking a reply" },
	{ "hosts", SECT_SERVER, T_HOSTS, "", 0, CONF_HOSTS_MAX - 1,
	  IN_CONF(hosts), "Host names and ports served; others get 421" },
	{ "canonical_host", SECT_SERVER, T_AUTHORITY, "", 0, HOST_TEXT_MAX - 1,
	  IN_CONF(canonical_host),
	  "X-Forwarded-Host without key_host (empty: first name in hosts)" },
	{ "trusted_proxies", SECT_SERVER, T_CIDRS, "", 0, CONF_CIDRS_MAX,
	  CIDRS(trusted_proxies, ntrusted_proxies),
	  "peers whose X-Forwarded-For, -Proto and Forwarded are kept" },
	{ "admin_token_file", SECT_SERVER, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(admin_token_file),
	  "Bearer tokens of the admin API, one a line; a bare name is in "
	  "$CREDENTIALS_DIRECTORY (empty: open)" },
	{ "admin_allow", SECT_SERVER, T_CIDRS, "", 0, CONF_CIDRS_MAX,
	  CIDRS(admin_allow, nadmin_allow),
	  "peers the admin API answers, but /health (empty: any)" },
	{ "admin_hosts", SECT_SERVER, T_HOSTS, "", 0, CONF_HOSTS_MAX - 1,
	  IN_CONF(admin_hosts),
	  "more Host names the admin API answers (DNS rebinding)" },
	{ "max_connections", SECT_SERVER, T_INT, "10000", 1, 1000000,
	  IN_CONF(max_connections), "client connections open at once" },
	{ "admin_max_connections", SECT_SERVER, T_INT, "64", 1, 10000,
	  IN_CONF(admin_max_connections),
	  "admin listener connections; more get a 503" },
	{ "shutdown_timeout", SECT_SERVER, T_DURATION, "10s", 0,
	  10 * MS_MINUTE, IN_CONF(shutdown_timeout_ms),
	  "on SIGTERM, finish requests for this long" },
	{ "workers", SECT_SERVER, T_INT, "0", 0, WORKERS_MAX,
	  IN_CONF(workers), "processes serving requests (0: one per core)" },
	{ "l1_max_bytes", SECT_SERVER, T_SIZE, "64m", 0, 64 * GIB,
	  IN_CONF(l1_max_bytes), "per-process near cache (0: off)" },
	{ "l2_max_bytes", SECT_SERVER, T_SIZE, "256m", 0, 64 * GIB,
	  IN_CONF(l2_max_bytes), "near cache the workers share (0: off)" },
	{ "access_log", SECT_SERVER, T_STRING, "off", 1, CONF_PATH_MAX - 1,
	  IN_CONF(access_log), "path, - (stdout) or off" },
	{ "error_log", SECT_SERVER, T_STRING, "-", 1, CONF_PATH_MAX - 1,
	  IN_CONF(error_log), "path or - (stderr)" },
	{ "pid_file", SECT_SERVER, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(pid_file), "the main process's PID, while it runs (empty: "
	  "none)" },
	{ "log_format", SECT_SERVER, T_LOGFORMAT, "text", 0, 0,
	  IN_CONF(log_format), "text, or json: one object a line" },
	{ "key_secret_file", SECT_SERVER, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(key_secret_file),
	  "secret of per-credential keys' HMAC; others may not read it" },

	{ "mode", SECT_REDIS, T_MODE, "single", 0, 0,
	  IN_CONF(redis_mode), "what address names" },
	{ "address", SECT_REDIS, T_ADDRESSES, "127.0.0.1:6379", 0,
	  CONF_REDIS_ADDRS_MAX, ADDRESS(redis_host, redis_port, redis_unix),
	  "server; cluster seeds; sentinels" },
	{ "master_name", SECT_REDIS, T_STRING, "", 0, CONF_NAME_MAX - 1,
	  IN_CONF(redis_master_name), "sentinel: the primary's name" },
	{ "username", SECT_REDIS, T_STRING, "", 0, CONF_SECRET_MAX - 1,
	  IN_CONF(redis_username), "ACL user: AUTH username password" },
	{ "password", SECT_REDIS, T_STRING, "", 0, CONF_SECRET_MAX - 1,
	  IN_CONF(redis_password), "AUTH with this when set" },
	{ "password_file", SECT_REDIS, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(redis_password_file),
	  "the password's file, read at start and reload; a bare name is in "
	  "$CREDENTIALS_DIRECTORY" },
	{ "sentinel_username", SECT_REDIS, T_STRING, "", 0,
	  CONF_SECRET_MAX - 1, IN_CONF(redis_sentinel_username),
	  "sentinel: the sentinels' ACL user" },
	{ "sentinel_password", SECT_REDIS, T_STRING, "", 0,
	  CONF_SECRET_MAX - 1, IN_CONF(redis_sentinel_password),
	  "sentinel: AUTH to the sentinels with this" },
	{ "sentinel_password_file", SECT_REDIS, T_STRING, "", 0,
	  CONF_PATH_MAX - 1, IN_CONF(redis_sentinel_password_file),
	  "sentinel: as password_file, for the sentinels" },
	{ "db", SECT_REDIS, T_INT, "0", 0, DB_MAX,
	  IN_CONF(redis_db), "database number (SELECT)" },
	{ "prefix", SECT_REDIS, T_PREFIX, "corral:", 1, CONF_PREFIX_MAX - 1,
	  IN_CONF(redis_prefix), "namespace of every key and channel" },
	{ "timeout", SECT_REDIS, T_DURATION, "1s", 1, 60 * MS_SECOND,
	  IN_CONF(redis_timeout_ms), "per command" },

	{ "url", SECT_POOL, T_SERVERS, "http://127.0.0.1:9000", 0,
	  CONF_SERVERS_MAX, IN_POOL(nservers),
	  "base URLs requests go to, each may end in weight=N" },
	{ "balance", SECT_POOL, T_BALANCE, "least_outstanding", 0, 0,
	  IN_POOL(balance), "least_outstanding or round-robin, by weight" },
	{ "connect_timeout", SECT_POOL, T_DURATION, "1s", 1,
	  60 * MS_SECOND, IN_POOL(connect_timeout_ms),
	  "TCP and TLS connect" },
	{ "timeout", SECT_POOL, T_DURATION, "10s", 1, 1 * MS_HOUR,
	  IN_POOL(timeout_ms), "whole fetch, a retry included" },
	{ "first_byte_timeout", SECT_POOL, T_DURATION, "0", 0, 1 * MS_HOUR,
	  IN_POOL(first_byte_timeout_ms),
	  "a try's wait for its response to begin (0: timeout / 2 with "
	  "several servers, else timeout)" },
	{ "stream_window", SECT_UPSTREAM, T_SIZE, "1m", 16 * KIB, 1 * GIB,
	  IN_CONF(stream_window),
	  "a streamed response waits when its fastest client has this queued" },
	{ "max_entry_bytes", SECT_UPSTREAM, T_SIZE, "8m", 1 * KIB, 1 * GIB,
	  IN_CONF(max_entry_bytes), "larger responses are passed, not stored" },
	{ "max_upstream_headers", SECT_UPSTREAM, T_INT, "100", 1,
	  CONF_UPSTREAM_HEADERS_MAX, IN_CONF(max_upstream_headers),
	  "header lines of a response; more: 502" },
	{ "max_requests", SECT_POOL, T_INT, "0", 0, 1000000,
	  IN_POOL(max_requests),
	  "origin requests at once across the fleet (0: no limit)" },
	{ "queue_timeout", SECT_POOL, T_DURATION, "5s", 0, 1 * MS_HOUR,
	  IN_POOL(queue_timeout_ms),
	  "a request waits this long for an origin slot" },
	{ "slot_lease", SECT_POOL, T_DURATION, "5s", 100, 10 * MS_MINUTE,
	  IN_POOL(slot_lease_ms),
	  "an origin slot's lease in Redis, renewed while its fetch runs" },
	{ "local_share", SECT_POOL, T_INT, "0", 0, 1000000,
	  IN_POOL(local_share),
	  "Redis down: one instance's slots (0: max_requests / instances)" },
	{ "max_requests_per_server", SECT_POOL, T_INT, "0", 0, 1000000,
	  IN_POOL(max_requests_per_server),
	  "requests at once to one server across the fleet (0: no limit)" },
	{ "max_fails", SECT_POOL, T_INT, "3", 0, 1000,
	  IN_POOL(max_fails),
	  "failures within fail_timeout that take a server out (0: never)" },
	{ "fail_timeout", SECT_POOL, T_DURATION, "10s", 1, 1 * MS_HOUR,
	  IN_POOL(fail_timeout_ms),
	  "the failures' window, and how long a server stays out" },
	{ "health_path", SECT_POOL, T_STRING, "", 0, CONF_HEALTH_PATH_MAX - 1,
	  IN_POOL(health_path), "GET this on every server (empty: no probes)" },
	{ "health_interval", SECT_POOL, T_DURATION, "5s", 100, 1 * MS_HOUR,
	  IN_POOL(health_interval_ms), "time between probes of a server" },
	{ "health_timeout", SECT_POOL, T_DURATION, "2s", 10, 1 * MS_MINUTE,
	  IN_POOL(health_timeout_ms), "a probe fails past this" },
	{ "health_status", SECT_POOL, T_INT, "200", 100, 599,
	  IN_POOL(health_status), "the status a probe must answer" },
	{ "health_rise", SECT_POOL, T_INT, "2", 1, 100, IN_POOL(health_rise),
	  "passed probes in a row that bring a server back" },

	{ "ttl", SECT_ROUTE, T_DURATION, "10s", 0, 8760 * MS_HOUR,
	  IN_ROUTE(ttl_ms), "fresh for this long after the fetch" },
	{ "stale_while_revalidate", SECT_ROUTE, T_DURATION, "60s", 0,
	  8760 * MS_HOUR, IN_ROUTE(swr_ms),
	  "then served stale while one request refreshes it" },
	{ "lock_ttl", SECT_ROUTE, T_DURATION, "5s", 100, 1 * MS_HOUR,
	  IN_ROUTE(lock_ttl_ms), "expiry (PX) of the refresh lock" },
	{ "lock_wait", SECT_ROUTE, T_DURATION, "0", 0, 1 * MS_HOUR,
	  IN_ROUTE(lock_wait_ms),
	  "a miss waits for another fetch, then stale or 504 (0: as long "
	  "as it may take)" },
	{ "lock_poll", SECT_ROUTE, T_DURATION, "500ms", 10, 60 * MS_SECOND,
	  IN_ROUTE(lock_poll_ms), "re-check interval while waiting" },
	{ "cache_authorized", SECT_ROUTE, T_AUTHZ, "off", 0, 0,
	  IN_ROUTE(cache_authorized),
	  "cache requests with credentials: off (passed), on (shared when the "
	  "origin says public), per-credential, or anonymous (fetched "
	  "without them)" },
	{ "credential_header", SECT_ROUTE, T_HEADER, CONF_CREDENTIAL_HEADER, 1,
	  CONF_HEADER_NAME_MAX - 1, IN_ROUTE(credential_header),
	  "per-credential: the request header that holds the credential; "
	  "anonymous: one more header it never sends" },
	{ "credential_cookie", SECT_ROUTE, T_COOKIE, "", 0, CONF_COOKIE_MAX - 1,
	  IN_ROUTE(credential_cookie),
	  "per-credential: this cookie is a credential too (others not sent)" },
	{ "key_ignore_query", SECT_ROUTE, T_QUERY_NAMES, "", 0,
	  CONF_QUERY_NAMES_MAX - 1, IN_ROUTE(key_ignore_query),
	  "query parameters left out of the key, e.g. _, utm_*, fbclid" },
	{ "key_query", SECT_ROUTE, T_QUERY_NAMES, "", 0,
	  CONF_QUERY_NAMES_MAX - 1, IN_ROUTE(key_query),
	  "only these query parameters count in the key (empty: all)" },
	{ "key_headers", SECT_ROUTE, T_FIELDS, "", 0, CONF_FIELDS_MAX - 1,
	  IN_ROUTE(key_headers), "request headers whose values are keyed" },
	{ "cache_post", SECT_ROUTE, T_BOOL, "off", 0, 1, IN_ROUTE(cache_post),
	  "cache POST responses, keyed on a digest of the body" },
	{ "graphql", SECT_ROUTE, T_BOOL, "off", 0, 1, IN_ROUTE(graphql),
	  "POSTs are GraphQL: queries cached, mutations never" },
	{ "max_body_bytes", SECT_ROUTE, T_SIZE, "64k", 0, 1 * GIB,
	  IN_ROUTE(post_max_body), "cache_post: longer bodies are passed" },
	{ "stale_if_error", SECT_ROUTE, T_DURATION, "0", 0, 8760 * MS_HOUR,
	  IN_ROUTE(stale_if_error_ms),
	  "past ttl, serve stale this long on upstream errors" },
	{ "error_backoff_after", SECT_ROUTE, T_INT, "2", 1, 100,
	  IN_ROUTE(error_backoff_after),
	  "failed refreshes in a row, fleet-wide, before backing off" },
	{ "hit_for_miss", SECT_ROUTE, T_DURATION, "30s", 0, 1 * MS_HOUR,
	  IN_ROUTE(hit_for_miss_ms),
	  "an unshareable response: its key skips the lock this long" },
	{ "error_backoff", SECT_ROUTE, T_DURATION, "30s", 0, 1 * MS_HOUR,
	  IN_ROUTE(error_backoff_ms),
	  "longest pause between refreshes of a failing key" },
	{ "ttl_404", SECT_ROUTE, T_DURATION, "0", 0, 8760 * MS_HOUR,
	  IN_ROUTE(ttl_404_ms), "store 404 responses this long" },
	{ "ttl_status", SECT_ROUTE, T_STATUS_TTLS, "", 0, CONF_STATUS_TTLS_MAX,
	  IN_ROUTE(nstatus_ttls), "store these statuses, e.g. 404:30s,410:5m" },
	{ "max_variants", SECT_ROUTE, T_INT, "100", 1, 10000,
	  IN_ROUTE(max_variants),
	  "variants a key may have (Vary); more are served, not stored" },
	{ "sort_query", SECT_ROUTE, T_BOOL, "off", 0, 1,
	  IN_ROUTE(sort_query), "cache key ignores query parameter order" },
	{ "early_refresh", SECT_ROUTE, T_BOOL, "off", 0, 1,
	  IN_ROUTE(early_refresh), "refresh hot keys before they go stale" },
	{ "early_refresh_beta", SECT_ROUTE, T_FLOAT, "1.0", 1, 100000,
	  IN_ROUTE(early_refresh_beta), "how early (XFetch beta)" },
	{ "origin_cache_control", SECT_ROUTE, T_BOOL, "off", 0, 1,
	  IN_ROUTE(origin_cache_control),
	  "freshness from the origin's Cache-Control and Expires" },
	{ "targeted_cache_control", SECT_ROUTE, T_FIELDS,
	  "Corral-Cache-Control", 0, CONF_FIELDS_MAX - 1, IN_ROUTE(targeted_cc),
	  "fields meant for Corral, above CDN-Cache-Control (RFC 9213)" },
	{ "key_host", SECT_ROUTE, T_BOOL, "off", 0, 1, IN_ROUTE(key_host),
	  "key on the client's Host (else the origin never sees it)" },
	{ "forward_targeted_cache_control", SECT_ROUTE, T_BOOL, "off", 0, 1,
	  IN_ROUTE(forward_targeted_cc),
	  "pass the targeted fields Corral read on to clients" },
	{ "upstream", SECT_ROUTE, T_POOL_NAME, "", 0, CONF_POOL_NAME_MAX - 1,
	  IN_ROUTE(upstream), "the [upstream NAME] pool (empty: [upstream])" },
};

#define NKEYS	ARRAY_LEN(keys)

struct loader {
	struct conf	*c;
	const char	*path;
	FILE		*fp;
	FILE		*errs;
	int		 nerr;
	int		 lineno;
	int		 read_errno;
	enum sect	 sect;			/* the current section */
	char		 section[SECTION_MAX];	/* its header, for messages */
	int		 route;			/* its index, for SECT_ROUTE */
	int		 pool;			/* its pool, in [upstream ...] */
	int		 set_line[NKEYS];	/* where each key was set */
	char		 refused[NKEYS];	/* its value was bad */
	char		 line[LINE_BUF];
};

static void	report(struct loader *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

/* Writes "path:line: message" (or "path: message" for line 0). */
static void
report(struct loader *ld, int line, const char *fmt, ...)
{
	va_list ap;

	ld->nerr++;
	if (ld->errs == NULL)
		return;
	if (line > 0)
		fprintf(ld->errs, "%s:%d: ", ld->path, line);
	else
		fprintf(ld->errs, "%s: ", ld->path);
	va_start(ap, fmt);
	vfprintf(ld->errs, fmt, ap);
	va_end(ap);
	fputc('\n', ld->errs);
}

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
static void
format_number(const struct key *k, int64_t v, char *out, size_t outlen)
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

static void
format_hostport(const char *host, int port, char *out, size_t outlen)
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
		format_number(k, k->min, limit, sizeof(limit));
		snprintf(err, errlen, "%s is below the minimum %s",
		    conf_show(text, SIZE_MAX, shown), limit);
		return -1;
	}
	if (v > k->max) {
		format_number(k, k->max, limit, sizeof(limit));
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

/* "addr" or "addr/bits", IPv4 or IPv6, into *c. 0 or -1. */
static int
parse_cidr(const char *item, struct conf_cidr *c)
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
		if (parse_cidr(item, &list[n]) == 0) {
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

int
conf_host_allowed(const struct conf *c, const char *host, int keyed)
{
	struct host h;

	if (host[0] == '\0')
		return c->hosts[0] == '\0';	/* RFC 9112 3.2: no authority */
	if (host_parse(host, strlen(host), &h) == -1)
		return 0;
	if (c->hosts[0] == '\0')
		return !keyed || host_pattern_match("*", 1, &h, c->listen_port);
	for (const char *p = c->hosts; *p != '\0'; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");

		if (host_pattern_match(p, len, &h, c->listen_port))
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

	if (n == 0 || parse_cidr(addr, &a) == -1)
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

/*
 * Parses v for row k and stores it in base (a struct conf, or a struct
 * conf_route for route keys). 0, or -1 with the reason in err.
 */
static int
set_value(const struct key *k, char *base, const char *v, char *err,
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
	case T_ADDRESS:
		return set_address(k, base, v, err, errlen);
	case T_ADDRESSES:
		return set_addresses(k, base, v, err, errlen);
	case T_MODE:
		return set_mode(k, field, v, err, errlen);
	case T_STRING:
		return set_string(k, field, v, err, errlen);
	case T_PREFIX:
		return set_prefix(k, field, v, err, errlen);
	case T_FIELDS:
	case T_HOSTS:
		return set_fields(k, field, v, err, errlen);
	case T_AUTHORITY:
		return set_authority(k, field, v, err, errlen);
	case T_SERVERS:
		return conf_pool_servers((struct conf_pool *)(void *)base, v,
		    err, errlen);
	case T_BALANCE:
		return conf_pool_balance((enum conf_balance *)(void *)field, v,
		    err, errlen);
	case T_POOL_NAME:
		return set_string(k, field, v, err, errlen);
	case T_STATUS_TTLS:
		return set_status_ttls(k, base, v, err, errlen);
	case T_CIDRS:
		return set_cidrs(k, base, v, err, errlen);
	case T_FLOAT:
		return set_float(k, field, v, err, errlen);
	case T_LOGLEVEL:
		return set_loglevel(k, field, v, err, errlen);
	case T_LOGFORMAT:
		return set_logformat(k, field, v, err, errlen);
	case T_BOOL:
		return set_bool(k, field, v, err, errlen);
	case T_AUTHZ:
		return conf_key_set_authz(v, (int *)(void *)field, err, errlen);
	case T_QUERY_NAMES:
		return conf_key_set_names(v, field, k->size, err, errlen);
	case T_COOKIE:
		return conf_key_set_cookie(v, field, k->size, err, errlen);
	case T_HEADER:
		return conf_key_set_header(v, field, k->size, err, errlen);
	case T_SIZE:
	case T_DURATION:
	case T_INT:
		break;
	}
	return set_number(k, field, v, err, errlen);
}

static void
set_default(const struct key *k, char *base)
{
	char err[MSG_MAX];
	int rc;

	rc = set_value(k, base, k->def, err, sizeof(err));
	assert(rc == 0);
	(void)rc;
}

static void
route_defaults(struct conf_route *r)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].sect == SECT_ROUTE)
			set_default(&keys[i], (char *)r);
}

/* A pool's keys: the defaults (a named pool's url has none). */
static void
pool_defaults(struct conf_pool *p)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].sect == SECT_POOL)
			set_default(&keys[i], (char *)p);
}

/* [upstream] has the keys of every pool too. */
static const struct key *
find_key(enum sect sect, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if ((keys[i].sect == sect || (sect == SECT_UPSTREAM &&
		    keys[i].sect == SECT_POOL)) &&
		    strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* The one section other than sect that has a key name, or SECT_NONE. */
static enum sect
home_of(enum sect sect, const char *name)
{
	enum sect home = SECT_NONE;

	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].sect == sect || strcmp(keys[i].name, name) != 0 ||
		    (sect == SECT_UPSTREAM && keys[i].sect == SECT_POOL))
			continue;
		if (home != SECT_NONE && home != keys[i].sect)
			return SECT_NONE;
		home = keys[i].sect;
	}
	return home;
}

/* Where a key was set (0 if not), or -1 if its value was refused. */
static int
line_of(const struct loader *ld, enum sect sect, const char *name)
{
	const struct key *k = find_key(sect, name);

	assert(k != NULL);
	return ld->refused[k - keys] ? -1 : ld->set_line[k - keys];
}

/* Like inih: the first of chars in s, or the ';' of an inline comment
 * (one that follows whitespace), or the end of s. */
static const char *
find_sep(const char *s, const char *chars)
{
	int was_space = 0;

	for (; *s != '\0'; s++) {
		if (strchr(chars, *s) != NULL || (was_space && *s == ';'))
			break;
		was_space = isspace((unsigned char)*s);
	}
	return s;
}

/* The length of s without an inline comment and the space before it. */
static size_t
text_len(const char *s)
{
	const char *end = find_sep(s, "");

	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	return (size_t)(end - s);
}

static int
is_name_char(int ch)
{
	return isalnum(ch) || ch == '_' || ch == '-' || ch == '.';
}

static void
begin_route(struct loader *ld, const char *prefix, size_t len)
{
	struct conf *c = ld->c;
	struct conf_route *r;
	char shown[CONF_SHOW_BUF];

	conf_show(prefix, len, shown);
	if (len == 0) {
		report(ld, ld->lineno, "[route] needs a path prefix, such as "
		    "[route /api/]");
		return;
	}
	if (prefix[0] != '/') {
		report(ld, ld->lineno, "route prefix \"%s\" must start with "
		    "'/'", shown);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (isspace((unsigned char)prefix[i]) ||
		    iscntrl((unsigned char)prefix[i])) {
			report(ld, ld->lineno, "route prefix \"%s\" must not "
			    "contain spaces or control characters", shown);
			return;
		}
		/* A request's path never holds one (the door refuses it):
		 * such a route could match nothing. */
		if ((unsigned char)prefix[i] > 0x7e) {
			report(ld, ld->lineno, "route prefix \"%s\" must be "
			    "ASCII, as a request's path is: percent-encode it "
			    "(/caf%%C3%%A9/)", shown);
			return;
		}
	}
	if (len >= CONF_ROUTE_PREFIX_MAX) {
		report(ld, ld->lineno, "route prefix is longer than %d "
		    "characters", CONF_ROUTE_PREFIX_MAX - 1);
		return;
	}
	for (int i = 0; i < c->nroutes; i++) {
		if (strlen(c->routes[i].prefix) == len &&
		    memcmp(c->routes[i].prefix, prefix, len) == 0) {
			report(ld, ld->lineno, "duplicate route [route %s] "
			    "(first on line %d)", shown, c->routes[i].line);
			return;
		}
	}
	if (c->nroutes == CONF_ROUTES_MAX) {
		report(ld, ld->lineno, "too many routes (at most %d)",
		    CONF_ROUTES_MAX);
		return;
	}

	ld->route = c->nroutes++;
	r = &c->routes[ld->route];
	route_defaults(r);
	memcpy(r->prefix, prefix, len);
	r->prefix[len] = '\0';
	r->line = ld->lineno;
	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].sect == SECT_ROUTE) {
			ld->set_line[i] = 0;
			ld->refused[i] = 0;
		}
	}
	ld->sect = SECT_ROUTE;
}

/* [upstream] (name "") or [upstream NAME]: its keys go in its pool. */
static void
begin_pool(struct loader *ld, const char *name, size_t len)
{
	char err[MSG_MAX];
	int i = 0;

	if (len > 0 && (i = conf_pool_begin(ld->c, name, len, ld->lineno, err,
	    sizeof(err))) == -1) {
		report(ld, ld->lineno, "%s", err);
		return;
	}
	if (i > 0) {
		pool_defaults(&ld->c->pools[i]);
		ld->c->pools[i].nservers = 0;	/* url is a must */
	} else if (ld->c->pools[0].line == 0) {
		ld->c->pools[0].line = ld->lineno;
	}
	for (size_t k = 0; k < NKEYS; k++) {
		if (keys[k].sect == SECT_POOL) {
			ld->set_line[k] = 0;
			ld->refused[k] = 0;
		}
	}
	ld->pool = i;
	ld->sect = i > 0 ? SECT_POOL : SECT_UPSTREAM;
}

/* A "[...]" line: s has no surrounding whitespace. */
static void
begin_section(struct loader *ld, const char *s)
{
	static const struct { const char *name; enum sect sect; } plain[] = {
		{ "server", SECT_SERVER },
		{ "redis", SECT_REDIS },
	};
	char shown[CONF_SHOW_BUF];
	const char *in, *end, *rest, *word_end, *arg;
	size_t len, wlen;

	ld->sect = SECT_SKIP;
	end = find_sep(s + 1, "]");
	if (*end != ']') {
		report(ld, ld->lineno, "syntax error: section header \"%s\" "
		    "has no closing ']'", conf_show(s, text_len(s), shown));
		return;
	}
	for (rest = end + 1; isspace((unsigned char)*rest); rest++)
		;
	if (*rest != '\0' && *rest != ';' && *rest != '#') {
		report(ld, ld->lineno, "syntax error: unexpected \"%s\" after "
		    "the section header", conf_show(rest, text_len(rest), shown));
		return;
	}

	for (in = s + 1; in < end && isspace((unsigned char)*in); in++)
		;
	while (end > in && isspace((unsigned char)end[-1]))
		end--;
	len = (size_t)(end - in);
	snprintf(ld->section, sizeof(ld->section), "%.*s", (int)len, in);

	word_end = in;
	while (word_end < end && !isspace((unsigned char)*word_end))
		word_end++;
	wlen = (size_t)(word_end - in);
	if (wlen == strlen("route") && memcmp(in, "route", wlen) == 0) {
		for (arg = word_end; arg < end && isspace((unsigned char)*arg);
		    arg++)
			;
		begin_route(ld, arg, (size_t)(end - arg));
		return;
	}
	if (wlen == strlen("upstream") && memcmp(in, "upstream", wlen) == 0) {
		for (arg = word_end; arg < end && isspace((unsigned char)*arg);
		    arg++)
			;
		begin_pool(ld, arg, (size_t)(end - arg));
		return;
	}
	for (size_t i = 0; i < ARRAY_LEN(plain); i++) {
		if (strlen(plain[i].name) == len &&
		    memcmp(plain[i].name, in, len) == 0) {
			ld->sect = plain[i].sect;
			return;
		}
	}
	report(ld, ld->lineno, "unknown section [%s] (expected [server], "
	    "[redis], [upstream], [upstream NAME] or [route PREFIX])",
	    conf_show(in, len, shown));
}

/*
 * Reads one line into ld->line without its indentation and trailing
 * whitespace. Sets *lenp to its full length, which is more than was kept
 * when the line does not fit in ld->line. -1 at the end of the file.
 */
static int
next_line(struct loader *ld, size_t *lenp)
{
	static const char bom[] = "\xEF\xBB\xBF";
	size_t n = 0, seen = 0, last = 0, skip;
	int ch, any = 0;

	while ((ch = getc(ld->fp)) != EOF) {
		any = 1;
		if (ch == '\n')
			break;
		if (seen == 0 && isspace(ch))
			continue;
		if (n < sizeof(ld->line) - 1)
			ld->line[n++] = (char)ch;
		seen++;
		if (!isspace(ch))
			last = seen;
	}
	if (ch == EOF && ferror(ld->fp)) {
		ld->read_errno = errno != 0 ? errno : EIO;
		return -1;
	}
	if (!any)
		return -1;
	ld->lineno++;
	if (n > last)
		n = last;
	ld->line[n] = '\0';

	if (ld->lineno == 1 && n >= 3 && memcmp(ld->line, bom, 3) == 0) {
		skip = 3;
		while (skip < n && isspace((unsigned char)ld->line[skip]))
			skip++;
		memmove(ld->line, ld->line + skip, n - skip + 1);
		n -= skip;
		last -= skip;
	}
	*lenp = last;
	return 0;
}

/*
 * The ini_reader: hands inih the next key line (as "name = value\n",
 * unindented) or an empty line in place of anything else, having reported
 * whatever is wrong with it.
 */
/*
 * Where the value from p to end stops: at a '#' after whitespace, which
 * starts a comment as inih takes " ;" (and both start one at the head of a
 * line), so that "health_path = /health # probe" is /health, in every key
 * alike. The whitespace before it goes too.
 */
static const char *
value_end(const char *p, const char *end)
{
	const char *q;

	for (q = p; q < end; q++)
		if (*q == '#' && q > p && (q[-1] == ' ' || q[-1] == '\t'))
			break;
	if (q == end)
		return end;
	while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
		q--;
	return q;
}

static char *
read_line(char *buf, int num, void *stream)
{
	struct loader *ld = stream;
	char shown[CONF_SHOW_BUF];
	const char *s = ld->line, *sep, *p;
	size_t len, limit;

	assert(num >= 3);
	if (next_line(ld, &len) == -1)
		return NULL;
	memcpy(buf, "\n", 2);

	/* Room for the '\n' and the NUL, so inih never splits a line. */
	limit = (size_t)num - 2;
	if (limit > sizeof(ld->line) - 1)
		limit = sizeof(ld->line) - 1;
	if (len > limit) {
		report(ld, ld->lineno, "line too long (the limit is %zu "
		    "characters, not counting indentation)", limit);
		if (s[0] == '[')
			ld->sect = SECT_SKIP;
		return buf;
	}
	if (memchr(s, '\0', len) != NULL) {
		report(ld, ld->lineno, "syntax error: the line contains a NUL "
		    "byte");
		return buf;
	}
	if (s[0] == '\0' || s[0] == ';' || s[0] == '#')
		return buf;
	if (s[0] == '[') {
		begin_section(ld, s);
		return buf;
	}

	sep = find_sep(s, "=:");
	for (p = s; p < sep && is_name_char((unsigned char)*p); p++)
		;
	while (p < sep && isspace((unsigned char)*p))
		p++;
	if ((*sep != '=' && *sep != ':') || sep == s || p != sep) {
		report(ld, ld->lineno, "syntax error: expected \"[section]\" "
		    "or \"key = value\", not \"%s\"",
		    conf_show(s, text_len(s), shown));
		return buf;
	}
	len = (size_t)(value_end(sep + 1, s + len) - s);
	memcpy(buf, s, len);
	memcpy(buf + len, "\n", 2);
	return buf;
}

/* key_query and key_ignore_query are two ways to say one thing. */
static void
check_query_rules(struct loader *ld, const struct key *k)
{
	const char *other = strcmp(k->name, "key_query") == 0 ?
	    "key_ignore_query" : strcmp(k->name, "key_ignore_query") == 0 ?
	    "key_query" : NULL;
	const struct conf_route *r = &ld->c->routes[ld->route];
	int line;

	if (other != NULL && k->sect == SECT_ROUTE && r->key_query[0] != '\0' &&
	    r->key_ignore_query[0] != '\0' &&
	    (line = line_of(ld, SECT_ROUTE, other)) > 0)
		report(ld, ld->lineno, "%s: not with %s (line %d): list the "
		    "names that count, or those that do not", k->name, other,
		    line);
}

/* The key secret, then what each route's key settings need. */
static void
check_keys(struct loader *ld)
{
	struct conf *c = ld->c;
	char err[MSG_MAX];
	int line = line_of(ld, SECT_SERVER, "key_secret_file");

	if (line > 0 && c->key_secret_file[0] != '\0' &&
	    conf_key_read_secret(c, err, sizeof(err)) == -1)
		report(ld, line, "key_secret_file: %s", err);
	for (int i = 0; i < c->nroutes; i++)
		if (conf_key_check_route(c, &c->routes[i], err,
		    sizeof(err)) == -1)
			report(ld, c->routes[i].line, "[route %s]: %s",
			    c->routes[i].prefix, err);
}

/* The ini_handler, for every key line. */
static int
on_key(void *user, const char *section, const char *name, const char *value)
{
	struct loader *ld = user;
	const struct key *k;
	char err[MSG_MAX];
	enum sect home;
	char *base;
	int first;

	(void)section;		/* ours is ld->section: inih cuts it short */
	switch (ld->sect) {
	case SECT_SKIP:
		return 1;
	case SECT_NONE:
		home = home_of(SECT_NONE, name);
		if (home != SECT_NONE)
			report(ld, ld->lineno, "key \"%s\" is outside any "
			    "section (it belongs in %s)", name,
			    sect_labels[home]);
		else
			report(ld, ld->lineno, "key \"%s\" is outside any "
			    "section", name);
		return 1;
	default:
		break;
	}

	if ((k = find_key(ld->sect, name)) == NULL) {
		home = home_of(ld->sect, name);
		if (home != SECT_NONE)
			report(ld, ld->lineno, "unknown key \"%s\" in [%s] (it "
			    "belongs in %s)", name, ld->section,
			    sect_labels[home]);
		else
			report(ld, ld->lineno, "unknown key \"%s\" in [%s]",
			    name, ld->section);
		return 1;
	}
	if ((first = ld->set_line[k - keys]) != 0) {
		report(ld, ld->lineno, "duplicate key \"%s\" (first set on "
		    "line %d)", name, first);
		return 1;
	}
	ld->set_line[k - keys] = ld->lineno;

	base = k->sect == SECT_ROUTE ? (char *)&ld->c->routes[ld->route] :
	    k->sect == SECT_POOL ? (char *)&ld->c->pools[ld->pool] :
	    (char *)ld->c;
	if (k->type == T_POOL_NAME)
		ld->c->routes[ld->route].upstream_line = ld->lineno;
	if (set_value(k, base, value, err, sizeof(err)) == -1) {
		report(ld, ld->lineno, "%s: %s", k->name, err);
		ld->refused[k - keys] = 1;
	}
	check_query_rules(ld, k);
	return 1;
}

static int
is_wildcard(const char *host)
{
	return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
	    strcmp(host, "*") == 0;
}

/* admin_listen must not be (or overlap) the public listen address. */
static void
check_listeners(struct loader *ld)
{
	const struct conf *c = ld->c;
	char pub[TEXT_MAX + CONF_HOST_MAX], adm[TEXT_MAX + CONF_HOST_MAX];
	int pline, aline;

	pline = line_of(ld, SECT_SERVER, "listen");
	aline = line_of(ld, SECT_SERVER, "admin_listen");
	if (pline == -1 || aline == -1 || c->admin_port != c->listen_port)
		return;
	if (strcasecmp(c->admin_host, c->listen_host) != 0 &&
	    !is_wildcard(c->admin_host) && !is_wildcard(c->listen_host))
		return;

	format_hostport(c->listen_host, c->listen_port, pub, sizeof(pub));
	format_hostport(c->admin_host, c->admin_port, adm, sizeof(adm));
	if (aline != 0 && pline != 0)
		report(ld, aline, "admin_listen: %s conflicts with listen %s "
		    "(line %d); the admin port must not be the public one",
		    adm, pub, pline);
	else if (aline != 0)
		report(ld, aline, "admin_listen: %s conflicts with listen %s "
		    "(the default); the admin port must not be the public one",
		    adm, pub);
	else
		report(ld, pline, "listen: %s conflicts with admin_listen %s "
		    "(the default); set admin_listen to another address",
		    pub, adm);
}

/* [redis]: what mode, address, master_name and db allow together. */
static void
check_redis(struct loader *ld)
{
	const struct conf *c = ld->c;
	int mline = line_of(ld, SECT_REDIS, "mode");
	int aline = line_of(ld, SECT_REDIS, "address");
	int nline = line_of(ld, SECT_REDIS, "master_name");
	int dline = line_of(ld, SECT_REDIS, "db");

	if (mline == -1 || aline == -1 || nline == -1)
		return;
	if (c->redis_mode == REDIS_SINGLE && c->redis_naddrs > 1)
		report(ld, aline, "address: mode = single takes one address "
		    "(set mode = cluster or sentinel for several)");
	if (c->redis_mode != REDIS_SINGLE && c->redis_unix[0] != '\0')
		report(ld, aline, "address: mode = %s takes host:port "
		    "addresses, not a unix socket",
		    c->redis_mode == REDIS_CLUSTER ? "cluster" : "sentinel");
	if (c->redis_mode != REDIS_SENTINEL && c->redis_master_name[0] != '\0')
		report(ld, nline, "master_name: only with mode = sentinel");
	if (c->redis_mode == REDIS_SENTINEL && c->redis_master_name[0] == '\0')
		report(ld, mline != 0 ? mline : aline, "mode = sentinel needs "
		    "master_name (the name the sentinels monitor)");
	if (c->redis_mode == REDIS_CLUSTER && c->redis_db != 0 && dline > 0)
		report(ld, dline, "db: Redis Cluster has only database 0");
}

/* One password of [redis], inline or in a file, and its user. */
struct secret_keys {
	const char	*user, *inline_key, *file_key;
	size_t		 user_off, pass_off, file_off;
	int		 sentinel;	/* only with mode = sentinel */
};

/* [redis] passwords: a file is read now (at start and at each reload);
 * a user needs a password; never the password and its file both. */
static void
check_secrets(struct loader *ld)
{
	static const struct secret_keys sk[] = {
		{ "username", "password", "password_file",
		  offsetof(struct conf, redis_username),
		  offsetof(struct conf, redis_password),
		  offsetof(struct conf, redis_password_file), 0 },
		{ "sentinel_username", "sentinel_password",
		  "sentinel_password_file",
		  offsetof(struct conf, redis_sentinel_username),
		  offsetof(struct conf, redis_sentinel_password),
		  offsetof(struct conf, redis_sentinel_password_file), 1 },
	};
	char *base = (char *)ld->c, err[MSG_MAX];

	for (size_t i = 0; i < ARRAY_LEN(sk); i++) {
		const char *user = base + sk[i].user_off;
		const char *pass = base + sk[i].pass_off;
		const char *file = base + sk[i].file_off;
		const char *named = *user != '\0' ? sk[i].user : *pass != '\0' ?
		    sk[i].inline_key : *file != '\0' ? sk[i].file_key : NULL;
		int uline = line_of(ld, SECT_REDIS, sk[i].user);
		int pline = line_of(ld, SECT_REDIS, sk[i].inline_key);
		int fline = line_of(ld, SECT_REDIS, sk[i].file_key);

		if (sk[i].sentinel && named != NULL &&
		    ld->c->redis_mode != REDIS_SENTINEL)
			report(ld, line_of(ld, SECT_REDIS, named),
			    "%s: only with mode = sentinel", named);
		if (*pass != '\0' && *file != '\0')
			report(ld, fline, "%s: %s is set too (line %d); keep "
			    "one", sk[i].file_key, sk[i].inline_key, pline);
		else if (*file != '\0' && secret_read(file, base +
		    sk[i].pass_off, CONF_SECRET_MAX, err, sizeof(err)) == -1)
			report(ld, fline, "%s: %s", sk[i].file_key, err);
		else if (*user != '\0' && *pass == '\0' && *file == '\0')
			report(ld, uline, "%s: needs %s or %s", sk[i].user,
			    sk[i].inline_key, sk[i].file_key);
	}
}

void
conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].sect != SECT_ROUTE && keys[i].sect != SECT_POOL)
			set_default(&keys[i], (char *)c);
	pool_defaults(&c->pools[0]);
	c->npools = 1;
	snprintf(c->upstream_url, sizeof(c->upstream_url), "%s",
	    c->pools[0].servers[0].url);
}

int
conf_load(struct conf *c, const char *path, FILE *errs)
{
	struct loader ld;
	int rc;

	conf_defaults(c);
	memset(&ld, 0, sizeof(ld));
	ld.c = c;
	ld.path = path;
	ld.errs = errs;
	ld.sect = SECT_NONE;

	if (strlen(path) >= sizeof(c->file)) {
		report(&ld, 0, "the path is longer than %zu characters",
		    sizeof(c->file) - 1);
		return ld.nerr;
	}
	memcpy(c->file, path, strlen(path) + 1);
	if ((ld.fp = fopen(path, "r")) == NULL) {
		report(&ld, 0, "cannot open: %s", strerror(errno));
		return ld.nerr;
	}

	rc = ini_parse_stream(read_line, &ld, on_key, &ld);
	if (ld.read_errno != 0) {
		report(&ld, 0, "cannot read: %s", strerror(ld.read_errno));
		goto done;
	}
	if (rc < 0)
		report(&ld, 0, "cannot parse: out of memory");
	else if (rc > 0)
		/* inih rejected a line that read_line() let through. */
		report(&ld, rc, "syntax error");
	check_listeners(&ld);
	check_redis(&ld);
	ld.nerr += conf_pool_check(c, path, errs);
	check_secrets(&ld);
	check_keys(&ld);
	if (line_of(&ld, SECT_SERVER, "admin_token_file") != -1)
		ld.nerr += conf_tokens_load(c, path, line_of(&ld, SECT_SERVER,
		    "admin_token_file"), errs);
	upstream_authority(c);
	forwarded_host(c);

done:
	fclose(ld.fp);
	return ld.nerr;
}

/* A route keyed on the client's Host with no [server] hosts takes any
 * name a client sends: each makes keys of its own. */
int
conf_warning(const struct conf *c, int i, char *out, size_t outlen)
{
	for (int r = 0; r < c->nroutes; r++) {
		if (c->hosts[0] != '\0' || !c->routes[r].key_host || i-- > 0)
			continue;
		snprintf(out, outlen, "%s:%d: warning: [route %s] key_host is "
		    "on and [server] hosts is empty: every Host a client sends "
		    "gets keys of its own (list the names served in hosts)",
		    c->file, c->routes[r].line, c->routes[r].prefix);
		return 0;
	}
	return -1;
}

const struct conf_route *
conf_route_match(const struct conf *c, const char *path)
{
	const struct conf_route *best = NULL;
	size_t bestlen = 0, len;

	for (int i = 0; i < c->nroutes; i++) {
		len = strlen(c->routes[i].prefix);
		if (len > bestlen &&
		    strncmp(path, c->routes[i].prefix, len) == 0) {
			best = &c->routes[i];
			bestlen = len;
		}
	}
	return best;
}

static void
format_range(const struct key *k, char *out, size_t outlen)
{
	char lo[TEXT_MAX], hi[TEXT_MAX];

	switch (k->type) {
	case T_HOSTPORT:
		snprintf(out, outlen, "host:port");
		break;
	case T_ADDRESS:
		snprintf(out, outlen, "host:port | unix:/path");
		break;
	case T_ADDRESSES:
		snprintf(out, outlen, "host:port,... | unix:/path");
		break;
	case T_MODE:
		snprintf(out, outlen, "single|cluster|sentinel");
		break;
	case T_LOGLEVEL:
		snprintf(out, outlen, "error|warn|info|debug");
		break;
	case T_LOGFORMAT:
		snprintf(out, outlen, "text|json");
		break;
	case T_BOOL:
		snprintf(out, outlen, "on|off");
		break;
	case T_SERVERS:
		snprintf(out, outlen, "http(s)://host[:port][/path],...");
		break;
	case T_BALANCE:
		snprintf(out, outlen, "least_outstanding|round-robin");
		break;
	case T_AUTHZ:
		snprintf(out, outlen, "off|on|per-credential|anonymous");
		break;
	case T_QUERY_NAMES:
		snprintf(out, outlen, "name,prefix*,...");
		break;
	case T_COOKIE:
		snprintf(out, outlen, "cookie name");
		break;
	case T_HEADER:
		snprintf(out, outlen, "Field-Name");
		break;
		break;
	case T_AUTHORITY:
		snprintf(out, outlen, "host[:port]");
		break;
	case T_STATUS_TTLS:
		snprintf(out, outlen, "status:duration,...");
		break;
	case T_CIDRS:
		snprintf(out, outlen, "address[/bits],...");
		break;
	case T_FIELDS:
	case T_HOSTS:
		snprintf(out, outlen, "%s,... (%" PRId64 " chars)",
		    k->type == T_FIELDS ? "Field-Name" : "[*.]host[:port|:*]",
		    k->max);
		break;
	case T_STRING:
	case T_PREFIX:
	case T_POOL_NAME:
		snprintf(out, outlen, "%" PRId64 "..%" PRId64 " chars%s",
		    k->min, k->max, k->type == T_PREFIX ? ", no {} or spaces" :
		    "");
		break;
	case T_SIZE:
	case T_DURATION:
	case T_INT:
	case T_FLOAT:
		format_number(k, k->min, lo, sizeof(lo));
		format_number(k, k->max, hi, sizeof(hi));
		snprintf(out, outlen, "%s..%s", lo, hi);
		break;
	}
}

/* s for man(7): backslashes and hyphens escaped. */
static void
put_roff(FILE *out, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

/* Does k need a restart to change (conf_restart.c)? */
static int
needs_restart(const struct key *k)
{
	static const char *const names[] = {
		[SECT_SERVER] = "server", [SECT_REDIS] = "redis",
		[SECT_UPSTREAM] = "upstream", [SECT_POOL] = "upstream",
		[SECT_ROUTE] = "route",
	};

	return conf_needs_restart(names[k->sect], k->name);
}

static void
dump_man(FILE *out, const struct key *k, const char *range)
{
	if (k == keys || strcmp(sect_labels[k[-1].sect],
	    sect_labels[k->sect]) != 0)
		fprintf(out, ".SS \"%s\"\n", sect_labels[k->sect]);
	fprintf(out, ".TP\n.B %s\n", k->name);
	fputs("default \\fB", out);
	put_roff(out, k->def[0] != '\0' ? k->def : "(empty)");
	fputs("\\fR, range \\fI", out);
	put_roff(out, range);
	fputs("\\fR\n.br\n", out);
	put_roff(out, k->help);
	fputs(needs_restart(k) ? "\n.br\nA change needs a restart: a reload "
	    "keeps the running value.\n" : "\n", out);
}

void
conf_dump_keys(FILE *out, enum conf_dump how)
{
	char range[RANGE_MAX];

	if (how == CONF_DUMP_TEXT)
		fprintf(out, "%-15s %-23s %-22s %-29s %s\n", "SECTION", "KEY",
		    "DEFAULT", "RANGE", "MEANING");
	for (size_t i = 0; i < NKEYS; i++) {
		format_range(&keys[i], range, sizeof(range));
		if (how == CONF_DUMP_MAN) {
			dump_man(out, &keys[i], range);
			continue;
		}
		fprintf(out, "%-15s %-23s %-22s %-29s %s%s\n",
		    sect_labels[keys[i].sect], keys[i].name,
		    keys[i].def[0] != '\0' ? keys[i].def : "(empty)", range,
		    keys[i].help, needs_restart(&keys[i]) ? " (restart)" : "");
	}
}

int64_t
conf_status_ttl(const struct conf_route *r, int status)
{
	for (int i = 0; i < r->nstatus_ttls; i++)
		if (r->status_ttls[i].status == status)
			return r->status_ttls[i].ttl_ms;
	return status == 404 && r->ttl_404_ms > 0 ? r->ttl_404_ms : -1;
}

int
conf_route_index(const struct conf *c, const char *prefix)
{
	for (int i = 0; i < c->nroutes; i++)
		if (strcmp(c->routes[i].prefix, prefix) == 0)
			return i;
	return -1;
}
