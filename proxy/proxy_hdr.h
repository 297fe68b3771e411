#ifndef PROXY_PROXY_HDR_H
#define PROXY_PROXY_HDR_H

/* HTTP header rules shared by the request flow: hop-by-hop filtering,
 * what may be stored, and the Cache-Status header. */

#include <stddef.h>
#include <stdint.h>

#include <event2/keyvalq_struct.h>

/* Which headers hdr_copy drops besides the hop-by-hop ones. */
#define HDR_DROP_HOST		0x01	/* Host: the upstream URL sets it */
#define HDR_DROP_LENGTH		0x02	/* Content-Length: recomputed */
#define HDR_DROP_CONDITIONAL	0x04	/* If-*, Range: a shared fetch */
#define HDR_DROP_ENCODING	0x08	/* Accept-Encoding: store identity */
#define HDR_DROP_CREDENTIALS	0x10	/* Authorization, Cookie */

/* Is name hop-by-hop, by RFC 9110 or by being listed in Connection? */
int	hdr_is_hop_by_hop(const char *name, const char *connection);
/* Appends src's end-to-end headers to dst, minus those flags name. */
void	hdr_copy(const struct evkeyvalq *src, struct evkeyvalq *dst, int flags);

/* Is status stored under the route's ttl by default? (200, 203, 204, 300,
 * 301, 308; other statuses only when ttl_status or ttl_404 names them.) */
int	hdr_status_storable(int status);
/* May a response with these headers be stored? If not, *why says why
 * ("set-cookie", "no-store", "private"). */
int	hdr_storable(const struct evkeyvalq *headers, const char **why);
/* May a response be handed to other requests that waited for it? */
int	hdr_shareable(const struct evkeyvalq *headers);

#endif
