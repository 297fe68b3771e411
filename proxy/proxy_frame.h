#ifndef PROXY_PROXY_FRAME_H
#define PROXY_PROXY_FRAME_H

/*
 * The door: a strict RFC 9112 reader of a client's byte stream, with no
 * libevent in it. It takes the bytes as they arrive, in any split, and
 * passes on a canonical stream that libevent's lenient parser cannot
 * read two ways: each request's head as received, its Content-Length and
 * Transfer-Encoding lines replaced by one Content-Length line, then its
 * body. A chunked body is read whole first (up to body_max), its
 * extensions and trailers dropped, and passed on with that length; so a
 * fault in it is found before any of its request was passed on. A HEAD's
 * body (libevent reads none for it) is read and dropped, with its framing
 * lines. A method the public port does not serve (PURGE, TRACE, any
 * unknown one) is refused at its request line: 405 or 501.
 *
 * At the first request another server could frame or route differently it
 * stops: frame_feed() returns FRAME_REJECT, and frame_status() and
 * frame_reason() say what to answer. Everything after it is ignored.
 */

#include <stddef.h>
#include <stdint.h>

enum frame_result {
	FRAME_OK,		/* all of it read; emitted what is complete */
	FRAME_REJECT		/* answer frame_status() and close */
};

/* Where the canonical stream goes. */
typedef void	(*frame_emit_fn)(void *arg, const char *p, size_t n);

struct frame;

/* head_max: bytes of a request's head (request line through the empty
 * line) before 431; body_max: bytes of a body before 413. NULL if out of
 * memory. */
struct frame	*frame_new(size_t head_max, uint64_t body_max);
void		 frame_free(struct frame **fp);
/* Changes the limits (a reload), from the next byte read. */
void		 frame_set_limits(struct frame *f, size_t head_max,
		    uint64_t body_max);

enum frame_result frame_feed(struct frame *f, const char *p, size_t n,
		    frame_emit_fn emit, void *arg);

/* After FRAME_REJECT: the status (400, 413, 414, 431, 501, 505) and a
 * short static reason ("space before colon"). 0 and "" before. */
int		 frame_status(const struct frame *f);
const char	*frame_reason(const struct frame *f);
/* Inside a body, which may be held back (chunked) or dropped: bytes read
 * there are progress even when nothing is emitted. */
int		 frame_in_body(const struct frame *f);
/* Request heads emitted so far. */
uint64_t	 frame_requests(const struct frame *f);
/* Body bytes of the latest request framed so far (a chunk counts from
 * its size line). */
uint64_t	 frame_body_bytes(const struct frame *f);

#endif
