/* SPDX-License-Identifier: MIT */
/*
 * conf/ (the loader conf.c, the key table, the value types and the host
 * checks): defaults, every kind of error with its line, range bounds,
 * the line handling libinih gets wrong on its own, and route matching.
 * Runs from the repository root (it reads conf/corral.conf and
 * tests/fixtures/).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "tests/unit/unit.h"

#define TMP_TEMPLATE	"/tmp/corral-test-conf-XXXXXX"
#define TEXT_MAX	16384
#define MSG_MAX		512
#define LINES_MAX	64
#define INIH_LINE_MAX	198	/* the longest line libinih's buffer holds */

static struct conf cf;
static char *errs;		/* what the last load wrote to errs */
static int nerr;		/* what it returned */
static char tmp_path[sizeof(TMP_TEMPLATE)];

/* Loads path into cf, keeping its errors in errs. */
static int
load_path(const char *path)
{
	size_t len;
	FILE *mem;

	free(errs);
	errs = NULL;
	if ((mem = open_memstream(&errs, &len)) == NULL) {
		perror("open_memstream");
		exit(2);
	}
	nerr = conf_load(&cf, path, mem);
	fclose(mem);
	return nerr;
}

/* Writes text to a temporary file and loads it. */
static int
load(const char *text)
{
	size_t len = strlen(text);
	int fd;

	memcpy(tmp_path, TMP_TEMPLATE, sizeof(tmp_path));
	if ((fd = mkstemp(tmp_path)) == -1 ||
	    write(fd, text, len) != (ssize_t)len || close(fd) == -1) {
		perror("temporary config");
		exit(2);
	}
	load_path(tmp_path);
	unlink(tmp_path);
	return nerr;
}

/* Did the last load report a message starting with msg at line? End msg
 * with "\n" to match the whole message. */
static int
has_error(int line, const char *msg)
{
	char want[MSG_MAX + 32];

	snprintf(want, sizeof(want), ":%d: %s", line, msg);
	return errs != NULL && strstr(errs, want) != NULL;
}

/* The line numbers of the errors of the last load, in order. */
static int
error_lines(int out[LINES_MAX])
{
	const char *p = errs;
	int n = 0;

	while (p != NULL && *p != '\0' && n < LINES_MAX) {
		const char *colon = strchr(p, ':');
		if (colon == NULL)
			break;
		out[n++] = atoi(colon + 1);
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return n;
}

static int
cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; s != NULL && *s != '\0'; s++)
		if (*s == '\n')
			n++;
	return n;
}

static void
t_example_conf_loads_with_its_values(void)
{
	const struct conf_route *r;

	CHECK(load_path("conf/corral.conf") == 0);
	CHECK(errs != NULL && errs[0] == '\0');
	CHECK_STR(cf.file, "conf/corral.conf");
	CHECK_STR(cf.listen_host, "127.0.0.1");
	CHECK(cf.listen_port == 8080);
	CHECK_STR(cf.admin_host, "127.0.0.1");
	CHECK(cf.admin_port == 8081);
	CHECK(cf.log_level == LOGL_INFO);
	CHECK(cf.max_header_bytes == 16 * 1024);
	CHECK(cf.max_body_bytes == 10 * 1024 * 1024);
	CHECK(cf.client_timeout_ms == 30000);
	CHECK_STR(cf.redis_host, "127.0.0.1");
	CHECK(cf.redis_port == 6379);
	CHECK_STR(cf.redis_unix, "");
	CHECK_STR(cf.redis_password, "");
	CHECK(cf.redis_db == 0);
	CHECK_STR(cf.redis_prefix, "corral:");
	CHECK(cf.redis_timeout_ms == 1000);
	CHECK_STR(cf.upstream_url, "http://127.0.0.1:9000");
	CHECK(cf.pools[0].connect_timeout_ms == 1000);
	CHECK(cf.pools[0].timeout_ms == 10000);
	CHECK(cf.max_entry_bytes == 8 * 1024 * 1024);
	CHECK(cf.max_upstream_headers == 100);
	CHECK(cf.pools[0].max_requests == 0);
	CHECK(cf.pools[0].queue_timeout_ms == 5000);
	CHECK(cf.pools[0].slot_lease_ms == 5000);
	CHECK(cf.pools[0].local_share == 0);

	CHECK(cf.nroutes == 2);
	r = &cf.routes[0];
	CHECK_STR(r->prefix, "/");
	CHECK(r->ttl_ms == 10000);
	CHECK(r->swr_ms == 60000);
	CHECK(r->lock_ttl_ms == 5000);
	CHECK(r->lock_wait_ms == 0);
	CHECK(r->lock_poll_ms == 500);
	CHECK(r->cache_authorized == 0);
	r = &cf.routes[1];
	CHECK_STR(r->prefix, "/reports/");
	CHECK(r->ttl_ms == 5 * 60000);
	CHECK(r->swr_ms == 3600000);
	CHECK(r->lock_ttl_ms == 5000);
	CHECK(r->lock_wait_ms == 0);
	CHECK(r->lock_poll_ms == 500);
	CHECK(r->cache_authorized == 0);
	CHECK(conf_route_match(&cf, "/reports/q3.pdf") == &cf.routes[1]);
	CHECK(conf_route_match(&cf, "/index.html") == &cf.routes[0]);
}

static void
t_defaults_are_the_documented_ones(void)
{
	conf_defaults(&cf);
	CHECK_STR(cf.file, "");
	CHECK_STR(cf.listen_host, "127.0.0.1");
	CHECK(cf.listen_port == 8080);
	CHECK_STR(cf.admin_host, "127.0.0.1");
	CHECK(cf.admin_port == 8081);
	CHECK(cf.log_level == LOGL_INFO);
	CHECK(cf.max_header_bytes == 16384);
	CHECK(cf.max_body_bytes == 10485760);
	CHECK(cf.client_timeout_ms == 30000);
	CHECK_STR(cf.redis_host, "127.0.0.1");
	CHECK(cf.redis_port == 6379);
	CHECK_STR(cf.redis_unix, "");
	CHECK_STR(cf.redis_password, "");
	CHECK(cf.redis_db == 0);
	CHECK_STR(cf.redis_prefix, "corral:");
	CHECK(cf.redis_timeout_ms == 1000);
	CHECK_STR(cf.upstream_url, "http://127.0.0.1:9000");
	CHECK(cf.pools[0].connect_timeout_ms == 1000);
	CHECK(cf.pools[0].timeout_ms == 10000);
	CHECK(cf.max_entry_bytes == 8388608);
	CHECK(cf.max_upstream_headers == 100);
	CHECK(cf.pools[0].max_requests == 0);
	CHECK(cf.pools[0].queue_timeout_ms == 5000);
	CHECK(cf.pools[0].slot_lease_ms == 5000);
	CHECK(cf.pools[0].local_share == 0);
	CHECK(cf.nroutes == 0);
}

static void
t_empty_file_loads_as_defaults_without_routes(void)
{
	CHECK(load("") == 0);
	CHECK(cf.listen_port == 8080);
	CHECK(cf.nroutes == 0);
	CHECK(conf_route_match(&cf, "/") == NULL);
	CHECK(load("; only a comment\n\n# and another\n") == 0);
	CHECK(cf.nroutes == 0);
}

static void
t_route_keys_take_builtin_defaults(void)
{
	const struct conf_route *r;

	CHECK(load("[route /]\nttl = 1h\nlock_poll = 1s\n"
	    "cache_authorized = on\n[route /a/]\n") == 0);
	CHECK(cf.nroutes == 2);
	r = &cf.routes[1];
	CHECK_STR(r->prefix, "/a/");
	CHECK(r->line == 5);
	CHECK(r->ttl_ms == 10000);
	CHECK(r->swr_ms == 60000);
	CHECK(r->lock_ttl_ms == 5000);
	CHECK(r->lock_wait_ms == 0);
	CHECK(r->lock_poll_ms == 500);
	CHECK(r->cache_authorized == 0);
	CHECK(cf.routes[0].line == 1);
	CHECK(cf.routes[0].ttl_ms == 3600000);
}

static void
t_every_key_is_stored_in_its_field(void)
{
	const struct conf_route *r;

	CHECK(load(
	    "[server]\n"
	    "listen = 0.0.0.0:80\n"
	    "admin_listen = [::1]:81\n"
	    "log_level = debug\n"
	    "max_header_bytes = 32k\n"
	    "max_body_bytes = 2m\n"
	    "client_timeout = 5m\n"
	    "[redis]\n"
	    "address = redis.internal:6380\n"
	    "password = s3cret\n"
	    "db = 3\n"
	    "prefix = app:\n"
	    "timeout = 1s\n"
	    "[upstream]\n"
	    "url = https://origin.example:8443/base/\n"
	    "connect_timeout = 2s\n"
	    "timeout = 20s\n"
	    "max_entry_bytes = 1m\n"
	    "max_upstream_headers = 64\n"
	    "[route /api/]\n"
	    "ttl = 1m\n"
	    "stale_while_revalidate = 5m\n"
	    "lock_ttl = 2s\n"
	    "lock_wait = 1s\n"
	    "lock_poll = 50ms\n"
	    "cache_authorized = yes\n") == 0);
	CHECK_STR(cf.listen_host, "0.0.0.0");
	CHECK(cf.listen_port == 80);
	CHECK_STR(cf.admin_host, "::1");
	CHECK(cf.admin_port == 81);
	CHECK(cf.log_level == LOGL_DEBUG);
	CHECK(cf.max_header_bytes == 32768);
	CHECK(cf.max_body_bytes == 2097152);
	CHECK(cf.client_timeout_ms == 300000);
	CHECK_STR(cf.redis_host, "redis.internal");
	CHECK(cf.redis_port == 6380);
	CHECK_STR(cf.redis_unix, "");
	CHECK_STR(cf.redis_password, "s3cret");
	CHECK(cf.redis_db == 3);
	CHECK_STR(cf.redis_prefix, "app:");
	CHECK(cf.redis_timeout_ms == 1000);
	CHECK_STR(cf.upstream_url, "https://origin.example:8443/base");
	CHECK(cf.pools[0].connect_timeout_ms == 2000);
	CHECK(cf.pools[0].timeout_ms == 20000);
	CHECK(cf.max_entry_bytes == 1048576);
	CHECK(cf.max_upstream_headers == 64);
	CHECK(cf.nroutes == 1);
	r = &cf.routes[0];
	CHECK_STR(r->prefix, "/api/");
	CHECK(r->line == 20);
	CHECK(r->ttl_ms == 60000);
	CHECK(r->swr_ms == 300000);
	CHECK(r->lock_ttl_ms == 2000);
	CHECK(r->lock_wait_ms == 1000);
	CHECK(r->lock_poll_ms == 50);
	CHECK(r->cache_authorized == 1);
}

