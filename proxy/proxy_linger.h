/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_LINGER_H
#define PROXY_PROXY_LINGER_H

/*
 * Lingering close (RFC 9112 9.6): a connection refused while its client
 * may still be sending (a 413 at the head of a long upload) is not closed
 * at once. Closed with unread bytes, the kernel would answer them with a
 * reset, which can destroy the refusal before the client reads it. Its
 * sending side is shut instead (the client sees the answer end), and what
 * the client still sends is read and dropped, at most LINGER_BYTES_MAX
 * bytes for at most LINGER_MS, then it is closed. At most LINGER_MAX
 * connections linger at once, and never more than an eighth of the
 * process's descriptors; past that one is closed at once.
 */

#include <event2/util.h>

#define LINGER_BYTES_MAX	((size_t)16 << 20)
#define LINGER_MS		5000
#define LINGER_MAX		256

struct event_base;
struct lingers;

/* NULL on no memory. */
struct lingers	*linger_new(struct event_base *base);
/* Closes every connection still lingering; sets *lp to NULL. */
void		 linger_free(struct lingers **lp);
/* The connection on fd, whose answer has been written, lingers on a
 * copy of fd: the caller closes its own. */
void		 linger_start(struct lingers *l, evutil_socket_t fd);
/* How many linger now. */
int		 linger_count(const struct lingers *l);

#endif
