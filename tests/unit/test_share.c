/* SPDX-License-Identifier: MIT */
/*
 * The local share's counters (proxy/proxy_share.c): a cap is counted by
 * its identity in every worker's row, whatever column each worker keeps it
 * in, so that workers whose pools differ (one drains a pool a reload
 * removed) never add up unrelated caps.
 */

#include <string.h>

#include "proxy/proxy.h"
#include "proxy/proxy_share.h"
#include "unit.h"

#define WORKERS	2

static struct worker_slot slots[WORKERS];
static struct proxy workers[WORKERS];

static void
setup(void)
{
	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < WORKERS; i++) {
		memset(&workers[i], 0, sizeof(workers[i]));
		workers[i].slots = slots;
		workers[i].nslots = WORKERS;
		workers[i].slot = i;
	}
}

static void
t_cap_counted_by_identity_whatever_the_column(void)
{
	uint64_t x = share_id("x", NULL), y = share_id("y", NULL);
	int cx0, cy0, cx1, more;

	setup();
	/* Worker 0 holds a slot of y first: x is in its second column, but in
	 * worker 1's first. */
	cy0 = share_take(&workers[0], y, 1);
	cx0 = share_take(&workers[0], x, 2);
	cx1 = share_take(&workers[1], x, 2);
	CHECK(cy0 == 0 && cx0 == 1 && cx1 == 0);
	more = share_take(&workers[1], x, 2);
	CHECK(more == -1);			/* x: 2 held, its share 2 */
	CHECK(share_take(&workers[1], y, 2) != -1);	/* y: 1 held of 2 */
	share_give(&workers[0], &cx0);
	CHECK(cx0 == -1);
	CHECK(share_take(&workers[1], x, 2) != -1);	/* freed: room again */
}

static void
t_server_cap_apart_from_its_pool(void)
{
	uint64_t pool = share_id("p", NULL), server = share_id("p", "http://a");

	setup();
	CHECK(pool != server);
	CHECK(share_id("p", "http://a") != share_id("", "phttp://a"));
	CHECK(share_take(&workers[0], pool, 1) != -1);
	CHECK(share_take(&workers[1], server, 1) != -1);
	CHECK(share_take(&workers[1], pool, 1) == -1);
}

static void
t_dead_worker_holds_nothing(void)
{
	uint64_t x = share_id("x", NULL);

	setup();
	CHECK(share_take(&workers[1], x, 1) != -1);
	CHECK(share_take(&workers[0], x, 1) == -1);
	share_forget(&slots[1].budget);
	CHECK(share_take(&workers[0], x, 1) != -1);
}

int
main(void)
{
	RUN(t_cap_counted_by_identity_whatever_the_column);
	RUN(t_server_cap_apart_from_its_pool);
	RUN(t_dead_worker_holds_nothing);
	return unit_exit();
}
