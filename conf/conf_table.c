/* SPDX-License-Identifier: MIT */
/*
 * The key table: every key of the file is one row (name, section, type,
 * default, min, max, where it is stored, what it means), in the order
 * corral -h and corral.conf(5) list them. Defaults are written in the
 * file's own syntax and go through the value types (conf_value.c), as
 * the file's values do. Called by the loader (conf.c) and the manual
 * (conf_manual.c); calls the value types only.
 */

#include "conf/conf_int.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "auth/jwt.h"
#include "codec/codec.h"
#include "common/util.h"

#define DB_MAX		255

/* off, size, off_port, off_path of a row. */
#define FIELD(type, m)		offsetof(type, m), sizeof(((type *)0)->m)
#define IN_CONF(m)		FIELD(struct conf, m), 0, 0
#define IN_ROUTE(m)		FIELD(struct conf_route, m), 0, 0
#define IN_POOL(m)		FIELD(struct conf_pool, m), 0, 0
#define IN_CHANGES(m)		FIELD(struct conf_changes, m), 0, 0
#define NOWHERE			0, 0, 0, 0	/* conf_changes.c stores it */
#define HOSTPORT(h, p)		FIELD(struct conf, h), \
				offsetof(struct conf, p), 0
#define CIDRS(list, n)		FIELD(struct conf, list), \
				offsetof(struct conf, n), 0
#define LISTENS(list, n)	FIELD(struct conf, list), \
				offsetof(struct conf, n), 0
#define ADDRESS(h, p, u)	FIELD(struct conf, h), \
				offsetof(struct conf, p), \
				offsetof(struct conf, u)

