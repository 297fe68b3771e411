/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_JWT_H
#define PROXY_PROXY_JWT_H

/*
 * cache_authorized = claims in the request flow: each worker's key set
 * (jwt_keys_file, loaded at start, on SIGHUP and when the file changes),
 * a request's Bearer token verified against it, and the keyed digest of
 * its claim set.
 *
 * Which token a fetch sends: every fetch of a claims key is made for a
 * request of that claim set whose token was verified a moment before,
 * and sends that token: a cold miss its flight's first request's, a
 * background or early refresh that of the request whose stale or early
 * hit started it (the most recent verified requester of the claim set).
 * The refresh holds a copy of that request's headers in this process's
 * memory for its one fetch; no token is kept past it, and none is ever
 * written to Redis. Just before it sends, the refresh verifies that
 * token again (jwt_still_valid()): one that expired meanwhile (waiting
 * for the lock or an origin slot) is not sent, and the refresh ends as
 * one that could not start (an upstream error, no failure recorded: the
 * next verified requester's stale hit refreshes with its own token). A
 * request whose own token has expired is passed uncached and starts no
 * refresh, so an expired token is never sent by a refresh. An operator's refresh of a claims key only marks
 * its entry stale, as for per-credential keys (proxy_control.c): the
 * next verified request of the claim set refetches it with its own
 * token. Nothing is fetched for a claims key without a token.
 */

#include <stddef.h>
#include <stdint.h>

#include "cache/cache_keyrule.h"

#define JWT_KEYS_CHECK_MS	1000	/* how often the file is looked at */
#define JWT_REALM		"corral"	/* WWW-Authenticate's realm */

struct conf_route;
struct hlist;
struct proxy;

/* What a request's token came to. */
struct jwt_verdict {
	const char	*refused;	/* NULL: verified; else the Cache-Status
					 * detail ("jwt-missing", "jwt-expired",
					 * ...; static) */
	int		 missing;	/* no Bearer token at all */
	const char	*token;		/* in the request's Authorization */
	size_t		 len;
	char		 digest[KEYRULE_DIGEST_HEX + 1];	/* of its claim
					 * set (verified only) */
};

int	jwt_start(struct proxy *px, char *err, size_t errlen);
void	jwt_stop(struct proxy *px);
/* On SIGHUP, once px->conf is the new configuration: its keys loaded
 * again (a set that does not load leaves the running one). */
void	jwt_reload(struct proxy *px);
/*
 * The token of a request with headers in on claims route rt (index
 * route), verified, and its claim set's keyed digest: 0, or -1 with v
 * saying why not (counted either way). -2: the digest could not be
 * made (no memory).
 */
int	jwt_check(struct proxy *px, int route, const struct conf_route *rt,
	    const struct hlist *in, struct jwt_verdict *v);
/* Does the Bearer token in in still verify, now (a fetch about to send
 * it: it has not expired, past jwt_leeway, nor lost its key since its
 * request was verified)? 1 or 0; not counted. */
int	jwt_still_valid(struct proxy *px, const struct hlist *in);
/* WWW-Authenticate for a refusal whose Cache-Status detail is refused. */
const char *jwt_challenge(const char *refused);

#endif
