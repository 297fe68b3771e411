/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_H
#define CONF_CONF_H

/*
 * Configuration: an INI file read with libinih (conf.c). Every key is one
 * row of a table in conf_table.c (name, type, default, min, max, where it
 * is stored); values are range-checked in one place (conf_value.c) and
 * every error in a file is reported in one run as "file:line: message".
 */

#include <stdint.h>
#include <stdio.h>

#include "common/host.h"
#include "common/log.h"

#define CONF_ROUTES_MAX		64
#define CONF_HOST_MAX		256
#define CONF_PATH_MAX		1024
#define CONF_LISTEN_MAX		4	/* addresses listen names */
#define CONF_URL_MAX		1024
#define CONF_SECRET_MAX		256
#define CONF_PREFIX_MAX		64	/* [redis] prefix */
#define CONF_ROUTE_PREFIX_MAX	256	/* [route PREFIX] */
#define CONF_FIELDS_MAX		128	/* targeted_cache_control */
#define CONF_CODING_MAX		16	/* store_encoding: a coding's name */
#define CONF_TYPES_MAX		512	/* compress_types: media types */
#define CONF_HOSTS_MAX		1024	/* hosts */
#define CONF_STATUS_TTLS_MAX	16	/* entries of ttl_status */
#define CONF_UPSTREAM_HEADERS_MAX 128	/* what a cache entry holds */
#define WORKERS_MAX		64
#define CONF_CIDRS_MAX		64	/* entries of trusted_proxies */
#define CONF_REDIS_ADDRS_MAX	16	/* [redis] address: seeds or sentinels */
#define CONF_NAME_MAX		64	/* [redis] master_name */
#define CONF_POOLS_MAX		16	/* [upstream] and [upstream NAME] */
#define CONF_SERVERS_MAX	16	/* servers of one pool */
#define CONF_SERVER_URL_MAX	256	/* one server's base URL */
#define CONF_POOL_NAME_MAX	32	/* [upstream NAME] */
#define POOL_DEFAULT_NAME	"default"	/* [upstream]'s pool, as /metrics
						 * names it: no [upstream NAME] */
#define CONF_WEIGHT_MAX		100	/* url = ... weight=N */
#define CONF_HEALTH_PATH_MAX	256
#define CONF_QUERY_NAMES_MAX	256	/* key_query, key_ignore_query */
#define CONF_KEY_HEADERS_MAX	16	/* names in key_headers */
#define CONF_COOKIE_MAX		64	/* credential_cookie */
#define CONF_HEADER_NAME_MAX	64	/* credential_header */
#define CONF_CREDENTIAL_HEADER	"Authorization"	/* its default */
#define CONF_KEY_SECRET_MIN	16	/* bytes of key_secret_file */
#define CONF_KEY_SECRET_MAX	1024
#define CONF_CLAIMS_MAX		256	/* jwt_claims */
#define CONF_JWT_TEXT_MAX	256	/* jwt_issuer, jwt_audience, jwt_typ */
#define CONF_JWT_LEEWAY_MAX_MS	300000	/* jwt_leeway: JWT_LEEWAY_MAX s */
#define CONF_CHANGES_MAX	4	/* [changes NAME] sections */
#define CONF_CHANGES_NAME_MAX	32	/* NAME: a-z, 0-9, _ */
#define CONF_CHANGES_RULES_MAX	32	/* tables with tags. or purge. */
#define CONF_CHANGES_TABLE_MAX	128	/* "schema.table" */
#define CONF_CHANGES_TAGS_MAX	512	/* a rule's templates, broad_tags */
#define CONF_PG_NAME_MAX	64	/* a slot, publication or channel */
#define CONF_CONNINFO_MAX	1024	/* [changes] postgres */
#define CONF_PURGE_HEADER_MAX	64	/* [route] purge_header */