const struct key table_keys[] = {
	{ "listen", SECT_SERVER, T_LISTEN, "127.0.0.1:8080", 1,
	  CONF_LISTEN_MAX, LISTENS(listeners, nlisteners),
	  "where clients connect; \"tls\" after one: HTTPS" },
	{ "admin_listen", SECT_SERVER, T_LISTEN, "127.0.0.1:8081", 1, 1,
	  LISTENS(admin_listener, nadmin_listener),
	  "stats and control; not listen; \"tls\": HTTPS" },
	{ "tls_certificate", SECT_SERVER, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(tls_certificate), "the tls listeners' certificate chain "
	  "(PEM, the leaf first); reloaded on SIGHUP" },
	{ "tls_key", SECT_SERVER, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(tls_key), "its private key (PEM), a file only its owner "
	  "may read, or a systemd credential's name" },
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
	  "secret of per-credential and claims keys' HMAC; others may not "
	  "read it" },
	{ "jwt_keys_file", SECT_SERVER, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CONF(jwt_keys_file),
	  "claims: PEM public keys, a JWK Set or an HMAC secret (a private "
	  "file) tokens are verified with; reloaded when it changes" },
	{ "jwt_issuer", SECT_SERVER, T_STRING, "", 0, CONF_JWT_TEXT_MAX - 1,
	  IN_CONF(jwt_issuer), "claims: iss must be this (empty: any)" },
	{ "jwt_audience", SECT_SERVER, T_STRING, "", 0, CONF_JWT_TEXT_MAX - 1,
	  IN_CONF(jwt_audience),
	  "claims: aud must hold this (empty: a token with aud is refused)" },
	{ "jwt_leeway", SECT_SERVER, T_DURATION, "30s", 0,
	  CONF_JWT_LEEWAY_MAX_MS, IN_CONF(jwt_leeway_ms),
	  "claims: clock skew allowed on exp, nbf and iat" },
	{ "jwt_typ", SECT_SERVER, T_STRING, JWT_TYPS_DEFAULT, 1,
	  CONF_JWT_TEXT_MAX - 1, IN_CONF(jwt_typ),
	  "claims: typ values accepted, with or without application/ (any: "
	  "typ not read)" },

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
	  "origin says public), per-credential, anonymous (fetched without "
	  "them), or claims (by verified JWT claims)" },
	{ "credential_header", SECT_ROUTE, T_HEADER, CONF_CREDENTIAL_HEADER, 1,
	  CONF_HEADER_NAME_MAX - 1, IN_ROUTE(credential_header),
	  "per-credential: the request header that holds the credential; "
	  "anonymous: one more header it never sends" },
	{ "credential_cookie", SECT_ROUTE, T_COOKIE, "", 0, CONF_COOKIE_MAX - 1,
	  IN_ROUTE(credential_cookie),
	  "per-credential: this cookie is a credential too (others not sent)" },
	{ "jwt_claims", SECT_ROUTE, T_STRING, "", 0, CONF_CLAIMS_MAX - 1,
	  IN_ROUTE(jwt_claims),
	  "claims: the verified claims keyed, e.g. role tenant_id "
	  "app_metadata.org" },
	{ "jwt_reject", SECT_ROUTE, T_BOOL, "off", 0, 1, IN_ROUTE(jwt_reject),
	  "claims: refuse a request without a valid token (401) instead "
	  "of passing it uncached" },
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
	{ "store_encoding", SECT_ROUTE, T_STRING, "gzip", 1,
	  CONF_CODING_MAX - 1, IN_ROUTE(store_encoding),
	  "identity bodies worth it are stored compressed: gzip, br, zstd, "
	  "or identity (as they came); coded ones are kept as they came" },
	{ "compress_types", SECT_ROUTE, T_STRING, CODEC_COMPRESSIBLE_DEFAULT, 1,
	  CONF_TYPES_MAX - 1, IN_ROUTE(compress_types),
	  "media types compressed on store, comma-separated (type/subtype, "
	  "type/*, */*+suffix; never text/event-stream)" },
	{ "compress_min_bytes", SECT_ROUTE, T_SIZE, "256", 0, 1 * GIB,
	  IN_ROUTE(compress_min_bytes),
	  "shorter identity bodies are stored as they came" },
	{ "upstream", SECT_ROUTE, T_POOL_NAME, "", 0, CONF_POOL_NAME_MAX - 1,
	  IN_ROUTE(upstream), "the [upstream NAME] pool (empty: [upstream])" },
	{ "purge_header", SECT_ROUTE, T_FIELDS, "", 0,
	  CONF_PURGE_HEADER_MAX - 1, IN_ROUTE(purge_header),
	  "a successful write's response names tags to soft-purge in it, "
	  "e.g. Corral-Purge (empty: none)" },
	{ "graphql_purge_lists", SECT_ROUTE, T_BOOL, "off", 0, 1,
	  IN_ROUTE(graphql_purge_lists),
	  "graphql: a mutation also purges the lists of the types it returns" },

	{ "postgres", SECT_CHANGES, T_STRING, "", 0, CONF_CONNINFO_MAX - 1,
	  IN_CHANGES(postgres),
	  "libpq connection string or URI, without the password (needed)" },
	{ "password_file", SECT_CHANGES, T_STRING, "", 0, CONF_PATH_MAX - 1,
	  IN_CHANGES(password_file),
	  "the role's password, read at start and reload; a bare name is in "
	  "$CREDENTIALS_DIRECTORY (empty: libpq's ~/.pgpass or none)" },
	{ "mode", SECT_CHANGES, T_CHANGES_MODE, "replication", 0, 0,
	  IN_CHANGES(mode),
	  "replication (a logical slot) or notify (LISTEN, best effort)" },
	{ "publication", SECT_CHANGES, T_STRING, "", 0, CONF_PG_NAME_MAX - 1,
	  IN_CHANGES(publication),
	  "replication: the publication of the tables (needed)" },
	{ "slot", SECT_CHANGES, T_STRING, "", 0, CONF_PG_NAME_MAX - 1,
	  IN_CHANGES(slot),
	  "replication: the slot, created if missing (empty: corral_NAME)" },
	{ "channel", SECT_CHANGES, T_STRING, "", 0, CONF_PG_NAME_MAX - 1,
	  IN_CHANGES(channel), "notify: the channel (needed)" },
	{ "purge", SECT_CHANGES, T_PURGE, "soft", 0, 0, IN_CHANGES(hard),
	  "soft: stale, refreshed once; hard: deleted" },
	{ "tags.TABLE", SECT_CHANGES, T_TAG_RULE, "", 0,
	  CONF_CHANGES_TAGS_MAX - 1, NOWHERE,
	  "the tags a row change of TABLE purges, from its columns, e.g. "
	  "orders:{id} customers:{customer_id} orders" },
	{ "purge.TABLE", SECT_CHANGES, T_PURGE, "", 0, 0, NOWHERE,
	  "soft or hard for TABLE's tags.TABLE (empty: purge)" },
	{ "broad_tags", SECT_CHANGES, T_STRING, "", 0,
	  CONF_CHANGES_TAGS_MAX - 1, IN_CHANGES(broad_tags),
	  "purged when changes may have been missed, with the rules' own" },
	{ "max_lag", SECT_CHANGES, T_SIZE, "1g", 0, 1024 * GIB,
	  IN_CHANGES(max_lag),
	  "WAL the slot holds unacknowledged past this: /health degraded "
	  "(0: never)" },
	{ "max_lag_time", SECT_CHANGES, T_DURATION, "1m", 0, 24 * MS_HOUR,
	  IN_CHANGES(max_lag_time_ms),
	  "a commit unapplied this long: /health degraded (0: never)" },
	{ "lease", SECT_CHANGES, T_DURATION, "10s", 1 * MS_SECOND,
	  5 * MS_MINUTE, IN_CHANGES(lease_ms),
	  "the leader lease in Redis: another instance leads within it" },
	{ "status_interval", SECT_CHANGES, T_DURATION, "10s", 100,
	  50 * MS_SECOND, IN_CHANGES(status_interval_ms),
	  "replication: standby status updates at least this often" },
};

