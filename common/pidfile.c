/* SPDX-License-Identifier: MIT */
/* The PID file: see pidfile.h. */

#include "common/pidfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIDFILE_TMP	".new"

int
pidfile_write(const char *path, char *err, size_t errlen)
{
	char tmp[4096];
	FILE *f;
	int ok;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s", path, PIDFILE_TMP) >=
	    sizeof(tmp)) {
		snprintf(err, errlen, "pid_file %s: path too long", path);
		return -1;
	}
	if ((f = fopen(tmp, "w")) == NULL) {
		snprintf(err, errlen, "pid_file %s: %s", tmp, strerror(errno));
		return -1;
	}
	ok = fprintf(f, "%ld\n", (long)getpid()) > 0;
	ok &= fclose(f) == 0;
	if (!ok || rename(tmp, path) == -1) {
		snprintf(err, errlen, "pid_file %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

void
pidfile_remove(const char *path)
{
	char buf[32];
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return;
	if (fgets(buf, sizeof(buf), f) != NULL && strtol(buf, NULL, 10) ==
	    (long)getpid())
		(void)unlink(path);
	fclose(f);
}
