#include "proxy/proxy_log.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "common/log.h"
#include "proxy/proxy.h"

void
access_log_write(struct proxy *px, const struct access_record *r)
{
	if (LOGL_DEBUG > log_current_level)
		return;
	log_debug("%s \"%s %s HTTP/%d.%d\" %d %" PRIu64 " cache=%s route=%s "
	    "upstream_ms=%" PRId64 " wait_ms=%" PRId64 " total_ms=%" PRId64,
	    r->client, r->method, r->uri, r->proto_major, r->proto_minor,
	    r->status, r->bytes, r->cache, r->route != NULL ? r->route : "-",
	    r->upstream_ms, r->lock_wait_ms, r->total_ms);
}
