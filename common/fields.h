/* SPDX-License-Identifier: MIT */
#ifndef COMMON_FIELDS_H
#define COMMON_FIELDS_H

/*
 * Request and response fields by what they are, for the configuration
 * (which refuses them where they cannot work) and the proxy (which acts
 * on them) alike. Calls nothing of Corral.
 */

#include <stddef.h>

/* name's own spelling if it is a hop-by-hop field a proxy never forwards
 * (RFC 9110 7.6.1, and the common ones before it), else NULL. Fields a
 * Connection line names are hop-by-hop too: the caller asks. */
const char	*field_hop_by_hop(const char *name);

/* The request fields whose values are credentials, in this order:
 * Authorization, Cookie, Proxy-Authorization. */
extern const char *const field_credentials[];
extern const size_t field_ncredentials;

/* Are the n bytes at name (any case) one of field_credentials? */
int	field_is_credential(const char *name, size_t n);

#endif
