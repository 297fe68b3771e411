/* SPDX-License-Identifier: MIT */
/*
 * A request's cache key by its route's key rules: which query parameters
 * count, which header values are keyed, a cached POST's body digest (or
 * its GraphQL query's), and the credential's digest. It reads the request
 * and writes a struct req_key; cache_keyrule.c builds the key itself.
 * Calls cache/ (pure key code), proxy_hdr.c and conf/.
 *
 * Per-credential keys hold an HMAC of every line of the route's
 * credential_header (Authorization by default) and of the
 * credential_cookie's values, keyed with the key secret. What the fetch
 * sends must not vary with what the key ignores: it carries those lines,
 * of the cookies only that one (none without credential_cookie), and no
 * Authorization unless it is the credential header.
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>

#include "cache/cache_graphql.h"
#include "cache/cache_keyrule.h"
#include "common/hlist.h"
#include "common/uri.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_conn.h"
#include "proxy/proxy_forward.h"
#include "proxy/proxy_hdr.h"
#include "proxy/proxy_coding.h"
#include "proxy/proxy_jwt.h"
#include "proxy/proxy_key.h"
#include "proxy/proxy_outcome.h"
#include "proxy/proxy_stats.h"

#define KEY_HEADER_JOIN_MAX	1024	/* a keyed header's lines, joined */

_Static_assert(KEYRULE_HEADERS_MAX == CONF_KEY_HEADERS_MAX,
    "key_headers names fit a key's parts");

int
key_has_parts(const struct conf_route *rt)
{
	return rt != NULL && (rt->key_headers[0] != '\0' || rt->cache_post ||
	    rt->cache_authorized == CONF_AUTHZ_CREDENTIAL ||
	    rt->cache_authorized == CONF_AUTHZ_CLAIMS);
}

/* The query as the route's rules keep it: malloc'd, or query itself. */
static int
rule_query(const struct conf_route *rt, const char *query, char **out)
{
	*out = NULL;
	if (rt == NULL || query == NULL ||
	    (rt->key_query[0] == '\0' && rt->key_ignore_query[0] == '\0'))
		return 0;
	*out = keyrule_query(query, rt->key_ignore_query,
	    rt->key_query[0] != '\0' ? rt->key_query : NULL);
	return *out != NULL ? 0 : -1;
}

int
key_of_url(const struct conf_route *rt, const char *host, const char *path,
    const char *query, char key[CACHE_KEY_MAX + 1])
{
	char *q;
	int rc;

	if (rule_query(rt, query, &q) == -1)
		return -1;
	rc = cache_key_for(host, path, q != NULL ? q : query,
	    rt != NULL && rt->sort_query, key);
	free(q);
	return rc;
}

/* The key_headers values the request has; -1 when one is too long to
 * key whole (the request is not cached). */
static int
key_headers(const struct conf_route *rt, const struct hlist *in,
    struct key_parts *kp, char bufs[][KEY_HEADER_JOIN_MAX],
    char names[][CONF_FIELDS_MAX])
{
	const char *p = rt->key_headers, *v;
	int lines;

	for (kp->nheaders = 0; *p != '\0'; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");
		int i = kp->nheaders;

		snprintf(names[i], CONF_FIELDS_MAX, "%.*s", (int)len, p);
		p += len;
		v = hdr_join(in, names[i], bufs[i], KEY_HEADER_JOIN_MAX, &lines);
		if (v != NULL && lines < 0)
			return -1;
		if (v == NULL || *v == '\0')
			continue;	/* absent: as if not listed */
		kp->header_names[i] = names[i];
		kp->header_values[i] = v;
		kp->nheaders++;
	}
	return 0;
}

/*
 * Is a POST on a graphql route read as its body says? Not when its target
 * has a query (express-graphql reads ?query= before the body) or its one
 * Content-Type is not JSON's (the server may read it otherwise).
 */
static int
graphql_request(const struct hlist *in, const char *query)
{
	char buf[CONF_FIELDS_MAX];
	int lines;
	const char *ctype = hdr_join(in, "Content-Type", buf, sizeof(buf),
	    &lines);

	return query == NULL && lines == 1 && graphql_media_type(ctype);
}

