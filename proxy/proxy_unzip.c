/* SPDX-License-Identifier: MIT */
/*
 * A stored body decoded as its client takes it (see proxy_unzip.h): the
 * decoder's output is queued on the connection a slice at a time, and
 * each time the socket has taken all that was queued (or the connection
 * broke) the next slices go. Calls the codec and the connection only.
 */

#include "proxy/proxy_unzip.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/buffer.h>

#include "cache/cache_entry.h"
#include "codec/codec.h"
#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_conn.h"

#define UNZIP_MAGIC	0x554e5a50u	/* "UNZP" */

struct unzip {
	uint32_t		 magic;
	struct hreq		*ev;
	struct cache_entry	*e;
	struct codec		*cd;
	size_t			 fed;		/* of e's body */
	size_t			 len;		/* decoded, as said */
	size_t			 sent;		/* decoded, queued */
	struct evbuffer		*out;		/* decoded, not queued yet */
};

static void pump(struct unzip *u);

static unsigned live;		/* unzips under way in the process */

static int
on_out(void *arg, const void *p, size_t len)
{
	struct unzip *u = arg;

	return evbuffer_add(u->out, p, len);
}

static void
on_written(void *arg)
{
	struct unzip *u = arg;

	assert(u->magic == UNZIP_MAGIC);
	pump(u);
}

static void
unzip_free(struct unzip *u)
{
	codec_free(&u->cd);
	evbuffer_free(u->out);
	entry_unref(&u->e);
	u->magic = 0;
	free(u);
	live--;
}

/* What was decoded goes to the client; 0, or -1 past the length said. */
static int
queue_out(struct unzip *u)
{
	size_t n = evbuffer_get_length(u->out);

	if (n == 0)
		return 0;
	if (u->sent + n > u->len)
		return -1;
	u->sent += n;
	hreq_chunk(u->ev, u->out, on_written, u);
	return 0;
}

static void
pump(struct unzip *u)
{
	enum codec_result r = CODEC_OK;
	size_t n;

	while (!hreq_gone(u->ev) && hreq_backlog(u->ev) < UNZIP_WINDOW &&
	    u->fed < u->e->body_len) {
		n = MIN(UNZIP_SLICE, u->e->body_len - u->fed);
		r = codec_feed(u->cd, u->e->body + u->fed, n);
		u->fed += n;
		if (r != CODEC_OK || queue_out(u) == -1)
			goto cut;
	}
	if (hreq_gone(u->ev))
		goto cut;
	if (u->fed < u->e->body_len)
		return;		/* on_written goes on */
	if (codec_finish(u->cd) != CODEC_OK || queue_out(u) == -1 ||
	    u->sent != u->len)
		goto cut;
	hreq_end(u->ev);
	unzip_free(u);
	return;
cut:
	hreq_abort(u->ev);	/* a cut body must not pass for whole */
	unzip_free(u);
}

unsigned
unzip_live(void)
{
	return live;
}

int
unzip_reply(struct hreq *ev, int status, struct cache_entry *e,
    size_t max_out, size_t *lenp)
{
	struct unzip *u;
	char num[24], err[CODEC_ERR_LEN];
	size_t len;

	if (live >= UNZIP_MAX || coding_decode(e, max_out, NULL, &len) !=
	    CODEC_OK || (u = calloc(1, sizeof(*u))) == NULL)
		return -1;
	u->magic = UNZIP_MAGIC;
	u->ev = ev;
	u->len = *lenp = len;
	if ((u->out = evbuffer_new()) == NULL ||
	    (u->cd = codec_decoder_new(coding_of(e), max_out, on_out, u, err,
	    sizeof(err))) == NULL) {
		if (u->out != NULL)
			evbuffer_free(u->out);
		free(u);
		return -1;
	}
	u->e = entry_ref(e);
	live++;
	snprintf(num, sizeof(num), "%zu", len);
	(void)hl_add(&ev->out, "Content-Length", num);
	hreq_start(ev, status, NULL);
	pump(u);
	return 0;
}