static void
t_indented_keys_are_keys_not_continuations(void)
{
	/* Plain libinih would append line 3 to listen's value. */
	CHECK(load("[server]\n"
	    "listen = 127.0.0.1:7000\n"
	    "    admin_listen = 127.0.0.1:7001\n"
	    "\tlog_level = warn\n"
	    "  [route /]\n"
	    "\t\tttl = 2s\n") == 0);
	CHECK(cf.listen_port == 7000);
	CHECK(cf.admin_port == 7001);
	CHECK(cf.log_level == LOGL_WARN);
	CHECK(cf.nroutes == 1);
	CHECK(cf.routes[0].ttl_ms == 2000);
}

static void
t_comments_inline_and_full_line_are_ignored(void)
{
	CHECK(load("; full-line comment\n"
	    "# another one\n"
	    "[redis]   ; after a header\n"
	    "timeout = 5ms ; after a value\n"
	    "prefix = a;b:\n"
	    "password =      ; empty, then a comment\n"
	    "  ; indented comment\n") == 0);
	CHECK(cf.redis_timeout_ms == 5);
	CHECK_STR(cf.redis_prefix, "a;b:");	/* no space before ';' */
	CHECK_STR(cf.redis_password, "");

	CHECK(load("[redis]\npassword = a=b:c#d;e\n") == 0);
	CHECK_STR(cf.redis_password, "a=b:c#d;e");
}

/* A '#' after whitespace starts a comment as " ;" does, in every key: a
 * string, a number, a duration, a path, a list. */
static void
t_a_hash_after_whitespace_starts_a_comment_in_every_key(void)
{
	CHECK(load("[server]\n"
	    "access_log = /var/log/corral/access.log # one line a request\n"
	    "max_connections = 100\t# per worker\n"
	    "hosts = a.example, b.example   # both\n"
	    "[redis]\n"
	    "password = s3cret # from the vault\n"
	    "timeout = 2s #\n"
	    "[upstream]\n"
	    "health_path = /health # the probe\n"
	    "[route /]\n"
	    "ttl = 1h # an hour\n") == 0);
	CHECK_STR(cf.access_log, "/var/log/corral/access.log");
	CHECK(cf.max_connections == 100);
	CHECK_STR(cf.hosts, "a.example, b.example");
	CHECK_STR(cf.redis_password, "s3cret");
	CHECK(cf.redis_timeout_ms == 2000);
	CHECK_STR(cf.pools[0].health_path, "/health");
	CHECK(cf.routes[0].ttl_ms == 3600 * 1000);

	/* Not after whitespace, a '#' is the value's: a password may start
	 * with one. After the '=' and a space, it is a comment, as ';' is. */
	CHECK(load("[redis]\npassword =#s3cret#1\n") == 0);
	CHECK_STR(cf.redis_password, "#s3cret#1");
	CHECK(load("[redis]\npassword = # none\n") == 0);
	CHECK_STR(cf.redis_password, "");
}

static void
t_colon_crlf_bom_and_missing_last_newline_are_accepted(void)
{
	CHECK(load("\xEF\xBB\xBF[server]\r\n"
	    "listen: 127.0.0.1:7100\r\n"
	    "log_level = error \r\n") == 0);
	CHECK(cf.listen_port == 7100);
	CHECK(cf.log_level == LOGL_ERROR);

	CHECK(load("[server]\nlisten = 127.0.0.1:7101") == 0);	/* no '\n' */
	CHECK(cf.listen_port == 7101);
}

static void
t_unix_address_fills_path_and_clears_host(void)
{
	CHECK(load("[redis]\naddress = unix:/run/redis/redis.sock\n") == 0);
	CHECK_STR(cf.redis_unix, "/run/redis/redis.sock");
	CHECK_STR(cf.redis_host, "");
	CHECK(cf.redis_port == 0);

	CHECK(load("[redis]\naddress = unix:redis.sock\n") == 1);
	CHECK(has_error(2, "address: \"unix:redis.sock\" needs an absolute "
	    "socket path, such as unix:/run/redis/redis.sock"));
	CHECK(load("[redis]\naddress = redis\n") == 1);
	CHECK(has_error(2, "address: \"redis\" is not host:port or "
	    "unix:/path"));
}

static void
t_unix_socket_path_longer_than_sun_path_is_rejected(void)
{
	char text[TEXT_MAX], path[200];

	memset(path, 'p', sizeof(path));
	path[0] = '/';
	path[107] = '\0';	/* 107 characters: fits sockaddr_un */
	snprintf(text, sizeof(text), "[redis]\naddress = unix:%s\n", path);
	CHECK(load(text) == 0);
	CHECK_STR(cf.redis_unix, path);
	path[107] = 'p';
	path[108] = '\0';
	snprintf(text, sizeof(text), "[redis]\naddress = unix:%s\n", path);
	CHECK(load(text) == 1);
	CHECK(has_error(2, "address: the socket path is longer than 107 "
	    "characters"));
}

static void
t_upstream_url_is_checked_and_loses_trailing_slash(void)
{
	CHECK(load("[upstream]\nurl = http://[::1]:9000//\n") == 0);
	CHECK_STR(cf.upstream_url, "http://[::1]:9000");
	CHECK(load("[upstream]\nurl = HTTPS://origin\n") == 0);
	CHECK_STR(cf.upstream_url, "HTTPS://origin");

	CHECK(load("[upstream]\nurl = ftp://origin\n") == 1);
	CHECK(has_error(2, "url: \"ftp://origin\" must start with http:// or "
	    "https://"));
	CHECK(load("[upstream]\nurl = http:///path\n") == 1);
	CHECK(has_error(2, "url: \"http:///path\" has no host"));
	CHECK(load("[upstream]\nurl = http://origin:99999\n") == 1);
	CHECK(has_error(2, "url: \"http://origin:99999\" has a bad host or "
	    "port"));
	CHECK(load("[upstream]\nurl = http://origin/?a=1\n") == 1);
	CHECK(has_error(2, "url: \"http://origin/?a=1\" must not contain "
	    "spaces, control characters, a query or a fragment"));
}

static void
t_redis_prefix_rejects_hash_tags_and_spaces(void)
{
	CHECK(load("[redis]\nprefix = {corral}:\n") == 1);
	CHECK(has_error(2, "prefix: \"{corral}:\" must not contain '{', '}', "
	    "spaces or control characters"));
	CHECK(load("[redis]\nprefix = my app\n") == 1);
	CHECK(has_error(2, "prefix: \"my app\" must not contain"));
	CHECK(load("[redis]\nprefix =\n") == 1);
	CHECK(has_error(2, "prefix: must be 1 to 63 characters long"));
}

/* url lists servers with weights; [upstream NAME] pools, chosen by a
 * route's upstream. */
static void
t_pools_and_their_servers(void)
{
	const struct conf_pool *p;

	CHECK(load("[upstream]\nurl = http://a:81 weight=3, http://b:82/x/ ,"
	    "https://c\nbalance = round-robin\nmax_fails = 5\n"
	    "[upstream reports]\nurl = http://r:90\ntimeout = 60s\n"
	    "health_path = /health\n[route /reports/]\nupstream = reports\n"
	    "[route /]\n") == 0);
	CHECK(cf.npools == 2);
	p = &cf.pools[0];
	CHECK(p->nservers == 3);
	CHECK_STR(p->servers[0].url, "http://a:81");
	CHECK(p->servers[0].weight == 3);
	CHECK_STR(p->servers[1].url, "http://b:82/x");
	CHECK(p->servers[1].weight == 1);
	CHECK_STR(p->servers[2].url, "https://c");
	CHECK(p->balance == BALANCE_ROUND_ROBIN && p->max_fails == 5);
	CHECK_STR(cf.upstream_url, "http://a:81");
	CHECK_STR(cf.upstream_authority, "a:81");
	p = conf_route_pool(&cf, conf_route_match(&cf, "/reports/1"));
	CHECK_STR(p->name, "reports");
	CHECK(p->nservers == 1 && p->timeout_ms == 60000);
	CHECK(p->max_fails == 3 && p->balance == BALANCE_LEAST);
	CHECK_STR(p->health_path, "/health");
	CHECK(conf_route_pool(&cf, conf_route_match(&cf, "/a")) ==
	    &cf.pools[0]);
	CHECK(cf.pools[0].timeout_ms == 10000);
}

/* Every pool error in one run, each at its line. */
static void
t_pool_errors_name_their_lines(void)
{
	CHECK(load("[upstream]\nurl = http://a weight=0\n"
	    "[upstream r]\ntimeout = 5s\nstream_window = 1m\n"
	    "[upstream r]\n[upstream bad name!]\n[route /x/]\n"
	    "upstream = nowhere\n") == 6);
	CHECK(has_error(2, "url: \"weight=0\": a weight is 1 to 100"));
	CHECK(has_error(3, "[upstream r] needs url (its servers)"));
	CHECK(has_error(5, "unknown key \"stream_window\" in [upstream r] "
	    "(it belongs in [upstream])"));
	CHECK(has_error(6, "duplicate pool [upstream r] (first on line 3)"));
	CHECK(has_error(7, "pool name \"bad name!\" may have only letters"));
	CHECK(has_error(9, "upstream: no pool [upstream nowhere] in the file"));
	CHECK(load("[upstream]\nurl = http://a, http://A\n") == 1);
	CHECK(has_error(2, "url: http://A is listed twice"));
	CHECK(load("[upstream]\nurl = http://a,\nbalance = random\n"
	    "health_path = health\n") == 3);
	CHECK(has_error(2, "url: an empty server in the list"));
	CHECK(has_error(3, "balance: \"random\" is not a balance"));
	CHECK(has_error(1, "[upstream]: health_path \"health\" must start "
	    "with '/'"));
	CHECK(load("[upstream]\nurl = ftp://a\n") == 1);
	CHECK(has_error(2, "url: \"ftp://a\" must start with http://"));
	/* /metrics calls [upstream]'s pool "default": one name, one pool. */
	CHECK(load("[upstream default]\nurl = http://b\n") == 1);
	CHECK(has_error(1, "pool name \"default\" is what /metrics calls the "
	    "[upstream] section's pool"));
}

