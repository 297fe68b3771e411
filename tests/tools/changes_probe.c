/* SPDX-License-Identifier: MIT */
/*
 * changes_probe: the change feed (changes/changes.h) on a libevent loop,
 * for tests/changes/test_feed.py. Prints one line per event on stdout and
 * takes commands, one a line, on stdin:
 *
 *	out: state NAME DETAIL | created | reconnect
 *	     commit LSN BREADTH [TAG ...]
 *	     figures received=LSN delivered=LSN acked=LSN server=LSN
 *	             lag=BYTES commits=N reconnects=N malformed=N created=N
 *	     stopped
 *	in:  ack LSN | ack (the last commit) | figures
 *	     stop | stop-at-commit (changes_stop() from inside the next
 *	     on_commit) | EOF (as stop)
 *
 * Usage: changes_probe --conninfo S [--password-file F]
 *	  [--mode replication|notify] [--slot S] [--publication P]
 *	  [--channel C] [--rule TABLE=TAGS]... [--status-interval-ms N]
 */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "changes/changes.h"
#include "common/log.h"

#define RULES_MAX	16
#define LINE_MAX_BYTES	4096
#define PASSWORD_MAX	1024

struct probe {
	struct event_base	*base;
	struct changes		*feed;
	struct event		*in_ev;
	char			 line[LINE_MAX_BYTES];
	size_t			 len;
	uint64_t		 last;		/* the last commit's LSN */
	int			 stop_at_commit;
};

static void
say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void
stop(struct probe *p)
{
	changes_stop(&p->feed);
	say("stopped");
	event_base_loopexit(p->base, NULL);
}

static void
on_commit(const struct changes_commit *c, void *arg)
{
	static const char *const breadth[] = { "exact", "broad", "everything" };
	struct probe *p = arg;
	char at[CHANGES_LSN_LEN];
	size_t i;

	changes_lsn_format(c->lsn, at);
	printf("commit %s %s", at, breadth[c->breadth]);
	for (i = 0; i < c->n; i++)
		printf(" %s", c->tags[i]);
	say("%s", "");
	if (c->lsn != 0)
		p->last = c->lsn;
	if (p->stop_at_commit)
		stop(p);	/* from inside the feed's callback */
}

static void
on_state(enum changes_state state, const char *detail, void *arg)
{
	say("state %s %s", changes_state_name(state), detail);
}

static void
on_created(void *arg)
{
	say("created");
}

static void
on_reconnect(void *arg)
{
	say("reconnect");
}

static void
figures(struct probe *p)
{
	struct changes_figures f;
	char r[CHANGES_LSN_LEN], d[CHANGES_LSN_LEN], a[CHANGES_LSN_LEN];
	char s[CHANGES_LSN_LEN];

	changes_figures(p->feed, &f);
	changes_lsn_format(f.received_lsn, r);
	changes_lsn_format(f.delivered_lsn, d);
	changes_lsn_format(f.acked_lsn, a);
	changes_lsn_format(f.server_lsn, s);
	say("figures received=%s delivered=%s acked=%s server=%s lag=%llu "
	    "commits=%llu reconnects=%llu malformed=%llu created=%llu "
	    "age_ms=%lld", r, d, a, s, (unsigned long long)f.lag_bytes,
	    (unsigned long long)f.commits, (unsigned long long)f.reconnects,
	    (unsigned long long)f.malformed,
	    (unsigned long long)f.slots_created, (long long)f.commit_age_ms);
}

static void
command(struct probe *p, const char *line)
{
	uint64_t lsn;

	if (p->feed == NULL)
		return;
	if (strcmp(line, "ack") == 0)
		changes_ack(p->feed, p->last);
	else if (strncmp(line, "ack ", 4) == 0 &&
	    changes_lsn_parse(line + 4, &lsn) == 0)
		changes_ack(p->feed, lsn);
	else if (strcmp(line, "figures") == 0)
		figures(p);
	else if (strcmp(line, "stop") == 0)
		stop(p);
	else if (strcmp(line, "stop-at-commit") == 0)
		p->stop_at_commit = 1;
	else
		say("error unknown command: %s", line);
}

