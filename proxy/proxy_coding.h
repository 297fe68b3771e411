/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_CODING_H
#define PROXY_PROXY_CODING_H

/*
 * Content codings in the flow: what a shared fetch asks the origin for,
 * what an entry keeps and what each client gets of it.
 *
 * An entry keeps one body in one coding: the origin's gzip, br or zstd
 * body as it came (checked whole when stored, never held decoded), or an
 * identity body of a compressible type (compress_types), at least
 * compress_min_bytes long, compressed with its route's store_encoding
 * (CODING_MARKER then says Corral made it), unless the response says
 * Cache-Control: no-transform. A coding Corral does not know
 * is stored as it came and sent as it is. Each client gets the stored
 * body when it accepts its coding, else the body decoded to identity;
 * nothing acceptable at all (identity refused too): 406 (codec/accept.h).
 * A body other than the one the origin sent carries the origin's ETag
 * made weak (RFC 9110 §8.8.3), so that If-None-Match, which compares
 * weakly, matches across codings. Every answer of a coded entry says
 * Vary: Accept-Encoding; the cache's key never varies on it.
 *
 * Calls codec/ and reads entries' and requests' fields only.
 */

#include <stddef.h>
#include <stdint.h>

#include "codec/accept.h"
#include "codec/codec.h"

struct cache_entry;
struct conf_route;
struct evbuffer;
struct hlist;

/* What a shared fetch asks for: every coding Corral can decode. */
#define CODING_UPSTREAM_ACCEPT	"gzip, br, zstd"
/* The most bytes of decoded bodies a process holds for its clients, until
 * each is sent: slow clients of a large decoded body get 503 past it,
 * rather than each holding a copy of it (max_entry_bytes) in memory. */
#define CODING_QUEUED_MAX	((size_t)64 << 20)
/* The most bytes of decoded bodies a process keeps with their entries
 * (coding_plain), sent by reference to every client of an entry that
 * takes only identity, with no decode each time. */
#define CODING_KEPT_MAX		((size_t)64 << 20)
/* In an entry: Corral compressed its body (never from upstream). */
#define CODING_MARKER		"X-Corral-Encoded"

/* One reply of an entry, as its client's Accept-Encoding has it. */
struct coding_reply {
	enum accept_verdict	 verdict;
	enum coding		 stored;	/* the entry's body */
	enum coding		 send;		/* what the client gets */
	int			 transformed;	/* not what the origin sent:
						 * its ETag is made weak */
	int			 vary;		/* say Vary: Accept-Encoding */
};

/* The coding of e's body (its Content-Encoding). */
enum coding	coding_of(const struct cache_entry *e);
/*
 * Readies e's body to be stored on route rt: a coded body is decoded to
 * nowhere to check it (at most max_out bytes: a bomb stops there); an
 * identity one worth it is compressed. "" when it may be stored (*made:
 * the coding Corral compressed it with, or CODING_IDENTITY; *plain: the
 * body's length as identity), else why not: "bad-encoding" (corrupt, cut
 * short, or past max_out), "out-of-memory".
 */
const char	*coding_store(struct cache_entry *e, const struct conf_route *rt,
		    size_t max_out, enum coding *made, size_t *plain);
/* What a request with headers req gets of e. */
void		 coding_choose(const struct hlist *req,
		    const struct cache_entry *e, struct coding_reply *cr);
/* Does a request with headers req take a response with these headers
 * as it comes (its coding, or identity)? */
int		 coding_takes(const struct hlist *req,
		    const struct hlist *resp);
/* Does a live response with these headers, sent as it comes, need a
 * Vary: Accept-Encoding it lacks (a known coding, or identity that rt
 * compresses on store, so that its entry's answers will vary; no such
 * Vary yet)? */
int		 coding_reply_varies(const struct hlist *resp,
		    const struct conf_route *rt);
/*
 * e's body decoded, appended to out (NULL: only counted), at most
 * max_out bytes; *len its length. CODEC_OK, or why not: CODEC_ERROR also
 * when the decoded bodies this process has queued to clients and not
 * sent yet would pass CODING_QUEUED_MAX (the client gets 503).
 */
enum codec_result coding_decode(const struct cache_entry *e,
		    size_t max_out, struct evbuffer *out, size_t *len);
/* The bytes of decoded bodies queued to clients, not sent yet. */
size_t		 coding_queued(void);
/* e's body decoded, kept with e (e->plain, let go with it), within
 * CODING_KEPT_MAX for the process and max_out: 0, or -1 when it is not
 * (the caller decodes for its client alone). */
int		 coding_plain(struct cache_entry *e, size_t max_out);
/* The bytes of decoded bodies kept with their entries. */
size_t		 coding_kept(void);
/* e's body as identity (*len bytes): the body itself, or the decoded copy
 * kept with e (coding_plain); NULL when there is none within max_out. */
const char	*coding_identity(struct cache_entry *e, size_t max_out,
		    size_t *len);
/* An ETag value made weak ("x" -> W/"x"), in out (len bytes). */
const char	*coding_weak_etag(const char *etag, char *out, size_t len);

#endif
