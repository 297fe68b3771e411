/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_UNZIP_H
#define PROXY_PROXY_UNZIP_H

/*
 * A stored compressed body decoded for a client that takes only identity,
 * as the client takes it: a slice of UNZIP_SLICE stored bytes at a time,
 * while less than UNZIP_WINDOW decoded bytes wait for its socket. Its
 * memory is its decoder's window and that much output, whatever the
 * body's size; a client that reads slowly holds no more. For the entries
 * whose decoded copy cannot be kept (proxy_coding.h: CODING_KEPT_MAX). At
 * most UNZIP_MAX at once in a process, each holding a decoder: the other
 * half of the decoders are left to the checks of what is stored.
 */

#include <stddef.h>

#include "codec/codec.h"

#define UNZIP_SLICE	1024		/* stored bytes fed at a time */
#define UNZIP_WINDOW	(64 * 1024)	/* decoded bytes queued at most */
#define UNZIP_MAX	(CODEC_DECODERS_MAX / 2)	/* under way at once */

struct cache_entry;
struct hreq;

/* Starts ev's reply: status, ev's out fields and Content-Length, the
 * decoded length (in *lenp too), found by a first pass that keeps
 * nothing; then e's body decoded (at most max_out bytes) as the client
 * takes it. The reply ends with the body, or is cut (the connection
 * closed) if the body turns out other than it was. 0, or -1 when none
 * could start (UNZIP_MAX under way, no decoder, a body that does not
 * decode within max_out): nothing was sent. */
int	unzip_reply(struct hreq *ev, int status, struct cache_entry *e,
	    size_t max_out, size_t *lenp);
/* How many are under way in the process. */
unsigned unzip_live(void);

#endif