/* cache_authorized: what a request with credentials gets. */
enum conf_authz {
	CONF_AUTHZ_OFF,		/* passed, uncached */
	CONF_AUTHZ_ON,		/* one entry for every credential */
	CONF_AUTHZ_CREDENTIAL,	/* per-credential: an entry per credential */
	CONF_AUTHZ_ANONYMOUS,	/* one entry, fetched without credentials */
	CONF_AUTHZ_CLAIMS,	/* claims: an entry per verified claim set */
};

#define CONF_TOKENS_MAX		64	/* admin_token_file: tokens */
#define CONF_TOKEN_MIN		16	/* bytes of one token, at least */
#define CONF_TOKEN_MAX		128	/* ... and at most */

/* [redis] mode: what address names. */
enum redis_mode {
	REDIS_SINGLE,		/* one redis-server */
	REDIS_CLUSTER,		/* seed nodes of a Redis Cluster */
	REDIS_SENTINEL,		/* the sentinels watching master_name */
};

/* One host:port of [redis] address. */
struct conf_hostport {
	char	 host[CONF_HOST_MAX];
	int	 port;
};

/* One address block of trusted_proxies, in network byte order. */
struct conf_cidr {
	int		 family;	/* AF_INET or AF_INET6 */
	unsigned char	 addr[16];
	int		 bits;
};

/* What an admin token may do (admin_token_file). */
enum admin_scope {
	SCOPE_NONE,		/* no token, or not one of the file's */
	SCOPE_READ,		/* GET /stats, /metrics, /entry ... */
	SCOPE_ALL,		/* and every change: purge, refresh ... */
};

/* One token of admin_token_file, NUL-padded to its full size. */
struct conf_token {
	char		 text[CONF_TOKEN_MAX + 1];
	size_t		 len;
	enum admin_scope scope;
};

/* [changes NAME] mode: how the changes are read. */
enum conf_changes_mode {
	CHANGES_MODE_REPLICATION,	/* a logical replication slot */
	CHANGES_MODE_NOTIFY,		/* LISTEN on a channel */
};

/* One table's tags.TABLE and purge.TABLE. */
struct conf_changes_rule {
	char	 table[CONF_CHANGES_TABLE_MAX];	/* "table" or "schema.table" */
	char	 tags[CONF_CHANGES_TAGS_MAX];	/* its templates ("": none
						 * yet, an error once loaded) */
	int	 hard;			/* -1: the section's purge; 0 soft, 1 hard */
	int	 line;			/* where tags. (or purge.) was set */
	int	 purge_line;		/* where purge. was set, or 0 */
};

/* [changes NAME]: a change feed from one PostgreSQL database. */
struct conf_changes {
	char	 name[CONF_CHANGES_NAME_MAX];
	char	 postgres[CONF_CONNINFO_MAX];	/* libpq conninfo, no password */
	char	 password_file[CONF_PATH_MAX];	/* or "" */
	/* Not a key: what password_file holds, read as the file loads. */
	char	 password[CONF_SECRET_MAX];
	int	 mode;			/* enum conf_changes_mode */
	char	 publication[CONF_PG_NAME_MAX];
	char	 slot[CONF_PG_NAME_MAX];	/* corral_NAME once loaded */
	char	 channel[CONF_PG_NAME_MAX];
	int	 hard;			/* purge = hard */
	char	 broad_tags[CONF_CHANGES_TAGS_MAX];
	int64_t	 max_lag;		/* bytes behind: /health degraded (0:
					 * never) */
	int64_t	 max_lag_time_ms;	/* seconds behind: the same */
	int64_t	 lease_ms;		/* the fleet's leader lease */
	int64_t	 status_interval_ms;	/* standby status updates */
	int	 nrules;
	struct conf_changes_rule rules[CONF_CHANGES_RULES_MAX];
	int	 line;			/* where the section starts */
};

/* One "status:duration" of ttl_status. */
struct conf_status_ttl {
	int	 status;
	int64_t	 ttl_ms;
};

