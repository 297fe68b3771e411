/* SPDX-License-Identifier: MIT */
/*
 * The [changes NAME] sections of a configuration: their headers, the
 * per-table keys (tags.TABLE and purge.TABLE, a rule per table), and the
 * checks that need a whole section (postgres is there and holds no
 * password, the password file is private, what each mode needs, the
 * names PostgreSQL will see). What only libpq can say of the connection
 * string, and the rules' templates, are the change feed's own checks
 * (changes/changes.h), which the proxy runs on the loaded file.
 *
 * Called by the loader (conf.c); calls the table (its defaults), the
 * value types (purge) and the secret files.
 */

#include "conf/conf_changes.h"
#include "conf/conf_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "conf/conf_secret.h"
#include "conf/conf_show.h"

#define SLOT_PREFIX	"corral_"	/* the default slot: corral_NAME */
#define TAGS_KEY	"tags."
#define PURGE_KEY	"purge."
#define PG_IDENT_MAX	(CONF_PG_NAME_MAX - 1)	/* PostgreSQL's NAMEDATALEN - 1 */
#define TAG_MAX		128	/* bytes of a tag (cache.h's CACHE_TAG_MAX) */

_Static_assert(sizeof(SLOT_PREFIX) - 1 + CONF_CHANGES_NAME_MAX <=
    CONF_PG_NAME_MAX, "corral_NAME fits a slot name");

/* a-z, 0-9 and _ (upper: A-Z too), 1 to max bytes of s (len). */
static int
plain_name(const char *s, size_t len, size_t max, int upper)
{
	if (len == 0 || len > max)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!(islower(ch) || isdigit(ch) || ch == '_' ||
		    (upper && isupper(ch))))
			return 0;
	}
	return 1;
}

int
conf_changes_begin(struct conf *c, const char *name, size_t len, int line,
    char *err, size_t errlen)
{
	char shown[CONF_SHOW_BUF];
	struct conf_changes *cc;

	conf_show(name, len, shown);
	if (!plain_name(name, len, CONF_CHANGES_NAME_MAX - 1, 0)) {
		snprintf(err, errlen, "[changes] needs a name of 1 to %d of "
		    "a-z, 0-9 and _, not \"%s\" (the slot's default is "
		    SLOT_PREFIX "NAME)", CONF_CHANGES_NAME_MAX - 1, shown);
		return -1;
	}
	for (int i = 0; i < c->nchanges; i++) {
		if (strlen(c->changes[i].name) == len &&
		    memcmp(c->changes[i].name, name, len) == 0) {
			snprintf(err, errlen, "duplicate section [changes %s] "
			    "(first on line %d)", shown, c->changes[i].line);
			return -1;
		}
	}
	if (c->nchanges == CONF_CHANGES_MAX) {
		snprintf(err, errlen, "too many [changes] sections (at most "
		    "%d)", CONF_CHANGES_MAX);
		return -1;
	}
	cc = &c->changes[c->nchanges];
	table_changes_defaults(cc);
	memcpy(cc->name, name, len);
	cc->name[len] = '\0';
	cc->line = line;
	return c->nchanges++;
}

/* "table" or "schema.table", each part a PostgreSQL name as written
 * unquoted (its letters as they are in the catalog). */
static int
table_name(const char *t)
{
	const char *dot = strchr(t, '.');
	size_t len = strlen(t);

	if (dot == NULL)
		return plain_name(t, len, PG_IDENT_MAX, 1);
	return plain_name(t, (size_t)(dot - t), PG_IDENT_MAX, 1) &&
	    plain_name(dot + 1, len - (size_t)(dot - t) - 1, PG_IDENT_MAX, 1);
}

