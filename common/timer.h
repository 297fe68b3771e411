/* SPDX-License-Identifier: MIT */
#ifndef COMMON_TIMER_H
#define COMMON_TIMER_H

/* A libevent timer armed for ms from now (0: at the loop's next turn). */

#include <stdint.h>

#include <event2/event.h>

#include "common/util.h"

static inline void
timer_arm(struct event *ev, int64_t ms)
{
	struct timeval tv = util_timeval(ms);

	evtimer_add(ev, &tv);
}

#endif
