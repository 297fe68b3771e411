/*
 * Active health checks (proxy_probe.h): a timer per probe, and one GET in
 * flight at most through the worker's upstream; the answer goes to the
 * probe's owner through the callback it gave.
 *
 *	IDLE -(interval)-> SENT -(answer, or timeout)-> IDLE
 */

#include "proxy/proxy_probe.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "upstream/upstream.h"

#define PROBE_MAGIC	0x50524f42u	/* "PROB" */
#define PROBE_WHY_MAX	192
#define PROBE_BODY_MAX	(1024 * 1024)	/* a longer answer fails */

struct probe {
	uint32_t		 magic;
	struct proxy		*px;
	struct probe_args	 a;
	char			*url;		/* base URL and path */
	struct upstream_fetch	*up;		/* the probe in flight */
	struct event		*timer;
};

static void
on_probe_done(struct upstream_response *resp, void *arg)
{
	struct probe *pr = arg;
	char why[PROBE_WHY_MAX];
	int ok;

	assert(pr->magic == PROBE_MAGIC);
	pr->up = NULL;
	ok = resp->result == UPSTREAM_OK && resp->status == pr->a.status;
	if (resp->result != UPSTREAM_OK)
		snprintf(why, sizeof(why), "%s: %s",
		    upstream_result_name(resp->result), resp->error);
	else
		snprintf(why, sizeof(why), "status %d, not %d", resp->status,
		    pr->a.status);
	upstream_response_free(&resp);
	/* The owner may stop the probe in there: pr is not touched after. */
	pr->a.cb(ok, ok ? "" : why, pr->a.arg);
}

static void
on_probe_tick(evutil_socket_t fd, short what, void *arg)
{
	struct probe *pr = arg;
	struct upstream_request ur = {
		.method = "GET",
		.url = pr->url,
		.connect_timeout_ms = MIN(pr->a.connect_timeout_ms,
		    pr->a.timeout_ms),
		.timeout_ms = pr->a.timeout_ms,
		.max_body_bytes = PROBE_BODY_MAX,
	};

	assert(pr->magic == PROBE_MAGIC);
	timer_arm(pr->timer, pr->a.interval_ms);
	if (pr->up != NULL || pr->px->upstream == NULL)
		return;		/* the last one is still out: it times out */
	if ((pr->up = upstream_fetch(pr->px->upstream, &ur, on_probe_done,
	    pr)) == NULL)
		log_warn("health check of %s: cannot start (out of memory)",
		    pr->a.url);
}

struct probe *
probe_start(struct proxy *px, const struct probe_args *a)
{
	struct probe *pr;
	size_t len = strlen(a->url) + strlen(a->path) + 1;

	if ((pr = calloc(1, sizeof(*pr))) == NULL)
		return NULL;
	pr->magic = PROBE_MAGIC;
	pr->px = px;
	pr->a = *a;
	if ((pr->url = malloc(len)) == NULL ||
	    (pr->timer = evtimer_new(px->base, on_probe_tick, pr)) == NULL) {
		probe_stop(&pr);
		return NULL;
	}
	snprintf(pr->url, len, "%s%s", a->url, a->path);
	pr->a.url = pr->url;	/* the base is a prefix of it */
	pr->a.path = NULL;
	timer_arm(pr->timer, 0);
	return pr;
}

void
probe_stop(struct probe **pp)
{
	struct probe *pr = *pp;

	if (pr == NULL)
		return;
	*pp = NULL;
	assert(pr->magic == PROBE_MAGIC);
	upstream_cancel(&pr->up);
	if (pr->timer != NULL)
		event_free(pr->timer);
	free(pr->url);
	pr->magic = 0;
	free(pr);
}