/*
 * A Content-Type as a key holds it (norm, normsize bytes): its media type
 * and its parameters' names in lower case (RFC 9110 8.3.1: they are
 * case-insensitive), its parameters' values as sent (a multipart
 * boundary is case-sensitive). -1 when there is not exactly one line:
 * the origin may read either of two, so the body is not cached.
 */
static int
content_type_norm(const struct hlist *hdrs, char *norm, size_t normsize)
{
	char buf[CONF_FIELDS_MAX];
	int lines, in_value = 0;
	const char *ctype = hdr_join(hdrs, "Content-Type", buf, sizeof(buf),
	    &lines);

	if (lines > 1 || lines < 0)
		return -1;
	keyrule_header_value(ctype != NULL ? ctype : "", norm, normsize);
	for (char *p = norm; *p != '\0'; p++) {
		if (*p == ';')
			in_value = 0;
		else if (*p == '=')
			in_value = 1;
		else if (!in_value)
			*p = (char)tolower((unsigned char)*p);
	}
	return 0;
}

/* The body's digest (b=, or g= for a GraphQL query) into hex: 0, or -1
 * when it is not cached (too long, not a query, more than one
 * Content-Type). */
static int
body_digest(const struct conf *c, const struct conf_route *rt,
    struct hreq *ev, const char *query, struct req_key *k,
    char *hex)
{
	struct evbuffer *in = ev->body;
	const struct hlist *hdrs = &ev->in;
	size_t len = evbuffer_get_length(in);
	const char *body = len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
	struct keyrule_digest d;
	char norm[CONF_FIELDS_MAX];

	if ((int64_t)len > rt->post_max_body || (len > 0 && body == NULL))
		return -1;
	if (rt->graphql && !graphql_request(hdrs, query))
		return -1;
	k->spec.method = "POST";
	k->spec.body = body;
	k->spec.body_len = len;
	if (rt->graphql) {
		keyrule_digest_init(&d, c->key_secret, c->key_secret_len,
		    "graphql");
		if (graphql_read(body, len, &d) != GRAPHQL_QUERY) {
			keyrule_digest_drop(&d);
			return -1;
		}
	} else {
		/* The same bytes sent as another type may mean another
		 * thing: the type counts. */
		if (content_type_norm(hdrs, norm, sizeof(norm)) == -1)
			return -1;
		keyrule_digest_init(&d, c->key_secret, c->key_secret_len,
		    "post");
		keyrule_digest_part(&d, norm, strlen(norm));
		keyrule_digest_part(&d, body, len);
	}
	return keyrule_digest_hex(&d, hex);
}

/* Each "name=value" of a Cookie line named name: its value into d, and
 * the pair onto out ("a=1; a=2"). */
static void
cookie_values(const char *line, const char *name, struct keyrule_digest *d,
    struct evbuffer *out, int *n)
{
	size_t nlen = strlen(name);

	for (const char *p = line; *p != '\0'; p += strspn(p, "; ")) {
		size_t len = strcspn(p, ";");
		size_t end = len;

		while (end > 0 && (p[end - 1] == ' ' || p[end - 1] == '\t'))
			end--;
		if (end > nlen && strncmp(p, name, nlen) == 0 &&
		    p[nlen] == '=') {
			keyrule_digest_part(d, "c", 1);
			keyrule_digest_part(d, p + nlen + 1, end - nlen - 1);
			evbuffer_add_printf(out, "%s%.*s", (*n)++ > 0 ? "; " :
			    "", (int)end, p);
		}
		p += len;
	}
}

/* Is the route's credential header Authorization (the default)? */
static int
authorization_keyed(const struct conf_route *rt)
{
	return strcasecmp(rt->credential_header, CONF_CREDENTIAL_HEADER) == 0;
}

/* The credential's digest into hex, if the request has one (else hex is
 * ""), and the Cookie its fetch sends. 0, or -1 on no memory. */
