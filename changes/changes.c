/* SPDX-License-Identifier: MIT */
/*
 * The face's plain parts (changes.h): whether a configuration is usable,
 * LSNs as text, the states' names. The connection is feed.c's.
 *
 * Calls rules.c (the rules are parsed to be checked), libpq (the
 * connection string is parsed to be checked), common/util.c.
 */

#include "changes/changes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "changes/rules.h"
#include "common/util.h"

#define LSN_HALF_DIGITS		8	/* hex digits of each half */

/* A name the feed puts in SQL unquoted (a slot: lower case only). */
static int
plain_name(const char *s, int lower_only)
{
	size_t i, n = s != NULL ? strlen(s) : 0;

	if (n == 0 || n > CHANGES_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '_' || (!lower_only && c >= 'A' && c <= 'Z')))
			return 0;
	}
	return 1;
}

static int
check_replication(const struct changes_config *cfg, char *err, size_t errlen)
{
	struct rules *r;

	if (!plain_name(cfg->slot, 1)) {
		snprintf(err, errlen, "slot \"%s\": 1 to %d of a-z, 0-9 and _",
		    cfg->slot != NULL ? cfg->slot : "", CHANGES_NAME_MAX);
		return -1;
	}
	if (!plain_name(cfg->publication, 0)) {
		snprintf(err, errlen, "publication \"%s\": 1 to %d of A-Z, "
		    "a-z, 0-9 and _", cfg->publication != NULL ?
		    cfg->publication : "", CHANGES_NAME_MAX);
		return -1;
	}
	if ((r = rules_new(cfg->rules, cfg->nrules, cfg->hard, err,
	    errlen)) == NULL)
		return -1;
	rules_free(&r);
	return 0;
}

/* Does libpq read the connection string, and does it hold no password
 * (which would be in the logs' way and in the configuration file)? */
static int
check_conninfo(const char *conninfo, char *err, size_t errlen)
{
	PQconninfoOption *opts, *o;
	char *msg = NULL;
	int rc = 0;

	if ((opts = PQconninfoParse(conninfo, &msg)) == NULL) {
		snprintf(err, errlen, "the connection string does not parse: "
		    "%s", msg != NULL ? msg : "out of memory");
		err[strcspn(err, "\n")] = '\0';
		PQfreemem(msg);
		return -1;
	}
	for (o = opts; o->keyword != NULL; o++) {
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL &&
		    o->val[0] != '\0') {
			snprintf(err, errlen, "the connection string holds a "
			    "password: give it in a password file instead");
			rc = -1;
		}
	}
	PQconninfoFree(opts);
	return rc;
}

int
changes_check(const struct changes_config *cfg, char *err, size_t errlen)
{
	if (cfg->conninfo == NULL || cfg->conninfo[0] == '\0') {
		snprintf(err, errlen, "no connection string");
		return -1;
	}
	if (check_conninfo(cfg->conninfo, err, errlen) == -1)
		return -1;
	if (cfg->on_commit == NULL) {
		snprintf(err, errlen, "no on_commit callback");
		return -1;
	}
	if (cfg->status_interval_ms != 0 && (cfg->status_interval_ms <
	    CHANGES_STATUS_INTERVAL_MIN_MS || cfg->status_interval_ms >
	    CHANGES_STATUS_INTERVAL_MAX_MS)) {
		snprintf(err, errlen, "status interval %" PRId64 " ms: %d to "
		    "%d", cfg->status_interval_ms,
		    CHANGES_STATUS_INTERVAL_MIN_MS,
		    CHANGES_STATUS_INTERVAL_MAX_MS);
		return -1;
	}
	switch (cfg->mode) {
	case CHANGES_REPLICATION:
		return check_replication(cfg, err, errlen);
	case CHANGES_NOTIFY:
		if (plain_name(cfg->channel, 0))
			return 0;
		snprintf(err, errlen, "channel \"%s\": 1 to %d of A-Z, a-z, "
		    "0-9 and _", cfg->channel != NULL ? cfg->channel : "",
		    CHANGES_NAME_MAX);
		return -1;
	}
	snprintf(err, errlen, "unknown mode %d", (int)cfg->mode);
	return -1;
}

void
changes_lsn_format(uint64_t lsn, char out[CHANGES_LSN_LEN])
{
	snprintf(out, CHANGES_LSN_LEN, "%" PRIX32 "/%" PRIX32,
	    (uint32_t)(lsn >> 32), (uint32_t)lsn);
}

/* 1 to 8 hex digits at *s, up to a stop byte. */
static int
lsn_half(const char **s, char stop, uint32_t *v)
{
	int n = 0, d;

	*v = 0;
	for (; **s != stop; (*s)++, n++) {
		d = util_hex_value((unsigned char)**s);
		if (n == LSN_HALF_DIGITS || d == -1)
			return -1;
		*v = *v << 4 | (uint32_t)d;
	}
	return n == 0 ? -1 : 0;
}

int
changes_lsn_parse(const char *s, uint64_t *lsn)
{
	uint32_t hi, lo;

	if (lsn_half(&s, '/', &hi) == -1)
		return -1;
	s++;
	if (lsn_half(&s, '\0', &lo) == -1)
		return -1;
	*lsn = (uint64_t)hi << 32 | lo;
	return 0;
}

const char *
changes_state_name(enum changes_state state)
{
	switch (state) {
	case CHANGES_CONNECTING:
		return "connecting";
	case CHANGES_STREAMING:
		return "streaming";
	case CHANGES_DOWN:
		return "down";
	}
	return "?";
}