/* The rule of table, made if new. NULL with err when there is no room. */
static struct conf_changes_rule *
rule_of(struct conf_changes *cc, const char *table, int line, char *err,
    size_t errlen)
{
	struct conf_changes_rule *r;

	for (int i = 0; i < cc->nrules; i++)
		if (strcmp(cc->rules[i].table, table) == 0)
			return &cc->rules[i];
	if (cc->nrules == CONF_CHANGES_RULES_MAX) {
		snprintf(err, errlen, "at most %d tables have rules",
		    CONF_CHANGES_RULES_MAX);
		return NULL;
	}
	r = &cc->rules[cc->nrules++];
	memset(r, 0, sizeof(*r));
	snprintf(r->table, sizeof(r->table), "%s", table);
	r->hard = -1;
	r->line = line;
	return r;
}

static int
set_tags(struct conf_changes_rule *r, const char *value, int line, char *err,
    size_t errlen)
{
	if (r->tags[0] != '\0') {
		snprintf(err, errlen, "duplicate key \"" TAGS_KEY "%s\" (first "
		    "set on line %d)", r->table, r->line);
		return -1;
	}
	if (strlen(value) >= sizeof(r->tags) || value[strspn(value,
	    " \t")] == '\0') {
		snprintf(err, errlen, "must be 1 to %zu characters of tag "
		    "templates", sizeof(r->tags) - 1);
		return -1;
	}
	snprintf(r->tags, sizeof(r->tags), "%s", value);
	r->line = line;
	return 0;
}

static int
set_purge(struct conf_changes_rule *r, int hard, int line, char *err,
    size_t errlen)
{
	if (r->purge_line != 0) {
		snprintf(err, errlen, "duplicate key \"" PURGE_KEY "%s\" "
		    "(first set on line %d)", r->table, r->purge_line);
		return -1;
	}
	r->hard = hard;
	r->purge_line = line;
	return 0;
}

int
conf_changes_table_key(struct conf_changes *cc, const char *name,
    const char *value, int line, int *rc, char *err, size_t errlen)
{
	int tags = strncmp(name, TAGS_KEY, strlen(TAGS_KEY)) == 0;
	const char *table;
	struct conf_changes_rule *r;
	char shown[CONF_SHOW_BUF];
	int hard = 0;

	if (!tags && strncmp(name, PURGE_KEY, strlen(PURGE_KEY)) != 0)
		return 0;
	table = name + strlen(tags ? TAGS_KEY : PURGE_KEY);
	*rc = -1;
	if (!table_name(table)) {
		snprintf(err, errlen, "\"%s\" is not \"table\" or "
		    "\"schema.table\" (names of a-z, A-Z, 0-9 and _, at most "
		    "%d each)", conf_show(table, strlen(table), shown),
		    PG_IDENT_MAX);
		return 1;
	}
	if ((!tags && value_purge(value, &hard, err, errlen) == -1) ||
	    (r = rule_of(cc, table, line, err, errlen)) == NULL)
		return 1;
	*rc = tags ? set_tags(r, value, line, err, errlen) :
	    set_purge(r, hard, line, err, errlen);
	return 1;
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

/*
 * Does a libpq connection string (keywords or a URI) hold a password? A
 * "password" keyword, a URI's user:password@ or its ?password=.
 */
static int
holds_password(const char *s)
{
	const char *p, *at, *slash;

	if (strncasecmp(s, "postgresql://", 13) == 0 ||
	    strncasecmp(s, "postgres://", 11) == 0) {
		p = strstr(s, "://") + 3;
		at = strchr(p, '@');
		slash = strchr(p, '/');
		if (at != NULL && (slash == NULL || at < slash) &&
		    memchr(p, ':', (size_t)(at - p)) != NULL)
			return 1;
		return strstr(s, "password=") != NULL;
	}
	for (p = s; (p = strstr(p, "password")) != NULL; p += 8) {
		const char *q = p + 8;

		if (p > s && !isspace((unsigned char)p[-1]))
			continue;
		q += strspn(q, " \t");
		if (*q == '=')
			return 1;
	}
	return 0;
}

/* Tags of broad_tags: each at most TAG_MAX bytes, printable. */
static int
bad_tags(const char *s)
{
	for (const char *p = s; *p != '\0';) {
		size_t n = strcspn(p, " \t");

		if (n > TAG_MAX)
			return 1;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x21 ||
			    (unsigned char)p[i] > 0x7e)
				return 1;
		p += n;
		p += strspn(p, " \t");
	}
	return 0;
}