static int
credential_digest(const struct conf *c, const struct conf_route *rt,
    const struct hlist *in, struct req_key *k, char *hex)
{
	struct keyrule_digest d;
	const struct hfield *h;
	struct evbuffer *cookie = evbuffer_new();
	int parts = 0, ncookies = 0;
	char name[CONF_HEADER_NAME_MAX];

	if (cookie == NULL)
		return -1;
	keyrule_digest_init(&d, c->key_secret, c->key_secret_len, "credential");
	if (!authorization_keyed(rt)) {
		/* The same value in another header is another credential
		 * (Authorization's digests stay as they were). */
		size_t n = strlen(rt->credential_header);

		for (size_t i = 0; i < n; i++)
			name[i] = (char)tolower((unsigned char)
			    rt->credential_header[i]);
		keyrule_digest_part(&d, name, n);
	}
	HL_FOREACH(h, in) {
		if (strcasecmp(h->key, rt->credential_header) == 0) {
			keyrule_digest_part(&d, "a", 1);
			keyrule_digest_part(&d, h->value, strlen(h->value));
			parts++;
		} else if (rt->credential_cookie[0] != '\0' &&
		    strcasecmp(h->key, "Cookie") == 0) {
			cookie_values(h->value, rt->credential_cookie, &d,
			    cookie, &ncookies);
		}
	}
	if (keyrule_digest_hex(&d, hex) == -1) {
		evbuffer_free(cookie);
		return -1;
	}
	if (parts + ncookies == 0)
		hex[0] = '\0';	/* anonymous: the URL's own entry */
	evbuffer_add(cookie, "", 1);
	k->cookie = strdup((const char *)evbuffer_pullup(cookie, -1));
	evbuffer_free(cookie);
	k->spec.cookie = k->cookie;
	k->spec.per_credential = 1;
	return k->cookie != NULL ? 0 : -1;
}

/* The rule named for a key: the most specific that made it. */
static enum key_rule
key_rule(const struct conf_route *rt, const struct key_parts *kp)
{
	if (kp->claims_digest != NULL)
		return KEY_RULE_CLAIMS;
	if (kp->credential_digest != NULL)
		return KEY_RULE_CREDENTIAL;
	if (kp->graphql_digest != NULL)
		return KEY_RULE_GRAPHQL;
	if (kp->body_digest != NULL)
		return KEY_RULE_POST;
	if (kp->nheaders > 0)
		return KEY_RULE_HEADERS;
	if (rt->key_query[0] != '\0' || rt->key_ignore_query[0] != '\0')
		return KEY_RULE_QUERY;
	return KEY_RULE_URL;
}

enum key_verdict
key_of_request(const struct conf *c, const struct conf_route *rt,
    struct hreq *ev, const char *host, const char *path,
    const char *query, const char *claims_hex, struct req_key *k)
{
	const struct hlist *in = &ev->in;
	char bufs[KEYRULE_HEADERS_MAX][KEY_HEADER_JOIN_MAX];
	char names[KEYRULE_HEADERS_MAX][CONF_FIELDS_MAX];
	char body_hex[KEYRULE_DIGEST_HEX + 1], cred_hex[KEYRULE_DIGEST_HEX + 1];
	struct key_parts kp = { .host = host, .path = path,
	    .sort_query = rt->sort_query, .secret = c->key_secret,
	    .secret_len = c->key_secret_len };
	char *q = NULL;
	int post = ev->method == HM_POST;
	enum key_verdict v = KEY_NOMEM;

	memset(k, 0, sizeof(*k));
	k->spec.method = "GET";
	if (rule_query(rt, query, &q) == -1)
		return KEY_NOMEM;
	kp.query = q != NULL ? q : query;
	if (post && (!rt->cache_post || body_digest(c, rt, ev, query, k,
	    body_hex) == -1)) {
		v = cache_key_for(host, path, kp.query, rt->sort_query,
		    k->key) == 0 ? KEY_METHOD : KEY_NOMEM;
		goto done;
	}
	if (key_headers(rt, in, &kp, bufs, names) == -1) {
		v = KEY_BYPASS;
		goto done;
	}
	kp.post = post;
	kp.body_digest = post && !rt->graphql ? body_hex : NULL;
	kp.graphql_digest = post && rt->graphql ? body_hex : NULL;
	if (rt->cache_authorized == CONF_AUTHZ_CREDENTIAL) {
		if (credential_digest(c, rt, in, k, cred_hex) == -1)
			goto done;
		kp.credential_digest = cred_hex[0] != '\0' ? cred_hex : NULL;
	}
	if (claims_hex != NULL) {
		/* Keyed on the claims, fetched with the token: no Cookie. */
		kp.claims_digest = claims_hex;
		k->spec.cookie = "";
		k->spec.per_credential = 1;
	}
	if (keyrule_build(&kp, k->key, k->spec.url_tag) == -1)
		goto done;
	k->rule = key_rule(rt, &kp);
	v = KEY_CACHE;
done:
	free(q);
	return v;
}