/* [changes NAME]: its keys, its per-table rules, the slot's default. */
static void
t_changes_sections_and_their_rules(void)
{
	const struct conf_changes *cc;

	CHECK(load("[changes orders]\npostgres = host=db dbname=app "
	    "user=feed\npublication = corral\ntags.orders = orders:{id} "
	    "customers:{customer_id} orders\npurge.orders = hard\n"
	    "tags.sales.invoices = invoices:{id}\npurge = hard\n"
	    "purge.sales.invoices = soft\nbroad_tags = orders customers\n"
	    "max_lag = 64m\nmax_lag_time = 30s\nlease = 3s\n"
	    "[changes tags]\nmode = notify\npostgres = "
	    "postgresql://feed@db/app\nchannel = corral_tags\n"
	    "[route /]\npurge_header = Corral-Purge\n") == 0);
	CHECK(cf.nchanges == 2);
	cc = conf_changes_find(&cf, "orders");
	CHECK(cc != NULL && cc->mode == CHANGES_MODE_REPLICATION);
	CHECK_STR(cc->slot, "corral_orders");
	CHECK_STR(cc->publication, "corral");
	CHECK(cc->hard == 1 && cc->nrules == 2 && cc->line == 1);
	CHECK_STR(cc->rules[0].table, "orders");
	CHECK(cc->rules[0].hard == 1 && cc->rules[0].line == 4);
	CHECK_STR(cc->rules[1].table, "sales.invoices");
	CHECK_STR(cc->rules[1].tags, "invoices:{id}");
	CHECK(cc->rules[1].hard == 0);
	CHECK(cc->max_lag == 64 * 1024 * 1024 && cc->max_lag_time_ms == 30000);
	CHECK(cc->lease_ms == 3000 && cc->status_interval_ms == 10000);
	cc = conf_changes_find(&cf, "tags");
	CHECK(cc != NULL && cc->mode == CHANGES_MODE_NOTIFY && cc->hard == 0);
	CHECK_STR(cc->channel, "corral_tags");
	CHECK(cc->lease_ms == 10000 && cc->max_lag == 1024LL * 1024 * 1024);
	CHECK_STR(cf.routes[0].purge_header, "Corral-Purge");
}

/* Every [changes] error in one run, each at its line. */
static void
t_changes_errors_name_their_lines(void)
{
	CHECK(load("[changes Orders]\npostgres = x\n"
	    "[changes a]\npublication = p\ntags.bad-name = x\n"
	    "tags.t = a\ntags.t = b\npurge.u = medium\npurge.v = hard\n"
	    "[changes a]\n[changes b]\npostgres = host=x password=y\n"
	    "mode = notify\nslot = s\n[changes c]\npostgres = "
	    "postgres://u:p@h/d\npublication = p\n") == 11);
	CHECK(has_error(1, "[changes] needs a name of 1 to 31 of a-z, 0-9 "
	    "and _, not \"Orders\""));
	CHECK(has_error(3, "[changes a] needs postgres (a libpq connection "
	    "string"));
	CHECK(has_error(5, "tags.bad-name: \"bad-name\" is not \"table\" "
	    "or \"schema.table\""));
	CHECK(has_error(7, "tags.t: duplicate key \"tags.t\" (first set on "
	    "line 6)"));
	CHECK(has_error(8, "purge.u: \"medium\" is not a purge (use soft or "
	    "hard)"));
	CHECK(has_error(9, "[changes a]: purge.v needs tags.v"));
	CHECK(has_error(10, "duplicate section [changes a] (first on line "
	    "3)"));
	CHECK(has_error(11, "[changes b]: postgres holds a password: put it in "
	    "password_file"));
	CHECK(has_error(11, "[changes b]: mode = notify needs channel"));
	CHECK(has_error(11, "[changes b]: slot only with mode = replication"));
	CHECK(has_error(15, "[changes c]: postgres holds a password"));
	CHECK(load("[changes c]\npostgres = dbname=x\npublication = p\n"
	    "slot = Big\n") == 1);
	CHECK(has_error(1, "[changes c]: slot \"Big\" must be a-z, 0-9 and "
	    "_"));
	CHECK(load("[changes c]\npostgres = dbname=x\npublication = p\n"
	    "password_file = /nonexistent/pw\n") == 1);
	CHECK(has_error(1, "[changes c]: password_file: "));
}

static void
t_unknown_section_reported_and_its_keys_skipped(void)
{
	CHECK(load("[serve]\nfo = 1\nlisten = nonsense\n[server]\n"
	    "log_level = debug\n") == 1);
	CHECK(has_error(1, "unknown section [serve] (expected [server], "
	    "[redis], [upstream], [upstream NAME], [route PREFIX] or "
	    "[changes NAME])"));
	CHECK(cf.log_level == LOGL_DEBUG);
	CHECK(load("[server extra]\n") == 1);
	CHECK(has_error(1, "unknown section [server extra]"));
}

static void
t_unknown_key_reported_with_its_section(void)
{
	CHECK(load("[server]\nlisten = 127.0.0.1:8080\nfo = 1\n") == 1);
	CHECK(has_error(3, "unknown key \"fo\" in [server]\n"));
	CHECK(load("[route /api/]\nlisten = 127.0.0.1:1\n") == 1);
	CHECK(has_error(2, "unknown key \"listen\" in [route /api/] (it "
	    "belongs in [server])"));
	/* timeout is in [redis] and [upstream]: no single hint. */
	CHECK(load("[server]\ntimeout = 1s\n") == 1);
	CHECK(has_error(2, "unknown key \"timeout\" in [server]\n"));
	CHECK(load("[server]\nTTL = 1s\n") == 1);
	CHECK(has_error(2, "unknown key \"TTL\" in [server]\n"));
}

static void
t_key_outside_any_section_reported(void)
{
	CHECK(load("ttl = 5s\n[server]\n") == 1);
	CHECK(has_error(1, "key \"ttl\" is outside any section (it belongs "
	    "in [route PREFIX])"));
}

static void
t_duplicate_key_reports_first_line(void)
{
	CHECK(load("[route /]\n\n\n\n\n\nttl = 5s\nlock_ttl = 1s\nttl = 6s\n")
	    == 1);
	CHECK(has_error(9, "duplicate key \"ttl\" (first set on line 7)"));
	CHECK(cf.routes[0].ttl_ms == 5000);

	/* A second [server] section continues the first. */
	CHECK(load("[server]\nlog_level = warn\n[server]\nlog_level = info\n")
	    == 1);
	CHECK(has_error(4, "duplicate key \"log_level\" (first set on line "
	    "2)"));

	/* The same key in two routes is no duplicate. */
	CHECK(load("[route /]\nttl = 1s\n[route /a/]\nttl = 2s\n") == 0);
}

static void
t_bad_values_reported_per_type(void)
{
	CHECK(load("[route /]\nttl = 10x\n") == 1);
	CHECK(has_error(2, "ttl: \"10x\" is not a duration (use ms, s, m, h)"));
	CHECK(load("[server]\nmax_body_bytes = 10q\n") == 1);
	CHECK(has_error(2, "max_body_bytes: \"10q\" is not a size (use a "
	    "number of bytes, or k, m, g)"));
	CHECK(load("[redis]\ndb = one\n") == 1);
	CHECK(has_error(2, "db: \"one\" is not a whole number"));
	CHECK(load("[route /]\ncache_authorized = maybe\n") == 1);
	CHECK(has_error(2, "cache_authorized: \"maybe\" is not off, on, "
	    "per-credential, anonymous or claims"));
	CHECK(load("[route /]\ncache_authorized = Anonymous\n") == 0);
	CHECK(cf.routes[0].cache_authorized == CONF_AUTHZ_ANONYMOUS);
	CHECK(load("[server]\nlog_level = verbose\n") == 1);
	CHECK(has_error(2, "log_level: \"verbose\" is not a log level (use "
	    "error, warn, info or debug)"));
	CHECK(load("[server]\nlog_format = JSON\n") == 1);
	CHECK(has_error(2, "log_format: \"JSON\" is not a log format (use "
	    "text or json)"));
	CHECK(load("[server]\nlog_format = json\n") == 0);
	CHECK(cf.log_format == LOG_FORMAT_JSON);
	CHECK(load("[server]\n") == 0);
	CHECK(cf.log_format == LOG_FORMAT_TEXT);
	CHECK(load("[server]\nlisten = 8080\n") == 1);
	CHECK(has_error(2, "listen: \"8080\" is not host:port (such as "
	    "127.0.0.1:8080 or [::1]:8443 tls, port 1 to 65535)"));
	CHECK(load("[server]\nlisten =\n") == 1);
	CHECK(has_error(2, "listen: missing value"));
}

static void
t_out_of_range_reported_in_units(void)
{
	CHECK(load("[route /]\nlock_ttl = 50ms\n") == 1);
	CHECK(has_error(2, "lock_ttl: 50ms is below the minimum 100ms\n"));
	CHECK(load("[route /]\nlock_wait = 2h\n") == 1);
	CHECK(has_error(2, "lock_wait: 2h is above the maximum 1h\n"));
	CHECK(load("[server]\nmax_header_bytes = 2m\n") == 1);
	CHECK(has_error(2, "max_header_bytes: 2m is above the maximum 1m\n"));
	CHECK(load("[redis]\ndb = 256\n") == 1);
	CHECK(has_error(2, "db: 256 is above the maximum 255\n"));
}

static const struct bound {
	const char	*section;
	const char	*key;
	const char	*min;		/* accepted, printed as the minimum */
	const char	*max;		/* accepted, printed as the maximum
					 * (in its shortest form: 60s is 1m) */
	const char	*below;		/* min less one unit, or NULL */
	const char	*above;		/* max plus one unit */
} bounds[] = {
	{ "server", "max_header_bytes", "1k", "1m", "1023", "1048577" },
	{ "server", "max_body_bytes", "1k", "1g", "1023", "1073741825" },
	{ "server", "client_timeout", "1s", "1h", "999ms", "3600001ms" },
	{ "redis", "db", "0", "255", "-1", "256" },
	{ "redis", "timeout", "1ms", "1m", "0", "60001ms" },
	{ "upstream", "connect_timeout", "1ms", "1m", "0", "60001ms" },
	{ "upstream", "timeout", "1ms", "1h", "0", "3600001ms" },
	{ "upstream", "max_entry_bytes", "1k", "1g", "1023", "1073741825" },
	{ "upstream", "max_upstream_headers", "1", "128", "0", "129" },
	{ "upstream", "max_requests", "0", "1000000", "-1", "1000001" },
	{ "upstream", "queue_timeout", "0", "1h", NULL, "3600001ms" },
	{ "upstream", "slot_lease", "100ms", "10m", "99ms", "600001ms" },
	{ "upstream", "local_share", "0", "1000000", "-1", "1000001" },
	{ "route /", "ttl", "0", "8760h", NULL, "31536000001ms" },
	{ "server", "workers", "0", "64", "-1", "65" },
	{ "route /", "early_refresh_beta", "0.001", "100", "0", "100.001" },
	{ "route /", "stale_while_revalidate", "0", "8760h", NULL,
	  "31536000001ms" },
	{ "route /", "lock_ttl", "100ms", "1h", "99ms", "3600001ms" },
	{ "route /", "lock_wait", "0", "1h", NULL, "3600001ms" },
	{ "route /", "lock_poll", "10ms", "1m", "9ms", "60001ms" },
};

