/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_KEY_H
#define PROXY_PROXY_KEY_H

/*
 * A request's cache key by its route's key rules (cache_keyrule.h): the
 * query parameters that count, the header values, a cached POST's body,
 * the credential's digest; and whether it may be cached at all.
 */


#include "proxy/proxy_flow.h"

struct hreq;
struct hlist;

struct conf;
struct conf_route;

enum key_verdict {
	KEY_CACHE,		/* cacheable: k holds its key */
	KEY_METHOD,		/* a POST not cached (a mutation, a body over
				 * max_body_bytes, not a GraphQL query):
				 * passed; k holds its URL's key */
	KEY_BYPASS,		/* credentials where they are not cached */
	KEY_NOMEM,
};

struct req_key {
	char		 key[CACHE_KEY_MAX + 1];
	enum key_rule	 rule;
	struct fetch_spec spec;
	char		*cookie;	/* owned: spec.cookie, if made */
};

/* The key of ev (a GET, HEAD or POST) on route rt; host is what the key
 * holds (the upstream's, or the client's with key_host). */
enum key_verdict key_of_request(const struct conf *c,
	    const struct conf_route *rt, struct hreq *ev,
	    const char *host, const char *path, const char *query,
	    const char *claims_hex, struct req_key *k);
/* The key of a URL (a purge, an invalidation) on route rt (or NULL): its
 * query by rt's rules. 0, or -1 on no memory. */
int	key_of_url(const struct conf_route *rt, const char *host,
	    const char *path, const char *query, char key[CACHE_KEY_MAX + 1]);
/* How a request is served, by its route's rules. */
enum key_decision {
	DECIDE_PASS,		/* past the cache: a->pass_kind says why, and
				 * key (FLOW_KEY_MAX + 1 bytes) is its URL's
				 * for an unsafe method (dropped once it
				 * succeeds), or "" */
	DECIDE_CACHE,		/* key and k hold its key; a->key_rule set */
	DECIDE_FAIL,		/* no memory */
	DECIDE_REFUSED,		/* claims, jwt_reject: a->outcome and
				 * a->reject_code (401) say so */
};

struct proxy;

/* The decision for ev on route rt (NULL: none), whose headers carry
 * credentials (Authorization or Cookie) or not; counts what it passes. */
enum key_decision key_decide(struct proxy *px, int route,
	    const struct conf_route *rt, struct hreq *ev,
	    const char *host, const char *path, const char *query,
	    int credentials, struct req_key *k, char *key, struct answer *a);
/* Does rt add parts after the URL (its keys are filed under a tag)? */
int	key_has_parts(const struct conf_route *rt);
void	key_release(struct req_key *k);

/* dst keeps method, len bytes of body and url_tag (NULL: none); spec may
 * be NULL (a GET). 0, or -1 on no memory. */
int	fetch_keep(struct fetch_kept *dst, const struct fetch_spec *spec);
/* The same from what another keeps, with body in place of its own when
 * body is not NULL (an entry's stored request body); src NULL: a plain GET. */
int	fetch_keep_again(struct fetch_kept *dst, const struct fetch_kept *src,
	    const void *body, size_t len);
void	fetch_drop(struct fetch_kept *k);
/* Is a request with headers in on route rt (NULL: none) fetched with
 * credentials its key does not hold (cache_authorized = on and an
 * Authorization)? Its answer is then shared only when the origin says so
 * (hdr_shareable). */
int	key_authorized(const struct conf_route *rt, const struct hlist *in);
/* The headers of a fetch a flight shares, from its lead w on route rt:
 * nothing that would make the answer one client's (per-credential: only
 * the Cookie its key holds, or none; anonymous: no credentials at all;
 * claims: its verified token and no Cookie).
 * key_authorized() of the lead. */
int	fetch_shared_headers(struct waiter *w, const struct conf_route *rt,
	    struct hlist *dst);

#endif