/*
 * Is the query parameter p (len bytes) GraphQL over HTTP's "query"? Its
 * name decoded and in any case: some servers read "%71uery" or "Query" as
 * it. Its document's kind into *kind.
 */
static int
graphql_param(const char *p, size_t len, enum graphql_kind *kind)
{
	size_t nlen = strcspn(p, "="), vlen;
	char *name, *value;
	int is_query;

	if (nlen > len)
		nlen = len;
	if ((name = malloc(nlen + 1)) == NULL)
		return -1;
	(void)uri_decode(p, nlen, 1, name);
	is_query = strcasecmp(name, "query") == 0;
	free(name);
	if (!is_query)
		return 0;
	*kind = GRAPHQL_INVALID;
	vlen = len - nlen - (nlen < len);
	if ((value = malloc(vlen + 1)) == NULL)
		return 1;
	vlen = uri_decode(p + nlen + (nlen < len), vlen, 1, value);
	*kind = graphql_document(value, vlen);
	free(value);
	return 1;
}

/* A GET on a graphql route passes when its query names a document more
 * than once, or one that is not a query we can read (a mutation over
 * GET, which some servers run). Parameters split on '&' and ';'. */
static int
graphql_get_passed(const char *query)
{
	enum graphql_kind kind = GRAPHQL_QUERY;
	int n = 0, r;

	for (const char *p = query; p != NULL && *p != '\0';) {
		size_t len = strcspn(p, "&;");

		if ((r = graphql_param(p, len, &kind)) == -1)
			return 1;
		n += r;
		if (n > 1 || kind != GRAPHQL_QUERY)
			return 1;
		p += len + (p[len] != '\0');
	}
	return 0;
}

/*
 * A claims route's request (proxy_jwt.h): verified, it is keyed on its
 * claim set (DECIDE_CACHE, v holds the digest); else never by claims:
 * refused with 401 (jwt_reject) or passed uncached, a->jwt_refused
 * saying why.
 */
static enum key_decision
claims_decide(struct proxy *px, int route, const struct conf_route *rt,
    const struct hlist *in, struct jwt_verdict *v, struct answer *a)
{
	switch (jwt_check(px, route, rt, in, v)) {
	case 0:
		return DECIDE_CACHE;
	case -2:
		return DECIDE_FAIL;
	}
	a->jwt_refused = v->refused;
	if (rt->jwt_reject) {
		STAT_INC(px->stats, route, jwt_rejected);
		a->outcome = OUT_REJECTED;
		a->reject_code = HTTP_UNAUTHORIZED;
		return DECIDE_REFUSED;
	}
	STAT_INC(px->stats, route, jwt_passed);
	return DECIDE_PASS;
}

/*
 * Methods other than GET, HEAD and a cached POST pass; so do credentials
 * where cache_authorized is off, a POST that is not cached (counted), and
 * on a graphql route a GET that is not a query.
 */
enum key_decision
key_decide(struct proxy *px, int route, const struct conf_route *rt,
    struct hreq *ev, const char *host, const char *path,
    const char *query, int credentials, struct req_key *k, char *key,
    struct answer *a)
{
	enum hmethod cmd = ev->method;
	int shut = rt == NULL || (rt->cache_authorized == CONF_AUTHZ_OFF &&
	    credentials);
	struct jwt_verdict jv = { 0 };
	enum key_decision d;
	int post = cmd == HM_POST && !shut && rt->cache_post;