static void
on_stdin(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	ssize_t n;
	char *nl;

	n = read(fd, p->line + p->len, sizeof(p->line) - 1 - p->len);
	if (n <= 0) {
		if (n < 0 && errno == EINTR)
			return;
		event_del(p->in_ev);
		if (p->feed != NULL)
			stop(p);
		return;
	}
	p->len += (size_t)n;
	p->line[p->len] = '\0';
	while ((nl = strchr(p->line, '\n')) != NULL) {
		*nl = '\0';
		command(p, p->line);
		p->len -= (size_t)(nl + 1 - p->line);
		memmove(p->line, nl + 1, p->len + 1);
	}
	if (p->len == sizeof(p->line) - 1)
		p->len = 0;	/* a line too long: dropped */
}

/* The password file's first line, or NULL. */
static char *
read_password(const char *path)
{
	char buf[PASSWORD_MAX];
	FILE *fp;

	if ((fp = fopen(path, "r")) == NULL ||
	    fgets(buf, sizeof(buf), fp) == NULL) {
		if (fp != NULL)
			fclose(fp);
		return NULL;
	}
	fclose(fp);
	buf[strcspn(buf, "\r\n")] = '\0';
	return strdup(buf);
}

static int
rule_arg(char *arg, struct changes_rule *rules, size_t *n)
{
	char *eq = strchr(arg, '=');

	if (eq == NULL || *n == RULES_MAX)
		return -1;
	*eq = '\0';
	rules[*n].table = arg;
	rules[(*n)++].tags = eq + 1;
	return 0;
}

static int
parse(int argc, char **argv, struct changes_config *cfg,
    struct changes_rule *rules, char **password)
{
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i];
		char *v = argv[i + 1];

		if (strcmp(k, "--conninfo") == 0)
			cfg->conninfo = v;
		else if (strcmp(k, "--password-file") == 0)
			*password = read_password(v);
		else if (strcmp(k, "--mode") == 0)
			cfg->mode = strcmp(v, "notify") == 0 ? CHANGES_NOTIFY :
			    CHANGES_REPLICATION;
		else if (strcmp(k, "--slot") == 0)
			cfg->slot = v;
		else if (strcmp(k, "--publication") == 0)
			cfg->publication = v;
		else if (strcmp(k, "--channel") == 0)
			cfg->channel = v;
		else if (strcmp(k, "--status-interval-ms") == 0)
			cfg->status_interval_ms = atoll(v);
		else if (strcmp(k, "--rule") != 0 ||
		    rule_arg(v, rules, &cfg->nrules) == -1)
			return -1;
	}
	return i == argc ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct changes_rule rules[RULES_MAX];
	struct changes_config cfg = {
		.rules = rules, .on_commit = on_commit, .on_state = on_state,
		.on_slot_created = on_created, .on_reconnect = on_reconnect,
	};
	struct probe p = { 0 };
	char err[CHANGES_ERR_MAX], *password = NULL;
	int rc = 1;

	log_set_level(LOGL_INFO);
	if (parse(argc, argv, &cfg, rules, &password) == -1) {
		fprintf(stderr, "usage: see tests/tools/changes_probe.c\n");
		return 2;
	}
	cfg.password = password;
	cfg.arg = &p;
	p.base = event_base_new();
	p.in_ev = event_new(p.base, 0, EV_READ | EV_PERSIST, on_stdin, &p);
	if (p.base == NULL || p.in_ev == NULL || event_add(p.in_ev, NULL) == -1)
		goto out;
	if ((p.feed = changes_start(p.base, &cfg, err, sizeof(err))) == NULL) {
		say("error %s", err);
		goto out;
	}
	event_base_dispatch(p.base);
	rc = 0;
out:
	changes_stop(&p.feed);
	if (p.in_ev != NULL)
		event_free(p.in_ev);
	if (p.base != NULL)
		event_base_free(p.base);
	free(password);
	return rc;
}
