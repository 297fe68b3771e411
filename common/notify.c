/* SPDX-License-Identifier: MIT */
/*
 * sd_notify(3)'s protocol, spoken directly (notify.h). Calls nothing.
 */

#include "common/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define US_PER_MS	1000

int
notify_send(const char *fmt, ...)
{
	struct sockaddr_un sa;
	const char *path = getenv("NOTIFY_SOCKET");
	char msg[NOTIFY_MSG_MAX];
	size_t plen;
	socklen_t salen;
	va_list ap;
	ssize_t n;
	int fd, len, saved;

	if (path == NULL || path[0] == '\0')
		return 0;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, plen);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* abstract: no NUL at the end */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
	    (path[0] == '/'));

	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0)
		return -1;
	if ((size_t)len >= sizeof(msg))
		len = (int)sizeof(msg) - 1;

	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	do
		n = sendto(fd, msg, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT,
		    (struct sockaddr *)&sa, salen);
	while (n == -1 && errno == EINTR);
	saved = errno;
	close(fd);
	errno = saved;
	return n == len ? 0 : -1;
}

int64_t
notify_watchdog_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	long long v;

	if (usec == NULL)
		return 0;
	if (pid != NULL && strtoll(pid, NULL, 10) != (long long)getpid())
		return 0;
	errno = 0;
	v = strtoll(usec, &end, 10);
	if (errno != 0 || end == usec || *end != '\0' || v <= 0)
		return 0;
	return v / US_PER_MS > 0 ? v / US_PER_MS : 1;
}
