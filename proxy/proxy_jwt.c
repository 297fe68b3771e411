/* SPDX-License-Identifier: MIT */
/*
 * cache_authorized = claims (proxy_jwt.h): the worker's key set and its
 * reloads, a request's token verified, and its claim set's keyed
 * digest.
 *
 * A token is refused with a Cache-Status detail that names why (never
 * the token); the error auth/ gives is logged at debug, and it never
 * quotes the token either.
 *
 * Calls auth/ (jwt.h), cache/cache_keyrule.c (the keyed digest), conf/.
 * Called by proxy_key.c (a request) and proxy_life.c (start, stop,
 * reload).
 */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "auth/jwt.h"
#include "common/hlist.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_jwt.h"
#include "proxy/proxy_stats.h"

#define JWT_STATE_MAGIC	0x4a575453u	/* "JWTS" */
#define ERR_MAX		512
#define BEARER		"Bearer"	/* RFC 6750 2.1, in any case */
#define CLAIMS_LABEL	"claims"	/* what the digest is of */
#define MS_PER_S	1000

struct jwt_state {
	uint32_t	 magic;
	struct jwt_keys	*keys;		/* NULL: none loaded */
	char		 path[CONF_PATH_MAX];	/* "": no jwt_keys_file */
	int		 allow;		/* enum jwt_secrets */
	struct stat	 seen;		/* the file as it was loaded */
	struct event	*check_ev;
};

/* ---- the key set ---------------------------------------------------------- */

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Loads the file js names; on success its set replaces the running one.
 * why: what asked ("start", "SIGHUP", "the file changed"). */
static int
load(struct proxy *px, struct jwt_state *js, const char *why)
{
	char err[ERR_MAX];
	struct jwt_keys *keys;
	struct stat st;

	if (stat(js->path, &st) == -1)
		memset(&st, 0, sizeof(st));
	js->seen = st;	/* a file that fails is not retried until it changes */
	if ((keys = jwt_keys_load(js->path, JWT_KEYS_AUTO, js->allow, err,
	    sizeof(err))) == NULL) {
		STAT_INC(px->stats, -1, jwt_keys_reload_errors);
		log_warn("jwt_keys_file (%s): %s; %s", why, err,
		    js->keys != NULL ? "the keys loaded before stay in use" :
		    "no token can be verified");
		return -1;
	}
	jwt_keys_free(&js->keys);
	js->keys = keys;
	STAT_INC(px->stats, -1, jwt_keys_reloads);
	log_info("jwt_keys_file (%s): %s: %zu key%s", why, js->path,
	    jwt_keys_count(keys), jwt_keys_count(keys) == 1 ? "" : "s");
	return 0;
}

static void
on_check(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;
	struct jwt_state *js = px->jwt;
	struct stat st;

	assert(js != NULL && js->magic == JWT_STATE_MAGIC);
	if (stat(js->path, &st) == -1)
		memset(&st, 0, sizeof(st));
	if (!same_file(&st, &js->seen))
		(void)load(px, js, "the file changed");
}

/* The path jwt_keys_file names, into js ("" when none). */
static int
resolve(const struct conf *c, struct jwt_state *js)
{
	char err[ERR_MAX];

	js->path[0] = '\0';
	if (c->jwt_keys_file[0] == '\0')
		return 0;
	if (conf_jwt_keys_path(c, js->path, sizeof(js->path), &js->allow, err,
	    sizeof(err)) == -1) {
		log_warn("jwt_keys_file: %s", err);
		js->path[0] = '\0';
		return -1;
	}
	return 0;
}

