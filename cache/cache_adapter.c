/* SPDX-License-Identifier: MIT */
/*
 * hiredis's async contexts on the libevent loop: the events of each
 * connection, and the read that fills the reply reader in place. Which
 * hiredis 0.14 internals it uses, and why: cache_adapter.h.
 *
 * Calls nothing in cache/. Called by cache_route.c and cache_sentinel.c.
 */

#include "cache/cache_adapter.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <hiredis/sds.h>

#include "common/log.h"
#include "common/prio.h"

#define HEV_READ_BYTES	(256 * 1024)	/* room made for one read */
#define HEV_READS_MAX	64		/* reads per wakeup */
#define HEV_KEEP_MAX	(1024 * 1024)	/* an empty reader buffer kept */

/* Runs the callbacks of the replies the reader holds. libhiredis 0.14
 * exports it (async.c) but its async.h does not declare it; on_hev_read
 * calls it after each read, as redisAsyncHandleRead would after its own. */
void	redisProcessCallbacks(redisAsyncContext *ac);

struct hev {
	redisAsyncContext	*ac;
	struct event		*rev, *wev;
	int			 reading;
	int			 writing;	/* in on_hev_write */
	int			 gone;	/* hiredis let go of it in a callback */
};

static void
hev_free(struct hev *h)
{
	event_free(h->rev);
	event_free(h->wev);
	free(h);
}

/* 1: bytes were added to the reader; 0: none to read; -1: connecting,
 * the end of the stream or an error, which hiredis's own read handles. */
static int
hev_fill(redisAsyncContext *ac, evutil_socket_t fd)
{
	redisReader *r = ac->c.reader;
	sds buf;
	ssize_t n;

	if (!(ac->c.flags & REDIS_CONNECTED) || r->err != 0)
		return -1;
	/* Kept between replies, up to a size: one large entry must not
	 * leave its buffer behind for good. */
	if (r->len == 0 && sdsavail(r->buf) > HEV_KEEP_MAX &&
	    (buf = sdsempty()) != NULL) {
		sdsfree(r->buf);
		r->buf = buf;
		r->pos = 0;
	}
	if ((buf = sdsMakeRoomFor(r->buf, HEV_READ_BYTES)) == NULL)
		return -1;
	r->buf = buf;
	n = read(fd, buf + sdslen(buf), sdsavail(buf));
	if (n > 0) {
		sdsIncrLen(buf, (int)n);
		r->len = sdslen(buf);
		return 1;
	}
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return 0;
	return -1;
}

static void
on_hev_read(evutil_socket_t fd, short what, void *arg)
{
	struct hev *h = arg;
	int reads, rc;

	h->reading = 1;
	for (reads = 0; !h->gone && reads < HEV_READS_MAX; reads++) {
		if ((rc = hev_fill(h->ac, fd)) == 0)
			break;
		if (rc == -1) {
			redisAsyncHandleRead(h->ac);
			break;
		}
		redisProcessCallbacks(h->ac);
	}
	h->reading = 0;
	if (h->gone)
		hev_free(h);
}

static void
on_hev_write(evutil_socket_t fd, short what, void *arg)
{
	struct hev *h = arg;

	h->writing = 1;
	redisAsyncHandleWrite(h->ac);
	h->writing = 0;
	if (h->gone)
		hev_free(h);
}

static void
hev_add_read(void *arg)
{
	struct hev *h = arg;

	event_add(h->rev, NULL);
}

static void
hev_del_read(void *arg)
{
	struct hev *h = arg;

	event_del(h->rev);
}

/*
 * A command was queued: it is written as soon as the callback that queued
 * it returns, in this pass of the loop, rather than after the next wait
 * for the socket to be writable (which a connected socket nearly always
 * is). While connecting, or when a write could not take everything, it
 * waits for the socket as usual.
 */
static void
hev_add_write(void *arg)
{
	struct hev *h = arg;

	if (h->writing || !(h->ac->c.flags & REDIS_CONNECTED))
		event_add(h->wev, NULL);
	else
		event_active(h->wev, EV_WRITE, 1);
}

static void
hev_del_write(void *arg)
{
	struct hev *h = arg;

	event_del(h->wev);
}

static void
hev_cleanup(void *arg)
{
	struct hev *h = arg;

	event_del(h->rev);
	event_del(h->wev);
	if (h->reading || h->writing)
		h->gone = 1;
	else
		hev_free(h);
}

