/* SPDX-License-Identifier: MIT */
/*
 * The manual's list of keys, from the key table (conf_table.c): a table
 * for corral -h, or man(7) paragraphs for corral.conf(5) (man/gen_keys.c),
 * each key with its default, its range as the value types write it
 * (conf_value.c), its meaning, and whether a change needs a restart
 * (conf_restart.c). Calls the table and the value types; nothing calls it
 * but conf_dump_keys().
 */

#include "conf/conf_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define RANGE_MAX	(2 * TEXT_MAX + 32)	/* "min..max" and the like */

/* The range of a type that has no bounds to show, or NULL. */
static const char *
syntax_of(enum type type)
{
	switch (type) {
	case T_HOSTPORT:
		return "host:port";
	case T_LISTEN:
		return "host:port [tls],...";
	case T_ADDRESS:
		return "host:port | unix:/path";
	case T_ADDRESSES:
		return "host:port,... | unix:/path";
	case T_MODE:
		return "single|cluster|sentinel";
	case T_LOGLEVEL:
		return "error|warn|info|debug";
	case T_LOGFORMAT:
		return "text|json";
	case T_BOOL:
		return "on|off";
	case T_SERVERS:
		return "http(s)://host[:port][/path],...";
	case T_BALANCE:
		return "least_outstanding|round-robin";
	case T_AUTHZ:
		return "off|on|per-credential|anonymous|claims";
	case T_QUERY_NAMES:
		return "name,prefix*,...";
	case T_COOKIE:
		return "cookie name";
	case T_HEADER:
		return "Field-Name";
	case T_AUTHORITY:
		return "host[:port]";
	case T_STATUS_TTLS:
		return "status:duration,...";
	case T_CHANGES_MODE:
		return "replication|notify";
	case T_PURGE:
		return "soft|hard";
	case T_TAG_RULE:
		return "template ... (templates: text and {column})";
	case T_CIDRS:
		return "address[/bits],...";
	case T_FIELDS:
	case T_HOSTS:
	case T_STRING:
	case T_PREFIX:
	case T_POOL_NAME:
	case T_SIZE:
	case T_DURATION:
	case T_INT:
	case T_FLOAT:
		break;
	}
	return NULL;
}

/* A row's range: its syntax, its length, or its least and greatest. */
static void
format_range(const struct key *k, char *out, size_t outlen)
{
	const char *syntax = syntax_of(k->type);
	char lo[TEXT_MAX], hi[TEXT_MAX];

	if (syntax != NULL) {
		snprintf(out, outlen, "%s", syntax);
		return;
	}
	switch (k->type) {
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
	default:		/* T_SIZE, T_DURATION, T_INT, T_FLOAT */
		value_format_number(k, k->min, lo, sizeof(lo));
		value_format_number(k, k->max, hi, sizeof(hi));
		snprintf(out, outlen, "%s..%s", lo, hi);
		break;
	}
}

/* s for man(7): backslashes and hyphens escaped, and a line may break
 * after a comma (\:), as in a long list of media types. */
static void
put_roff(FILE *out, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else if (*s == ',')
			fputs(",\\:", out);
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
		[SECT_ROUTE] = "route", [SECT_CHANGES] = "changes",
	};

	return conf_needs_restart(names[k->sect], k->name);
}

static void
dump_man(FILE *out, const struct key *k, const char *range)
{
	if (k == table_keys || strcmp(table_label(k[-1].sect),
	    table_label(k->sect)) != 0)
		fprintf(out, ".SS \"%s\"\n", table_label(k->sect));
	/* A list with no spaces breaks after its commas, unadjusted. */
	if (strchr(k->def, ',') != NULL)
		fputs(".ad l\n", out);
	fprintf(out, ".TP\n.B %s\n", k->name);
	fputs("default \\fB", out);
	put_roff(out, k->def[0] != '\0' ? k->def : "(empty)");
	fputs("\\fR, range \\fI", out);
	put_roff(out, range);
	fputs("\\fR\n.br\n", out);
	put_roff(out, k->help);
	fputs(needs_restart(k) ? "\n.br\nA change needs a restart: a reload "
	    "keeps the running value.\n" : "\n", out);
	if (strchr(k->def, ',') != NULL)
		fputs(".ad b\n", out);
}

void
conf_dump_keys(FILE *out, enum conf_dump how)
{
	char range[RANGE_MAX];

	if (how == CONF_DUMP_TEXT)
		fprintf(out, "%-15s %-23s %-22s %-29s %s\n", "SECTION", "KEY",
		    "DEFAULT", "RANGE", "MEANING");
	for (size_t i = 0; i < TABLE_NKEYS; i++) {
		const struct key *k = &table_keys[i];

		format_range(k, range, sizeof(range));
		if (how == CONF_DUMP_MAN) {
			dump_man(out, k, range);
			continue;
		}
		fprintf(out, "%-15s %-23s %-22s %-29s %s%s\n",
		    table_label(k->sect), k->name,
		    k->def[0] != '\0' ? k->def : "(empty)", range,
		    k->help, needs_restart(k) ? " (restart)" : "");
	}
}

