/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_CONN_INT_H
#define PROXY_PROXY_CONN_INT_H

/*
 * What proxy_conn.c (the connection: reading, writing, its life) shares
 * with proxy_conn_reply.c (the replies it writes), which asks it to send.
 * Nothing else includes it.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <event2/buffer.h>

#include "common/arena.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_frame.h"

struct hreq;

#define CONN_MAGIC	0x434f4e4eu	/* "CONN" */
#define CONN_IN_SIZE	(16 * 1024)	/* bytes one read takes at most */

enum conn_state {
	CS_READ,		/* reading a request, or idle between two */
	CS_SERVE,		/* its request is served: nothing is read */
	CS_FLUSH,		/* its reply given: sent, then the next */
	CS_CLOSING,		/* its last reply given: sent, then closed */
	CS_DEAD			/* its socket closed: a request in service
				 * finishes alone, then it is freed */
};

struct conn {
	uint32_t		 magic;
	struct proxy		*px;
	const struct conn_kind	*kind;
	TAILQ_ENTRY(conn)	 link;		/* in px->conn_list */
	enum conn_state		 st;
	int			 busy;		/* a request is being served */
	int			 fd;		/* -1 once closed */
	struct bufferevent	*bev;		/* TLS: its OpenSSL bufferevent */
	int			 handshaken;
	struct event		*rev, *wev;	/* a plain socket's */
	struct event		*timer;		/* client_timeout */
	struct event		*next_ev;	/* the exchange ends: next turn */
	struct event		*written_ev;	/* a stream's writer hears */
	struct frame		*frame;		/* the door */
	char			*in;		/* read, not yet fed to the door */
	size_t			 in_off, in_len;
	struct evbuffer		*wbuf;		/* what the socket did not take */
	struct hreq		 req;		/* the one in service */
	struct arena		 scratch;	/* its memory, until the next */
	enum frame_body		 framing;	/* its body's */
	char			 length_text[24];	/* its Content-Length */
	int			 continue_due;	/* a 100 Continue, if it waits */
	int			 refused;	/* by the door: closes after */
	int			 keep;		/* the client would keep it */
	int			 replied;	/* its reply is all given */
	int			 streaming;	/* a streamed reply under way */
	int			 chunked;	/* ... in chunked coding */
	int			 stream_keep;	/* ... kept alive after it */
	int			 tls;		/* over TLS */
	void			(*written)(void *);	/* a stream's writer */
	void			*written_arg;
	char			 client[HREQ_CLIENT_MAX];
};

/* Pieces to send in this order: pre (copied if queued), buf's bytes
 * (taken), ref (by reference, released once sent or dropped), post. */
struct send {
	const struct iovec	*pre;
	int			 npre;
	struct evbuffer		*buf;
	const void		*ref;
	size_t			 ref_len;
	hreq_release_fn		 release;
	void			*arg;
	/* With has_file, ref's bytes are also file's, from its start: a
	 * plain socket is sent them by sendfile(2). */
	int			 has_file;
	int			 file;
	const struct iovec	*post;
	int			 npost;
};

#define IOV_SEND_MAX	64		/* pieces one writev() sends */

/* proxy_conn_send.c: s's pieces in order into v (at most IOV_SEND_MAX),
 * the count; a body that does not fit whole ends the list there. */
int	send_gather(const struct send *s, struct iovec *v);
/* s's head, then its file, then what follows, on fd as far as it takes
 * them: the bytes sent, or -1 (errno) when none went. */
ssize_t	send_file(int fd, const struct send *s);
/* What the socket did not take of s (its first skip bytes went) queued on
 * out; tls: out is a TLS bufferevent's, no file pieces. */
void	send_queue(struct evbuffer *out, struct send *s, size_t skip, int tls);

/* Sends s: at once as far as the socket takes it, the rest queued. */
void	conn_send(struct conn *c, struct send *s);
/* Queued, not yet sent. */
size_t	conn_backlog(const struct conn *c);
/* Its request is answered (all given): kept alive when keep and the
 * client would, else closed once all is sent. */
void	conn_replied(struct conn *c, int keep);
/* Closes it now; its request is done. */
void	conn_abort(struct conn *c);

#endif
