/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_ADAPTER_H
#define CACHE_CACHE_ADAPTER_H

/*
 * hiredis's async contexts on the caller's libevent loop, in place of
 * hiredis's own adapters/libevent.h. Private to cache/.
 *
 * Unlike that adapter, a readable socket is read until it is empty,
 * straight into the reply reader's buffer: hiredis reads 16 KiB at a time
 * into a buffer of its own and copies that into the reader, so a 100 KiB
 * entry would cost seven loop passes and a copy more. hiredis may free
 * the context from inside a reply callback (a disconnect); the events are
 * then freed once the read is over.
 *
 * Besides the adapter interface every event library uses (ac->ev's
 * addRead, delRead, addWrite, delWrite, cleanup and data), this relies on
 * hiredis 0.14 internals that its headers show but do not promise:
 *   - ac->c.fd and ac->c.flags (REDIS_CONNECTED): whether the socket can
 *     be read here, or hiredis's own read must finish the connect or see
 *     the end of the stream (redisAsyncHandleRead);
 *   - ac->c.reader's buf (an sds), pos, len and err: read() appends to buf
 *     what redisReaderFeed would copy there, and updates len as it does;
 *   - reader->maxbuf, set to 0 so that the reader never frees its buffer
 *     on its own: the adapter decides what it keeps between replies;
 *   - hiredis/sds.h: sdsMakeRoomFor, sdsIncrLen, sdsavail, sdslen,
 *     sdsempty, sdsfree, on that buffer;
 *   - ac->c.obuf, the output buffer (an sds): adapter_command() makes
 *     room in it for the whole command first, so that hiredis's append of
 *     the head (redisAsyncFormattedCommand) cannot move it, then copies
 *     the rest after it; hiredis writes it only from the loop, later;
 *   - redisProcessCallbacks(), which runs the callbacks of the replies the
 *     reader now holds (the second half of redisAsyncHandleRead):
 *     libhiredis 0.14 exports it, but its async.h does not declare it, so
 *     cache_adapter.c does.
 * hiredis 1.x changes some of these (the reader's buffer, the adapter's
 * hooks); moving to it means checking each line above.
 */

#include <event2/event.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "conf/conf.h"

struct evbuffer;

/* What a connection proves who it is with: AUTH [user] pass, when pass is
 * set ([redis] username and password, or the sentinel_ ones). */
struct adapter_auth {
	char	 user[CONF_SECRET_MAX];		/* "": the default user */
	char	 pass[CONF_SECRET_MAX];		/* "": no AUTH */
};

/*
 * Connects to host:port (host "": the unix socket at unix_path) on base,
 * with data as the context's data and the two callbacks. NULL when it
 * cannot even start (logged).
 */
redisAsyncContext *adapter_connect(struct event_base *base, const char *host,
		    int port, const char *unix_path, void *data,
		    redisConnectCallback *on_conn,
		    redisDisconnectCallback *on_disc);

/* Queues AUTH [user] pass on ac, answered to cb. REDIS_OK, or REDIS_ERR
 * (nothing queued). */
int		 adapter_auth(redisAsyncContext *ac, const struct adapter_auth *a,
		    redisCallbackFn *cb, void *privdata);
/*
 * Queues a command already formatted (RESP): head, which holds at least
 * the command's name and every argument hiredis reads (it reads the
 * name), followed by rest's bytes, which go into hiredis's output buffer
 * without another copy (a large argument referenced by rest is copied
 * once, there). REDIS_OK, or REDIS_ERR (nothing queued).
 */
int		 adapter_command(redisAsyncContext *ac, redisCallbackFn *cb,
		    void *privdata, const char *head, size_t headlen,
		    struct evbuffer *rest);
/* Fills a from the user and password: 1 if that changed it, else 0. */
int		 adapter_auth_set(struct adapter_auth *a, const char *user,
		    const char *pass);
/* Does this error (to AUTH, or to any command) say Redis refused who we
 * are: a wrong password or user (WRONGPASS), or none given (NOAUTH)? */
int		 adapter_auth_refused(const char *err);
/* Does this error to AUTH say Redis wants no password? Harmless: it
 * serves us all the same. */
int		 adapter_auth_not_needed(const char *err);

#endif
