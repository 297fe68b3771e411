/* SPDX-License-Identifier: MIT */
/*
 * What the change feeds say of themselves, from their rows in the
 * workers' shared memory (proxy_feed.h): a section of /stats, families
 * of /metrics, and /health's word on them. docs/operations.md lists each.
 *
 * Calls proxy_json.c and proxy_metrics.c for their escapes.
 */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "proxy/proxy.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_json.h"
#include "proxy/proxy_prom.h"

#define MS_PER_S	1000.0

static const char *const state_names[] = {
	[FEED_OFF] = "off", [FEED_STARTING] = "starting",
	[FEED_STREAMING] = "streaming", [FEED_CONNECTING] = "connecting",
	[FEED_DOWN] = "down", [FEED_NO_LEADER] = "no-leader",
	[FEED_UNKNOWN] = "unknown",
};

const char *
feed_state_name(enum feed_state s)
{
	return s >= FEED_OFF && s <= FEED_UNKNOWN ? state_names[s] : "?";
}

static const struct feed_row *
rows(const struct proxy *px)
{
	return px->slots[0].feeds;
}

static void
row_json(const struct feed_row *r, struct evbuffer *out)
{
	char acked[CHANGES_LSN_LEN], server[CHANGES_LSN_LEN];

	changes_lsn_format(r->acked_lsn, acked);
	changes_lsn_format(r->server_lsn, server);
	evbuffer_add_printf(out, "{\"mode\": \"%s\", \"state\": \"%s\", "
	    "\"detail\": ", r->mode == CHANGES_MODE_NOTIFY ? "notify" :
	    "replication", feed_state_name(r->state));
	json_string(out, r->detail);
	evbuffer_add_printf(out, ", \"leader\": %s, \"leader_instance\": ",
	    r->leader ? "true" : "false");
	json_string(out, r->leader_instance);
	evbuffer_add_printf(out, ", \"paused\": %s, \"lag_bytes\": %" PRId64
	    ", \"lag_seconds\": %.3f, \"max_lag\": %" PRId64
	    ", \"max_lag_seconds\": %.3f, \"acked_lsn\": \"%s\", "
	    "\"server_lsn\": \"%s\", \"queued\": %" PRId64 ", \"commits\": %"
	    PRIu64 ", \"applied\": %" PRIu64 ", \"tag_purges\": %" PRIu64
	    ", \"purged\": %" PRIu64 ", \"purge_retries\": %" PRIu64
	    ", \"broad_purges\": %" PRIu64 ", \"reconnects\": %" PRIu64
	    ", \"slots_created\": %" PRIu64 ", \"malformed\": %" PRIu64
	    ", \"leaderships\": %" PRIu64 "}", r->paused ? "true" : "false",
	    r->lag_bytes, r->lag_ms < 0 ? -1.0 : (double)r->lag_ms / MS_PER_S,
	    r->max_lag, (double)r->max_lag_time_ms / MS_PER_S, acked, server,
	    r->queued, r->commits, r->applied, r->tags, r->purged,
	    r->purge_retries, r->broad, r->reconnects, r->slots_created,
	    r->malformed, r->leaderships);
}

void
feeds_json(const struct proxy *px, struct evbuffer *out)
{
	const struct feed_row *r = rows(px);
	int n = 0;

	evbuffer_add_printf(out, ", \"changes\": {");
	for (int i = 0; i < CONF_CHANGES_MAX; i++) {
		if (r[i].name[0] == '\0')
			continue;
		evbuffer_add_printf(out, "%s", n++ > 0 ? ", " : "");
		json_string(out, r[i].name);
		evbuffer_add(out, ": ", 2);
		row_json(&r[i], out);
	}
	evbuffer_add(out, "}", 1);
}

/* One gauge or counter family, a series per section: value(row); a
 * section whose value is not known here (-1) has none. */
static void
feed_family(struct evbuffer *out, const struct feed_row *r, const char *name,
    const char *type, const char *help, double (*value)(const struct
    feed_row *))
{
	prom_family(out, name, type, help);
	for (int i = 0; i < CONF_CHANGES_MAX; i++) {
		double v;

		if (r[i].name[0] == '\0' || (v = value(&r[i])) < 0)
			continue;
		evbuffer_add_printf(out, "%s{feed=", name);
		prom_label(out, r[i].name);
		evbuffer_add_printf(out, "} %.15g\n", v);
	}
}

