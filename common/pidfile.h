/* SPDX-License-Identifier: MIT */
#ifndef COMMON_PIDFILE_H
#define COMMON_PIDFILE_H

/*
 * The PID file ([server] pid_file): this process's id and a newline,
 * written whole (a new file renamed over the old) at start, removed at
 * exit if it still names this process. Calls nothing of Corral.
 */

#include <stddef.h>

/* 0, or -1 with why in err. */
int	pidfile_write(const char *path, char *err, size_t errlen);
void	pidfile_remove(const char *path);

#endif
