/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_INT_H
#define CONF_CONF_INT_H

/*
 * Inside conf/: what the parts of reading a configuration share. The key
 * table (conf_table.c) is one row per key; the value types (conf_value.c)
 * parse, range-check and format a row's value; the host and address
 * checks (conf_host.c) serve the values once loaded; the loader
 * (conf.c) and the manual (conf_manual.c) read the table. Calls run one
 * way: the loader calls the table, the value types and the host checks;
 * the manual calls the table and the value types; the table calls the
 * value types; the value types call the host checks. Nothing outside
 * conf/ includes it.
 */

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

#define MS_SECOND	INT64_C(1000)
#define MS_MINUTE	(60 * MS_SECOND)
#define MS_HOUR		(60 * MS_MINUTE)
#define KIB		INT64_C(1024)
#define MIB		(1024 * KIB)
#define GIB		(1024 * MIB)

#define MSG_MAX		256	/* one error message, before "file:line: " */
#define TEXT_MAX	32	/* a formatted number */

enum sect {
	SECT_NONE,		/* before the first section header */
	SECT_SERVER,
	SECT_REDIS,
	SECT_UPSTREAM,		/* [upstream] alone */
	SECT_POOL,		/* [upstream] and [upstream NAME] */
	SECT_ROUTE,
	SECT_CHANGES,		/* [changes NAME] */
	SECT_SKIP		/* after a bad header: its keys are ignored */
};

enum type {
	T_HOSTPORT,		/* "host:port": host at off, port at off_port */
	T_LISTEN,		/* "host:port [tls], ...": conf_listen[] at off,
				 * their count at off_port; min..max of them */
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
	T_HEADER,		/* T_STRING: a field name a credential is in */
	T_CHANGES_MODE,		/* enum conf_changes_mode */
	T_PURGE,		/* int: soft 0, hard 1 */
	T_TAG_RULE		/* tags.TABLE, purge.TABLE: conf_changes.c's */
};

/* One key: a row of the table. */
struct key {
	const char	*name;
	enum sect	 sect;
	enum type	 type;
	const char	*def;		/* the default, in the file's syntax */
	int64_t		 min;		/* value range, or length for strings */
	int64_t		 max;
	size_t		 off;		/* in struct conf, conf_pool,
					 * conf_route or conf_changes */
	size_t		 size;
	size_t		 off_port;	/* T_HOSTPORT, T_ADDRESS */
	size_t		 off_path;	/* T_ADDRESS: the unix socket path */
	const char	*help;
};

/* conf_table.c: every key, in the order corral -h and corral.conf(5)
 * list them. */
#define TABLE_NKEYS	112	/* its rows */
extern const struct key table_keys[];

/* The row of name in sect, or NULL ([upstream] has the keys of every
 * pool too). */
const struct key *table_find(enum sect sect, const char *name);
/* The one section other than sect that has a key name, or SECT_NONE. */
enum sect table_home(enum sect sect, const char *name);
/* "[server]", "[route PREFIX]"... as messages and the manual name sect. */
const char *table_label(enum sect sect);
/* A route's keys (r zeroed first), a pool's or a [changes] section's (cc
 * zeroed first): their defaults. */
void	table_route_defaults(struct conf_route *r);
void	table_pool_defaults(struct conf_pool *p);
void	table_changes_defaults(struct conf_changes *cc);
/* listen_host and _port, admin_host and _port: the first of each list. */
void	table_first_listeners(struct conf *c);

/* conf_value.c: parses v for row k and stores it in base (a struct conf,
 * conf_pool, conf_route or conf_changes, as the row's section says). 0,
 * or -1 with the reason in err. */
int	value_set(const struct key *k, char *base, const char *v, char *err,
	    size_t errlen);
/* "soft" 0 or "hard" 1 into *hard. 0, or -1 with the reason in err. */
int	value_purge(const char *v, int *hard, char *err, size_t errlen);
/* A number of k's type, in its units ("0" for no time). */
void	value_format_number(const struct key *k, int64_t v, char *out,
	    size_t outlen);
/* "host:port", or "[host]:port" for an IPv6 address. */
void	value_format_hostport(const char *host, int port, char *out,
	    size_t outlen);

/* conf_host.c: "addr" or "addr/bits", IPv4 or IPv6, into *c. 0 or -1. */
int	host_parse_cidr(const char *item, struct conf_cidr *c);
/* Do listeners on one port with these hosts take the same addresses
 * (the same host, or either a wildcard)? */
int	host_listeners_overlap(const char *a, const char *b);
/* After loading: upstream_authority and forwarded_host, which the keys
 * decide. */
void	host_derive(struct conf *c);

#endif