static void
t_range_bounds_accepted_exactly_and_one_unit_past_rejected(void)
{
	char text[TEXT_MAX], msg[MSG_MAX];

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		const struct bound *b = &bounds[i];

		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", b->section,
		    b->key, b->min);
		CHECK(load(text) == 0);
		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", b->section,
		    b->key, b->max);
		CHECK(load(text) == 0);

		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", b->section,
		    b->key, b->above);
		CHECK(load(text) == 1);
		snprintf(msg, sizeof(msg), "%s: %s is above the maximum %s\n",
		    b->key, b->above, b->max);
		CHECK(has_error(2, msg));

		if (b->below == NULL)
			continue;
		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", b->section,
		    b->key, b->below);
		CHECK(load(text) == 1);
		snprintf(msg, sizeof(msg), "%s: %s is below the minimum %s\n",
		    b->key, b->below, b->min);
		CHECK(has_error(2, msg));
	}
}

static void
t_string_lengths_accepted_at_limit_and_rejected_past_it(void)
{
	char text[TEXT_MAX], prefix[CONF_PREFIX_MAX + 1];

	memset(prefix, 'k', sizeof(prefix));
	prefix[CONF_PREFIX_MAX - 1] = '\0';	/* 63 characters */
	snprintf(text, sizeof(text), "[redis]\nprefix = %s\n", prefix);
	CHECK(load(text) == 0);
	CHECK_STR(cf.redis_prefix, prefix);
	CHECK(load("[redis]\nprefix = k\n") == 0);

	prefix[CONF_PREFIX_MAX - 1] = 'k';
	prefix[CONF_PREFIX_MAX] = '\0';		/* 64 characters */
	snprintf(text, sizeof(text), "[redis]\nprefix = %s\n", prefix);
	CHECK(load(text) == 1);
	CHECK(has_error(2, "prefix: must be 1 to 63 characters long"));
}

static void
t_route_prefix_must_start_with_slash(void)
{
	CHECK(load("[route api/]\nttl = 1s\n") == 1);
	CHECK(has_error(1, "route prefix \"api/\" must start with '/'"));
	CHECK(load("[route]\n") == 1);
	CHECK(has_error(1, "[route] needs a path prefix, such as "
	    "[route /api/]"));
	CHECK(load("[route /a b/]\n") == 1);
	CHECK(has_error(1, "route prefix \"/a b/\" must not contain spaces or "
	    "control characters"));
	/* No request path holds a byte past ASCII; /stats names routes. */
	CHECK(load("[route /caf\xc3\xa9/]\n[route /\xff/]\n") == 2);
	CHECK(has_error(1, "route prefix \"/caf"));
	CHECK(has_error(2, "route prefix \"/"));
	CHECK(strstr(errs, "must be ASCII") != NULL);
	CHECK(load("[route /caf%C3%A9/]\n") == 0);
}

static void
t_duplicate_route_reported_and_its_keys_skipped(void)
{
	CHECK(load("[route /api/]\nttl = 1s\n\n[route /api/]\nttl = 2s\n")
	    == 1);
	CHECK(has_error(4, "duplicate route [route /api/] (first on line 1)"));
	CHECK(cf.routes[0].ttl_ms == 1000);
}

static void
t_too_many_routes_reported(void)
{
	char text[TEXT_MAX];
	size_t off = 0;

	for (int i = 0; i <= CONF_ROUTES_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
		    "[route /r%d/]\n", i);
	CHECK(load(text) == 1);
	CHECK(has_error(CONF_ROUTES_MAX + 1, "too many routes (at most 64)"));
	text[strlen(text) - strlen("[route /r64/]\n")] = '\0';
	CHECK(load(text) == 0);
	CHECK(cf.nroutes == CONF_ROUTES_MAX);
}

static void
t_syntax_errors_reported_with_line(void)
{
	CHECK(load("[server]\nlisten 127.0.0.1:8080\n") == 1);
	CHECK(has_error(2, "syntax error: expected \"[section]\" or \"key = "
	    "value\", not \"listen 127.0.0.1:8080\""));
	CHECK(load("[server]\n= 1\n") == 1);
	CHECK(has_error(2, "syntax error: expected"));
	CHECK(load("[server]\nlog_level debug   ; a comment\n") == 1);
	CHECK(has_error(2, "syntax error: expected \"[section]\" or \"key = "
	    "value\", not \"log_level debug\"\n"));
	CHECK(load("[server\nlisten = 127.0.0.1:1\n") == 1);
	CHECK(has_error(1, "syntax error: section header \"[server\" has no "
	    "closing ']'"));
	CHECK(load("[server] listen = 1\n") == 1);
	CHECK(has_error(1, "syntax error: unexpected \"listen = 1\" after the "
	    "section header"));
}

static void
t_line_limit_is_exact_and_long_lines_do_not_swallow_the_next(void)
{
	char text[TEXT_MAX], line[INIH_LINE_MAX + 2];
	const char *key = "log_level = debug ;";

	/* A line of exactly the limit, indented: fine. */
	memset(line, 'c', sizeof(line));
	memcpy(line, key, strlen(key));
	line[INIH_LINE_MAX] = '\0';
	snprintf(text, sizeof(text), "[server]\n        %s\n", line);
	CHECK(load(text) == 0);
	CHECK(cf.log_level == LOGL_DEBUG);

	/* One more character: reported, skipped whole, and the next line is
	 * read as a line of its own. */
	line[INIH_LINE_MAX] = 'c';
	line[INIH_LINE_MAX + 1] = '\0';
	snprintf(text, sizeof(text), "[server]\n%s\nlisten = 127.0.0.1:7200\n",
	    line);
	CHECK(load(text) == 1);
	CHECK(has_error(2, "line too long (the limit is 198 characters, not "
	    "counting indentation)"));
	CHECK(cf.log_level == LOGL_INFO);
	CHECK(cf.listen_port == 7200);
}

static void
t_long_section_header_skips_its_keys(void)
{
	char text[TEXT_MAX], prefix[INIH_LINE_MAX + 1];

	memset(prefix, 'a', sizeof(prefix));
	prefix[0] = '/';
	prefix[INIH_LINE_MAX] = '\0';
	snprintf(text, sizeof(text), "[server]\n[route %s]\nttl = 5s\n",
	    prefix);
	CHECK(load(text) == 1);		/* not also "unknown key in [server]" */
	CHECK(has_error(2, "line too long"));
}

static void
t_long_route_prefix_is_kept_whole(void)
{
	char text[TEXT_MAX], prefix[151];

	/* libinih cuts section names at 49 bytes; the reader does not. */
	memset(prefix, 'a', sizeof(prefix));
	prefix[0] = '/';
	prefix[sizeof(prefix) - 1] = '\0';
	snprintf(text, sizeof(text), "[route %s]\n[route %.60s]\n", prefix,
	    prefix);
	CHECK(load(text) == 0);
	CHECK(cf.nroutes == 2);
	CHECK_STR(cf.routes[0].prefix, prefix);
	CHECK(strlen(cf.routes[1].prefix) == 60);
}

static void
t_admin_listen_equal_to_listen_reported_at_its_line(void)
{
	CHECK(load("[server]\nlisten = 127.0.0.1:9000\nlog_level = info\n"
	    "admin_listen = 127.0.0.1:9000\n") == 1);
	CHECK(has_error(4, "admin_listen: 127.0.0.1:9000 conflicts with listen "
	    "127.0.0.1:9000 (line 2); the admin port must not be the public "
	    "one"));

	CHECK(load("[server]\nadmin_listen = 127.0.0.1:8080\n") == 1);
	CHECK(has_error(2, "admin_listen: 127.0.0.1:8080 conflicts with listen "
	    "127.0.0.1:8080 (the default)"));

	CHECK(load("[server]\nlisten = 127.0.0.1:8081\n") == 1);
	CHECK(has_error(2, "listen: 127.0.0.1:8081 conflicts with admin_listen "
	    "127.0.0.1:8081 (the default); set admin_listen to another "
	    "address"));

	/* A wildcard listener takes the port on every address. */
	CHECK(load("[server]\nlisten = 0.0.0.0:8080\n"
	    "admin_listen = 127.0.0.1:8080\n") == 1);
	CHECK(has_error(3, "admin_listen: 127.0.0.1:8080 conflicts with"));

	CHECK(load("[server]\nlisten = 127.0.0.1:8080\n"
	    "admin_listen = 127.0.0.2:8080\n") == 0);

	/* A refused listen is not compared against the default it kept. */
	CHECK(load("[server]\nlisten = 127.0.0.1:80x\n"
	    "admin_listen = 127.0.0.1:8080\n") == 1);
	CHECK(has_error(2, "listen: \"127.0.0.1:80x\" is not host:port"));
}

static void
t_several_errors_all_reported_with_lines(void)
{
	static const int want[] = { 2, 3, 5, 6, 7, 9, 10, 12, 13, 15 };
	const int nwant = (int)(sizeof(want) / sizeof(want[0]));
	int got[LINES_MAX];

	CHECK(load(
	    "[server]\n"				/* 1 */
	    "listen = 127.0.0.1:80x\n"			/* 2 bad value */
	    "fo = 1\n"					/* 3 unknown key */
	    "[redis]\n"					/* 4 */
	    "db = 999\n"				/* 5 above maximum */
	    "db = 1\n"					/* 6 duplicate */
	    "db = 2\n"					/* 7 duplicate */
	    "[route /]\n"				/* 8 */
	    "lock_ttl = 50ms\n"				/* 9 below minimum */
	    "ttl 5s\n"					/* 10 syntax error */
	    "[route /x/]\n"				/* 11 */
	    "[route /]\n"				/* 12 duplicate route */
	    "[serve]\n"					/* 13 unknown section */
	    "foo = bar\n"				/* 14 skipped */
	    "[route nope]\n"				/* 15 no leading '/' */
	    ) == nwant);
	CHECK(count_lines(errs) == nwant);
	CHECK(error_lines(got) == nwant);
	for (int i = 0; i < nwant; i++)
		CHECK(got[i] == want[i]);
	/* A key counts as set even when its value was refused. */
	CHECK(has_error(6, "duplicate key \"db\" (first set on line 5)"));
	CHECK(has_error(7, "duplicate key \"db\" (first set on line 5)"));
	CHECK(has_error(12, "duplicate route [route /] (first on line 8)"));
}

