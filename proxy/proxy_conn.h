/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_CONN_H
#define PROXY_PROXY_CONN_H

/*
 * Corral's HTTP/1.1 server: a client connection (plain, or TLS through
 * libevent's OpenSSL bufferevents), read once by the door (proxy_frame.c)
 * into a request (struct hreq), and the one reply each request gets,
 * written by this file alone.
 *
 * A connection serves one request at a time, in the order they came
 * (pipelined requests wait in its buffers): the next is read only once
 * the reply before it has been given and control is back in the event
 * loop. So a request, and every string of it, stays valid until then,
 * even after its reply (an access record reads it). A client that leaves
 * meanwhile leaves its request detached (hreq_gone()): it is answered as
 * any other, and its answer goes nowhere.
 *
 * Replies follow HTTP/1.1 as the client speaks it: the status line in its
 * version, a Date, a Content-Length where a body has one, chunked coding
 * for a streamed body of unknown length to an HTTP/1.1 client (to an
 * HTTP/1.0 one: the close ends it), "Connection: close" when the
 * connection ends after it (the client asked, HTTP/1.0 without
 * keep-alive, a refusal, a stop, or the handler's own "Connection: close"
 * in out), "Connection: keep-alive" to an HTTP/1.0 client kept. No body
 * to a HEAD, nor with 1xx, 204 and 304.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/hlist.h"
#include "common/uri.h"
#include "proxy/proxy_method.h"

#define HREQ_CLIENT_MAX		64	/* an address, as text */

/* The statuses the handlers answer with by name. */
#define HTTP_OK			200
#define HTTP_NOCONTENT		204
#define HTTP_NOTMODIFIED	304
#define HTTP_BADREQUEST		400
#define HTTP_NOTFOUND		404
#define HTTP_BADMETHOD		405
#define HTTP_NOTACCEPTABLE	406
#define HTTP_SERVUNAVAIL	503
#define HREQ_PARTS_MAX		8	/* a rendered head's pieces */

/* Gives back a body sent by reference: evbuffer_ref_cleanup_cb's face. */
typedef void (*hreq_release_fn)(const void *data, size_t len, void *arg);

struct conn;
struct evbuffer;

/* A request, as the door read it. The handler reads these fields; only
 * out is its to write, before the reply. */
struct hreq {
	enum hmethod		 method;
	const char		*method_name;
	const char		*target;	/* as sent */
	struct uri		 uri;		/* target's parts */
	const char		*path;		/* uri's path, "" if none */
	const char		*query;		/* uri's query, NULL if none */
	int			 minor;		/* HTTP/1.minor */
	struct hlist		 in;		/* its fields: the framing lines
						 * left out, a Content-Length
						 * added for a body */
	struct evbuffer		*body;		/* whole, decoded */
	struct hlist		 out;		/* the reply's fields */
	int			 status;	/* answered with, or 0 */
	struct conn		*conn;
};

/* Answers r with status (phrase NULL: the usual one), out's fields and
 * body (NULL: none; its bytes are taken). */
void	hreq_reply(struct hreq *r, int status, const char *phrase,
	    struct evbuffer *body);
/*
 * Answers r with a head whose fields are given rendered ("Name: value\r\n"
 * lines, parts[0..n), n at most HREQ_PARTS_MAX, none of out's; the
 * connection adds its Connection line) and a body by reference: body
 * stays valid until release(body, len, arg), which runs once, when the
 * socket has taken it or it is dropped. file, unless -1, holds the same
 * len bytes from its start and stays open as long: a plain socket is sent
 * them from it by sendfile(2). The hot path of a stored entry's hit:
 * nothing is allocated when the socket takes it all.
 */
void	hreq_reply_rendered(struct hreq *r, int status,
	    const struct iovec *parts, int n, const void *body, size_t len,
	    int file, hreq_release_fn release, void *arg);
/* Whether r's connection would send a body from a file (sendfile(2)):
 * a plain socket, not TLS. */
int	hreq_sends_files(const struct hreq *r);
/* Starts a streamed reply with out's fields: its body follows in
 * hreq_chunk()s and ends with hreq_end() (or hreq_abort()). */
void	hreq_start(struct hreq *r, int status, const char *phrase);
/* Queues a piece of the streamed body (its bytes are taken); written(arg)
 * runs once the socket has taken all that is queued (NULL: none). */
void	hreq_chunk(struct hreq *r, struct evbuffer *piece,
	    void (*written)(void *), void *arg);
void	hreq_end(struct hreq *r);
/* Ends r's connection at once: a streamed reply cut short, which must not
 * pass for a whole one. r is done. */
void	hreq_abort(struct hreq *r);
/* An interim (1xx) response ahead of the reply, with fields' end-to-end
 * ones: to an HTTP/1.1 client only, before anything of the reply. */
void	hreq_interim(struct hreq *r, int status, const struct hlist *fields);

/* Bytes queued for r's client and not yet sent (0 once it has gone). */
size_t	hreq_backlog(const struct hreq *r);
/* Has r's client gone (its connection closed or broken)? */
int	hreq_gone(const struct hreq *r);
/* r's socket, for a watch on its close; -1 once gone. */
int	hreq_fd(const struct hreq *r);
/* r's client's address, as text ("-" when unknown). */
const char *hreq_client(const struct hreq *r);
/* Did r come over TLS? */
int	hreq_tls(const struct hreq *r);
/* Scratch memory for r's handler, freed with r: NULL when out of memory. */
void	*hreq_alloc(struct hreq *r, size_t n);
char	*hreq_strndup(struct hreq *r, const char *s, size_t n);

/* The reason phrase of status. */
const char *hreq_phrase(int status);

/* ---- connections (proxy_http.c makes them) ---------------------------- */

struct proxy;
struct tls;

/* What a listener's connections serve. */
struct conn_kind {
	const char	*name;		/* "public", "admin", "peer" */
	int		 no_body;	/* its requests have none (413) */
	int		 own_host_rules;	/* its handler judges Host */
	/* A request to serve; it must reply (now or later). */
	void		(*serve)(struct proxy *px, struct hreq *r);
	/* A request the door refused: status and a static reason. */
	void		(*refused)(struct proxy *px, struct hreq *r, int status,
			    const char *reason);
	/* The connection ends (its last request done); c NULL: conn_new()
	 * could not make it. Once for each conn_new(). */
	void		(*closed)(struct proxy *px, struct conn *c);
};

/* Serves the accepted socket fd (which it owns from now on), over TLS
 * with t (NULL: plain). NULL, fd closed, when out of memory. */
struct conn *conn_new(struct proxy *px, const struct conn_kind *kind,
	    int fd, struct tls *t);
/* Ends every connection at once (a stop's last step). */
void	conn_close_all(struct proxy *px);
/* Connections open (of every kind). */
int	conn_count(const struct proxy *px);

#endif