	key[0] = '\0';
	if (cmd != HM_GET && cmd != HM_HEAD && !post) {
		/* With no memory for the key, nothing is dropped. */
		if (rt != NULL && forward_unsafe(cmd) &&
		    key_of_url(rt, host, path, query, key) == -1)
			key[0] = '\0';
		a->pass_kind = OUT_METHOD;
		return DECIDE_PASS;
	}
	if (rt != NULL && rt->graphql && !post && graphql_get_passed(query)) {
		a->pass_kind = OUT_METHOD;
		return DECIDE_PASS;
	}
	a->pass_kind = OUT_BYPASS;
	if (shut)
		return DECIDE_PASS;
	if (rt->cache_authorized == CONF_AUTHZ_CLAIMS && (d = claims_decide(px,
	    route, rt, &ev->in, &jv, a)) != DECIDE_CACHE)
		return d;
	switch (key_of_request(px->conf, rt, ev, host, path, query,
	    jv.refused == NULL && jv.token != NULL ? jv.digest : NULL, k)) {
	case KEY_CACHE:
		break;
	case KEY_METHOD:
		STAT_INC(px->stats, route, post_passed);
		snprintf(key, FLOW_KEY_MAX + 1, "%s", k->key);
		a->pass_kind = OUT_METHOD;
		return DECIDE_PASS;
	case KEY_BYPASS:
		return DECIDE_PASS;
	case KEY_NOMEM:
		return DECIDE_FAIL;
	}
	a->pass_kind = OUT_NONE;
	a->key_rule = k->rule;
	snprintf(key, FLOW_KEY_MAX + 1, "%s", k->key);
	return DECIDE_CACHE;
}

void
key_release(struct req_key *k)
{
	free(k->cookie);
	k->cookie = NULL;
	k->spec.cookie = NULL;
}

static int
keep(struct fetch_kept *dst, const char *method, const void *body,
    size_t len, const char *tag)
{
	memset(dst, 0, sizeof(*dst));
	dst->method = method != NULL ? method : "GET";
	snprintf(dst->url_tag, sizeof(dst->url_tag), "%s", tag);
	if (len == 0)
		return 0;
	if ((dst->body = malloc(len)) == NULL)
		return -1;
	memcpy(dst->body, body, len);
	dst->body_len = len;
	return 0;
}

int
fetch_keep(struct fetch_kept *dst, const struct fetch_spec *spec)
{
	if (spec == NULL)
		return keep(dst, NULL, NULL, 0, "");
	return keep(dst, spec->method, spec->body, spec->body_len,
	    spec->url_tag);
}

int
fetch_keep_again(struct fetch_kept *dst, const struct fetch_kept *src,
    const void *body, size_t len)
{
	if (src == NULL)	/* an operator's refresh: a plain GET */
		return keep(dst, NULL, body, len, "");
	if (body == NULL) {
		body = src->body;
		len = src->body_len;
	}
	return keep(dst, src->method, body, len, src->url_tag);
}

void
fetch_drop(struct fetch_kept *k)
{
	free(k->body);
	k->body = NULL;
	k->body_len = 0;
}

/* With per-credential keys, only the Cookie the key holds (or none),
 * and Authorization only when it is the credential keyed. */
static void
fetch_headers(const struct fetch_spec *spec, const struct conf_route *rt,
    struct hlist *dst)
{
	if (spec == NULL || spec->cookie == NULL)
		return;
	while (hl_remove(dst, "Cookie") == 0)
		;
	if (spec->cookie[0] != '\0')
		hl_add(dst, "Cookie", spec->cookie);
	if (!authorization_keyed(rt))
		while (hl_remove(dst, "Authorization") == 0)
			;
}

int
key_authorized(const struct conf_route *rt, const struct hlist *in)
{
	return rt != NULL && rt->cache_authorized == CONF_AUTHZ_ON &&
	    hl_find(in, "Authorization") != NULL;
}

/* What a shared fetch sends: no credentials where the key does not hold
 * them (off: a request with them is passed; anonymous: never sent, nor
 * the route's credential_header). */
int
fetch_shared_headers(struct waiter *w, const struct conf_route *rt,
    struct hlist *dst)
{
	int anonymous = rt->cache_authorized == CONF_AUTHZ_ANONYMOUS;
	int flags = HDR_DROP_HOST | HDR_DROP_LENGTH | HDR_DROP_CONDITIONAL |
	    HDR_DROP_ENCODING | (rt->cache_authorized == CONF_AUTHZ_OFF ||
	    anonymous ? HDR_DROP_CREDENTIALS : 0);

	w->ops->forward(w, dst, flags);
	/* Every coding Corral can serve each client from (proxy_coding.h),
	 * whatever the first client to ask accepts. */
	hl_add(dst, "Accept-Encoding", CODING_UPSTREAM_ACCEPT);
	fetch_headers(w->spec, rt, dst);
	if (anonymous)
		while (hl_remove(dst, rt->credential_header) == 0)
			;
	return key_authorized(rt, w->headers);
}
