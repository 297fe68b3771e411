/* SPDX-License-Identifier: MIT */
/*
 * A reply's pieces (struct send, proxy_conn_int.h) onto a socket: gathered
 * for one writev(2), or the head then a file by sendfile(2); and what the
 * socket did not take queued on an evbuffer, the body by reference or as a
 * piece of its file, over TLS coalesced into one record when it fits. The
 * connection (proxy_conn.c) decides which and when.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>

#include "common/util.h"
#include "proxy/proxy_conn_int.h"

#define TLS_RECORD_MAX	16384		/* plaintext bytes of a TLS record */

/* Adds the bytes of iov[0..n) past *skip to out. */
static void
add_copies(struct evbuffer *out, const struct iovec *iov, int n, size_t *skip)
{
	for (int i = 0; i < n; i++) {
		size_t len = iov[i].iov_len, take = *skip < len ? *skip : len;

		*skip -= take;
		if (len > take)
			(void)evbuffer_add(out, (const char *)iov[i].iov_base +
			    take, len - take);
	}
}

/* The bytes of s. */
static size_t
send_length(const struct send *s)
{
	size_t n = s->ref_len + (s->buf != NULL ? evbuffer_get_length(s->buf) :
	    0);

	for (int i = 0; i < s->npre; i++)
		n += s->pre[i].iov_len;
	for (int i = 0; i < s->npost; i++)
		n += s->post[i].iov_len;
	return n;
}

/*
 * Over TLS each piece of the output goes out as a record of its own, with
 * a write of its own: an answer that fits one record is copied into one
 * piece (the head and a 1 KiB body: one record, one write, instead of
 * two). 0 when it does not fit, and nothing was queued.
 */
static int
queue_one_record(struct evbuffer *out, struct send *s)
{
	size_t skip = 0, n = send_length(s);
	struct evbuffer_iovec v[IOV_SEND_MAX];
	int k;

	if (n > TLS_RECORD_MAX || evbuffer_expand(out, n) == -1)
		return 0;
	if (s->buf != NULL && evbuffer_peek(s->buf, -1, NULL, NULL, 0) >
	    IOV_SEND_MAX)
		return 0;
	add_copies(out, s->pre, s->npre, &skip);
	if (s->buf != NULL) {
		k = evbuffer_peek(s->buf, -1, NULL, v, IOV_SEND_MAX);
		for (int i = 0; i < k; i++)
			(void)evbuffer_add(out, v[i].iov_base, v[i].iov_len);
		evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
	}
	if (s->ref != NULL) {
		(void)evbuffer_add(out, s->ref, s->ref_len);
		s->release(s->ref, s->ref_len, s->arg);
	}
	add_copies(out, s->post, s->npost, &skip);
	return 1;
}

/* The release of a body queued as a file segment, when the segment goes
 * (sent, or dropped with the connection). */
struct file_release {
	hreq_release_fn	 release;
	const void	*ref;
	size_t		 len;
	void		*arg;
};

static void
on_file_sent(const struct evbuffer_file_segment *seg, int flags, void *arg)
{
	struct file_release *fr = arg;

	(void)seg;
	(void)flags;
	fr->release(fr->ref, fr->len, fr->arg);
	free(fr);
}

/* s's file past its first skip bytes queued on out, sent by sendfile(2)
 * when the socket takes more. 0, or -1 and nothing was queued. */
static int
queue_file(struct evbuffer *out, struct send *s, size_t skip)
{
	struct evbuffer_file_segment *seg;
	struct file_release *fr;

	if ((fr = malloc(sizeof(*fr))) == NULL)
		return -1;
	*fr = (struct file_release){ s->release, s->ref, s->ref_len, s->arg };
	if ((seg = evbuffer_file_segment_new(s->file, 0, (ev_off_t)s->ref_len,
	    EVBUF_FS_DISABLE_LOCKING)) == NULL) {
		free(fr);
		return -1;
	}
	if (evbuffer_add_file_segment(out, seg, (ev_off_t)skip,
	    (ev_off_t)(s->ref_len - skip)) == -1) {
		evbuffer_file_segment_free(seg);
		free(fr);
		return -1;
	}
	evbuffer_file_segment_add_cleanup_cb(seg, on_file_sent, fr);
	evbuffer_file_segment_free(seg);	/* the buffer holds it now */
	return 0;
}

