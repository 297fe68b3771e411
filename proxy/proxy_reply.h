/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_REPLY_H
#define PROXY_PROXY_REPLY_H

/*
 * Every reply head a client gets, built in one place: from a stored entry
 * (rendered once per entry for plain hits, field by field otherwise), from
 * a live response that streams, or made up by Corral. One Via join, one
 * Age, one end-to-end filter. It writes through the connection's replies
 * (proxy_conn.h) and calls proxy_hdr.c only.
 */

#include <stddef.h>
#include <stdint.h>


#include "upstream/upstream.h"

struct hreq;
struct hlist;

struct cache_entry;
struct conf_route;

/* What a reply needs to know of its request. */
struct reply {
	struct hreq *ev;
	const char		*challenge;	/* a 401's WWW-Authenticate */
	const struct conf_route	*rt;		/* its route's settings */
	const char		*cache_status;
	const char		*head_length;	/* a passed HEAD: the origin's
						 * Content-Length, or "" */
	int			 head;		/* HEAD: no body */
	int			 conditional;	/* If-None-Match, If-Modified-Since */
	int			 cached;	/* from the cache, not passed */
	int			 closing;	/* stopping: Connection: close */
	int			 record;	/* the access record names
						 * Cache-Status */
	size_t			 max_decoded;	/* a body decoded for it:
						 * the most (max_entry_bytes) */
	int64_t			 max_file_bytes;	/* bodies in files for
						 * sendfile: the most in all
						 * (l1_max_bytes; 0: none) */
	int			 not_modified;	/* out: answered 304 */
	int			 not_acceptable;	/* out: answered 406 */
	int			 decoded;	/* out: its body decoded */
};

/* Answers with entry e; returns the body bytes sent. */
uint64_t reply_entry(struct reply *r, struct cache_entry *e);
/* Answers with a status Corral makes up ("CODE text" as the body; phrase
 * NULL for the usual one) and closes; returns the body bytes sent. */
uint64_t reply_error(struct reply *r, int code, const char *phrase,
	    const char *text);
/* Starts a streamed reply with resp's status and end-to-end headers; the
 * body follows with hreq_chunk(). */
void	reply_stream_head(struct reply *r, const struct upstream_response *resp);
/* Starts a sibling worker's streamed reply: the origin's status and
 * end-to-end headers as they came, with its length when it had one. */
void	reply_peer_head(struct hreq *ev,
	    const struct upstream_response *resp);
/* Sends an interim (1xx) response with headers' end-to-end fields ahead
 * of ev's reply, to an HTTP/1.1 client (RFC 9110 15.2: none to 1.0). 0. */
int	reply_interim(int status, const struct hlist *headers, void *ev);
/* The bytes queued for ev's client, not yet sent (0 once it is gone). */
size_t	reply_backlog(struct hreq *ev);
/* The reason phrase of a refusal at the door (proxy_frame.c's statuses). */
const char *reply_phrase(int status);

#endif