/* The connection: postgres, without a password; password_file read. */
static int
check_connection(struct conf_changes *cc, const char *path, FILE *errs,
    const char *label)
{
	char err[MSG_MAX];
	int nerr = 0;

	if (cc->postgres[0] == '\0')
		nerr += report(path, errs, cc->line, "%s needs postgres (a "
		    "libpq connection string, e.g. host=db.internal "
		    "dbname=app user=corral_feed)", label);
	else if (holds_password(cc->postgres))
		nerr += report(path, errs, cc->line, "%s: postgres holds a "
		    "password: put it in password_file (a file only Corral "
		    "may read, or a systemd credential)", label);
	if (cc->password_file[0] != '\0' && secret_read(cc->password_file,
	    cc->password, sizeof(cc->password), err, sizeof(err)) == -1)
		nerr += report(path, errs, cc->line, "%s: password_file: %s",
		    label, err);
	return nerr;
}

/* What each mode needs, the names PostgreSQL sees, the default slot. */
static int
check_mode(struct conf_changes *cc, const char *path, FILE *errs,
    const char *label)
{
	int nerr = 0, repl = cc->mode == CHANGES_MODE_REPLICATION;
	const char *need = repl ? "publication" : "channel";
	const char *name = repl ? cc->publication : cc->channel;
	const char *other = repl ? cc->channel : cc->publication[0] != '\0' ?
	    "publication" : cc->slot[0] != '\0' ? "slot" : "";

	if (name[0] == '\0')
		nerr += report(path, errs, cc->line, "%s: mode = %s needs %s",
		    label, repl ? "replication" : "notify", need);
	else if (!plain_name(name, strlen(name), PG_IDENT_MAX, 1))
		nerr += report(path, errs, cc->line, "%s: %s \"%s\" must be "
		    "a-z, A-Z, 0-9 and _", label, need, name);
	if (other[0] != '\0')
		nerr += report(path, errs, cc->line, "%s: %s only with mode = "
		    "%s", label, repl ? "channel" : other, repl ? "notify" :
		    "replication");
	if (cc->slot[0] == '\0') {
		memcpy(cc->slot, SLOT_PREFIX, strlen(SLOT_PREFIX));
		memcpy(cc->slot + strlen(SLOT_PREFIX), cc->name,
		    strlen(cc->name) + 1);	/* NAME_MAX + 7 < PG_NAME_MAX */
	} else if (!plain_name(cc->slot, strlen(cc->slot), PG_IDENT_MAX, 0))
		nerr += report(path, errs, cc->line, "%s: slot \"%s\" must be "
		    "a-z, 0-9 and _ (PostgreSQL's slot names)", label,
		    cc->slot);
	return nerr;
}

int
conf_changes_check(struct conf *c, const char *path, FILE *errs)
{
	char label[CONF_CHANGES_NAME_MAX + 16];
	int nerr = 0;

	for (int i = 0; i < c->nchanges; i++) {
		struct conf_changes *cc = &c->changes[i];

		snprintf(label, sizeof(label), "[changes %s]", cc->name);
		nerr += check_connection(cc, path, errs, label);
		nerr += check_mode(cc, path, errs, label);
		if (bad_tags(cc->broad_tags))
			nerr += report(path, errs, cc->line, "%s: broad_tags: "
			    "tags of at most %d printable bytes, separated by "
			    "spaces", label, TAG_MAX);
		for (int k = 0; k < cc->nrules; k++)
			if (cc->rules[k].tags[0] == '\0')
				nerr += report(path, errs, cc->rules[k].line,
				    "%s: " PURGE_KEY "%s needs " TAGS_KEY "%s "
				    "(other tables follow purge)", label,
				    cc->rules[k].table, cc->rules[k].table);
	}
	return nerr;
}

const struct conf_changes *
conf_changes_find(const struct conf *c, const char *name)
{
	for (int i = 0; i < c->nchanges; i++)
		if (strcmp(c->changes[i].name, name) == 0)
			return &c->changes[i];
	return NULL;
}