/* [upstream] balance: how a pool picks a server. */
enum conf_balance {
	BALANCE_LEAST,		/* fewest requests in flight per weight */
	BALANCE_ROUND_ROBIN,	/* smooth weighted round robin */
};

/* One server of a pool: "http://a:8080 weight=3" in url. */
struct conf_server {
	char	 url[CONF_SERVER_URL_MAX];	/* no trailing '/' */
	int	 weight;			/* 1..CONF_WEIGHT_MAX */
};

/* A pool of servers: [upstream] (the default, name "") or
 * [upstream NAME]; conf_pool.c reads its url and balance. */
struct conf_pool {
	char	 name[CONF_POOL_NAME_MAX];
	int	 nservers;
	struct conf_server servers[CONF_SERVERS_MAX];
	enum conf_balance balance;
	int64_t	 connect_timeout_ms;
	int64_t	 timeout_ms;		/* a request's whole fetch, retry
					 * included */
	int64_t	 first_byte_timeout_ms;	/* one try's wait for its response
					 * to begin (0: timeout's share of a
					 * try with several servers, else
					 * timeout alone) */
	int	 max_requests;		/* origin requests at once, fleet-wide
					 * (0: no limit) */
	int64_t	 queue_timeout_ms;	/* a request waits for a slot */
	int64_t	 slot_lease_ms;		/* a slot's lease in Redis */
	int	 local_share;		/* Redis down: one instance's (0:
					 * max_requests / instances seen) */
	int	 max_requests_per_server;	/* one server's, fleet-wide (0: no
					 * limit) */
	int	 max_fails;		/* failures within fail_timeout ... */
	int64_t	 fail_timeout_ms;	/* ... take a server out this long */
	char	 health_path[CONF_HEALTH_PATH_MAX];	/* "": no probes */
	int64_t	 health_interval_ms;
	int64_t	 health_timeout_ms;
	int	 health_status;		/* what a probe must answer */
	int	 health_rise;		/* passed probes in a row: back in */
	int	 line;			/* where its section starts (0: the
					 * default pool's defaults) */
};

struct conf_route {
	char	 prefix[CONF_ROUTE_PREFIX_MAX];	/* path prefix, starts with '/' */
	int64_t	 ttl_ms;		/* fresh for this long after the fetch */
	int64_t	 swr_ms;		/* stale_while_revalidate */
	int64_t	 lock_ttl_ms;		/* PX of the refresh lock */
	int64_t	 lock_wait_ms;		/* cold-miss wait budget (0: automatic) */
	int64_t	 lock_poll_ms;		/* fallback re-check while waiting */
	int	 cache_authorized;	/* enum conf_authz */
	/* per-credential: the header keyed, and a cookie ("": none) */
	char	 credential_header[CONF_HEADER_NAME_MAX];
	char	 credential_cookie[CONF_COOKIE_MAX];
	/* claims: the claims keyed ("role tenant_id", paths), and whether a
	 * request without a valid token is refused (401) or passed */
	char	 jwt_claims[CONF_CLAIMS_MAX];
	int	 jwt_reject;
	char	 key_ignore_query[CONF_QUERY_NAMES_MAX];	/* "a, utm_*" */
	char	 key_query[CONF_QUERY_NAMES_MAX];	/* "" : every name */
	char	 key_headers[CONF_FIELDS_MAX];	/* field names, ", " between */
	int	 cache_post;		/* POST responses cached, body keyed */
	int	 graphql;		/* ... as GraphQL: queries only */
	int64_t	 post_max_body;		/* [route] max_body_bytes */
	int64_t	 stale_if_error_ms;	/* serve stale this long on upstream errors */
	int64_t	 error_backoff_ms;	/* longest wait between failed refreshes */
	int	 error_backoff_after;	/* failures in a row before it starts */
	int64_t	 hit_for_miss_ms;	/* remember an unshareable key this long */
	int64_t	 ttl_404_ms;		/* store 404s this long (0: not at all) */
	int	 nstatus_ttls;		/* ttl_status */
	struct conf_status_ttl status_ttls[CONF_STATUS_TTLS_MAX];
	int	 max_variants;		/* stored variants of a key (Vary) */
	int	 sort_query;		/* key ignores query parameter order */
	int	 early_refresh;		/* XFetch: refresh before expiry */
	double	 early_refresh_beta;
	int	 origin_cache_control;	/* freshness from the origin's headers */
	char	 targeted_cc[CONF_FIELDS_MAX];	/* field names, ", " between */
	int	 key_host;		/* key on the client's Host, and send it */
	int	 forward_targeted_cc;	/* pass consumed targeted fields on */
	char	 store_encoding[CONF_CODING_MAX];	/* identity bodies stored
						 * in it: gzip, br, zstd, or
						 * identity (as they came) */
	char	 compress_types[CONF_TYPES_MAX];	/* ... of these types */
	int64_t	 compress_min_bytes;	/* ... and at least this long */
	char	 upstream[CONF_POOL_NAME_MAX];	/* its pool ("": the default) */
	int	 upstream_line;		/* where upstream was set */
	/* A response to a successful unsafe request names tags to purge in
	 * this field ("": none). */
	char	 purge_header[CONF_PURGE_HEADER_MAX];
	int	 graphql_purge_lists;	/* a mutation purges its types' lists */
	int	 line;			/* where the section starts */
};

