/* SPDX-License-Identifier: MIT */
/*
 * floor: the benchmark's yardstick for cold misses. An HTTP server with
 * nothing behind it: it reads each request, and 500 ms after the first
 * request of a burst it answers all of them at once (1 KiB each). A
 * stampede against it measures what the load client and the machine add
 * by themselves to a waiter's time beyond the origin's 500 ms: the least
 * any proxy's "waiter extra" can be here.
 *
 *   floor PORT [DELAY_MS]
 *
 * One thread, epoll, keep-alive; runs until killed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BODY_BYTES	1024
#define WAITERS_MAX	65536
#define EVENTS_MAX	256

static long long
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

int
main(int argc, char **argv)
{
	static int waiting[WAITERS_MAX];
	static char resp[BODY_BYTES + 128], buf[4096];
	struct epoll_event ev = { .events = EPOLLIN }, evs[EVENTS_MAX];
	struct sockaddr_in a = { .sin_family = AF_INET };
	long long first = 0, delay;
	int ls, ep, one = 1, nw = 0, rl, n, i;

	if (argc < 2) {
		fprintf(stderr, "usage: floor PORT [DELAY_MS]\n");
		return 2;
	}
	delay = argc > 2 ? atoll(argv[2]) : 500;
	rl = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
	    "\r\n", BODY_BYTES);
	memset(resp + rl, 'x', BODY_BYTES);
	rl += BODY_BYTES;
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) == -1 ||
	    listen(ls, 4096) == -1 || (ep = epoll_create1(0)) == -1) {
		perror("floor");
		return 2;
	}
	ev.data.fd = ls;
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	printf("floor listening on 127.0.0.1:%s\n", argv[1]);
	fflush(stdout);
	for (;;) {
		int timeout = -1;

		if (first != 0) {
			long long left = first + delay - now_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		n = epoll_wait(ep, evs, EVENTS_MAX, timeout);
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd, c;
			ssize_t r;

			if (fd == ls) {
				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one,
					    sizeof(one));
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
				continue;
			}
			if ((r = read(fd, buf, sizeof(buf))) <= 0) {
				close(fd);
				continue;
			}
			if (first == 0)
				first = now_ms();
			if (nw < WAITERS_MAX)
				waiting[nw++] = fd;
		}
		if (first != 0 && now_ms() >= first + delay) {
			for (i = 0; i < nw; i++)
				if (write(waiting[i], resp, (size_t)rl) != rl)
					close(waiting[i]);
			nw = 0;
			first = 0;
		}
	}
}
