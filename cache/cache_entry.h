/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_ENTRY_H
#define CACHE_CACHE_ENTRY_H

/*
 * A cached response and the times that decide its freshness. Entries are
 * reference counted: one decoded entry may be delivered to many requests.
 *
 * Encoded form (one Redis string): the 32 hex digits of the refresh token
 * that wrote it (its generation, which the lock scripts compare), then a
 * binary record, little-endian, see cache_entry.c.
 */

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "common/hlist.h"
#include "common/util.h"

#define ENTRY_MAGIC		0x43524c45u	/* "CRLE" */
#define ENTRY_GEN_LEN		UTIL_TOKEN_HEX
#define ENTRY_MAX_HEADERS	128

/*
 * Where the lock scripts (cache_script.c) find an entry's fields in its
 * encoding, counted as Lua counts a string's bytes, from 1. Literals,
 * because the scripts' text is made of them; cache_entry.c asserts that
 * each is where the encoder puts the field.
 */
#define ENTRY_LUA_GEN_END	32	/* bytes 1..32: the generation */
#define ENTRY_LUA_BEFORE_FRESH	45	/* the last byte before fresh_until */
#define ENTRY_LUA_FRESH		46	/* i64 fresh_until_ms: bytes 46..53 */
#define ENTRY_LUA_AFTER_FRESH	54	/* the first byte after it */
#define ENTRY_LUA_TIMES_END	61	/* the last byte of stale_until_ms */

enum entry_state {
	ENTRY_FRESH,		/* now < fresh_until */
	ENTRY_STALE,		/* fresh_until <= now < stale_until */
	ENTRY_EXPIRED,		/* stale_until <= now: cannot be served */
};

/* Bytes of an entry in a file: drop(fd, len) lets it go when the entry
 * is freed (or its bytes change). drop NULL: none kept (fd is then -1);
 * asks counts the deliverer's asks for one. */
struct entry_file {
	int			 fd;
	uint32_t		 asks;
	void			(*drop)(int fd, size_t len);
};

struct cache_entry {
	uint32_t		 magic;
	int			 refcnt;
	char			 gen[ENTRY_GEN_LEN + 1];
	int64_t			 stored_ms;	/* wall clock of the fetch */
	int64_t			 fresh_until_ms;
	int64_t			 stale_until_ms;
	uint32_t		 fetch_ms;	/* how long the fetch took */
	int			 status;
	struct hlist	 headers;	/* end-to-end response headers */
	unsigned char		*body;
	size_t			 body_len;
	/* Where body lives: its own allocation, or a decoded reply taken
	 * whole. */
	void			*store;
	/* The request body it answers (a cached POST), replayed by its
	 * refreshes; NULL and 0 for others. Its own allocation. */
	unsigned char		*request;
	size_t			 request_len;
	/* A rendering of its reply's head that the deliverer keeps here
	 * (freed with the entry), what it was rendered for (head_tag), and
	 * the origin's own Age read while rendering it (-1: none counts). */
	char			*head;
	size_t			 head_len;
	uint64_t		 head_tag;
	int64_t			 origin_age;
	/* Its body decoded, for clients that do not take its coding, that
	 * the deliverer keeps here: plain_drop(plain, plain_len) lets it go
	 * when the entry is freed. NULL: none kept. */
	unsigned char		*plain;
	size_t			 plain_len;
	void			(*plain_drop)(unsigned char *plain, size_t len);
	/* A rendering of the head of a reply with plain, as head above. */
	char			*plain_head;
	size_t			 plain_head_len;
	uint64_t		 plain_head_tag;
	/* The body, and plain, in files of their own that the deliverer
	 * keeps here, for sendfile(2). */
	struct entry_file	 file;
	struct entry_file	 plain_file;
};

/* A new entry with refcnt 1, no headers, no body. NULL on no memory. */
struct cache_entry *entry_new(void);
struct cache_entry *entry_ref(struct cache_entry *e);
/* Drops one reference; frees at zero. Sets *ep to NULL. */
void		 entry_unref(struct cache_entry **ep);

/* Takes the body (drains buf). 0 or -1. */
int		 entry_set_body(struct cache_entry *e, struct evbuffer *buf);
/* Copies len bytes at p as the body. 0 or -1. */
int		 entry_copy_body(struct cache_entry *e, const void *p,
		    size_t len);
/* Copies len bytes at p as the request body it answers. 0 or -1. */
int		 entry_set_request(struct cache_entry *e, const void *p,
		    size_t len);
/* Appends a header. 0 or -1. */
int		 entry_add_header(struct cache_entry *e, const char *name,
		    const char *value);

/* Appends the encoded entry to out. 0 or -1. */
int		 entry_encode(const struct cache_entry *e, struct evbuffer *out);
/* Decodes buf. NULL with a reason in err when it is malformed. */
struct cache_entry *entry_decode(const void *buf, size_t len, char *err,
		    size_t errlen);
/* The same, but the entry takes buf (malloc'd) and its body stays in
 * place instead of being copied; on NULL buf is still the caller's. */
struct cache_entry *entry_decode_take(void *buf, size_t len, char *err,
		    size_t errlen);

enum entry_state entry_state(const struct cache_entry *e, int64_t now_ms);
const char	*entry_state_name(enum entry_state s);

#endif
