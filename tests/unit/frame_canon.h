/* SPDX-License-Identifier: MIT */
#ifndef TESTS_UNIT_FRAME_CANON_H
#define TESTS_UNIT_FRAME_CANON_H

/*
 * What the door (proxy/proxy_frame.c) read, written back as one canonical
 * byte stream for tests to compare: each head as "METHOD target
 * HTTP/1.x", its fields as "name: value", a Content-Length line for a
 * body (a chunked one is held until its end, as its length is known only
 * then), the empty line, the body. Read again, a canonical stream comes
 * out unchanged.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy_frame.h"

struct canon_buf {
	char	*p;
	size_t	 len, cap;
};

struct canon {
	struct canon_buf out;		/* the stream so far */
	struct canon_buf head;		/* a chunked request's head, held */
	struct canon_buf body;		/* ... and its body */
	int		 held;
	uint64_t	 ends;		/* requests read whole */
	uint64_t	 written;	/* heads written to out */
};

static inline void
canon_add(struct canon_buf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static inline void
canon_str(struct canon_buf *b, const char *s)
{
	canon_add(b, s, strlen(s));
}

static inline void
canon_on_head(void *arg, const struct frame_head *h)
{
	struct canon *c = arg;
	int chunked = h->body == FRAME_BODY_CHUNKED;
	struct canon_buf *b = chunked ? &c->head : &c->out;
	char line[64];

	c->head.len = c->body.len = 0;
	canon_str(b, h->method);
	canon_str(b, " ");
	canon_str(b, h->target);
	snprintf(line, sizeof(line), " HTTP/1.%d\r\n", h->minor);
	canon_str(b, line);
	for (size_t i = 0; i < h->nfields; i++) {
		canon_str(b, h->fields[i].name);
		canon_str(b, ": ");
		canon_str(b, h->fields[i].value);
		canon_str(b, "\r\n");
	}
	c->held = chunked;
	if (chunked)
		return;
	c->written++;
	if (h->body == FRAME_BODY_LENGTH) {
		snprintf(line, sizeof(line), "Content-Length: %" PRIu64 "\r\n",
		    h->length);
		canon_str(b, line);
	}
	canon_str(b, "\r\n");
}

static inline void
canon_on_body(void *arg, const char *p, size_t n)
{
	struct canon *c = arg;

	canon_add(c->held ? &c->body : &c->out, p, n);
}

static inline int
canon_on_end(void *arg)
{
	struct canon *c = arg;
	char line[64];

	c->ends++;
	if (!c->held)
		return 0;
	c->written++;
	canon_add(&c->out, c->head.p, c->head.len);
	snprintf(line, sizeof(line), "Content-Length: %zu\r\n\r\n", c->body.len);
	canon_str(&c->out, line);
	if (c->body.len > 0)
		canon_add(&c->out, c->body.p, c->body.len);
	c->held = 0;
	return 0;
}

static const struct frame_ops canon_ops = {
	.head = canon_on_head,
	.body = canon_on_body,
	.end = canon_on_end,
};

/* Feeds the n bytes at p; the door's verdict. */
static inline enum frame_result
canon_feed(struct frame *f, const char *p, size_t n, struct canon *c)
{
	size_t used;

	return frame_feed(f, p, n, &used, &canon_ops, c);
}

static inline void
canon_free(struct canon *c)
{
	free(c->out.p);
	free(c->head.p);
	free(c->body.p);
	memset(c, 0, sizeof(*c));
}

#endif