static int
hev_attach(redisAsyncContext *ac, struct event_base *base)
{
	struct hev *h;

	if (ac->ev.data != NULL || (h = calloc(1, sizeof(*h))) == NULL)
		return -1;
	h->ac = ac;
	h->rev = event_new(base, ac->c.fd, EV_READ | EV_PERSIST, on_hev_read,
	    h);
	h->wev = event_new(base, ac->c.fd, EV_WRITE, on_hev_write, h);
	if (h->rev == NULL || h->wev == NULL) {
		if (h->rev != NULL)
			event_free(h->rev);
		if (h->wev != NULL)
			event_free(h->wev);
		free(h);
		return -1;
	}
	PRIO_SET(h->rev, PRIO_BACKEND);
	PRIO_SET(h->wev, PRIO_BACKEND);
	ac->ev.addRead = hev_add_read;
	ac->ev.delRead = hev_del_read;
	ac->ev.addWrite = hev_add_write;
	ac->ev.delWrite = hev_del_write;
	ac->ev.cleanup = hev_cleanup;
	ac->ev.data = h;
	/* hev_fill() decides what the reader keeps between replies. */
	ac->c.reader->maxbuf = 0;
	event_add(h->rev, NULL);
	event_add(h->wev, NULL);	/* the connect completes writable */
	return 0;
}

int
adapter_command(redisAsyncContext *ac, redisCallbackFn *cb, void *privdata,
    const char *head, size_t headlen, struct evbuffer *rest)
{
	redisContext *c = &ac->c;
	size_t restlen = evbuffer_get_length(rest);
	sds buf;

	if (restlen > INT_MAX - headlen)
		return REDIS_ERR;
	if ((buf = sdsMakeRoomFor(c->obuf, headlen + restlen)) == NULL)
		return REDIS_ERR;
	c->obuf = buf;
	if (redisAsyncFormattedCommand(ac, cb, privdata, head, headlen) !=
	    REDIS_OK)
		return REDIS_ERR;
	/* The room made above holds it: nothing is allocated, nothing can
	 * fail between the head and the rest. */
	assert(c->obuf == buf && sdsavail(c->obuf) >= restlen);
	evbuffer_copyout(rest, c->obuf + sdslen(c->obuf), restlen);
	sdsIncrLen(c->obuf, (int)restlen);
	return REDIS_OK;
}

redisAsyncContext *
adapter_connect(struct event_base *base, const char *host, int port,
    const char *unix_path, void *data, redisConnectCallback *on_conn,
    redisDisconnectCallback *on_disc)
{
	redisAsyncContext *ac;

	if (host[0] == '\0')
		ac = redisAsyncConnectUnix(unix_path);
	else
		ac = redisAsyncConnect(host, port);
	if (ac == NULL)
		return NULL;
	if (ac->err) {
		log_warn("redis: cannot connect to %s:%d: %s", host, port,
		    ac->errstr);
		redisAsyncFree(ac);
		return NULL;
	}
	ac->data = data;
	if (hev_attach(ac, base) == -1) {
		redisAsyncFree(ac);
		return NULL;
	}
	redisAsyncSetConnectCallback(ac, on_conn);
	redisAsyncSetDisconnectCallback(ac, on_disc);
	return ac;
}

int
adapter_auth(redisAsyncContext *ac, const struct adapter_auth *a,
    redisCallbackFn *cb, void *privdata)
{
	const char *argv[] = { "AUTH", a->user, a->pass };

	if (a->pass[0] == '\0')
		return REDIS_ERR;
	if (a->user[0] == '\0') {		/* AUTH pass: the default user */
		argv[1] = a->pass;
		return redisAsyncCommandArgv(ac, cb, privdata, 2, argv, NULL);
	}
	return redisAsyncCommandArgv(ac, cb, privdata, 3, argv, NULL);
}

int
adapter_auth_set(struct adapter_auth *a, const char *user, const char *pass)
{
	int changed = strcmp(a->user, user) != 0 || strcmp(a->pass, pass) != 0;

	snprintf(a->user, sizeof(a->user), "%s", user);
	snprintf(a->pass, sizeof(a->pass), "%s", pass);
	return changed;
}

int
adapter_auth_refused(const char *err)
{
	return strncmp(err, "WRONGPASS", 9) == 0 ||
	    strncmp(err, "NOAUTH", 6) == 0;
}

int
adapter_auth_not_needed(const char *err)
{
	return strstr(err, "without any password configured") != NULL ||
	    strstr(err, "no password is set") != NULL;
}
