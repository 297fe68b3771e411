/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HDR_H
#define PROXY_PROXY_HDR_H

/* HTTP header rules shared by the request flow: hop-by-hop filtering,
 * what may be stored, and the Cache-Status header. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hlist;


/* Which headers hdr_copy drops besides the hop-by-hop ones. */
#define HDR_DROP_HOST		0x01	/* Host: the upstream URL sets it */
#define HDR_DROP_LENGTH		0x02	/* Content-Length: recomputed */
#define HDR_DROP_CONDITIONAL	0x04	/* If-*, Range: a shared fetch */
#define HDR_DROP_ENCODING	0x08	/* Accept-Encoding: store identity */
#define HDR_DROP_CREDENTIALS	0x10	/* Authorization, Cookie */
#define HDR_DROP_FORWARDED	0x20	/* X-Forwarded-*, Forwarded */
/* A name with '_': origins that read it as '-' (CGI and WSGI gateways,
 * Puma, Rails's server) would take X_API_Key for X-API-Key, a field Corral
 * keys or drops by its one spelling (nginx drops them too). */
#define HDR_DROP_UNDERSCORED	0x40

/* Is name hop-by-hop, by RFC 9110 or by being listed in Connection? */
int	hdr_is_hop_by_hop(const char *name, const char *connection);
/*
 * Rewrites path (NUL-terminated, in place) as an origin resolves it:
 * "%2E" decoded to "." (RFC 3986 6.2.2.2), then dot segments removed
 * (5.2.4), so that Corral routes and keys the path the origin serves.
 */
void	hdr_normalize_path(char *path);
/* Appends src's end-to-end headers to dst, minus those flags name. */
void	hdr_copy(const struct hlist *src, struct hlist *dst, int flags);
/* A Forwarded value (RFC 7239 4) without its param= pairs ("host"), as a
 * new string for free(); NULL when nothing is left, it does not parse, or
 * there is no memory. */
char	*hdr_forwarded_without(const char *v, const char *param);

/* Is status stored under the route's ttl by default? (200, 203, 204, 300,
 * 301, 308; other statuses only when ttl_status or ttl_404 names them.) */
int	hdr_status_storable(int status);
struct conf_route;

/*
 * May a response go to a request other than its own: the store, the
 * waiters of its flight, a stream, a sibling worker, a near cache? Not
 * when it is one user's (Set-Cookie, private, no-store), nor, fetched
 * with credentials (authorized), unless the origin says it is shared:
 * public, s-maxage or must-revalidate (RFC 9111 3.5). rt's targeted field
 * rules in its origin_cache_control mode (rt may be NULL). If not, *why
 * says why ("set-cookie", "no-store", "private", "authorization").
 */
int	hdr_shareable(const struct hlist *resp, int authorized,
	    const struct conf_route *rt, const char **why);

/* How long a response may be reused, as a shared cache decides it. */
struct freshness {
	int		 storable;
	const char	*why;		/* when not storable */
	int64_t		 ttl_ms;	/* fresh for this long from now */
	int64_t		 swr_ms;	/* then stale-while-revalidate */
	int64_t		 sie_ms;	/* stale-if-error, past fresh */
};

/*
 * The freshness of a response for route rt. With origin_cache_control off
 * the route decides (ttl, or ttl_status/ttl_404 for other statuses). With
 * it on, the origin's Cache-Control (s-maxage, max-age, no-store, no-cache,
 * private, must-revalidate, proxy-revalidate, stale-while-revalidate,
 * stale-if-error), Expires and Age decide, RFC 9111 and RFC 5861 as a
 * shared cache, and the route's ttl is the default when the origin says
 * nothing. 5xx, Set-Cookie, no-store, private and Vary: * are never stored;
 * a request with Authorization only when the response says public,
 * s-maxage or must-revalidate.
 */
void	hdr_freshness(int status, const struct hlist *resp,
	    int authorized, const struct conf_route *rt, int64_t now_ms,
	    struct freshness *out);
/* May a stored response (status, headers, fresh until then) still be
 * served because the upstream failed (stale-if-error, RFC 5861)? */
int	hdr_stale_if_error(int status, const struct hlist *headers,
	    int64_t fresh_until_ms, const struct conf_route *rt);
/*
 * Every line of the field name, joined by ", " as one list (RFC 9110
 * 5.3) into out: out, or NULL when there is none. *lines, if not NULL,
 * gets how many lines there were. A list too long for out is cut short
 * and *lines set to -1.
 */
const char *hdr_join(const struct hlist *headers, const char *name,
	    char *out, size_t outlen, int *lines);
/* The Age of a response in seconds: the first member of its first Age
 * line, a list's others discarded (RFC 9111 5.1); -1 when there is none
 * or that member is not all digits. */
int64_t	hdr_age(const struct hlist *headers);
/* delta-seconds (1*DIGIT, capped at 2^31), or -1 if s is not one. */
int64_t	hdr_delta_seconds(const char *s);
/*
 * Targeted cache control (RFC 9213): the first field of the route's
 * targeted_cache_control list, then CDN-Cache-Control, that resp has as
 * a valid Structured Field Dictionary (RFC 8941; its known directives of
 * the right type), copied into name; NULL if none: an invalid one is
 * ignored whole. In origin_cache_control mode it rules
 * freshness instead of Cache-Control and Expires.
 */
const char *hdr_targeted(const struct hlist *resp,
	    const struct conf_route *rt, char *name, size_t namelen);
/*
 * Calls fn with each tag the response names, in Surrogate-Key (space-
 * separated) and Cache-Tag (comma-separated): at most HDR_TAGS_MAX of
 * them, each NUL-terminated and at most HDR_TAG_MAX bytes. Returns how
 * many it dropped: past the first HDR_TAGS_MAX, or longer.
 */
#define HDR_TAGS_MAX	32
#define HDR_TAG_MAX	128
int	hdr_tags(const struct hlist *headers,
	    void (*fn)(const char *tag, void *arg), void *arg);
/* Is name one of the targeted fields the route reads? */
int	hdr_is_targeted(const char *name, const struct conf_route *rt);
/* An HTTP date (IMF-fixdate, RFC 850 or asctime) in ms; -1 if bad. */
int64_t	hdr_parse_date(const char *s);
/* Writes an IMF-fixdate; out holds at least 30 bytes. */
void	hdr_format_date(int64_t ms, char *out, size_t outlen);

/*
 * Would the request's If-None-Match / If-Modified-Since be answered 304
 * by a stored response with these headers? (RFC 9110 13.2.2: If-None-Match
 * with weak comparison first; If-Modified-Since only without it.)
 */
int	hdr_not_modified(const struct hlist *req,
	    const struct hlist *stored);

/* RFC 9111 4.3.4: a 304's headers replace the stored ones of the same
 * name (except Content-Length and the like). */
void	hdr_merge_304(struct hlist *stored, const struct hlist *fresh);

#endif
