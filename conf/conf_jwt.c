/* SPDX-License-Identifier: MIT */
/*
 * cache_authorized = claims, as configured: [server] jwt_keys_file,
 * loaded here as each worker loads it (so that corral -t and a reload
 * refuse a file a worker could not use), jwt_typ, and each claims
 * route's jwt_claims and jwt_reject.
 *
 * jwt_keys_file is an absolute path or a systemd credential's name
 * (conf_secret.h); its format is told by its text (JWT_KEYS_AUTO). It
 * may hold an HMAC secret only when private to its owner, or as a
 * credential (auth/jwt.h judges that on the opened file).
 *
 * Calls auth/ (key sets, claim lists) and conf_secret.c.
 */

#include <stdio.h>
#include <string.h>

#include "auth/jwt.h"
#include "conf/conf.h"
#include "conf/conf_secret.h"

#define ERR_MAX		512

int
conf_jwt_keys_path(const struct conf *c, char *path, size_t pathlen,
    int *allow, char *err, size_t errlen)
{
	if (secret_resolve(c->jwt_keys_file, path, pathlen, err, errlen) == -1)
		return -1;
	*allow = c->jwt_keys_file[0] == '/' ? JWT_SECRETS_PRIVATE :
	    JWT_SECRETS_CREDENTIAL;
	return 0;
}

int
conf_jwt_check(const struct conf *c, const char *conf_path, int line,
    int typ_line, FILE *errs)
{
	char path[CONF_PATH_MAX], err[ERR_MAX];
	struct jwt_keys *keys;
	int allow, nerr = 0;

	if (jwt_typs_valid(c->jwt_typ, err, sizeof(err)) == -1) {
		fprintf(errs, "%s:%d: jwt_typ: %s\n", conf_path, typ_line, err);
		nerr++;
	}
	if (line <= 0 || c->jwt_keys_file[0] == '\0')
		return nerr;
	if (conf_jwt_keys_path(c, path, sizeof(path), &allow, err,
	    sizeof(err)) == -1 || (keys = jwt_keys_load(path, JWT_KEYS_AUTO,
	    allow, err, sizeof(err))) == NULL) {
		fprintf(errs, "%s:%d: jwt_keys_file: %s\n", conf_path, line,
		    err);
		return nerr + 1;
	}
	jwt_keys_free(&keys);
	return nerr;
}

int
conf_jwt_check_route(const struct conf *c, const struct conf_route *r,
    char *err, size_t errlen)
{
	char why[ERR_MAX];

	if (r->cache_authorized != CONF_AUTHZ_CLAIMS) {
		if (r->jwt_claims[0] != '\0' || r->jwt_reject) {
			snprintf(err, errlen, "jwt_claims and jwt_reject need "
			    "cache_authorized = claims");
			return -1;
		}
		return 0;
	}
	if (c->jwt_keys_file[0] == '\0') {
		snprintf(err, errlen, "cache_authorized = claims needs "
		    "jwt_keys_file in [server] (the keys tokens are verified "
		    "with)");
		return -1;
	}
	if (c->key_secret_len == 0) {
		snprintf(err, errlen, "cache_authorized = claims needs "
		    "key_secret_file in [server] (a secret the claim sets' "
		    "digests are keyed with)");
		return -1;
	}
	if (jwt_claims_valid(r->jwt_claims, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "jwt_claims: %s (name the claims the "
		    "answer depends on, e.g. jwt_claims = role tenant_id)", why);
		return -1;
	}
	return 0;
}
