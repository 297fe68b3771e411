/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: conf_load() on any file. conf_load() takes a path, so
 * the input is written to an in-memory file (memfd) and loaded through
 * /proc/self/fd/N; errors go to /dev/null. A loaded config must keep the
 * promises of conf.h.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct conf conf;	/* large: keep it off the stack */

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "loaded config breaks: %s\n", what);
		abort();
	}
}

static void
check_loaded(const struct conf *c)
{
	check(c->nroutes >= 0 && c->nroutes <= CONF_ROUTES_MAX, "nroutes");
	check(memchr(c->listen_host, '\0', sizeof(c->listen_host)) != NULL, "listen");
	check(memchr(c->redis_prefix, '\0', sizeof(c->redis_prefix)) != NULL, "prefix");
	check(strncasecmp(c->upstream_url, "http://", 7) == 0 ||
	    strncasecmp(c->upstream_url, "https://", 8) == 0, "upstream url");
	check(c->max_header_bytes >= 1024 && c->max_body_bytes >= 1024, "limits");
	for (int i = 0; i < c->nroutes; i++) {
		const struct conf_route *r = &c->routes[i];

		check(r->prefix[0] == '/', "route prefix starts with '/'");
		check(r->ttl_ms >= 0 && r->swr_ms >= 0 && r->lock_ttl_ms > 0 &&
		    r->lock_poll_ms > 0, "route durations");
		check(r->nstatus_ttls >= 0 && r->nstatus_ttls <= CONF_STATUS_TTLS_MAX,
		    "ttl_status count");
		check(conf_route_match(c, r->prefix) != NULL, "a route matches its prefix");
		(void)conf_status_ttl(r, 404);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	char path[64];
	int fd;

	if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
		abort();
	if ((fd = memfd_create("fuzz.conf", 0)) == -1)
		abort();
	if (size > 0 && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (conf_load(&conf, path, devnull) == 0)
		check_loaded(&conf);
	close(fd);
	return 0;
}