static void
t_missing_file_reported_as_cannot_open(void)
{
	CHECK(load_path("/nonexistent/corral.conf") == 1);
	CHECK_STR(errs, "/nonexistent/corral.conf: cannot open: No such file "
	    "or directory\n");
}

static void
t_directory_reported_as_unreadable(void)
{
	CHECK(load_path("/tmp") == 1);
	CHECK_STR(errs, "/tmp: cannot read: Is a directory\n");
}

static void
t_errors_name_the_file_on_every_line(void)
{
	const char *p;

	CHECK(load("[server]\nfo = 1\nbar = 2\n") == 2);
	CHECK(count_lines(errs) == 2);
	for (p = errs; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		CHECK(*p == '\0' ||
		    strncmp(p, tmp_path, strlen(tmp_path)) == 0);
	}
}

static void
t_longest_prefix_route_wins(void)
{
	CHECK(load("[route /api/]\n[route /]\n[route /api/v2/]\n"
	    "[route /reports/]\n") == 0);
	CHECK_STR(conf_route_match(&cf, "/api/v2/users")->prefix, "/api/v2/");
	CHECK_STR(conf_route_match(&cf, "/api/v1/users")->prefix, "/api/");
	CHECK_STR(conf_route_match(&cf, "/api/")->prefix, "/api/");
	CHECK_STR(conf_route_match(&cf, "/api")->prefix, "/");
	CHECK_STR(conf_route_match(&cf, "/reports/x")->prefix, "/reports/");
	CHECK_STR(conf_route_match(&cf, "/")->prefix, "/");

	CHECK(load("[route /api/]\n") == 0);
	CHECK(conf_route_match(&cf, "/other") == NULL);
	CHECK(conf_route_match(&cf, "/api/x") == &cf.routes[0]);
}

/* Each tests/fixtures/bad*.conf names its error lines in a comment. */
static void
t_bad_fixtures_report_exactly_their_listed_lines(void)
{
	static const char *const fixtures[] = {
		"tests/fixtures/bad.conf",
		"tests/fixtures/bad_lines.conf",
		"tests/fixtures/bad_admin_listen.conf",
	};
	static const char marker[] = "; expect-error-lines:";
	char line[MSG_MAX], want[MSG_MAX];
	int got[LINES_MAX], n, nwant;
	FILE *fp;

	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		CHECK((fp = fopen(fixtures[i], "r")) != NULL);
		want[0] = '\0';
		while (fgets(line, sizeof(line), fp) != NULL)
			if (strncmp(line, marker, strlen(marker)) == 0)
				snprintf(want, sizeof(want), "%s",
				    line + strlen(marker));
		fclose(fp);
		CHECK(want[0] != '\0');

		/* Cross-field errors come after the line-by-line ones. */
		load_path(fixtures[i]);
		n = error_lines(got);
		CHECK(n == nerr);
		qsort(got, (size_t)n, sizeof(got[0]), cmp_int);
		nwant = 0;
		for (char *tok = strtok(want, " \n"); tok != NULL;
		    tok = strtok(NULL, " \n")) {
			CHECK(nwant < n && got[nwant] == atoi(tok));
			nwant++;
		}
		CHECK(nwant == n);
	}
	load_path("tests/fixtures/bad.conf");
	CHECK(has_error(9, "admin_listen: 127.0.0.1:8080 conflicts with"));
	CHECK(strstr(errs, "tests/fixtures/bad.conf:34: route prefix \"api/\" "
	    "must start with '/'\n") != NULL);
}

/* listen takes up to four addresses, each maybe "tls"; a tls listener needs
 * a certificate and key, and a certificate needs a tls listener. */
static void
t_listen_lists_and_tls_go_together(void)
{
	CHECK(load("[server]\nlisten = 127.0.0.1:8080, [::1]:8443 tls\n"
	    "tls_certificate = /c.pem\ntls_key = /k.pem\n") == 0);
	CHECK(cf.nlisteners == 2);
	CHECK(!cf.listeners[0].tls && cf.listeners[1].tls);
	CHECK_STR(cf.listeners[1].host, "::1");
	CHECK(cf.listeners[1].port == 8443);
	CHECK_STR(cf.listen_host, "127.0.0.1");
	CHECK(cf.listen_port == 8080);
	CHECK(load("[server]\nlisten = 127.0.0.1:1, 127.0.0.1:2, "
	    "127.0.0.1:3, 127.0.0.1:4\n") == 0);
	CHECK(cf.nlisteners == 4);
	CHECK(load("[server]\nlisten = 127.0.0.1:1, 127.0.0.1:2, "
	    "127.0.0.1:3, 127.0.0.1:4, 127.0.0.1:5\n") == 1);
	CHECK(has_error(2, "listen: at most 4 addresses"));
	CHECK(load("[server]\nlisten = 127.0.0.1:8443 tlsv13\n") == 1);
	CHECK(has_error(2, "listen: \"127.0.0.1:8443 tlsv13\": after an "
	    "address only \"tls\" may come"));
	CHECK(load("[server]\nlisten = 127.0.0.1:1,\n") == 1);
	CHECK(has_error(2, "listen: \"127.0.0.1:1,\" ends in a comma"));
	CHECK(load("[server]\nlisten = 127.0.0.1:1, ,127.0.0.1:2\n") == 1);
	CHECK(has_error(2, "listen: \"\" is not host:port"));
	CHECK(load("[server]\nlisten = 127.0.0.1:1, 127.0.0.1:1 tls\n"
	    "tls_certificate = /c.pem\ntls_key = /k.pem\n") == 1);
	CHECK(has_error(2, "listen: 127.0.0.1:1 is named twice"));
	CHECK(load("[server]\nlisten = 0.0.0.0:8443 tls\n"
	    "tls_certificate = /c.pem\n") == 1);
	CHECK(has_error(2, "a tls listener needs tls_certificate and tls_key"));
	CHECK(load("[server]\nadmin_listen = 127.0.0.1:9443 tls\n"
	    "tls_key = /k.pem\n") == 1);
	CHECK(has_error(2, "a tls listener needs tls_certificate and tls_key"));
	CHECK(load("[server]\nlisten = 0.0.0.0:8080\n"
	    "tls_key = /k.pem\n") == 1);
	CHECK(has_error(3, "no listener is tls"));
	CHECK(load("[server]\nadmin_listen = 127.0.0.1:8080, "
	    "127.0.0.1:9\n") == 1);
	CHECK(has_error(2, "admin_listen: one address only"));
}

static void
t_status_ttls_parse_and_look_up(void)
{
	const struct conf_route *r;

	CHECK(load("[route /]\nttl_status = 404:30s, 410:5m\n"
	    "[route /b/]\nttl_404 = 10s\n") == 0);
	r = &cf.routes[0];
	CHECK(r->nstatus_ttls == 2);
	CHECK(conf_status_ttl(r, 404) == 30000);
	CHECK(conf_status_ttl(r, 410) == 300000);
	CHECK(conf_status_ttl(r, 500) == -1);
	CHECK(conf_status_ttl(&cf.routes[1], 404) == 10000);
	CHECK(conf_status_ttl(&cf.routes[1], 410) == -1);
}

static void
t_bad_status_ttls_are_reported(void)
{
	CHECK(load("[route /]\nttl_status = 404\nttl_404 = x\n"
	    "[route /b/]\nttl_status = 99:1s\n"
	    "[route /c/]\nttl_status = 404:1s,,410:2s\n") == 4);
	CHECK(has_error(2, "ttl_status: \"404\" is not a list"));
	CHECK(has_error(3, "ttl_404: \"x\" is not a duration"));
	CHECK(has_error(5, "ttl_status: \"99:1s\""));
	CHECK(has_error(7, "ttl_status: "));
}

static void
t_float_keys_parse_and_range_check(void)
{
	CHECK(load("[route /]\nearly_refresh_beta = 2.5\n") == 0);
	CHECK(cf.routes[0].early_refresh_beta == 2.5);
	CHECK(load("[route /]\n") == 0);
	CHECK(cf.routes[0].early_refresh_beta == 1.0);
	CHECK(load("[route /]\nearly_refresh_beta = x\n"
	    "[route /b/]\nearly_refresh_beta = 0\n"
	    "[route /c/]\nearly_refresh_beta = 101\n") == 3);
	CHECK(has_error(2, "early_refresh_beta: \"x\" is not a number"));
	CHECK(has_error(4, "early_refresh_beta: 0 is below the minimum 0.001"));
	CHECK(has_error(6, "early_refresh_beta: 101 is above the maximum 100"));
}

static void
t_dump_keys_lists_every_key_with_default_and_range(void)
{
	static const char *const names[] = {
		"listen", "admin_listen", "log_level", "max_header_bytes",
		"max_body_bytes", "client_timeout", "address", "password",
		"db", "prefix", "timeout", "url", "connect_timeout",
		"max_entry_bytes", "ttl", "stale_while_revalidate",
		"lock_ttl", "lock_wait", "lock_poll", "cache_authorized",
		"max_connections", "shutdown_timeout", "access_log",
		"error_log", "stale_if_error", "error_backoff", "ttl_404",
		"ttl_status", "sort_query", "workers", "l1_max_bytes",
		"early_refresh", "early_refresh_beta", "origin_cache_control",
		"trusted_proxies", "max_upstream_headers", "targeted_cache_control",
		"forward_targeted_cache_control", "key_host", "hosts",
		"error_backoff_after", "hit_for_miss", "log_format", "stream_window",
		"mode", "master_name", "l2_max_bytes", "canonical_host",
		"admin_max_connections", "max_requests", "queue_timeout",
		"slot_lease", "local_share", "username", "password_file",
		"sentinel_username", "sentinel_password", "sentinel_password_file",
		"slot_lease", "local_share", "pid_file", "max_variants",
		"balance", "first_byte_timeout",
		"max_requests_per_server", "max_fails", "fail_timeout",
		"health_path", "health_interval", "health_timeout",
		"health_status", "health_rise", "upstream", "credential_header",
	};
	char *out = NULL;
	size_t len;
	FILE *mem;

	CHECK((mem = open_memstream(&out, &len)) != NULL);
	conf_dump_keys(mem, CONF_DUMP_TEXT);
	fclose(mem);
	free(errs);
	errs = out;		/* freed with the next load */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(strstr(out, names[i]) != NULL);
	/* timeout and max_body_bytes are in two sections */
	CHECK(count_lines(out) == 1 + 112);
	{	/* the restart-only keys (conf_restart.c) are each a key */
		int marked = 0;

		for (const char *p = out; (p = strstr(p, " (restart)\n")); p++)
			marked++;
		CHECK(marked == CONF_RESTART_KEYS);
	}
	CHECK(strstr(out, "1ms..1h") != NULL);
	CHECK(strstr(out, "100ms..1h") != NULL);
	CHECK(strstr(out, "0.001..100") != NULL);
	CHECK(strstr(out, " 0..8760h ") != NULL);
	CHECK(strstr(out, "1k..1g") != NULL);
	CHECK(strstr(out, "127.0.0.1:8081") != NULL);
}

