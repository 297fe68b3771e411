/* SPDX-License-Identifier: MIT */
/*
 * Lingering close of a refused connection (see proxy_linger.h): a copy of
 * its descriptor, shut for writing, read and dropped until the client
 * stops, a bound is reached, or LINGER_MS pass.
 */

#include "proxy/proxy_linger.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"

#define LINGER_MAGIC	0x4c494e47u	/* "LING" */
#define LINGER_READ	16384		/* bytes dropped per read */
#define LINGER_FD_SHARE	8		/* at most 1/8 of RLIMIT_NOFILE */

struct lingering {
	uint32_t		 magic;
	struct lingers		*set;
	evutil_socket_t		 fd;
	struct event		*ev;
	size_t			 dropped;
	int64_t			 until_ms;	/* LINGER_MS in all */
	TAILQ_ENTRY(lingering)	 link;
};

struct lingers {
	struct event_base	*base;
	TAILQ_HEAD(, lingering)	 list;
	int			 n;
	int			 max;		/* at once */
};

struct lingers *
linger_new(struct event_base *base)
{
	struct lingers *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->base = base;
	TAILQ_INIT(&l->list);
	/* Never more than an eighth of the descriptors: a flood of refused
	 * connections must not take those that serve. */
	l->max = util_fd_share(LINGER_MAX, LINGER_FD_SHARE);
	return l;
}

static void
linger_end(struct lingering *g)
{
	assert(g->magic == LINGER_MAGIC);
	TAILQ_REMOVE(&g->set->list, g, link);
	g->set->n--;
	event_free(g->ev);
	evutil_closesocket(g->fd);
	g->magic = 0;
	free(g);
}

void
linger_free(struct lingers **lp)
{
	struct lingers *l = *lp;

	if (l == NULL)
		return;
	while (!TAILQ_EMPTY(&l->list))
		linger_end(TAILQ_FIRST(&l->list));
	free(l);
	*lp = NULL;
}

/* The client sent more, closed, or took too long. */
static void
on_linger(evutil_socket_t fd, short what, void *arg)
{
	struct lingering *g = arg;
	char buf[LINGER_READ];
	ssize_t n;

	assert(g->magic == LINGER_MAGIC);
	if ((what & EV_TIMEOUT) || util_now_ms() >= g->until_ms) {
		linger_end(g);
		return;
	}
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		if ((g->dropped += (size_t)n) >= LINGER_BYTES_MAX)
			break;
	if (n == 0 || g->dropped >= LINGER_BYTES_MAX ||
	    (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR))
		linger_end(g);
}

void
linger_start(struct lingers *l, evutil_socket_t fd)
{
	struct timeval tv = util_timeval(LINGER_MS);
	struct lingering *g;

	if (l == NULL || fd < 0 || l->n >= l->max)
		return;
	if ((g = calloc(1, sizeof(*g))) == NULL)
		return;
	g->magic = LINGER_MAGIC;
	g->set = l;
	g->until_ms = util_now_ms() + LINGER_MS;
	if ((g->fd = dup(fd)) == -1) {
		free(g);
		return;
	}
	if (evutil_make_socket_nonblocking(g->fd) == -1 ||
	    (g->ev = event_new(l->base, g->fd, EV_READ | EV_PERSIST,
	    on_linger, g)) == NULL) {
		evutil_closesocket(g->fd);
		free(g);
		return;
	}
	(void)shutdown(g->fd, SHUT_WR);
	event_add(g->ev, &tv);
	TAILQ_INSERT_TAIL(&l->list, g, link);
	l->n++;
}

int
linger_count(const struct lingers *l)
{
	return l != NULL ? l->n : 0;
}
