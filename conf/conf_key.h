/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_KEY_H
#define CONF_CONF_KEY_H

/*
 * The configuration of what a cache key is made of (conf_table.c's rows
 * for cache_authorized, key_query, key_ignore_query, key_headers,
 * credential_header, credential_cookie, cache_post, graphql and
 * key_secret_file): their values' syntax, the secret file, and what they
 * need of each other. Each function puts its reason in err.
 */

#include <stddef.h>

#include "conf/conf.h"

/* "off", "on" (or another boolean) or "per-credential". 0 or -1. */
int	conf_key_set_authz(const char *v, int *out, char *err, size_t errlen);
/* Query parameter names and "prefix*" patterns, comma-separated, stored
 * as "a, b*" in field (size bytes). 0 or -1. */
int	conf_key_set_names(const char *v, char *field, size_t size, char *err,
	    size_t errlen);
/* A cookie name (an RFC 6265 token), or "". 0 or -1. */
int	conf_key_set_cookie(const char *v, char *field, size_t size, char *err,
	    size_t errlen);
/* A request field name (an RFC 9110 token) that may carry a credential:
 * not hop-by-hop, Host or Cookie. 0 or -1. */
int	conf_key_set_header(const char *v, char *field, size_t size, char *err,
	    size_t errlen);
/* Reads c->key_secret_file into c->key_secret: a regular file that others
 * may not read nor its group write, of CONF_KEY_SECRET_MIN..MAX bytes
 * (a trailing newline not counted). 0 or -1. */
int	conf_key_read_secret(struct conf *c, char *err, size_t errlen);
/* What route r's key settings need that the file does not give them. */
int	conf_key_check_route(const struct conf *c, const struct conf_route *r,
	    char *err, size_t errlen);

#endif