static double v_up(const struct feed_row *r)
{ return r->state == FEED_STREAMING && !r->paused; }
static double v_leader(const struct feed_row *r) { return r->leader; }
static double v_lag_bytes(const struct feed_row *r)
{ return (double)r->lag_bytes; }
static double v_lag_seconds(const struct feed_row *r)
{ return r->lag_ms < 0 ? -1 : (double)r->lag_ms / MS_PER_S; }
static double v_queued(const struct feed_row *r) { return (double)r->queued; }
static double v_commits(const struct feed_row *r)
{ return (double)r->commits; }
static double v_applied(const struct feed_row *r)
{ return (double)r->applied; }
static double v_tags(const struct feed_row *r) { return (double)r->tags; }
static double v_purged(const struct feed_row *r) { return (double)r->purged; }
static double v_retries(const struct feed_row *r)
{ return (double)r->purge_retries; }
static double v_broad(const struct feed_row *r) { return (double)r->broad; }
static double v_reconnects(const struct feed_row *r)
{ return (double)r->reconnects; }
static double v_slots(const struct feed_row *r)
{ return (double)r->slots_created; }
static double v_malformed(const struct feed_row *r)
{ return (double)r->malformed; }
static double v_leaderships(const struct feed_row *r)
{ return (double)r->leaderships; }

static const struct {
	const char	*name, *type, *help;
	double		(*value)(const struct feed_row *);
} families[] = {
	{ "corral_changes_up", "gauge", "1 while the section's leader reads "
	  "its feed (streaming or listening), as this instance sees it.",
	  v_up },
	{ "corral_changes_leader", "gauge", "1 while this instance leads the "
	  "section's feed.", v_leader },
	{ "corral_changes_lag_bytes", "gauge", "WAL the slot keeps that is "
	  "not acknowledged yet (the leader's figure).", v_lag_bytes },
	{ "corral_changes_lag_seconds", "gauge", "Age of the oldest commit "
	  "whose purges are not all applied; 0 when none waits.",
	  v_lag_seconds },
	{ "corral_changes_queued", "gauge", "Commits waiting for their "
	  "purges.", v_queued },
	{ "corral_changes_commits_total", "counter", "Commits (and messages, "
	  "notifications) received while this instance led.", v_commits },
	{ "corral_changes_applied_total", "counter", "Commits whose purges "
	  "were all applied.", v_applied },
	{ "corral_changes_tag_purges_total", "counter", "Tag purges applied.",
	  v_tags },
	{ "corral_changes_purged_total", "counter", "Entries the tag purges "
	  "reached (made stale or deleted).", v_purged },
	{ "corral_changes_purge_retries_total", "counter", "Tag purges that "
	  "failed and were tried again.", v_retries },
	{ "corral_changes_broad_purges_total", "counter", "Broad purges: "
	  "changes may have been missed (slot created, notify reconnected).",
	  v_broad },
	{ "corral_changes_reconnects_total", "counter", "Feed connections "
	  "lost or refused.", v_reconnects },
	{ "corral_changes_slots_created_total", "counter", "Replication slots "
	  "created (missing, or lost past max_slot_wal_keep_size).", v_slots },
	{ "corral_changes_malformed_total", "counter", "Messages of the "
	  "stream refused as malformed.", v_malformed },
	{ "corral_changes_leaderships_total", "counter", "Times this instance "
	  "became the section's leader.", v_leaderships },
};

void
feeds_prometheus(const struct proxy *px, struct evbuffer *out)
{
	const struct feed_row *r = rows(px);

	if (px->conf->nchanges == 0)
		return;
	for (size_t i = 0; i < ARRAY_LEN(families); i++)
		feed_family(out, r, families[i].name, families[i].type,
		    families[i].help, families[i].value);
}

/* Why a section is not well, into out ("" when it is). */
static void
row_trouble(const struct feed_row *r, char *out, size_t outlen)
{
	out[0] = '\0';
	if (r->state == FEED_DOWN || r->state == FEED_NO_LEADER ||
	    r->state == FEED_UNKNOWN)
		snprintf(out, outlen, "down (%s: %s)", r->name,
		    r->detail[0] != '\0' ? r->detail : feed_state_name(r->state));
	else if (r->max_lag > 0 && r->lag_bytes > r->max_lag)
		snprintf(out, outlen, "lagging (%s: %" PRId64 " bytes behind, "
		    "max_lag %" PRId64 ")", r->name, r->lag_bytes, r->max_lag);
	else if (r->max_lag_time_ms > 0 && r->lag_ms > r->max_lag_time_ms)
		snprintf(out, outlen, "lagging (%s: %.1f s behind, "
		    "max_lag_time %.1f s)", r->name, (double)r->lag_ms /
		    MS_PER_S, (double)r->max_lag_time_ms / MS_PER_S);
}

int
feeds_health(const struct proxy *px, struct evbuffer *out)
{
	const struct feed_row *r = rows(px);
	char trouble[CHANGES_ERR_MAX + 128];
	int bad = 0, any = 0;

	for (int i = 0; i < CONF_CHANGES_MAX; i++) {
		if (r[i].name[0] == '\0')
			continue;
		any = 1;
		row_trouble(&r[i], trouble, sizeof(trouble));
		if (trouble[0] != '\0')
			evbuffer_add_printf(out, " changes=%s", trouble);
		bad |= trouble[0] != '\0';
	}
	if (any && !bad)
		evbuffer_add_printf(out, " changes=up");
	return bad;
}