int
jwt_start(struct proxy *px, char *err, size_t errlen)
{
	struct timeval tv = util_timeval(JWT_KEYS_CHECK_MS);
	struct jwt_state *js;

	if ((js = calloc(1, sizeof(*js))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	js->magic = JWT_STATE_MAGIC;
	px->jwt = js;
	if (resolve(px->conf, js) == -1 || (js->path[0] != '\0' &&
	    load(px, js, "start") == -1)) {
		snprintf(err, errlen, "jwt_keys_file: cannot be loaded");
		return -1;
	}
	if ((js->check_ev = event_new(px->base, -1, EV_PERSIST, on_check,
	    px)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (js->path[0] != '\0')
		evtimer_add(js->check_ev, &tv);
	return 0;
}

void
jwt_stop(struct proxy *px)
{
	struct jwt_state *js = px->jwt;

	if (js == NULL)
		return;
	assert(js->magic == JWT_STATE_MAGIC);
	if (js->check_ev != NULL)
		event_free(js->check_ev);
	jwt_keys_free(&js->keys);
	js->magic = 0;
	free(js);
	px->jwt = NULL;
}

void
jwt_reload(struct proxy *px)
{
	struct timeval tv = util_timeval(JWT_KEYS_CHECK_MS);
	struct jwt_state *js = px->jwt;

	assert(js != NULL && js->magic == JWT_STATE_MAGIC);
	evtimer_del(js->check_ev);
	if (resolve(px->conf, js) == -1 || js->path[0] == '\0') {
		jwt_keys_free(&js->keys);	/* no route may use it now */
		return;
	}
	(void)load(px, js, "SIGHUP");
	evtimer_add(js->check_ev, &tv);
}

/* ---- a request's token ------------------------------------------------------ */

/* What each refusal is called in Cache-Status (and the access log). */
static const char *
detail(enum jwt_result r)
{
	switch (r) {
	case JWT_OK:
		return NULL;
	case JWT_TOO_LARGE:
		return "jwt-too-large";
	case JWT_MALFORMED:
		return "jwt-malformed";
	case JWT_ALG_NONE:
		return "jwt-alg-none";
	case JWT_ALG_UNSUPPORTED:
		return "jwt-alg-unsupported";
	case JWT_KEY_UNKNOWN:
		return "jwt-key-unknown";
	case JWT_KID_NEEDED:
		return "jwt-kid-needed";
	case JWT_ALG_KEY_MISMATCH:
		return "jwt-alg-key-mismatch";
	case JWT_BAD_SIGNATURE:
		return "jwt-bad-signature";
	case JWT_EXPIRED:
		return "jwt-expired";
	case JWT_NO_EXP:
		return "jwt-no-exp";
	case JWT_NOT_YET_VALID:
		return "jwt-not-yet-valid";
	case JWT_ISSUER:
		return "jwt-issuer";
	case JWT_AUDIENCE:
		return "jwt-audience";
	case JWT_ERROR:
		break;
	}
	return "jwt-error";
}

/* Counts a verification's result. */
static void
count(struct proxy *px, int route, enum jwt_result r)
{
	struct stats *st = px->stats;

	switch (r) {
	case JWT_OK:
		STAT_INC(st, route, jwt_verified);
		break;
	case JWT_TOO_LARGE:
	case JWT_MALFORMED:
		STAT_INC(st, route, jwt_malformed);
		break;
	case JWT_ALG_NONE:
	case JWT_ALG_UNSUPPORTED:
	case JWT_ALG_KEY_MISMATCH:
		STAT_INC(st, route, jwt_alg_refused);
		break;
	case JWT_KEY_UNKNOWN:
	case JWT_KID_NEEDED:
		STAT_INC(st, route, jwt_key_unknown);
		break;
	case JWT_BAD_SIGNATURE:
		STAT_INC(st, route, jwt_bad_signature);
		break;
	case JWT_EXPIRED:
		STAT_INC(st, route, jwt_expired);
		break;
	case JWT_NOT_YET_VALID:
		STAT_INC(st, route, jwt_not_yet_valid);
		break;
	case JWT_NO_EXP:
	case JWT_ISSUER:
	case JWT_AUDIENCE:
		STAT_INC(st, route, jwt_claims_refused);
		break;
	case JWT_ERROR:
		STAT_INC(st, route, jwt_errors);
		break;
	}
}

/*
 * The Bearer token of in (RFC 6750 2.1): 1 with it in *token, 0 when
 * there is none (no Authorization, or another scheme), -1 when it is
 * malformed (two Authorization fields, no token, a space in it).
 */
static int
bearer(const struct hlist *in, const char **token, size_t *len)
{
	const struct hfield *h, *found = NULL;
	const char *p;

	HL_FOREACH(h, in) {
		if (strcasecmp(h->key, "Authorization") != 0)
			continue;
		if (found != NULL)
			return -1;
		found = h;
	}
	if (found == NULL)
		return 0;
	p = found->value + strspn(found->value, " \t");
	if (strncasecmp(p, BEARER, strlen(BEARER)) != 0 ||
	    (p[strlen(BEARER)] != ' ' && p[strlen(BEARER)] != '\0'))
		return 0;
	p += strlen(BEARER);
	p += strspn(p, " ");
	*token = p;
	*len = strcspn(p, " \t");
	return *len > 0 && p[*len + strspn(p + *len, " \t")] == '\0' ? 1 : -1;
}

/* The keyed digest of the claims rt keys in claims, into v. */
static int
claim_digest(const struct conf *c, const struct conf_route *rt,
    const struct json *claims, struct jwt_verdict *v)
{
	struct keyrule_digest d;
	char err[ERR_MAX], *set;
	size_t len;

	if (jwt_claims_canon(claims, rt->jwt_claims, &set, &len, err,
	    sizeof(err)) == -1)
		return -1;
	keyrule_digest_init(&d, c->key_secret, c->key_secret_len, CLAIMS_LABEL);
	keyrule_digest_part(&d, set, len);
	free(set);
	return keyrule_digest_hex(&d, v->digest);
}

/* A refusal: v says why (counted by the caller). */
static int
refuse(struct jwt_verdict *v, int missing, const char *why)
{
	v->missing = missing;
	v->refused = why;
	return -1;
}

/* What a token must meet, as c says. */
static struct jwt_policy
policy_of(const struct conf *c)
{
	struct jwt_policy policy = { c->jwt_leeway_ms / MS_PER_S,
	    c->jwt_issuer[0] != '\0' ? c->jwt_issuer : NULL,
	    c->jwt_audience[0] != '\0' ? c->jwt_audience : NULL, c->jwt_typ,
	    1 };

	return policy;
}

int
jwt_check(struct proxy *px, int route, const struct conf_route *rt,
    const struct hlist *in, struct jwt_verdict *v)
{
	const struct conf *c = px->conf;
	struct jwt_state *js = px->jwt;
	struct jwt_policy policy = policy_of(c);
	struct json *claims = NULL;
	char err[ERR_MAX];
	enum jwt_result r;
	int has, rc;

	memset(v, 0, sizeof(*v));
	if ((has = bearer(in, &v->token, &v->len)) != 1) {
		if (has == 0)
			STAT_INC(px->stats, route, jwt_missing);
		else
			STAT_INC(px->stats, route, jwt_malformed);
		return refuse(v, has == 0, has == 0 ? "jwt-missing" :
		    "jwt-malformed");
	}
	if (js == NULL || js->keys == NULL) {
		STAT_INC(px->stats, route, jwt_key_unknown);
		return refuse(v, 0, detail(JWT_KEY_UNKNOWN));
	}
	r = jwt_verify(js->keys, v->token, v->len, util_now_ms() / MS_PER_S,
	    &policy, &claims, err, sizeof(err));
	count(px, route, r);
	if (r != JWT_OK) {
		log_debug("[route %s]: a token refused: %s", rt->prefix, err);
		return refuse(v, 0, detail(r));
	}
	rc = claim_digest(c, rt, claims, v) == 0 ? 0 : -2;
	json_free(&claims);
	return rc;
}

int
jwt_still_valid(struct proxy *px, const struct hlist *in)
{
	struct jwt_state *js = px->jwt;
	struct jwt_policy policy = policy_of(px->conf);
	struct json *claims = NULL;
	const char *token;
	char err[ERR_MAX];
	enum jwt_result r;
	size_t len;

	if (js == NULL || js->keys == NULL || bearer(in, &token, &len) != 1)
		return 0;
	r = jwt_verify(js->keys, token, len, util_now_ms() / MS_PER_S, &policy,
	    &claims, err, sizeof(err));
	json_free(&claims);
	if (r != JWT_OK)
		log_debug("a fetch's token no longer verifies: %s", err);
	return r == JWT_OK;
}

const char *
jwt_challenge(const char *refused)
{
	/* RFC 6750 3.1: no error code for a request without a token. */
	if (refused != NULL && strcmp(refused, "jwt-missing") == 0)
		return BEARER " realm=\"" JWT_REALM "\"";
	return BEARER " realm=\"" JWT_REALM "\", error=\"invalid_token\"";
}
