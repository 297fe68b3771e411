#ifndef PROXY_PROXY_FEED_INT_H
#define PROXY_PROXY_FEED_INT_H

/*
 * What the feed's files share, and nothing else includes: a section's
 * configuration as the change feed takes it (proxy_feed_check.c makes it
 * for the runner and the checks alike), and the applier (proxy_apply.c),
 * which the runner (proxy_feed.c) owns and which answers through the
 * hooks it was given.
 */

#include <stdint.h>

#include "changes/changes.h"
#include "conf/conf.h"

struct proxy;

/* A section as changes_config: its rules point into cc, which must
 * outlive it. */
struct feed_config {
	struct changes_config	 cfg;
	struct changes_rule	 rules[CONF_CHANGES_RULES_MAX];
};
void	feed_config(const struct conf_changes *cc, struct feed_config *fc);
/* The tags a broad purge names: broad_tags, and each rule template's
 * broad tag (its text before the first '{', less a trailing ':'), once
 * each, space-separated into out; how many. */
#define FEED_BROAD_MAX		CONF_CHANGES_TAGS_MAX * 4
int	feed_broad_tags(const struct conf_changes *cc, char *out,
	    size_t outlen);

/* ---- proxy_apply.c ---- */

struct apply;

struct apply_hooks {
	/* Every commit up to lsn has had its purges applied. */
	void	(*applied)(uint64_t lsn, void *arg);
	/* The queue is full (full 1: stop reading), or empty again (0). */
	void	(*level)(int full, void *arg);
	void	*arg;
};

struct apply_figures {
	int64_t		 queued;	/* commits waiting */
	int64_t		 oldest_ms;	/* the oldest one's commit time, or 0 */
	uint64_t	 applied_lsn;
	uint64_t	 applied;	/* commits */
	uint64_t	 tags;		/* tag purges done */
	uint64_t	 purged;	/* entries they reached */
	uint64_t	 retries;	/* tag purges failed and tried again */
	uint64_t	 broad;		/* broad purges asked */
};

struct apply	*apply_new(struct proxy *px, const char *name,
		    const struct apply_hooks *hooks);
void		 apply_free(struct apply **app);
/* A commit the feed handed out: queued for its purges, or, when it was
 * applied already (a commit sent again), acknowledged at once. */
void		 apply_commit(struct apply *ap, const struct changes_commit *c);
/* Purges tags (space-separated) with no position to acknowledge: the
 * changes that may have been missed (why, for the log). */
void		 apply_broad(struct apply *ap, const char *tags, int hard,
		    const char *why);
/* The feed stopped: what is queued goes (the next reader is sent it
 * again); purges under way end unheard. */
void		 apply_reset(struct apply *ap);
void		 apply_figures(const struct apply *ap, struct apply_figures *out);

#endif
