/* SPDX-License-Identifier: MIT */
/*
 * Stored bodies in sealed memory files, for sendfile(2) (see
 * proxy_bodyfile.h). One set of counters per process: the files are the
 * process's own, each let go by its entry (file_drop).
 */

#include "proxy/proxy_bodyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"

#define SEALS	(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

static struct bodyfile_counters counters;
static int files_max = -1;		/* read on first use */

static void
file_drop(int fd, size_t len)
{
	close(fd);
	counters.files--;
	counters.bytes -= (int64_t)len;
}

/* A sealed memory file holding p[0..len), or -1. */
static int
file_make(const unsigned char *p, size_t len)
{
	size_t off = 0;
	ssize_t w;
	int fd;

	if ((fd = memfd_create("corral-body", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1)
		return -1;
	while (off < len) {
		if ((w = write(fd, p + off, len - off)) == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (off < len || fcntl(fd, F_ADD_SEALS, SEALS) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int
bodyfile_of(struct cache_entry *e, int plain, int64_t max_bytes)
{
	struct entry_file *f = plain ? &e->plain_file : &e->file;
	const unsigned char *p = plain ? e->plain : e->body;
	size_t len = plain ? e->plain_len : e->body_len;
	int fd;

	if (f->drop != NULL)
		return f->fd;
	/* Its BODYFILE_ASKS-th ask; refused then, every 64th after it. */
	if (len < BODYFILE_MIN || (++f->asks & 63) != BODYFILE_ASKS)
		return -1;
	if (files_max == -1)
		files_max = util_fd_share(BODYFILE_FILES_MAX, BODYFILE_FD_SHARE);
	if (counters.files >= files_max ||
	    counters.bytes + (int64_t)len > max_bytes ||
	    (fd = file_make(p, len)) == -1)
		return -1;
	f->fd = fd;
	f->drop = file_drop;
	counters.files++;
	counters.bytes += (int64_t)len;
	return fd;
}

const struct bodyfile_counters *
bodyfile_counters(void)
{
	return &counters;
}
