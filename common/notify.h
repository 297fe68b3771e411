/* SPDX-License-Identifier: MIT */
#ifndef COMMON_NOTIFY_H
#define COMMON_NOTIFY_H

/*
 * The service manager's notification protocol, as sd_notify(3) speaks it:
 * one datagram of "KEY=VALUE" lines to the AF_UNIX socket $NOTIFY_SOCKET
 * names (a path, or "@name" for an abstract socket). Written here directly,
 * so Corral needs no libsystemd. Without $NOTIFY_SOCKET every call does
 * nothing.
 */

#include <stdint.h>

#define NOTIFY_MSG_MAX	1024	/* one message; a longer one is cut */

/* Sends the lines fmt makes ("READY=1\nSTATUS=..."). Never waits: when the
 * manager's queue is full the message is dropped. 0, or -1 with errno set
 * when the socket is named but the message could not be sent. */
int	notify_send(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2)));
/* The watchdog interval the manager asks this process for
 * ($WATCHDOG_USEC, if $WATCHDOG_PID is unset or ours), in ms; 0 if none. */
int64_t	notify_watchdog_ms(void);

#endif
