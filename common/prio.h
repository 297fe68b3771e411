/* SPDX-License-Identifier: MIT */
#ifndef COMMON_PRIO_H
#define COMMON_PRIO_H

#include <event2/event.h>

/*
 * The priorities of a worker's events (event_base_priority_init). What
 * a request waits for, Redis's replies and the writes of its commands,
 * libcurl's timer and the connect and send of a transfer, runs before
 * clients' events: in a burst of a hundred new requests, the lock's
 * reply and the request to the origin are not queued behind them. A
 * response is read at the clients' priority, so that a stream's
 * back-pressure, which runs in their callbacks, keeps up with it.
 * Clients' events keep libevent's default, the middle of PRIO_LEVELS.
 */
#define PRIO_BACKEND	0	/* Redis; libcurl starting a transfer */
#define PRIO_CLIENT	1	/* everything else: the default */
#define PRIO_LEVELS	2

/* Sets ev's priority (not pending, not active). A base without
 * PRIO_LEVELS (the master's, a unit test's) has one level only: the
 * event keeps it. */
#define PRIO_SET(ev, prio)	((void)event_priority_set((ev), (prio)))

/* After this many client callbacks in a row, libevent looks for backend
 * events that became ready meanwhile
 * (event_config_set_max_dispatch_interval). */
#define PRIO_CLIENT_RUN	16

#endif
