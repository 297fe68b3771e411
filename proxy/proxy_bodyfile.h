/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_BODYFILE_H
#define PROXY_PROXY_BODYFILE_H

/*
 * Stored bodies in files of their own, for sendfile(2). A hit on a plain
 * socket copies its body into the socket (writev(2) from memory): for a
 * large body that copy is most of the worker's own part of the hit. A body
 * of BODYFILE_MIN bytes or more (a stored one, or its copy decoded for
 * identity clients) asked for the BODYFILE_ASKS-th time gets a sealed
 * memory file (memfd) of its own, written once and kept with its entry;
 * its hits on plain sockets then go out by sendfile(2), the kernel handing
 * the file's pages to the socket instead of copying the bytes (as nginx
 * sends its cache files). Sealed, the file is never written again, so the
 * pages a socket still holds after the entry is gone keep their bytes.
 * Making one costs about two copies of the body (new zeroed pages, then
 * the write), which a body asked for once or twice would not earn back:
 * the near cache's entries come and go when more keys are hot than it
 * holds.
 *
 * Bounded per process: the files hold at most max_bytes in all (the near
 * cache's budget, l1_max_bytes) and use at most BODYFILE_FILES_MAX
 * descriptors, never more than a quarter of RLIMIT_NOFILE; past either,
 * bodies go from memory as before.
 */

#include <stdint.h>

#include "cache/cache_entry.h"

#define BODYFILE_MIN		((size_t)32 << 10)
#define BODYFILE_ASKS		8
#define BODYFILE_FILES_MAX	4096
#define BODYFILE_FD_SHARE	4	/* at most 1/4 of RLIMIT_NOFILE */

struct bodyfile_counters {
	int64_t		files;		/* held now */
	int64_t		bytes;		/* their bytes */
};

/* The file of e's body (plain: of its decoded copy, e->plain), or -1:
 * send it from memory. Made on the BODYFILE_ASKS-th ask for one of
 * BODYFILE_MIN bytes or more, within the bounds (refused then, it is
 * asked again every 64th time). */
int		 bodyfile_of(struct cache_entry *e, int plain, int64_t max_bytes);
const struct bodyfile_counters *bodyfile_counters(void);

#endif
