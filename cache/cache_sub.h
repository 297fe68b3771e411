/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_SUB_H
#define CACHE_CACHE_SUB_H

/*
 * A subscriber connection: a socket on the caller's libevent loop whose
 * replies and pushes (subscribe, ssubscribe, message, smessage, ...) are
 * all handed to one callback, in order. hiredis 0.14's async API knows
 * nothing of sharded pub/sub (it would drop every "smessage"), so this
 * connection parses RESP with hiredis's reader itself. Private to cache/.
 */

#include <event2/event.h>

struct sub;

/* reply: one reply or push, valid only during the call; NULL once the
 * connection is lost (the last call: the owner must sub_close() it). */
typedef void sub_reply_cb(const void *reply, void *arg);
/* The connection is established, and its AUTH accepted (once). */
typedef void sub_up_cb(void *arg);

/* host and port, or a unix path (host NULL). With a password, AUTH
 * [user] password goes first: on_up follows its acceptance, and a refusal
 * loses the connection (on_reply(NULL)). NULL when it cannot start. */
struct sub	*sub_open(struct event_base *base, const char *host, int port,
		    const char *unix_path, const char *user,
		    const char *password, sub_up_cb *on_up,
		    sub_reply_cb *on_reply, void *arg);
/* Queues one command (sent once connected). 0 or -1. */
int		 sub_send(struct sub *s, int argc, const char **argv);
/* Safe from inside its own callbacks. Sets *sp to NULL. */
void		 sub_close(struct sub **sp);

#endif
