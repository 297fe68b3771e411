/*
 * A [changes NAME] section as the change feed takes it
 * (changes_config), the tags a broad purge names, and the checks of a
 * loaded configuration the feed itself makes: its rules and its
 * connection string when the file is loaded (start, reload, corral -t),
 * and what each server says now (corral -t only: it blocks).
 *
 * Calls changes/ (changes_check, changes_inspect).
 */

#include <stdio.h>
#include <string.h>

#include "changes/changes.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_feed_int.h"

#define INSPECT_TIMEOUT_S	5	/* corral -t: a server's answer */

void
feed_config(const struct conf_changes *cc, struct feed_config *fc)
{
	struct changes_config *cfg = &fc->cfg;

	memset(fc, 0, sizeof(*fc));
	cfg->name = cc->name;
	cfg->mode = cc->mode == CHANGES_MODE_NOTIFY ? CHANGES_NOTIFY :
	    CHANGES_REPLICATION;
	cfg->conninfo = cc->postgres;
	cfg->password = cc->password[0] != '\0' ? cc->password : NULL;
	cfg->slot = cc->slot;
	cfg->publication = cc->publication;
	cfg->channel = cc->channel;
	cfg->hard = cc->hard;
	cfg->status_interval_ms = cc->status_interval_ms;
	for (int i = 0; i < cc->nrules; i++) {
		fc->rules[i].table = cc->rules[i].table;
		fc->rules[i].tags = cc->rules[i].tags;
		fc->rules[i].hard = cc->rules[i].hard >= 0 ? cc->rules[i].hard :
		    cc->hard;
	}
	cfg->rules = fc->rules;
	cfg->nrules = (size_t)cc->nrules;
}

/* Appends tag (len bytes) to out unless it is there already. */
static void
add_broad(char *out, size_t outlen, const char *tag, size_t len, int *n)
{
	size_t have = strlen(out);

	for (const char *p = out; *p != '\0';) {
		size_t l = strcspn(p, " ");

		if (l == len && memcmp(p, tag, len) == 0)
			return;
		p += l + (p[l] == ' ');
	}
	if (len == 0 || have + len + 2 > outlen)
		return;
	snprintf(out + have, outlen - have, "%s%.*s", have > 0 ? " " : "",
	    (int)len, tag);
	(*n)++;
}

/* A template's broad tag, as changes.h says: its text before the first
 * '{' less a trailing ':', or the table's own name. */
static void
template_broad(const char *tmpl, size_t len, const char *table, char *out,
    size_t outlen, int *n)
{
	size_t b = strcspn(tmpl, "{");
	const char *dot = strchr(table, '.');

	if (b > len)
		b = len;
	if (b > 0 && tmpl[b - 1] == ':')
		b--;
	if (b > 0)
		add_broad(out, outlen, tmpl, b, n);
	else if (dot != NULL && strncmp(table, "public.", 7) == 0)
		add_broad(out, outlen, dot + 1, strlen(dot + 1), n);
	else
		add_broad(out, outlen, table, strlen(table), n);
}

int
feed_broad_tags(const struct conf_changes *cc, char *out, size_t outlen)
{
	const char *sep = " \t";
	int n = 0;

	out[0] = '\0';
	for (const char *p = cc->broad_tags; *(p += strspn(p, sep)) != '\0';) {
		size_t len = strcspn(p, sep);

		add_broad(out, outlen, p, len, &n);
		p += len;
	}
	for (int i = 0; i < cc->nrules; i++) {
		const char *p = cc->rules[i].tags;

		while (*(p += strspn(p, sep)) != '\0') {
			size_t len = strcspn(p, sep);

			template_broad(p, len, cc->rules[i].table, out, outlen,
			    &n);
			p += len;
		}
	}
	return n;
}

static void
no_commit(const struct changes_commit *c, void *arg)
{
	(void)c;
	(void)arg;
}

int
feeds_check(const struct conf *c, FILE *errs)
{
	struct feed_config fc;
	char err[CHANGES_ERR_MAX];
	int nerr = 0;

	for (int i = 0; i < c->nchanges; i++) {
		const struct conf_changes *cc = &c->changes[i];

		feed_config(cc, &fc);
		fc.cfg.on_commit = no_commit;
		fc.cfg.nrules = 0;	/* first the section, then each rule */
		if (changes_check(&fc.cfg, err, sizeof(err)) == -1) {
			nerr++;
			if (errs != NULL)
				fprintf(errs, "%s:%d: [changes %s]: %s\n",
				    c->file, cc->line, cc->name, err);
			continue;
		}
		for (int k = 0; k < cc->nrules; k++) {
			fc.cfg.rules = &fc.rules[k];
			fc.cfg.nrules = 1;
			if (changes_check(&fc.cfg, err, sizeof(err)) == 0)
				continue;
			nerr++;
			if (errs != NULL)
				fprintf(errs, "%s:%d: [changes %s]: tags.%s: "
				    "%s\n", c->file, cc->rules[k].line,
				    cc->name, cc->rules[k].table, err);
		}
	}
	return nerr;
}

void
feeds_check_servers(const struct conf *c, FILE *out)
{
	struct feed_config fc;
	char msg[CHANGES_ERR_MAX];

	for (int i = 0; i < c->nchanges; i++) {
		const struct conf_changes *cc = &c->changes[i];
		enum changes_verdict v;

		feed_config(cc, &fc);
		v = changes_inspect(&fc.cfg, INSPECT_TIMEOUT_S, msg,
		    sizeof(msg));
		if (v == CHANGES_READY && msg[0] == '\0')
			continue;
		fprintf(out, "%s:%d: %s: [changes %s]: %s%s\n", c->file,
		    cc->line, v == CHANGES_READY ? "note" : "warning", cc->name,
		    v == CHANGES_UNREACHABLE ? "the server does not answer: " :
		    "", msg);
	}
}
