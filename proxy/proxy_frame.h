#ifndef PROXY_PROXY_FRAME_H
#define PROXY_PROXY_FRAME_H

/*
 * The door: a strict RFC 9112 reader of a client's byte stream, with no
 * libevent in it. It takes the bytes as they arrive, in any split, and
 * says what they are: each request's head (its method, target, version
 * and field lines, the framing lines left out), then its body, decoded
 * from chunked coding with extensions and trailers dropped, then its end.
 * Bodies of HEAD requests are read and dropped. So what is served is what
 * was read, once: no second parser reads the bytes.
 *
 * At the first request another server could frame or route differently it
 * stops: frame_feed() returns FRAME_REJECT, and frame_status() and
 * frame_reason() say what to answer. Everything after it is ignored.
 */

#include <stddef.h>
#include <stdint.h>

enum frame_result {
	FRAME_OK,		/* all of it read */
	FRAME_PAUSE,		/* a request ended and its end asked to stop:
				 * the rest is for later */
	FRAME_REJECT		/* answer frame_status() and close */
};

/* A field line as received, name and value NUL-terminated, the value
 * without its leading and trailing whitespace. */
struct frame_field {
	const char	*name;
	const char	*value;
};

/* How a request's body is framed, as the door hands it on. */
enum frame_body {
	FRAME_BODY_NONE,	/* no body */
	FRAME_BODY_LENGTH,	/* Content-Length: length (0 included) */
	FRAME_BODY_CHUNKED	/* chunked: its length is known at its end */
};

/*
 * A request's head. Its strings point into the door's own buffer, valid
 * until its next head begins: a caller that serves one request at a time
 * stops feeding at its end (FRAME_PAUSE) until it is done with it.
 */
struct frame_head {
	const char		*method;	/* a token, as sent */
	const char		*target;	/* as sent (checked) */
	int			 minor;		/* HTTP/1.minor */
	const struct frame_field *fields;	/* in order, but Content-Length
						 * and Transfer-Encoding */
	size_t			 nfields;
	enum frame_body		 body;		/* none for a HEAD's, dropped */
	uint64_t		 length;	/* FRAME_BODY_LENGTH's */
	int			 dropped;	/* a body read and dropped (HEAD) */
	int			 expect_continue; /* Expect: 100-continue */
};

/* What the door reads, as it reads it. end() returns nonzero to stop
 * after this request (FRAME_PAUSE). */
struct frame_ops {
	void	(*head)(void *arg, const struct frame_head *h);
	void	(*body)(void *arg, const char *p, size_t n);
	int	(*end)(void *arg);
};

struct frame;

/* head_max: bytes of a request's head (request line through the empty
 * line) before 431; body_max: bytes of a body before 413. NULL if out of
 * memory. */
struct frame	*frame_new(size_t head_max, uint64_t body_max);
void		 frame_free(struct frame **fp);
/* Changes the limits (a reload), from the next byte read. */
void		 frame_set_limits(struct frame *f, size_t head_max,
		    uint64_t body_max);

/* The Host rules (one Host line, in HTTP/1.1, the same as an absolute-form
 * target's authority) on or off: off for a listener whose handler judges
 * the Host itself (the admin listener, which answers 403). On at first. */
void		 frame_set_host_rules(struct frame *f, int on);

/* Reads n bytes at p; *used says how many were taken (all of them but
 * after a FRAME_PAUSE). */
enum frame_result frame_feed(struct frame *f, const char *p, size_t n,
		    size_t *used, const struct frame_ops *ops, void *arg);

/* After FRAME_REJECT: the status (400, 413, 414, 417, 431, 501, 505) and
 * a short static reason ("space before colon"). 0 and "" before. */
int		 frame_status(const struct frame *f);
const char	*frame_reason(const struct frame *f);
/* Between requests: no byte of a next one read yet (a connection idle,
 * or its head's first bytes only, may be closed). */
int		 frame_idle(const struct frame *f);
/* Inside a body: bytes read there are progress even when nothing is
 * handed on. */
int		 frame_in_body(const struct frame *f);
/* Request heads read so far. */
uint64_t	 frame_requests(const struct frame *f);
/* Body bytes of the latest request framed so far (a chunk counts from
 * its size line). */
uint64_t	 frame_body_bytes(const struct frame *f);

#endif