/* password_file: its one line without the newline (CRLF too), empty
 * values are unset, and a user needs a password. */
static void
t_password_file_is_read_without_its_newline(void)
{
	char dir[] = "/tmp/corral-test-secret-XXXXXX", path[64], text[256];
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/pw", dir);
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("s3cret \r\n", f);
	fclose(f);
	CHECK(chmod(path, 0600) == 0);
	snprintf(text, sizeof(text), "[redis]\nusername = app\npassword =\n"
	    "password_file = %s\nsentinel_password_file =\n", path);
	CHECK(load(text) == 0);
	CHECK_STR(cf.redis_username, "app");
	CHECK_STR(cf.redis_password, "s3cret ");
	CHECK(load("[redis]\nusername = app\n") == 1);
	CHECK(has_error(2, "username: needs password or password_file"));
	CHECK(chmod(path, 0640) == 0);
	CHECK(load(text) == 0);		/* the group may read it */
	CHECK(chmod(path, 0604) == 0);
	CHECK(load(text) == 1);
	CHECK(has_error(4, "password_file: "));
	CHECK(strstr(errs, "may be read or written by others (mode 0604)") !=
	    NULL);
	CHECK(strstr(errs, "s3cret") == NULL);
	unlink(path);
	rmdir(dir);
}

/*
 * Every secret file: one that others may read or write (0602, 0604, 0606,
 * 0622, 0644) is refused; so is one its group may write (0620, 0660)
 * where a line written into it would let someone in (the admin tokens,
 * the key secret), not a password's (a wrong one only locks out). 0600,
 * 0640, 0400 and 0440 are taken. An error names the key and the mode,
 * never the secret.
 */
static void
t_secret_files_others_may_neither_read_nor_write(void)
{
	static const struct {
		const char	*key, *head, *secret;
		int		 head_lines, group_may_write;
	} files[] = {
		{ "password_file", "[redis]\n", "s3cret-pw", 1, 1 },
		{ "sentinel_password_file", "[redis]\nmode = sentinel\naddress = "
		  "127.0.0.1:26379\nmaster_name = m\n", "s3cret-pw", 4, 1 },
		{ "admin_token_file", "[server]\n", "s3cret-token-0123456789", 1,
		  0 },
		{ "key_secret_file", "[server]\n",
		  "s3cret-key-of-32-bytes-01234567", 1, 0 },
	};
	static const struct { mode_t mode; int group_write; int others; } modes[] = {
		{ 0600, 0, 0 }, { 0640, 0, 0 }, { 0400, 0, 0 }, { 0440, 0, 0 },
		{ 0620, 1, 0 }, { 0660, 1, 0 }, { 0602, 0, 1 }, { 0604, 0, 1 },
		{ 0606, 0, 1 }, { 0622, 1, 1 }, { 0644, 0, 1 },
	};
	char text[TEXT_MAX], path[sizeof(TMP_TEMPLATE)], want[96];
	int fd;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		memcpy(path, TMP_TEMPLATE, sizeof(path));
		if ((fd = mkstemp(path)) == -1 || dprintf(fd, "%s\n",
		    files[i].secret) < 0 || close(fd) == -1) {
			perror("secret file");
			exit(2);
		}
		snprintf(text, sizeof(text), "%s%s = %s\n", files[i].head,
		    files[i].key, path);
		snprintf(want, sizeof(want), "%s: ", files[i].key);
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			int refused = modes[m].others || (modes[m].group_write &&
			    !files[i].group_may_write);

			CHECK(chmod(path, modes[m].mode) == 0);
			if ((load(text) != 0) != refused)
				printf("# %s mode %04o: %d errors\n%s", files[i].key,
				    (unsigned)modes[m].mode, nerr, errs);
			CHECK((nerr != 0) == refused);
			if (!refused)
				continue;
			CHECK(has_error(files[i].head_lines + 1, want));
			CHECK(strstr(errs, files[i].secret) == NULL);
		}
		unlink(path);
	}
}

/* [redis] mode: what address may list, and master_name only with sentinel. */
static void
t_redis_mode_checks_addresses_and_master_name(void)
{
	CHECK(load("[redis]\n") == 0);
	CHECK(cf.redis_mode == REDIS_SINGLE);
	CHECK(cf.redis_naddrs == 1);
	CHECK(load("[redis]\nmode = cluster\naddress = 127.0.0.1:7000, "
	    "127.0.0.1:7001 10.0.0.2:7002\n") == 0);
	CHECK(cf.redis_mode == REDIS_CLUSTER);
	CHECK(cf.redis_naddrs == 3);
	CHECK_STR(cf.redis_addrs[2].host, "10.0.0.2");
	CHECK(cf.redis_addrs[2].port == 7002);
	CHECK_STR(cf.redis_host, "127.0.0.1");
	CHECK(cf.redis_port == 7000);
	CHECK(load("[redis]\nmode = sentinel\naddress = 127.0.0.1:26379\n"
	    "master_name = corral\n") == 0);
	CHECK(cf.redis_mode == REDIS_SENTINEL);
	CHECK_STR(cf.redis_master_name, "corral");

	CHECK(load("[redis]\naddress = 127.0.0.1:7000, 127.0.0.1:7001\n") == 1);
	CHECK(has_error(2, "address: mode = single takes one address"));
	CHECK(load("[redis]\nmaster_name = corral\n") == 1);
	CHECK(has_error(2, "master_name: only with mode = sentinel"));
	CHECK(load("[redis]\nmode = sentinel\naddress = 127.0.0.1:26379\n") == 1);
	CHECK(has_error(2, "mode = sentinel needs master_name"));
	CHECK(load("[redis]\nmode = cluster\naddress = unix:/tmp/r.sock\n") == 1);
	CHECK(has_error(3, "address: mode = cluster takes host:port"));
	CHECK(load("[redis]\nmode = cluster\ndb = 2\n") == 1);
	CHECK(has_error(3, "db: Redis Cluster has only database 0"));
	CHECK(load("[redis]\nmode = ring\n") == 1);
	CHECK(has_error(2, "mode: \"ring\" is not a mode"));
	CHECK(load("[redis]\nmode = cluster\naddress = 127.0.0.1:7000, x\n") == 1);
	CHECK(has_error(3, "address: \"x\" is not host:port"));
	CHECK(load("[redis]\naddress = unix:/tmp/r.sock, 127.0.0.1:7000\n") == 1);
	CHECK(has_error(2, "address: a unix socket must be the only address"));
	CHECK(load("[redis]\nmode = cluster\naddress = a:1 a:2 a:3 a:4 a:5 a:6 "
	    "a:7 a:8 a:9 a:10 a:11 a:12 a:13 a:14 a:15 a:16\n") == 0);
	CHECK(cf.redis_naddrs == 16);
	CHECK(load("[redis]\nmode = cluster\naddress = a:1 a:2 a:3 a:4 a:5 a:6 "
	    "a:7 a:8 a:9 a:10 a:11 a:12 a:13 a:14 a:15 a:16 a:17\n") == 1);
	CHECK(has_error(3, "address: at most 16 addresses"));
}

/* admin_allow: its own list, and an IPv4-mapped peer is its IPv4 one;
 * tokens: found by their whole text, with their scope. */
static void
t_admin_allow_and_tokens_match_exactly(void)
{
	struct conf c;

	CHECK(load("[server]\nadmin_allow = 127.0.0.0/8, ::1\n") == 0);
	CHECK(cf.nadmin_allow == 2 && cf.ntrusted_proxies == 0);
	CHECK(conf_cidrs_match(cf.admin_allow, cf.nadmin_allow, "127.0.0.9"));
	CHECK(conf_cidrs_match(cf.admin_allow, cf.nadmin_allow,
	    "::ffff:127.0.0.1"));
	CHECK(conf_cidrs_match(cf.admin_allow, cf.nadmin_allow, "::1"));
	CHECK(!conf_cidrs_match(cf.admin_allow, cf.nadmin_allow, "10.0.0.1"));
	memset(&c, 0, sizeof(c));
	snprintf(c.admin_tokens[0].text, sizeof(c.admin_tokens[0].text),
	    "abcdefghijklmnop");
	c.admin_tokens[0].len = 16;
	c.admin_tokens[0].scope = SCOPE_READ;
	c.nadmin_tokens = 1;
	CHECK(conf_token_scope(&c, "abcdefghijklmnop", 16) == SCOPE_READ);
	CHECK(conf_token_scope(&c, "abcdefghijklmno", 15) == SCOPE_NONE);
	CHECK(conf_token_scope(&c, "abcdefghijklmnopq", 17) == SCOPE_NONE);
	CHECK(conf_token_scope(&c, "abcdefghijklmnoX", 16) == SCOPE_NONE);
}