/* One address a listener binds: host:port, over TLS or not. */
struct conf_listen {
	char		 host[CONF_HOST_MAX];
	int		 port;
	int		 tls;
};

struct conf {
	char		 file[CONF_PATH_MAX];

	/* [server] */
	struct conf_listen listeners[CONF_LISTEN_MAX];	/* listen */
	int		 nlisteners;
	struct conf_listen admin_listener[1];		/* admin_listen */
	int		 nadmin_listener;
	/* The first of each, as most of Corral names them. */
	char		 listen_host[CONF_HOST_MAX];
	int		 listen_port;
	char		 admin_host[CONF_HOST_MAX];
	int		 admin_port;
	char		 tls_certificate[CONF_PATH_MAX];	/* "": none */
	char		 tls_key[CONF_PATH_MAX];	/* a secret file's name */
	enum log_level	 log_level;
	enum log_format	 log_format;	/* the error and access logs */
	int64_t		 max_header_bytes;
	int64_t		 max_body_bytes;
	int64_t		 client_timeout_ms;
	int		 max_connections;
	int		 admin_max_connections;	/* each worker's admin listener */
	int		 workers;		/* 0: one per core */
	int64_t		 l1_max_bytes;
	int64_t		 l2_max_bytes;
	int64_t		 shutdown_timeout_ms;
	char		 access_log[CONF_PATH_MAX];	/* path, "-" or "off" */
	char		 error_log[CONF_PATH_MAX];	/* path or "-" (stderr) */
	char		 pid_file[CONF_PATH_MAX];	/* or "": none */
	struct conf_cidr trusted_proxies[CONF_CIDRS_MAX];
	int		 ntrusted_proxies;
	char		 admin_token_file[CONF_PATH_MAX];	/* "": no tokens */
	struct conf_token admin_tokens[CONF_TOKENS_MAX];	/* read from it */
	int		 nadmin_tokens;
	struct conf_cidr admin_allow[CONF_CIDRS_MAX];	/* none: any peer */
	int		 nadmin_allow;
	char		 admin_hosts[CONF_HOSTS_MAX];	/* more admin names */
	char		 hosts[CONF_HOSTS_MAX];	/* allowed Host names, or "" */
	char		 canonical_host[HOST_TEXT_MAX];	/* normal form, or "" */
	/* X-Forwarded-Host of routes without key_host: canonical_host, else
	 * the first name in hosts, else "" (none is sent). */
	char		 forwarded_host[HOST_TEXT_MAX];
	char		 key_secret_file[CONF_PATH_MAX];	/* or "" */
	/* cache_authorized = claims: the keys tokens are verified with
	 * (reloaded by each worker on SIGHUP and when the file changes),
	 * and what their claims must say. */
	char		 jwt_keys_file[CONF_PATH_MAX];	/* or "" */
	char		 jwt_issuer[CONF_JWT_TEXT_MAX];	/* "": any */
	char		 jwt_audience[CONF_JWT_TEXT_MAX];	/* "": none */
	char		 jwt_typ[CONF_JWT_TEXT_MAX];	/* accepted typs */
	int64_t		 jwt_leeway_ms;
	/* Not a key: what key_secret_file holds, read as the file loads. */
	unsigned char	 key_secret[CONF_KEY_SECRET_MAX];
	size_t		 key_secret_len;

