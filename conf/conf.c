/* SPDX-License-Identifier: MIT */
/*
 * The configuration file's loader.
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
 * Every key is one row of the key table (conf_table.c); on_key() finds
 * its row and value_set() (conf_value.c) parses the value. Once the whole
 * file is read, the check_*() functions look at what keys allow together.
 * Last come the questions the proxy asks of a loaded configuration's
 * routes (conf_route_match() and after).
 */

#include "conf/conf.h"
#include "conf/conf_int.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <ini.h>

#include "codec/codec.h"
#include "common/util.h"
#include "conf/conf_changes.h"
#include "conf/conf_key.h"
#include "conf/conf_pool.h"
#include "conf/conf_secret.h"
#include "conf/conf_show.h"

#define LINE_BUF	1024	/* bytes of a line kept (inih takes fewer) */
#define SECTION_MAX	(CONF_ROUTE_PREFIX_MAX + 16)

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
	int		 changes;		/* its index, for SECT_CHANGES */
	int		 set_line[TABLE_NKEYS];	/* where each key was set */
	char		 refused[TABLE_NKEYS];	/* its value was bad */
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

/* Where a key was set (0 if not), or -1 if its value was refused. */
static int
line_of(const struct loader *ld, enum sect sect, const char *name)
{
	const struct key *k = table_find(sect, name);

	assert(k != NULL);
	return ld->refused[k - table_keys] ? -1 :
	    ld->set_line[k - table_keys];
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

/* Can a request's path start with prefix ('/', ASCII, no spaces or
 * control characters, short enough)? 0, or -1 reported. */
static int
check_prefix(struct loader *ld, const char *prefix, size_t len)
{
	char shown[CONF_SHOW_BUF];

	conf_show(prefix, len, shown);
	if (len == 0) {
		report(ld, ld->lineno, "[route] needs a path prefix, such as "
		    "[route /api/]");
		return -1;
	}
	if (prefix[0] != '/') {
		report(ld, ld->lineno, "route prefix \"%s\" must start with "
		    "'/'", shown);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (isspace((unsigned char)prefix[i]) ||
		    iscntrl((unsigned char)prefix[i])) {
			report(ld, ld->lineno, "route prefix \"%s\" must not "
			    "contain spaces or control characters", shown);
			return -1;
		}
		/* A request's path never holds one (the door refuses it):
		 * such a route could match nothing. */
		if ((unsigned char)prefix[i] > 0x7e) {
			report(ld, ld->lineno, "route prefix \"%s\" must be "
			    "ASCII, as a request's path is: percent-encode it "
			    "(/caf%%C3%%A9/)", shown);
			return -1;
		}
	}
	if (len >= CONF_ROUTE_PREFIX_MAX) {
		report(ld, ld->lineno, "route prefix is longer than %d "
		    "characters", CONF_ROUTE_PREFIX_MAX - 1);
		return -1;
	}
	return 0;
}

/* [route PREFIX]: a new route, with every default, unless the prefix is
 * bad, taken, or one too many. */
static void
begin_route(struct loader *ld, const char *prefix, size_t len)
{
	struct conf *c = ld->c;
	struct conf_route *r;
	char shown[CONF_SHOW_BUF];

	if (check_prefix(ld, prefix, len) == -1)
		return;
	for (int i = 0; i < c->nroutes; i++) {
		if (strlen(c->routes[i].prefix) == len &&
		    memcmp(c->routes[i].prefix, prefix, len) == 0) {
			report(ld, ld->lineno, "duplicate route [route %s] "
			    "(first on line %d)", conf_show(prefix, len, shown),
			    c->routes[i].line);
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
	table_route_defaults(r);
	memcpy(r->prefix, prefix, len);
	r->prefix[len] = '\0';
	r->line = ld->lineno;
	for (size_t i = 0; i < TABLE_NKEYS; i++) {
		if (table_keys[i].sect == SECT_ROUTE) {
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
		table_pool_defaults(&ld->c->pools[i]);
		ld->c->pools[i].nservers = 0;	/* url is a must */
	} else if (ld->c->pools[0].line == 0) {
		ld->c->pools[0].line = ld->lineno;
	}
	for (size_t k = 0; k < TABLE_NKEYS; k++) {
		if (table_keys[k].sect == SECT_POOL) {
			ld->set_line[k] = 0;
			ld->refused[k] = 0;
		}
	}
	ld->pool = i;
	ld->sect = i > 0 ? SECT_POOL : SECT_UPSTREAM;
}

/* [changes NAME]: its keys go in a new section, with every default. */
static void
begin_changes(struct loader *ld, const char *name, size_t len)
{
	char err[MSG_MAX];
	int i;

	if ((i = conf_changes_begin(ld->c, name, len, ld->lineno, err,
	    sizeof(err))) == -1) {
		report(ld, ld->lineno, "%s", err);
		return;
	}
	for (size_t k = 0; k < TABLE_NKEYS; k++) {
		if (table_keys[k].sect == SECT_CHANGES) {
			ld->set_line[k] = 0;
			ld->refused[k] = 0;
		}
	}
	ld->changes = i;
	ld->sect = SECT_CHANGES;
}

/* The ']' of a "[...]" line, or NULL, reported, when it has none or more
 * than a comment follows it. */
static const char *
header_end(struct loader *ld, const char *s)
{
	char shown[CONF_SHOW_BUF];
	const char *end, *rest;

	end = find_sep(s + 1, "]");
	if (*end != ']') {
		report(ld, ld->lineno, "syntax error: section header \"%s\" "
		    "has no closing ']'", conf_show(s, text_len(s), shown));
		return NULL;
	}
	for (rest = end + 1; isspace((unsigned char)*rest); rest++)
		;
	if (*rest != '\0' && *rest != ';' && *rest != '#') {
		report(ld, ld->lineno, "syntax error: unexpected \"%s\" after "
		    "the section header", conf_show(rest, text_len(rest), shown));
		return NULL;
	}
	return end;
}

/* Is the header's first word (from in, up to end) word? Then *arg is the
 * rest, past the spaces. */
static int
header_word(const char *in, const char *end, const char *word,
    const char **arg)
{
	const char *word_end = in;

	while (word_end < end && !isspace((unsigned char)*word_end))
		word_end++;
	if ((size_t)(word_end - in) != strlen(word) ||
	    memcmp(in, word, strlen(word)) != 0)
		return 0;
	for (*arg = word_end; *arg < end && isspace((unsigned char)**arg);
	    (*arg)++)
		;
	return 1;
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
	const char *in, *end, *arg;
	size_t len;

	ld->sect = SECT_SKIP;
	if ((end = header_end(ld, s)) == NULL)
		return;
	for (in = s + 1; in < end && isspace((unsigned char)*in); in++)
		;
	while (end > in && isspace((unsigned char)end[-1]))
		end--;
	len = (size_t)(end - in);
	snprintf(ld->section, sizeof(ld->section), "%.*s", (int)len, in);

	if (header_word(in, end, "route", &arg)) {
		begin_route(ld, arg, (size_t)(end - arg));
		return;
	}
	if (header_word(in, end, "upstream", &arg)) {
		begin_pool(ld, arg, (size_t)(end - arg));
		return;
	}
	if (header_word(in, end, "changes", &arg)) {
		begin_changes(ld, arg, (size_t)(end - arg));
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
	    "[redis], [upstream], [upstream NAME], [route PREFIX] or "
	    "[changes NAME])", conf_show(in, len, shown));
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
 * Where the value from p to end stops: at a '#' after whitespace, which
 * starts a comment as inih takes " ;" (and both start one at the head of a
 * line), so that "health_path = /health # probe" is /health, in every key
 * alike. The whitespace before it goes too.
 */
static const char *
before_comment(const char *p, const char *end)
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

/*
 * The ini_reader: hands inih the next key line (as "name = value\n",
 * unindented) or an empty line in place of anything else, having reported
 * whatever is wrong with it.
 */
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
	len = (size_t)(before_comment(sep + 1, s + len) - s);
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

/* store_encoding names a coding; compress_types lists media types. */
static void
check_coding(struct loader *ld, const struct key *k)
{
	const struct conf_route *r = &ld->c->routes[ld->route];
	char err[MSG_MAX];

	if (k->sect != SECT_ROUTE || ld->refused[k - table_keys])
		return;
	if (strcmp(k->name, "store_encoding") == 0 &&
	    codec_token(r->store_encoding, strlen(r->store_encoding)) ==
	    CODING_UNKNOWN)
		report(ld, ld->lineno, "store_encoding: \"%s\" is not gzip, "
		    "br, zstd or identity", r->store_encoding);
	if (strcmp(k->name, "compress_types") == 0 &&
	    codec_types_valid(r->compress_types, err, sizeof(err)) == -1)
		report(ld, ld->lineno, "compress_types: %s", err);
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

/* A key outside any section, or not one of its section's. */
static void
misplaced(struct loader *ld, const char *name)
{
	enum sect home = table_home(ld->sect, name);

	if (ld->sect == SECT_NONE && home != SECT_NONE)
		report(ld, ld->lineno, "key \"%s\" is outside any section (it "
		    "belongs in %s)", name, table_label(home));
	else if (ld->sect == SECT_NONE)
		report(ld, ld->lineno, "key \"%s\" is outside any section",
		    name);
	else if (home != SECT_NONE)
		report(ld, ld->lineno, "unknown key \"%s\" in [%s] (it belongs "
		    "in %s)", name, ld->section, table_label(home));
	else
		report(ld, ld->lineno, "unknown key \"%s\" in [%s]", name,
		    ld->section);
}

/* Where k's value goes: the current route, pool or [changes] section, or
 * the configuration itself. */
static char *
key_base(struct loader *ld, const struct key *k)
{
	switch (k->sect) {
	case SECT_ROUTE:
		return (char *)&ld->c->routes[ld->route];
	case SECT_POOL:
		return (char *)&ld->c->pools[ld->pool];
	case SECT_CHANGES:
		return (char *)&ld->c->changes[ld->changes];
	default:
		return (char *)ld->c;
	}
}

/* The ini_handler, for every key line. */
static int
on_key(void *user, const char *section, const char *name, const char *value)
{
	struct loader *ld = user;
	const struct key *k;
	char err[MSG_MAX];
	int first;

	(void)section;		/* ours is ld->section: inih cuts it short */
	if (ld->sect == SECT_SKIP)
		return 1;
	if (ld->sect == SECT_CHANGES && conf_changes_table_key(
	    &ld->c->changes[ld->changes], name, value, ld->lineno, &first, err,
	    sizeof(err))) {
		if (first == -1)
			report(ld, ld->lineno, "%s: %s", name, err);
		return 1;
	}
	if (ld->sect == SECT_NONE || (k = table_find(ld->sect, name)) == NULL) {
		misplaced(ld, name);
		return 1;
	}
	if ((first = ld->set_line[k - table_keys]) != 0) {
		report(ld, ld->lineno, "duplicate key \"%s\" (first set on "
		    "line %d)", name, first);
		return 1;
	}
	ld->set_line[k - table_keys] = ld->lineno;
	if (k->type == T_POOL_NAME)
		ld->c->routes[ld->route].upstream_line = ld->lineno;
	if (value_set(k, key_base(ld, k), value, err, sizeof(err)) == -1) {
		report(ld, ld->lineno, "%s: %s", k->name, err);
		ld->refused[k - table_keys] = 1;
	}
	check_query_rules(ld, k);
	check_coding(ld, k);
	return 1;
}

/* Two of listen's addresses, or one and admin_listen, that are one. */
static int
same_listener(const struct conf_listen *a, const struct conf_listen *b)
{
	return a->port == b->port && host_listeners_overlap(a->host, b->host);
}

/* admin_listen must not be (or overlap) a public listen address, nor
 * listen's addresses one another. */
static void
check_overlaps(struct loader *ld)
{
	const struct conf *c = ld->c;
	const struct conf_listen *adm = &c->admin_listener[0];
	char pub[TEXT_MAX + CONF_HOST_MAX], shown[TEXT_MAX + CONF_HOST_MAX];
	int pline, aline;

	pline = line_of(ld, SECT_SERVER, "listen");
	aline = line_of(ld, SECT_SERVER, "admin_listen");
	for (int i = 0; i < c->nlisteners; i++) {
		const struct conf_listen *l = &c->listeners[i];

		value_format_hostport(l->host, l->port, pub, sizeof(pub));
		for (int j = 0; j < i; j++)
			if (same_listener(l, &c->listeners[j]))
				report(ld, pline, "listen: %s is named twice",
				    pub);
		if (pline == -1 || aline == -1 || !same_listener(l, adm))
			continue;
		value_format_hostport(adm->host, adm->port, shown,
		    sizeof(shown));
		if (aline != 0 && pline != 0)
			report(ld, aline, "admin_listen: %s conflicts with "
			    "listen %s (line %d); the admin port must not be "
			    "the public one", shown, pub, pline);
		else if (aline != 0)
			report(ld, aline, "admin_listen: %s conflicts with "
			    "listen %s (the default); the admin port must not "
			    "be the public one", shown, pub);
		else
			report(ld, pline, "listen: %s conflicts with "
			    "admin_listen %s (the default); set admin_listen "
			    "to another address", pub, shown);
	}
}

/* A tls listener needs a certificate and its key; and they are for one. */
static void
check_tls(struct loader *ld)
{
	const struct conf *c = ld->c;
	int tls = c->admin_listener[0].tls, line;

	for (int i = 0; i < c->nlisteners; i++)
		tls |= c->listeners[i].tls;
	if (tls && (c->tls_certificate[0] == '\0' || c->tls_key[0] == '\0')) {
		line = line_of(ld, SECT_SERVER, c->admin_listener[0].tls ?
		    "admin_listen" : "listen");
		report(ld, line > 0 ? line : 0, "a tls listener needs "
		    "tls_certificate and tls_key in [server]");
	}
	if (!tls && (c->tls_certificate[0] != '\0' ||
	    c->tls_key[0] != '\0'))
		report(ld, line_of(ld, SECT_SERVER, c->tls_certificate[0] !=
		    '\0' ? "tls_certificate" : "tls_key"), "no listener is "
		    "tls (\"listen = 0.0.0.0:8443 tls\"): the certificate "
		    "would serve nothing");
}

static void
check_listeners(struct loader *ld)
{
	table_first_listeners(ld->c);
	check_overlaps(ld);
	check_tls(ld);
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
	ld.nerr += conf_changes_check(c, path, errs);
	check_secrets(&ld);
	check_keys(&ld);
	ld.nerr += conf_jwt_check(c, path, line_of(&ld, SECT_SERVER,
	    "jwt_keys_file"), line_of(&ld, SECT_SERVER, "jwt_typ"), errs);
	if (line_of(&ld, SECT_SERVER, "admin_token_file") != -1)
		ld.nerr += conf_tokens_load(c, path, line_of(&ld, SECT_SERVER,
		    "admin_token_file"), errs);
	host_derive(c);

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
