/* SPDX-License-Identifier: MIT */
/*
 * Active health checks (proxy_health.h): a timer per probe, and one GET in
 * flight at most through the worker's upstream; the answer goes to the
 * probe's owner through the callback it gave.
 *
 *	IDLE -(interval)-> SENT -(answer, or timeout)-> IDLE
 */

#include "proxy/proxy_health.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/timer.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "upstream/upstream.h"

#define HEALTH_MAGIC	0x484c5448u	/* "HLTH" */
#define HEALTH_WHY_MAX	192
#define HEALTH_BODY_MAX	(1024 * 1024)	/* a longer answer fails */

struct health_check {
	uint32_t		 magic;
	struct proxy		*px;
	struct health_args	 a;
	char			*url;		/* base URL and path */
	struct upstream_fetch	*up;		/* the probe in flight */
	struct event		*timer;
};

static void
on_check_done(struct upstream_response *resp, void *arg)
{
	struct health_check *hc = arg;
	char why[HEALTH_WHY_MAX];
	int ok;

	assert(hc->magic == HEALTH_MAGIC);
	hc->up = NULL;
	ok = resp->result == UPSTREAM_OK && resp->status == hc->a.status;
	if (resp->result != UPSTREAM_OK)
		snprintf(why, sizeof(why), "%s: %s",
		    upstream_result_name(resp->result), resp->error);
	else
		snprintf(why, sizeof(why), "status %d, not %d", resp->status,
		    hc->a.status);
	upstream_response_free(&resp);
	/* The owner may stop the probe in there: hc is not touched after. */
	hc->a.cb(ok, ok ? "" : why, hc->a.arg);
}

static void
on_check_tick(evutil_socket_t fd, short what, void *arg)
{
	struct health_check *hc = arg;
	struct upstream_request ur = {
		.method = "GET",
		.url = hc->url,
		.connect_timeout_ms = MIN(hc->a.connect_timeout_ms,
		    hc->a.timeout_ms),
		.timeout_ms = hc->a.timeout_ms,
		.max_body_bytes = HEALTH_BODY_MAX,
	};

	assert(hc->magic == HEALTH_MAGIC);
	timer_arm(hc->timer, hc->a.interval_ms);
	if (hc->up != NULL || hc->px->upstream == NULL)
		return;		/* the last one is still out: it times out */
	if ((hc->up = upstream_fetch(hc->px->upstream, &ur, on_check_done,
	    hc)) == NULL)
		log_warn("health check of %s: cannot start (out of memory)",
		    hc->a.url);
}

struct health_check *
health_start(struct proxy *px, const struct health_args *a)
{
	struct health_check *hc;
	size_t len = strlen(a->url) + strlen(a->path) + 1;

	if ((hc = calloc(1, sizeof(*hc))) == NULL)
		return NULL;
	hc->magic = HEALTH_MAGIC;
	hc->px = px;
	hc->a = *a;
	if ((hc->url = malloc(len)) == NULL ||
	    (hc->timer = evtimer_new(px->base, on_check_tick, hc)) == NULL) {
		health_stop(&hc);
		return NULL;
	}
	snprintf(hc->url, len, "%s%s", a->url, a->path);
	hc->a.url = hc->url;	/* the base is a prefix of it */
	hc->a.path = NULL;
	timer_arm(hc->timer, 0);
	return hc;
}

void
health_stop(struct health_check **hp)
{
	struct health_check *hc = *hp;

	if (hc == NULL)
		return;
	*hp = NULL;
	assert(hc->magic == HEALTH_MAGIC);
	upstream_cancel(&hc->up);
	if (hc->timer != NULL)
		event_free(hc->timer);
	free(hc->url);
	hc->magic = 0;
	free(hc);
}
