/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_REQ_H
#define PROXY_PROXY_REQ_H

struct hreq;

/*
 * struct req: one client request, from its head to its one reply. Every
 * request, refused ones too, ends in req_finish() (proxy_req.c), which
 * sends the reply, counts, writes the access record and frees.
 */


struct conf;
struct proxy;

/* A request libevent has read: it is served. */
void	req_recv(struct proxy *px, struct hreq *ev);
/* The stand-in of a request the door refused (proxy_frame.c): answered
 * status, saying reason, and the connection closed. */
void	req_refused(struct proxy *px, struct hreq *ev, int status,
	    const char *reason);
/* A sibling worker asks for the response in flight for key: the request
 * joins that flight's stream, or is answered 204 at once. */
void	req_peer_recv(struct proxy *px, struct hreq *ev,
	    const char *key);
/* Past the stop deadline: a request that waits on its own fetch (a
 * pass) gets a 503 now; the others are answered by their flights. */
void	req_abandon_passes(struct proxy *px);
/* A reload replaced old with new: each counts under the route of its
 * prefix, if any. */
void	req_remap(struct proxy *px, const struct conf *old,
	    const struct conf *new);
/* Every request still in progress gets a 503 now. */
void	req_shutdown_all(struct proxy *px);

#endif