	/* [redis] */
	enum redis_mode	 redis_mode;
	char		 redis_host[CONF_HOST_MAX];	/* the first address;
							 * empty when unix */
	int		 redis_port;
	char		 redis_unix[CONF_PATH_MAX];	/* empty when TCP */
	int		 redis_naddrs;			/* TCP addresses listed */
	struct conf_hostport redis_addrs[CONF_REDIS_ADDRS_MAX];
	char		 redis_master_name[CONF_NAME_MAX];	/* sentinel */
	char		 redis_username[CONF_SECRET_MAX];	/* ACL user, or "" */
	char		 redis_password[CONF_SECRET_MAX];	/* or the file's */
	char		 redis_password_file[CONF_PATH_MAX];
	char		 redis_sentinel_username[CONF_SECRET_MAX];
	char		 redis_sentinel_password[CONF_SECRET_MAX];
	char		 redis_sentinel_password_file[CONF_PATH_MAX];
	int		 redis_db;
	char		 redis_prefix[CONF_PREFIX_MAX];
	int64_t		 redis_timeout_ms;

	/* [upstream]: pools[0] is the default pool, [upstream NAME] the
	 * others. */
	int		 npools;
	struct conf_pool pools[CONF_POOLS_MAX];
	/* The default pool's first server: the host part of cache keys. */
	char		 upstream_url[CONF_URL_MAX];	/* no trailing '/' */
	char		 upstream_authority[CONF_HOST_MAX + 8];	/* keys' host */
	int64_t		 stream_window;	/* bytes queued for a streamed client */
	int64_t		 max_entry_bytes;
	int		 max_upstream_headers;	/* more: the fetch fails */

	int		 nroutes;
	struct conf_route routes[CONF_ROUTES_MAX];

	/* [changes NAME] */
	int		 nchanges;
	struct conf_changes changes[CONF_CHANGES_MAX];

	/* Not a key: after a reload, the restart-only keys whose value in
	 * the file is not the running one (proxy_life.c names the bits). */
	uint32_t	 restart_pending;
};

/* Fills c with every default and no routes. */
void	conf_defaults(struct conf *c);

/*
 * Loads path into c (starting from the defaults). Every error is written
 * to errs as "path:line: message\n". Returns the number of errors, 0 on
 * success; c is only meaningful when 0 is returned.
 */
int	conf_load(struct conf *c, const char *path, FILE *errs);

/* How long a response with this status is stored on route r: its
 * ttl_status entry (0: not stored), ttl_404, or -1 when not listed. */
int64_t	conf_status_ttl(const struct conf_route *r, int status);

/* The keys a reload cannot change ("section.key"; conf_restart.c): a
 * reload keeps their running values until a restart. */
#define CONF_RESTART_KEYS	15
extern const char *const conf_restart_keys[CONF_RESTART_KEYS];
/* Is section's ("server") key name one of them? */
int	conf_needs_restart(const char *section, const char *name);
/* The names ("server.listen", "redis.prefix") of the keys whose change in
 * the file waits for a restart (c->restart_pending), into names (room for
 * CONF_RESTART_KEYS); their number. */
