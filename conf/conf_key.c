/* SPDX-License-Identifier: MIT */
/*
 * What a cache key is made of, as configured: the syntax of the key rule
 * values, the key secret file, and the checks across a route's keys. See
 * conf_key.h. Calls common/util.c and common/fields.c only; called by
 * the loader (conf.c) and the value types (conf_value.c).
 */

#include "conf/conf_key.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fields.h"
#include "common/util.h"

#define PER_CREDENTIAL	"per-credential"
#define ANONYMOUS	"anonymous"
#define CLAIMS		"claims"
#define NAME_SHOW_MAX	40	/* characters of a bad name quoted */
#define HOP_BY_HOP	"a hop-by-hop field never reaches the origin"
#define UNDERSCORED	"a field name with '_' never reaches the origin " \
			"(some read it as '-'): spell it with '-'"
#define SECRET_READ_MAX	(CONF_KEY_SECRET_MAX + 2)	/* to see "too long" */

int
conf_key_set_authz(const char *v, int *out, char *err, size_t errlen)
{
	int b;

	if (strcasecmp(v, PER_CREDENTIAL) == 0) {
		*out = CONF_AUTHZ_CREDENTIAL;
		return 0;
	}
	if (strcasecmp(v, ANONYMOUS) == 0) {
		*out = CONF_AUTHZ_ANONYMOUS;
		return 0;
	}
	if (strcasecmp(v, CLAIMS) == 0) {
		*out = CONF_AUTHZ_CLAIMS;
		return 0;
	}
	if (util_parse_bool(v, &b) == -1) {
		snprintf(err, errlen, "\"%.*s\" is not off, on, "
		    PER_CREDENTIAL ", " ANONYMOUS " or " CLAIMS, NAME_SHOW_MAX,
		    v);
		return -1;
	}
	*out = b ? CONF_AUTHZ_ON : CONF_AUTHZ_OFF;
	return 0;
}

/* A query parameter name: printable, and none of what separates or
 * frames parameters (';' too: some origins split on it); '*' only last
 * (a prefix). */
static int
name_ok(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (!isgraph(c) || strchr("&;=#|%{}", c) != NULL ||
		    (c == '*' && i + 1 != len))
			return 0;
	}
	return len > 0 && !(len == 1 && p[0] == '*');
}

int
conf_key_set_names(const char *v, char *field, size_t size, char *err,
    size_t errlen)
{
	size_t used = 0;

	field[0] = '\0';
	for (const char *p = v; *p != '\0'; p += strspn(p, ", \t")) {
		size_t len = strcspn(p, ", \t");

		if (len == 0)
			continue;
		if (!name_ok(p, len)) {
			snprintf(err, errlen, "\"%.*s\" is not a query "
			    "parameter name or prefix* (no & ; = # | %% { }, "
			    "'*' only last)", (int)(len < NAME_SHOW_MAX ? len :
			    NAME_SHOW_MAX), p);
			return -1;
		}
		if (used + len + 2 >= size) {
			snprintf(err, errlen, "must be at most %zu characters "
			    "long", size - 1);
			return -1;
		}
		used += (size_t)snprintf(field + used, size - used, "%s%.*s",
		    used > 0 ? ", " : "", (int)len, p);
		p += len;
	}
	return 0;
}

/* Copies the name v (len bytes) into field if it fits. 0, or -1 (err). */
static int
keep_name(const char *v, size_t len, char *field, size_t size, char *err,
    size_t errlen)
{
	if (len >= size) {
		snprintf(err, errlen, "must be at most %zu characters long",
		    size - 1);
		return -1;
	}
	memcpy(field, v, len + 1);
	return 0;
}

int
conf_key_set_cookie(const char *v, char *field, size_t size, char *err,
    size_t errlen)
{
	size_t len = strlen(v);

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (!isgraph(c) || strchr("()<>@,;:\\\"/[]?={}", c) != NULL) {
			snprintf(err, errlen, "\"%.*s\" is not a cookie name",
			    NAME_SHOW_MAX, v);
			return -1;
		}
	}
	return keep_name(v, len, field, size, err, errlen);
}

int
conf_key_set_header(const char *v, char *field, size_t size, char *err,
    size_t errlen)
{
	static const struct { const char *name, *why; } refused[] = {
		{ "Host", "the fetch sends its own" },
		{ "Cookie", "name the cookie in credential_cookie" },
	};
	size_t len = strlen(v);
	const char *hop;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (!isalnum(c) && strchr("!#$%&'*+-.^_`|~", c) == NULL) {
			snprintf(err, errlen, "\"%.*s\" is not a field name",
			    NAME_SHOW_MAX, v);
			return -1;
		}
	}
	if (strchr(v, '_') != NULL) {
		snprintf(err, errlen, "\"%.*s\": " UNDERSCORED, NAME_SHOW_MAX, v);
		return -1;
	}
	/* Hop-by-hop fields never reach the origin (RFC 9110 7.6.1). */
	if ((hop = field_hop_by_hop(v)) != NULL) {
		snprintf(err, errlen, "must not be %s: %s", hop, HOP_BY_HOP);
		return -1;
	}
	for (size_t i = 0; i < ARRAY_LEN(refused); i++) {
		if (strcasecmp(v, refused[i].name) == 0) {
			snprintf(err, errlen, "must not be %s: %s",
			    refused[i].name, refused[i].why);
			return -1;
		}
	}
	return keep_name(v, len, field, size, err, errlen);
}