_Static_assert(ARRAY_LEN(table_keys) == TABLE_NKEYS,
    "TABLE_NKEYS (conf_int.h) counts the rows of table_keys");

static const char *const sect_labels[] = {
	[SECT_SERVER] = "[server]",
	[SECT_REDIS] = "[redis]",
	[SECT_UPSTREAM] = "[upstream]",
	[SECT_POOL] = "[upstream]",
	[SECT_ROUTE] = "[route PREFIX]",
	[SECT_CHANGES] = "[changes NAME]",
};

/* A row's default: its text goes through value_set() as the file's do. */
static void
set_default(const struct key *k, char *base)
{
	char err[MSG_MAX];
	int rc;

	rc = value_set(k, base, k->def, err, sizeof(err));
	assert(rc == 0);
	(void)rc;
}

void
table_route_defaults(struct conf_route *r)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < TABLE_NKEYS; i++)
		if (table_keys[i].sect == SECT_ROUTE)
			set_default(&table_keys[i], (char *)r);
}

/* A [changes] section's keys: the defaults (not the per-table ones). */
void
table_changes_defaults(struct conf_changes *cc)
{
	memset(cc, 0, sizeof(*cc));
	for (size_t i = 0; i < TABLE_NKEYS; i++)
		if (table_keys[i].sect == SECT_CHANGES &&
		    strchr(table_keys[i].name, '.') == NULL)
			set_default(&table_keys[i], (char *)cc);
}

/* A pool's keys: the defaults (a named pool's url has none). */
void
table_pool_defaults(struct conf_pool *p)
{
	for (size_t i = 0; i < TABLE_NKEYS; i++)
		if (table_keys[i].sect == SECT_POOL)
			set_default(&table_keys[i], (char *)p);
}

void
conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < TABLE_NKEYS; i++)
		if (table_keys[i].sect != SECT_ROUTE &&
		    table_keys[i].sect != SECT_POOL &&
		    table_keys[i].sect != SECT_CHANGES)
			set_default(&table_keys[i], (char *)c);
	table_pool_defaults(&c->pools[0]);
	c->npools = 1;
	snprintf(c->upstream_url, sizeof(c->upstream_url), "%s",
	    c->pools[0].servers[0].url);
	table_first_listeners(c);
}

/* The first of listen and of admin_listen, as most of Corral names them. */
void
table_first_listeners(struct conf *c)
{
	snprintf(c->listen_host, sizeof(c->listen_host), "%s",
	    c->listeners[0].host);
	c->listen_port = c->listeners[0].port;
	snprintf(c->admin_host, sizeof(c->admin_host), "%s",
	    c->admin_listener[0].host);
	c->admin_port = c->admin_listener[0].port;
}

/* [upstream] has the keys of every pool too. */
const struct key *
table_find(enum sect sect, const char *name)
{
	for (size_t i = 0; i < TABLE_NKEYS; i++)
		if ((table_keys[i].sect == sect || (sect == SECT_UPSTREAM &&
		    table_keys[i].sect == SECT_POOL)) &&
		    strcmp(table_keys[i].name, name) == 0)
			return &table_keys[i];
	return NULL;
}

/* The one section other than sect that has a key name, or SECT_NONE. */
enum sect
table_home(enum sect sect, const char *name)
{
	enum sect home = SECT_NONE;

	for (size_t i = 0; i < TABLE_NKEYS; i++) {
		const struct key *k = &table_keys[i];

		if (k->sect == sect || strcmp(k->name, name) != 0 ||
		    (sect == SECT_UPSTREAM && k->sect == SECT_POOL))
			continue;
		if (home != SECT_NONE && home != k->sect)
			return SECT_NONE;
		home = k->sect;
	}
	return home;
}

const char *
table_label(enum sect sect)
{
	return sect_labels[sect];
}
