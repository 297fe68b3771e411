/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_SERVICE_H
#define PROXY_PROXY_SERVICE_H

/*
 * What Corral tells a service manager (systemd's Type=notify, through
 * common/notify.c): READY=1 once every worker listens and has its Redis
 * connection up, or has waited [redis] timeout for it (then it serves
 * uncached until Redis appears); RELOADING=1 and READY=1 around a reload;
 * STOPPING=1; a one-line STATUS= every SERVICE_STATUS_MS; and WATCHDOG=1
 * at half the interval the manager asks for.
 *
 * Every worker runs one to mark its slot ready, and then to show in its
 * slot every SERVICE_HEARTBEAT_MS that its loop still runs. The process the
 * manager started (the master, or the only worker) reports for all of
 * them; a master stops sending WATCHDOG=1 while a ready worker's loop has
 * not run for half the watchdog interval (at least three heartbeats), so
 * that systemd restarts a service one of whose workers hangs.
 */

#include "proxy/proxy.h"

#define SERVICE_CHECK_MS	10	/* readiness checks until ready */
#define SERVICE_STATUS_MS	5000	/* STATUS= after that */
#define SERVICE_HEARTBEAT_MS	1000	/* a worker's, once ready */
#define SERVICE_STOP_SLACK_MS	5000	/* a stop's time past shutdown_timeout */

struct service;

/* px: this process's proxy (a worker), or NULL (the master). reports: this
 * process speaks to the manager. NULL when out of memory. */
struct service	*service_new(struct event_base *base, struct proxy *px,
		    struct worker_slot *slots, int nslots, int slot,
		    int reports, const struct conf *conf);
/* These three do nothing for a NULL s. */
void		 service_reloading(struct service *s);
/* After a reload, whether it was taken or refused. */
void		 service_reloaded(struct service *s);
/* The stop may take stop_ms (shutdown_timeout): the manager is asked to
 * wait that long and SERVICE_STOP_SLACK_MS (EXTEND_TIMEOUT_USEC=), past
 * a shorter TimeoutStopSec=. */
void		 service_stopping(struct service *s, int64_t stop_ms);
/* Sets *sp to NULL. */
void		 service_free(struct service **sp);

#endif