/* Its mode: a regular file others cannot read and its group cannot
 * change. 0 or -1. */
static int
secret_mode_ok(int fd, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "cannot stat: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "is not a regular file");
		return -1;
	}
	if ((st.st_mode & (S_IRWXO | S_IWGRP)) != 0) {
		snprintf(err, errlen, "is readable by others or writable by "
		    "its group (mode %03o): chmod 600 or 640 it",
		    (unsigned)(st.st_mode & 0777));
		return -1;
	}
	return 0;
}

int
conf_key_read_secret(struct conf *c, char *err, size_t errlen)
{
	unsigned char buf[SECRET_READ_MAX];
	size_t len = 0;
	ssize_t n;
	int fd;

	c->key_secret_len = 0;
	if ((fd = open(c->key_secret_file, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cannot open %s: %s", c->key_secret_file,
		    strerror(errno));
		return -1;
	}
	if (secret_mode_ok(fd, err, errlen) == -1)
		goto fail;
	while (len < sizeof(buf) && (n = read(fd, buf + len,
	    sizeof(buf) - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "cannot read: %s", strerror(errno));
			goto fail;
		}
		len += (size_t)n;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len < CONF_KEY_SECRET_MIN || len > CONF_KEY_SECRET_MAX) {
		snprintf(err, errlen, "holds %s%zu bytes: use %d to %d (e.g. "
		    "head -c 32 /dev/urandom | base64)", len > CONF_KEY_SECRET_MAX ?
		    "more than " : "", len > CONF_KEY_SECRET_MAX ?
		    (size_t)CONF_KEY_SECRET_MAX : len, CONF_KEY_SECRET_MIN,
		    CONF_KEY_SECRET_MAX);
		goto fail;
	}
	memcpy(c->key_secret, buf, len);
	c->key_secret_len = len;
	memset(buf, 0, sizeof(buf));
	close(fd);
	return 0;
fail:
	memset(buf, 0, sizeof(buf));
	close(fd);
	return -1;
}

/* Does the list of field names name name? */
static int
fields_name(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p != '\0'; p += strspn(p, ", ")) {
		size_t len = strcspn(p, ", ");

		if (len == n && strncasecmp(p, name, n) == 0)
			return 1;
		p += len;
	}
	return 0;
}

int
conf_key_check_route(const struct conf *c, const struct conf_route *r,
    char *err, size_t errlen)
{
	int n = 0;

	for (size_t i = 0; i <= field_ncredentials; i++) {
		const char *name = i < field_ncredentials ?
		    field_credentials[i] : r->credential_header;

		if (fields_name(r->key_headers, name)) {
			snprintf(err, errlen, "key_headers must not name %s: a "
			    "credential is keyed only as a digest (cache_"
			    "authorized = per-credential)", name);
			return -1;
		}
	}
	for (const char *p = r->key_headers; *p != '\0'; p += strspn(p, ", ")) {
		if (memchr(p, '_', strcspn(p, ", ")) != NULL) {
			snprintf(err, errlen, "key_headers names %.*s: "
			    UNDERSCORED, (int)strcspn(p, ", "), p);
			return -1;
		}
		p += strcspn(p, ", ");
		n++;
	}
	if (n > CONF_KEY_HEADERS_MAX) {
		snprintf(err, errlen, "key_headers names %d fields (at most %d)",
		    n, CONF_KEY_HEADERS_MAX);
		return -1;
	}
	if (r->graphql && !r->cache_post) {
		snprintf(err, errlen, "graphql = on needs cache_post = on");
		return -1;
	}
	if (strcasecmp(r->credential_header, CONF_CREDENTIAL_HEADER) != 0 &&
	    r->cache_authorized != CONF_AUTHZ_CREDENTIAL &&
	    r->cache_authorized != CONF_AUTHZ_ANONYMOUS) {
		snprintf(err, errlen, "credential_header needs "
		    "cache_authorized = " PER_CREDENTIAL " or " ANONYMOUS);
		return -1;
	}
	if (r->credential_cookie[0] != '\0' &&
	    r->cache_authorized != CONF_AUTHZ_CREDENTIAL) {
		snprintf(err, errlen, "credential_cookie needs "
		    "cache_authorized = " PER_CREDENTIAL);
		return -1;
	}
	if (r->cache_authorized == CONF_AUTHZ_CREDENTIAL &&
	    c->key_secret_len == 0) {
		snprintf(err, errlen, "cache_authorized = " PER_CREDENTIAL
		    " needs key_secret_file in [server] (a secret the "
		    "credentials' digests are keyed with)");
		return -1;
	}
	return conf_jwt_check_route(c, r, err, errlen);
}
