/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_FRAME_INT_H
#define PROXY_PROXY_FRAME_INT_H

/*
 * What the door (proxy_frame.c) shares with its reader of chunked coding
 * (proxy_chunk.c): the characters of RFC 9110 section 5.6.2 and RFC 9112
 * section 3.2, and the chunk-size line's reader.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static inline int
is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* A field-value byte: VCHAR, obs-text, SP or HTAB; no other CTL. */
static inline int
is_field_byte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static inline int
is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') ||
	    ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

static inline int
is_token(const char *p, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)p[i]))
			return 0;
	return 1;
}

/*
 * chunk-size [ chunk-ext ] (RFC 9112 section 7.1), the n bytes at p
 * without their CRLF: 0 and *size, or the status to refuse it with (400,
 * 413) and *why. Extensions are read and dropped.
 */
int	chunk_line_parse(const char *p, size_t n, uint64_t *size,
	    const char **why);

#endif