/* trusted_proxies: which peers' X-Forwarded-* are kept. */
static void
t_trusted_proxies_match_by_prefix(void)
{
	CHECK(load("[server]\ntrusted_proxies = 10.0.0.0/8, 192.168.1.128/25,"
	    " 127.0.0.1 2001:db8::/32\n") == 0);
	CHECK(cf.ntrusted_proxies == 4);
	CHECK(conf_trusted_proxy(&cf, "10.255.0.1"));
	CHECK(!conf_trusted_proxy(&cf, "11.0.0.1"));
	CHECK(conf_trusted_proxy(&cf, "192.168.1.200"));
	CHECK(!conf_trusted_proxy(&cf, "192.168.1.127"));
	CHECK(conf_trusted_proxy(&cf, "127.0.0.1"));
	CHECK(!conf_trusted_proxy(&cf, "127.0.0.2"));
	CHECK(conf_trusted_proxy(&cf, "2001:db8:1::5"));
	CHECK(!conf_trusted_proxy(&cf, "2001:db9::5"));
	CHECK(!conf_trusted_proxy(&cf, "not an address"));
	/* Off a byte boundary: the prefix's high bits of the byte, not its low. */
	CHECK(load("[server]\ntrusted_proxies = 10.16.0.0/12, 172.20.0.0/14\n") == 0);
	CHECK(conf_trusted_proxy(&cf, "10.16.0.0"));
	CHECK(conf_trusted_proxy(&cf, "10.31.255.255"));
	CHECK(!conf_trusted_proxy(&cf, "10.32.0.1"));
	CHECK(!conf_trusted_proxy(&cf, "10.15.255.255"));
	CHECK(!conf_trusted_proxy(&cf, "10.0.0.1"));
	CHECK(conf_trusted_proxy(&cf, "172.23.1.1"));
	CHECK(!conf_trusted_proxy(&cf, "172.24.0.1"));
	CHECK(load("[server]\ntrusted_proxies = 0.0.0.0/0\n") == 0);
	CHECK(conf_trusted_proxy(&cf, "198.51.100.7"));
	CHECK(!conf_trusted_proxy(&cf, "::1"));
	CHECK(load("[server]\n") == 0);
	CHECK(!conf_trusted_proxy(&cf, "127.0.0.1"));	/* none by default */
	CHECK(load("[server]\n\ntrusted_proxies = 1.2.3.4/33, ::1/129, x, "
	    "1.2.3.4/, 10.0.0.0/8\n") == 1);
	CHECK(has_error(3, "trusted_proxies: \"1.2.3.4/33\", \"::1/129\", "
	    "\"x\", \"1.2.3.4/\" are not"));
}

/* hosts: names and ports a request may name; patterns checked on load. */
static void
t_hosts_allow_listed_names_on_listed_ports(void)
{
	CHECK(load("[server]\nlisten = 127.0.0.1:8080\nhosts = app.test, "
	    "*.example.com, api.test:8443, any.test:*, [::1]\n") == 0);
	CHECK(conf_host_allowed(&cf, "app.test", 0));
	CHECK(conf_host_allowed(&cf, "APP.Test:80", 0));
	CHECK(conf_host_allowed(&cf, "app.test:8080", 0));	/* listen */
	CHECK(!conf_host_allowed(&cf, "app.test:8081", 0));
	CHECK(!conf_host_allowed(&cf, "app.test:", 0));
	CHECK(!conf_host_allowed(&cf, "app.test:x", 0));
	CHECK(!conf_host_allowed(&cf, "app.test.evil", 0));
	CHECK(!conf_host_allowed(&cf, "", 0));
	CHECK(conf_host_allowed(&cf, "a.b.example.com", 1));
	CHECK(!conf_host_allowed(&cf, "example.com", 1));
	CHECK(!conf_host_allowed(&cf, "evilexample.com", 1));
	CHECK(!conf_host_allowed(&cf, "a.example.com.evil", 1));
	CHECK(!conf_host_allowed(&cf, "a.example.co", 1));
	CHECK(!conf_host_allowed(&cf, "xample.com", 1));
	CHECK(conf_host_allowed(&cf, "A.EXAMPLE.COM", 1));
	CHECK(!conf_host_allowed(&cf, "a.example.com:1", 1));
	CHECK(conf_host_allowed(&cf, "api.test:8443", 1));
	CHECK(!conf_host_allowed(&cf, "api.test", 1));
	CHECK(!conf_host_allowed(&cf, "api.test:8080", 1));
	CHECK(conf_host_allowed(&cf, "any.test:1", 1));
	CHECK(conf_host_allowed(&cf, "any.test", 1));
	CHECK(conf_host_allowed(&cf, "[::1]:8080", 1));
	CHECK_STR(cf.forwarded_host, "app.test");
	/* Without hosts: any name; a key_host route only on the ports the
	 * listener serves. */
	CHECK(load("[server]\nlisten = 127.0.0.1:8080\n") == 0);
	CHECK(conf_host_allowed(&cf, "", 1));
	CHECK(conf_host_allowed(&cf, "x.test:9", 0));
	CHECK(!conf_host_allowed(&cf, "x.test:9", 1));
	CHECK(conf_host_allowed(&cf, "x.test:8080", 1));
	CHECK(!conf_host_allowed(&cf, "x.test:", 0));
	CHECK_STR(cf.forwarded_host, "");
	CHECK(load("[server]\nhosts = *.a.test, *:*, b.test:*, c.test\n") == 0);
	CHECK_STR(cf.forwarded_host, "b.test");
	CHECK(load("[server]\nhosts = a.test\n"
	    "canonical_host = WWW.A.Test:0443\n") == 0);
	CHECK_STR(cf.canonical_host, "www.a.test:443");
	CHECK_STR(cf.forwarded_host, "www.a.test:443");
	CHECK(load("[server]\n\nhosts = a.test:, b.test:x, *evil.test, "
	    "c..test, d.test:0, e.test\ncanonical_host = f.test:\n") == 2);
	CHECK(has_error(3, "hosts: \"a.test:\" is not a host pattern"));
	CHECK(has_error(4, "canonical_host: \"f.test:\" is not host[:port]"));
	for (const char *bad = "b.test:x\0*evil.test\0c..test\0d.test:0\0";
	    *bad != '\0'; bad += strlen(bad) + 1) {
		char line[128];

		snprintf(line, sizeof(line), "[server]\nhosts = %s\n", bad);
		CHECK(load(line) == 1);
		CHECK(has_error(2, "hosts: \""));
	}
}

/* A key secret file with mode mode: its path, in a static buffer. */
static const char *
secret_file(const char *text, mode_t mode)
{
	static char path[sizeof(TMP_TEMPLATE)];
	int fd;

	memcpy(path, TMP_TEMPLATE, sizeof(path));
	if ((fd = mkstemp(path)) == -1 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode) == -1 || close(fd) == -1) {
		perror("secret file");
		exit(2);
	}
	return path;
}

/* store_encoding names a coding; compress_types is a list of media types
 * or patterns (codec_types_valid), each error on its line. */
static void
t_coding_keys_are_checked(void)
{
	CHECK(load("[route /]\n") == 0);
	CHECK_STR(cf.routes[0].store_encoding, "gzip");
	CHECK(cf.routes[0].compress_min_bytes == 256);
	CHECK(strstr(cf.routes[0].compress_types, "application/json") != NULL);
	CHECK(load("[route /]\nstore_encoding = br\ncompress_types = "
	    "text/* application/*+json\ncompress_min_bytes = 1k\n") == 0);
	CHECK_STR(cf.routes[0].store_encoding, "br");
	CHECK(cf.routes[0].compress_min_bytes == 1024);
	CHECK(load("[route /]\nstore_encoding = identity\n") == 0);
	CHECK(load("[route /]\nstore_encoding = deflate\n") == 1);
	CHECK(has_error(2, "store_encoding: \"deflate\" is not gzip, br, zstd "
	    "or identity"));
	CHECK(load("[route /]\nstore_encoding = gzip\ncompress_types = json\n")
	    == 1);
	CHECK(has_error(3, "compress_types: \"json\" is not a media type"));
	CHECK(load("[route /]\ncompress_types = text/html, text/css\n") == 0);
	CHECK(load("[route /]\ncompress_types = ,\n") == 1);
	CHECK(load("[route /]\ncompress_min_bytes = 2g\n") == 1);
}

static void
t_key_rule_keys_parse_and_check_each_other(void)
{
	char text[TEXT_MAX];
	const char *sf;

	CHECK(load("[route /]\ncache_authorized = per-credential\n") == 1);
	CHECK(has_error(1, "[route /]: cache_authorized = per-credential needs "
	    "key_secret_file"));
	sf = secret_file("a-secret-of-32-bytes-0123456789a\n", 0600);
	snprintf(text, sizeof(text), "[server]\nkey_secret_file = %s\n"
	    "[route /]\ncache_authorized = per-credential\n"
	    "credential_cookie = session\nkey_ignore_query = _, utm_*\n"
	    "key_headers = Accept-Language, X-Tenant\ncache_post = on\n"
	    "graphql = on\nmax_body_bytes = 1k\n", sf);
	CHECK(load(text) == 0);
	CHECK(cf.key_secret_len == 32 && memcmp(cf.key_secret, "a-secret", 8) == 0);
	CHECK(cf.routes[0].cache_authorized == CONF_AUTHZ_CREDENTIAL);
	CHECK_STR(cf.routes[0].key_ignore_query, "_, utm_*");
	CHECK_STR(cf.routes[0].credential_cookie, "session");
	CHECK(cf.routes[0].post_max_body == 1024 && cf.routes[0].graphql);
	CHECK(cf.max_body_bytes == 10 * 1024 * 1024);	/* [server]'s own */
	chmod(sf, 0644);
	CHECK(load(text) == 2);		/* the file, then the route needing it */
	CHECK(has_error(2, "key_secret_file: is readable by others"));
	unlink(sf);
	CHECK(load(text) == 2);
	CHECK(has_error(2, "key_secret_file: cannot open"));
	sf = secret_file("short\n", 0600);
	snprintf(text, sizeof(text), "[server]\nkey_secret_file = %s\n", sf);
	CHECK(load(text) == 1);
	CHECK(has_error(2, "key_secret_file: holds 5 bytes"));
	unlink(sf);
	CHECK(load("[route /]\nkey_query = id\nkey_ignore_query = _\n") == 1);
	CHECK(has_error(3, "key_ignore_query: not with key_query (line 2)"));
	CHECK(load("[route /]\nkey_query = id\nkey_ignore_query =\n") == 0);
	CHECK(load("[route /]\nkey_ignore_query = a&b, *x, =\n") == 1);
	CHECK(has_error(2, "key_ignore_query: \"a&b\" is not a query"));
	CHECK(load("[route /]\nkey_headers = X-A, authorization\n") == 1);
	CHECK(has_error(1, "[route /]: key_headers must not name Authorization"));
	CHECK(load("[route /]\ngraphql = on\n") == 1);
	CHECK(has_error(1, "[route /]: graphql = on needs cache_post = on"));
	CHECK(load("[route /]\ncredential_cookie = sid\n") == 1);
	CHECK(has_error(1, "[route /]: credential_cookie needs cache_authorized"));
	CHECK(load("[route /]\ncredential_cookie = a;b\n") == 1);
	CHECK(load("[route /]\ncache_authorized = yes\n") == 0);
	CHECK(cf.routes[0].cache_authorized == CONF_AUTHZ_ON);
	CHECK_STR(cf.routes[0].credential_header, "Authorization");
	CHECK(load("[route /]\nkey_ignore_query = a;b\n") == 1);
	CHECK(has_error(2, "key_ignore_query: \"a;b\" is not a query"));
}