int	conf_restart_pending(const struct conf *c, const char *names[]);
/* The same names as one line, ", " between them ("" when none). */
void	conf_restart_pending_text(const struct conf *c, char *out,
	    size_t outlen);

/* The i-th warning about a loaded configuration (allowed, but rarely
 * meant) as "file:line: warning: ..." into out: 0, or -1 past the last. */
int	conf_warning(const struct conf *c, int i, char *out, size_t outlen);

/* The route with the longest prefix of path, or NULL. */
const struct conf_route *conf_route_match(const struct conf *c, const char *path);
/* May a request name this host (RFC 9110 7.2 host[:port])? When hosts
 * is empty, any name: with any port, or for a key_host route (keyed) only
 * with none, :80 or the listen port. Else one of its patterns must allow
 * it (see common/host.h: a name without a port allows those three). */
int	conf_host_allowed(const struct conf *c, const char *host, int keyed);
/* Is addr (a numeric IPv4 or IPv6 address) in trusted_proxies? */
int	conf_trusted_proxy(const struct conf *c, const char *addr);
/* Is addr (numeric; an IPv4-mapped IPv6 address counts as its IPv4 one)
 * in the n blocks of list? */
int	conf_cidrs_match(const struct conf_cidr *list, int n, const char *addr);

/*
 * conf_admin.c: admin_token_file, read when the configuration is loaded:
 * one token a line, alone (every scope) or followed by "read"; blank
 * lines and '#' comments. A file that group or others may read or write,
 * or a bad line, is an error ("file:line: what", never the token). line
 * is where the key was set. Returns the number of errors.
 */
int	conf_tokens_load(struct conf *c, const char *conf_path, int line,
	    FILE *errs);
/* The scope of the token (len bytes at s), compared with every token of
 * the file in constant time; SCOPE_NONE if none matches. */
enum admin_scope conf_token_scope(const struct conf *c, const char *s,
	    size_t len);
/* The index of the route with this prefix in c, or -1. */
int	conf_route_index(const struct conf *c, const char *prefix);

/*
 * conf_jwt.c: jwt_keys_file loaded as a worker will load it (its format
 * told by its text), and jwt_typ checked; line is where jwt_keys_file was
 * set (0: not set), typ_line jwt_typ's. Errors as "file:line: what".
 * Returns the number of errors.
 */
int	conf_jwt_check(const struct conf *c, const char *conf_path, int line,
	    int typ_line, FILE *errs);
/* The path jwt_keys_file names (conf_secret.h: an absolute path or a
 * systemd credential) and the secrets it may hold (enum jwt_secrets). 0,
 * or -1 with why in err. */
int	conf_jwt_keys_path(const struct conf *c, char *path, size_t pathlen,
	    int *allow, char *err, size_t errlen);
/* The route checks of cache_authorized = claims: 0, or -1 with why. */
int	conf_jwt_check_route(const struct conf *c, const struct conf_route *r,
	    char *err, size_t errlen);
/* conf_changes.c: the section of that name, or NULL. */
const struct conf_changes *conf_changes_find(const struct conf *c,
	    const char *name);

/* conf_pool.c: the pool named name ("" or NULL: the default), or NULL. */
const struct conf_pool *conf_pool_find(const struct conf *c, const char *name);
/* The longest timeout of any pool. */
int64_t	conf_timeout_max(const struct conf *c);
/* The pool a route's requests go to (the default if its name is gone). */
const struct conf_pool *conf_route_pool(const struct conf *c,
	    const struct conf_route *r);

/* A reference of every key, its default, range and meaning: a table for
 * corral -h, or man(7) paragraphs for corral.conf(5), one .SS a section. */
enum conf_dump {
	CONF_DUMP_TEXT,
	CONF_DUMP_MAN
};
void	conf_dump_keys(FILE *out, enum conf_dump how);

#endif
