/* SPDX-License-Identifier: MIT */
/*
 * The door's reader of chunked coding's size lines (RFC 9112 section
 * 7.1): a chunk-size in hex, then extensions, which are read and dropped.
 * Pure: it says what it found, the door refuses.
 */

#include <stdint.h>

#include "proxy/proxy_frame_int.h"

#define CHUNK_DIGITS	15	/* significant hex digits: below 2^60 */

static int
refuse(const char **why, int status, const char *reason)
{
	*why = reason;
	return status;
}

/* quoted-string (RFC 9110 section 5.6.4) at *p: moves *p past it. */
static int
skip_quoted(const char **p, const char *end)
{
	const char *s = *p + 1;

	for (; s < end; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"') {
			*p = s + 1;
			return 0;
		}
		if (c == '\\') {
			if (++s == end || !is_field_byte((unsigned char)*s))
				return -1;
		} else if (!is_field_byte(c)) {
			return -1;
		}
	}
	return -1;
}

/* chunk-size [ chunk-ext ]: chunk-ext = *( BWS ";" BWS name [ BWS "="
 * BWS value ] ), value a token or a quoted-string. Extensions are read
 * and dropped. */
int
chunk_line_parse(const char *p, size_t n, uint64_t *size, const char **why)
{
	const char *end = p + n, *s;
	int digits = 0;

	*size = 0;
	for (s = p; s < end && *s == '0'; s++)
		;
	for (; s < end && is_hex((unsigned char)*s); s++) {
		if (++digits > CHUNK_DIGITS)
			return refuse(why, 413, "body too large");
		*size = *size * 16 + (uint64_t)(*s <= '9' ? *s - '0' :
		    (*s | 0x20) - 'a' + 10);
	}
	if (s == p)
		return refuse(why, 400, "bad chunk size");
	for (;;) {
		const char *name;

		if (s == end)
			return 0;
		while (s < end && is_ows((unsigned char)*s))
			s++;
		if (s == end || *s++ != ';')
			return refuse(why, 400, "bad chunk size");
		while (s < end && is_ows((unsigned char)*s))
			s++;
		for (name = s; s < end && is_tchar((unsigned char)*s); s++)
			;
		if (s == name)
			return refuse(why, 400, "bad chunk extension");
		while (s < end && is_ows((unsigned char)*s))
			s++;
		if (s == end || *s != '=')
			continue;
		for (s++; s < end && is_ows((unsigned char)*s); s++)
			;
		if (s < end && *s == '"') {
			if (skip_quoted(&s, end) == -1)
				return refuse(why, 400, "bad chunk extension");
		} else {
			for (name = s; s < end &&
			    is_tchar((unsigned char)*s); s++)
				;
			if (s == name)
				return refuse(why, 400, "bad chunk extension");
		}
	}
}