/* credential_header: one field name that reaches the origin, only where
 * the key holds it, and never keyed in clear. */
static void
t_credential_header_is_a_field_the_origin_sees(void)
{
	static const char *const refused[] = {
		"Connection", "keep-alive", "Proxy-Authorization", "TE",
		"Trailer", "Transfer-Encoding", "Upgrade", "Proxy-Connection",
		"Proxy-Authenticate", "host", "Cookie",
	};
	char text[TEXT_MAX];
	const char *sf;

	sf = secret_file("a-secret-of-32-bytes-0123456789a\n", 0600);
	snprintf(text, sizeof(text), "[server]\nkey_secret_file = %s\n"
	    "[route /]\ncache_authorized = per-credential\n"
	    "credential_header = X-API-Key\ncredential_cookie = sid\n", sf);
	CHECK(load(text) == 0);
	CHECK_STR(cf.routes[0].credential_header, "X-API-Key");
	CHECK(load("[route /]\ncredential_header = X-API-Key\n") == 1);
	CHECK(has_error(1, "[route /]: credential_header needs "
	    "cache_authorized = per-credential or anonymous"));
	CHECK(load("[route /]\ncache_authorized = anonymous\n"
	    "credential_header = X-API-Key\n") == 0);
	CHECK(load("[route /]\ncache_authorized = anonymous\n"
	    "credential_cookie = sid\n") == 1);
	CHECK(load("[route /]\ncredential_header = authorization\n") == 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(text, sizeof(text), "[route /]\ncredential_header = "
		    "%s\n", refused[i]);
		CHECK(load(text) == 1);
		CHECK(has_error(2, "credential_header: must not be "));
	}
	CHECK(has_error(2, "credential_header: must not be Cookie: name the "
	    "cookie in credential_cookie"));
	CHECK(load("[route /]\ncache_authorized = anonymous\n"
	    "credential_header = X_API_Key\n") == 1);
	CHECK(has_error(3, "credential_header: \"X_API_Key\": a field name "
	    "with '_' never reaches the origin (some read it as '-'): spell "
	    "it with '-'"));
	CHECK(load("[route /]\nkey_headers = X-Tenant, X_Region\n") == 1);
	CHECK(has_error(1, "[route /]: key_headers names X_Region: a field "
	    "name with '_' never reaches the origin"));
	CHECK(load("[route /]\nkey_headers = X-Tenant, X-Region\n") == 0);
	CHECK(load("[route /]\ncredential_header = X API\n") == 1);
	CHECK(has_error(2, "credential_header: \"X API\" is not a field name"));
	CHECK(load("[route /]\ncredential_header =\n") == 1);
	CHECK(has_error(2, "credential_header: missing value"));
	snprintf(text, sizeof(text), "[server]\nkey_secret_file = %s\n"
	    "[route /]\ncache_authorized = per-credential\n"
	    "credential_header = X-API-Key\nkey_headers = x-api-key\n", sf);
	CHECK(load(text) == 1);
	CHECK(has_error(3, "[route /]: key_headers must not name X-API-Key"));
	unlink(sf);
}

/* cache_authorized = claims and its keys: every error at its line, in
 * one run; the keys file loaded as a worker loads it. */
static void
t_claims_routes_need_keys_claims_and_a_secret(void)
{
	char text[4096], ks[sizeof(TMP_TEMPLATE)], sf[sizeof(TMP_TEMPLATE)];
	const char *hs = "0123456789abcdef0123456789abcdef-hs";

	snprintf(ks, sizeof(ks), "%s", secret_file(hs, 0600));
	snprintf(sf, sizeof(sf), "%s", secret_file("a-secret-of-32-bytes-"
	    "0123456789a\n", 0600));
	snprintf(text, sizeof(text), "[server]\nkey_secret_file = %s\n"
	    "jwt_keys_file = %s\njwt_issuer = https://auth.example\n"
	    "jwt_audience = api\njwt_leeway = 5s\njwt_typ = JWT, at+jwt\n"
	    "[route /api]\ncache_authorized = claims\n"
	    "jwt_claims = role app_metadata.tenant_id\njwt_reject = on\n",
	    sf, ks);
	CHECK(load(text) == 0);
	CHECK(cf.routes[0].cache_authorized == CONF_AUTHZ_CLAIMS);
	CHECK_STR(cf.routes[0].jwt_claims, "role app_metadata.tenant_id");
	CHECK(cf.routes[0].jwt_reject == 1 && cf.jwt_leeway_ms == 5000);
	CHECK_STR(cf.jwt_issuer, "https://auth.example");
	/* A secret others may read is refused at its line. */
	chmod(ks, 0644);
	CHECK(load(text) == 1);
	CHECK(has_error(3, "jwt_keys_file: "));
	CHECK(strstr(errs, "secrets are not allowed") != NULL);
	chmod(ks, 0600);
	/* The leeway is bounded; the claims, the keys and the secret are
	 * needed; typ may not be empty. */
	snprintf(text, sizeof(text), "[server]\njwt_leeway = 301s\n"
	    "jwt_typ = ,\n[route /a]\ncache_authorized = claims\n"
	    "[route /b]\njwt_claims = role\n");
	CHECK(load(text) == 4);
	CHECK(has_error(2, "jwt_leeway"));
	CHECK(has_error(3, "jwt_typ: no typ values"));
	CHECK(has_error(4, "[route /a]: cache_authorized = claims needs "
	    "jwt_keys_file"));
	CHECK(has_error(6, "[route /b]: jwt_claims and jwt_reject need "
	    "cache_authorized = claims"));
	snprintf(text, sizeof(text), "[server]\njwt_keys_file = %s\n"
	    "key_secret_file = %s\n[route /a]\ncache_authorized = claims\n"
	    "jwt_claims = a..b\n", ks, sf);
	CHECK(load(text) == 1);
	CHECK(has_error(4, "[route /a]: jwt_claims: claim \"a..b\""));
	snprintf(text, sizeof(text), "[server]\njwt_keys_file = %s\n"
	    "[route /a]\ncache_authorized = claims\njwt_claims = role\n", ks);
	CHECK(load(text) == 1);
	CHECK(has_error(3, "[route /a]: cache_authorized = claims needs "
	    "key_secret_file"));
	snprintf(text, sizeof(text), "[server]\njwt_keys_file = "
	    "/nonexistent/keys.pem\n");
	CHECK(load(text) == 1);
	CHECK(has_error(2, "jwt_keys_file: /nonexistent/keys.pem: cannot open"));
	unlink(ks);
	unlink(sf);
}

int
main(void)
{
	RUN(t_example_conf_loads_with_its_values);
	RUN(t_password_file_is_read_without_its_newline);
	RUN(t_defaults_are_the_documented_ones);
	RUN(t_empty_file_loads_as_defaults_without_routes);
	RUN(t_route_keys_take_builtin_defaults);
	RUN(t_every_key_is_stored_in_its_field);
	RUN(t_indented_keys_are_keys_not_continuations);
	RUN(t_comments_inline_and_full_line_are_ignored);
	RUN(t_a_hash_after_whitespace_starts_a_comment_in_every_key);
	RUN(t_colon_crlf_bom_and_missing_last_newline_are_accepted);
	RUN(t_unix_address_fills_path_and_clears_host);
	RUN(t_unix_socket_path_longer_than_sun_path_is_rejected);
	RUN(t_upstream_url_is_checked_and_loses_trailing_slash);
	RUN(t_redis_prefix_rejects_hash_tags_and_spaces);
	RUN(t_changes_sections_and_their_rules);
	RUN(t_changes_errors_name_their_lines);
	RUN(t_unknown_section_reported_and_its_keys_skipped);
	RUN(t_pools_and_their_servers);
	RUN(t_pool_errors_name_their_lines);
	RUN(t_unknown_key_reported_with_its_section);
	RUN(t_key_outside_any_section_reported);
	RUN(t_duplicate_key_reports_first_line);
	RUN(t_bad_values_reported_per_type);
	RUN(t_out_of_range_reported_in_units);
	RUN(t_range_bounds_accepted_exactly_and_one_unit_past_rejected);
	RUN(t_string_lengths_accepted_at_limit_and_rejected_past_it);
	RUN(t_route_prefix_must_start_with_slash);
	RUN(t_duplicate_route_reported_and_its_keys_skipped);
	RUN(t_too_many_routes_reported);
	RUN(t_syntax_errors_reported_with_line);
	RUN(t_line_limit_is_exact_and_long_lines_do_not_swallow_the_next);
	RUN(t_long_section_header_skips_its_keys);
	RUN(t_long_route_prefix_is_kept_whole);
	RUN(t_admin_listen_equal_to_listen_reported_at_its_line);
	RUN(t_several_errors_all_reported_with_lines);
	RUN(t_missing_file_reported_as_cannot_open);
	RUN(t_directory_reported_as_unreadable);
	RUN(t_errors_name_the_file_on_every_line);
	RUN(t_longest_prefix_route_wins);
	RUN(t_bad_fixtures_report_exactly_their_listed_lines);
	RUN(t_listen_lists_and_tls_go_together);
	RUN(t_status_ttls_parse_and_look_up);
	RUN(t_bad_status_ttls_are_reported);
	RUN(t_float_keys_parse_and_range_check);
	RUN(t_dump_keys_lists_every_key_with_default_and_range);
	RUN(t_trusted_proxies_match_by_prefix);
	RUN(t_admin_allow_and_tokens_match_exactly);
	RUN(t_hosts_allow_listed_names_on_listed_ports);
	RUN(t_redis_mode_checks_addresses_and_master_name);
	RUN(t_secret_files_others_may_neither_read_nor_write);
	RUN(t_key_rule_keys_parse_and_check_each_other);
	RUN(t_coding_keys_are_checked);
	RUN(t_credential_header_is_a_field_the_origin_sees);
	RUN(t_claims_routes_need_keys_claims_and_a_secret);
	free(errs);
	return unit_exit();
}