/* What the socket did not take (the first skip bytes went) queued on
 * out. */
void
send_queue(struct evbuffer *out, struct send *s, size_t skip, int tls)
{
	size_t take;

	if (tls && queue_one_record(out, s))
		return;
	add_copies(out, s->pre, s->npre, &skip);
	if (s->buf != NULL) {
		take = MIN(skip, evbuffer_get_length(s->buf));
		evbuffer_drain(s->buf, take);
		skip -= take;
		(void)evbuffer_add_buffer(out, s->buf);
	}
	if (s->ref != NULL) {
		take = MIN(skip, s->ref_len);
		skip -= take;
		if (take == s->ref_len)
			s->release(s->ref, s->ref_len, s->arg);
		else if (s->has_file && !tls && queue_file(out, s, take) == 0)
			;	/* released once its segment is sent */
		else if (evbuffer_add_reference(out, (const char *)s->ref +
		    take, s->ref_len - take, s->release, s->arg) == -1)
			s->release(s->ref, s->ref_len, s->arg);
	}
	add_copies(out, s->post, s->npost, &skip);
}

/* s's pieces in order, into v (at most IOV_SEND_MAX); a body that does
 * not fit whole ends the list there, so that nothing goes out of order. */
int
send_gather(const struct send *s, struct iovec *v)
{
	int k = 0, chains;

	for (int i = 0; i < s->npre; i++)
		v[k++] = s->pre[i];
	if (s->buf != NULL && evbuffer_get_length(s->buf) > 0) {
		chains = evbuffer_peek(s->buf, -1, NULL, NULL, 0);
		k += evbuffer_peek(s->buf, -1, NULL, v + k, IOV_SEND_MAX - k -
		    2 - s->npost);
		if (chains > IOV_SEND_MAX - 2 - s->npost - s->npre)
			return k;
	}
	if (s->ref != NULL && s->ref_len > 0) {
		v[k].iov_base = (void *)(uintptr_t)s->ref;
		v[k++].iov_len = s->ref_len;
	}
	for (int i = 0; i < s->npost; i++)
		v[k++] = s->post[i];
	return k;
}

/*
 * s's head, then its file by sendfile(2), then what follows, as far as the
 * socket takes them: the bytes sent, or -1 (errno) when none went. The
 * head goes with MSG_MORE, so that it and the body's start share packets.
 */
ssize_t
send_file(int fd, const struct send *s)
{
	struct msghdr m = { .msg_iov = (struct iovec *)(uintptr_t)s->pre,
	    .msg_iovlen = (size_t)s->npre };
	size_t head = 0;
	ssize_t w = 0, sent = 0;
	off_t off = 0;

	for (int i = 0; i < s->npre; i++)
		head += s->pre[i].iov_len;
	if (head > 0) {
		do
			w = sendmsg(fd, &m, MSG_MORE | MSG_NOSIGNAL);
		while (w == -1 && errno == EINTR);
		if (w == -1 || (size_t)w < head)
			return w;
		sent = w;
	}
	while ((size_t)off < s->ref_len)
		if ((w = sendfile(fd, s->file, &off, s->ref_len -
		    (size_t)off)) <= 0 && !(w == -1 && errno == EINTR))
			break;
	sent += off;
	if ((size_t)off == s->ref_len && s->npost > 0) {
		do
			w = writev(fd, s->post, s->npost);
		while (w == -1 && errno == EINTR);
		if (w > 0)
			sent += w;
	}
	return sent > 0 ? sent : w;
}

