/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_SF_H
#define PROXY_PROXY_SF_H

/*
 * Structured Field Values (RFC 8941): a strict parser of a Dictionary,
 * which is what a targeted cache-control field is (RFC 9213 2.1). Pure:
 * no libevent, no allocation.
 */

#include <stddef.h>
#include <stdint.h>

enum sf_type {
	SF_INTEGER,		/* -999999999999999..999999999999999 */
	SF_DECIMAL,
	SF_STRING,
	SF_TOKEN,
	SF_BINARY,
	SF_BOOLEAN,
	SF_INNER_LIST,
};

/* One member of a Dictionary: its key (key_len bytes, not NUL-ended), the
 * type of its value and, for an Integer or a Boolean, the value.
 * Parameters are checked and not passed on. */
struct sf_member {
	const char	*key;
	size_t		 key_len;
	enum sf_type	 type;
	int64_t		 integer;	/* SF_INTEGER; SF_BOOLEAN: 0 or 1 */
};

/* 0 to go on, -1 to reject the whole field. */
typedef int sf_member_fn(const struct sf_member *m, void *arg);

/* Parses s as a Dictionary, calling fn for each member in order (a
 * repeated key is called again: the last one wins). 0 when s is a valid
 * Dictionary and fn took every member; -1 otherwise. */
int	sf_dict_parse(const char *s, sf_member_fn *fn, void *arg);

#endif
