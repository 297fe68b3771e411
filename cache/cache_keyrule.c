/* SPDX-License-Identifier: MIT */
/*
 * Key rules: the query parameters a key drops, the header values, method
 * and digests it adds, and the tag that files a key under its URL. See
 * cache_keyrule.h.
 *
 * Calls cache_key.c and common/digest.c. Called from outside cache/ (the
 * request's key, a purge by URL).
 */

#include "cache/cache_keyrule.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define PREFIX_WILDCARD	'*'	/* "utm_*": every name it begins */
#define LIST_SEPS	", \t"
#define PARAM_SEPS	"&;"	/* between query parameters, to some */
#define FOLDED_NAME_MAX	128	/* a parameter name read loosely, at most */

static const char *const rule_names[] = {
	[KEY_RULE_URL] = "url",
	[KEY_RULE_QUERY] = "query-rules",
	[KEY_RULE_HEADERS] = "headers",
	[KEY_RULE_POST] = "post",
	[KEY_RULE_GRAPHQL] = "graphql",
	[KEY_RULE_CREDENTIAL] = "credential",
	[KEY_RULE_CLAIMS] = "claims",
};

static const char hex_digits[] = "0123456789abcdef";

const char *
keyrule_name(enum key_rule r)
{
	return (size_t)r < sizeof(rule_names) / sizeof(rule_names[0]) ?
	    rule_names[r] : "url";
}

int
keyrule_listed(const char *list, const char *name, size_t len)
{
	for (const char *p = list; *p != '\0'; p += strspn(p, LIST_SEPS)) {
		size_t n = strcspn(p, LIST_SEPS);

		if (n > 0 && p[n - 1] == PREFIX_WILDCARD) {
			if (len >= n - 1 && memcmp(name, p, n - 1) == 0)
				return 1;
		} else if (n == len && memcmp(name, p, n) == 0) {
			return 1;
		}
		p += n;
	}
	return 0;
}

/*
 * A parameter name (n bytes) as the loosest origins read it, into out:
 * %XX decoded, spaces, '+' and NULs around it dropped, a "[...]" suffix
 * dropped (PHP's arrays: "id[]"), in lower case (ASP.NET), '.' and ' '
 * as '_' (PHP). -1 when it does not fit.
 */
static int
fold_name(const char *p, size_t n, char out[FOLDED_NAME_MAX])
{
	size_t o = 0, start, end;
	int hi, lo;

	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c == '%' && i + 2 < n &&
		    (hi = util_hex_value(p[i + 1])) >= 0 &&
		    (lo = util_hex_value(p[i + 2])) >= 0) {
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (o == FOLDED_NAME_MAX - 1)
			return -1;
		out[o++] = c == '+' ? ' ' : c;
	}
	out[o] = '\0';
	for (start = 0; start < o && (out[start] == ' ' || out[start] == '\0' ||
	    out[start] == '\t'); start++)
		;
	end = start + strcspn(out + start, "[");	/* or a decoded NUL */
	while (end > start && (out[end - 1] == ' ' || out[end - 1] == '\t'))
		end--;
	for (size_t i = start; i < end; i++) {
		char c = (char)tolower((unsigned char)out[i]);

		out[i - start] = c == '.' || c == ' ' ? '_' : c;
	}
	out[end - start] = '\0';
	return 0;
}

/*
 * Would an origin read the parameter name p (n bytes) as one of list's,
 * though it is not spelled as one ("ID", "%20id", "id[]", "id%00")? Such
 * a name is kept in a key that keeps only list's: it must not share the
 * entry of the name it reads as.
 */
static int
reads_as_listed(const char *list, const char *p, size_t n)
{
	char name[FOLDED_NAME_MAX], item[FOLDED_NAME_MAX];
	size_t len;

	if (fold_name(p, n, name) == -1)
		return 1;	/* too long to tell: kept */
	for (const char *l = list; *l != '\0'; l += strspn(l, LIST_SEPS)) {
		size_t ln = strcspn(l, LIST_SEPS);

		if (ln > 0 && fold_name(l, ln, item) == 0) {
			len = strlen(item);
			if (len > 0 && item[len - 1] == PREFIX_WILDCARD ?
			    strncmp(name, item, len - 1) == 0 :
			    strcmp(name, item) == 0)
				return 1;
		}
		l += ln;
	}
	return 0;
}

/*
 * Does the key keep the parameter p (len bytes, split on '&')? Some
 * origins split on ';' too, so each of its ';' pieces is weighed: it is
 * dropped only when every piece is ignored (an empty one is not), or with
 * only, kept when any piece is listed, or would be read as listed by a
 * loose origin (reads_as_listed). Kept, it is kept whole: an origin
 * that splits on '&' alone reads it as one parameter, and "utm_x=a;id=6"
 * keys on id=6 for the others.
 */
static int
param_kept(const char *p, size_t len, const char *ignore, const char *only)
{
	const char *list = only != NULL ? only : ignore != NULL ? ignore : "";
	int any = 0, all = 1;

	for (const char *end = p + len; p < end; p++) {
		size_t piece = strcspn(p, PARAM_SEPS);
		size_t name = strcspn(p, "=" PARAM_SEPS);
		int listed = piece > 0 && (keyrule_listed(list, p, name) ||
		    (only != NULL && reads_as_listed(list, p, name)));

		any |= listed;
		all &= listed;
		p += piece;
		if (*p != ';')
			break;
	}
	return only != NULL ? any : !all;
}

/*
 * The parameters are compared by name in the key's normal form, so that
 * "utm%5Fsource" is "utm_source"; what is kept keeps its order.
 */
char *
keyrule_query(const char *query, const char *ignore, const char *only)
{
	char *norm, *out, *p;
	size_t off = 0;

	if ((norm = cache_query_normalised(query)) == NULL)
		return NULL;
	if ((out = malloc(strlen(norm) + 1)) == NULL) {
		free(norm);
		return NULL;
	}
	for (p = norm; *p != '\0' || p == norm; p++) {
		size_t len = strcspn(p, "&");

		if (len > 0 && param_kept(p, len, ignore, only)) {
			if (off > 0)
				out[off++] = '&';
			memcpy(out + off, p, len);
			off += len;
		}
		p += len;
		if (*p == '\0')
			break;
	}
	out[off] = '\0';
	free(norm);
	return out;
}

size_t
keyrule_header_value(const char *in, char *out, size_t outlen)
{
	size_t n = 0;
	int space = 0;

	if (outlen == 0)
		return 0;
	in += strspn(in, " \t");
	for (; *in != '\0' && n + 1 < outlen; in++) {
		if (*in == ' ' || *in == '\t') {
			space = 1;
			continue;
		}
		if (space && n + 2 < outlen)
			out[n++] = ' ';
		space = 0;
		out[n++] = *in;
	}
	out[n] = '\0';
	return n;
}

void
keyrule_digest_init(struct keyrule_digest *d, const void *secret,
    size_t secret_len, const char *label)
{
	digest_hmac_init(&d->m, secret, secret_len);
	keyrule_digest_part(d, label, strlen(label));
}

void
keyrule_digest_part(struct keyrule_digest *d, const void *p, size_t len)
{
	unsigned char n[8];

	for (int i = 0; i < 8; i++)
		n[i] = (unsigned char)((uint64_t)len >> (8 * i));
	digest_hmac_update(&d->m, n, sizeof(n));
	digest_hmac_update(&d->m, p, len);
}

int
keyrule_digest_hex(struct keyrule_digest *d, char hex[KEYRULE_DIGEST_HEX + 1])
{
	unsigned char mac[DIGEST_LEN];

	hex[0] = '\0';
	if (digest_hmac_final(&d->m, mac) == -1)
		return -1;
	for (int i = 0; i < KEYRULE_DIGEST_HEX / 2; i++) {
		hex[2 * i] = hex_digits[mac[i] >> 4];
		hex[2 * i + 1] = hex_digits[mac[i] & 0xf];
	}
	hex[KEYRULE_DIGEST_HEX] = '\0';
	return 0;
}

void
keyrule_digest_drop(struct keyrule_digest *d)
{
	unsigned char mac[DIGEST_LEN];

	if (digest_hmac_final(&d->m, mac) == 0)
		memset(mac, 0, sizeof(mac));
}

/* A header value's byte as a key holds it: safe bytes raw, others %XX
 * (',' and '|' separate parts, so they are never raw). */
static size_t
put_escaped(char *out, size_t off, size_t cap, unsigned char c)
{
	static const char upper[] = "0123456789ABCDEF";
	int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("-._~!$'()*+;=:@/",
	    c) != NULL);

	if (safe) {
		if (off < cap)
			out[off] = (char)c;
		return off + 1;
	}
	if (off + 3 <= cap) {
		out[off] = '%';
		out[off + 1] = upper[c >> 4];
		out[off + 2] = upper[c & 0xf];
	}
	return off + 3;
}

/* "h=name:value,name:value" of the header values, into out (cap bytes,
 * NUL not counted). The length it takes (more than cap: cut, or a value
 * too long to hold). */
static size_t
header_part(const struct key_parts *kp, char *out, size_t cap)
{
	char value[KEYRULE_VALUE_MAX];
	size_t off = 0;

	for (int i = 0; i < kp->nheaders; i++) {
		if (strlen(kp->header_values[i]) >= sizeof(value))
			return cap + 1;	/* its digest stands for it */
		const char *p = i == 0 ? "h=" : ",";

		for (; *p != '\0'; p++)
			off = put_escaped(out, off, cap, (unsigned char)*p);
		for (p = kp->header_names[i]; *p != '\0'; p++)
			off = put_escaped(out, off, cap, (unsigned char)
			    (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p));
		off = put_escaped(out, off, cap, ':');
		keyrule_header_value(kp->header_values[i], value,
		    sizeof(value));
		for (p = value; *p != '\0'; p++)
			off = put_escaped(out, off, cap, (unsigned char)*p);
	}
	return off;
}

/* The digest of the header values, whole, normalised: "h#HEX". */
static int
header_digest(const struct key_parts *kp, char *out, size_t outlen)
{
	char hex[KEYRULE_DIGEST_HEX + 1], *v;
	struct keyrule_digest d;

	keyrule_digest_init(&d, kp->secret, kp->secret_len, "headers");
	for (int i = 0; i < kp->nheaders; i++) {
		size_t len = strlen(kp->header_values[i]) + 1;

		if ((v = malloc(len)) == NULL) {
			keyrule_digest_drop(&d);
			return -1;
		}
		keyrule_digest_part(&d, kp->header_names[i],
		    strlen(kp->header_names[i]));
		len = keyrule_header_value(kp->header_values[i], v, len);
		keyrule_digest_part(&d, v, len);
		free(v);
	}
	if (keyrule_digest_hex(&d, hex) == -1)
		return -1;
	return snprintf(out, outlen, "h#%s", hex);
}

/* The parts after the URL, each after a '|', into out: their length, or
 * -1 on no memory. */
static int
key_suffix(const struct key_parts *kp, char out[KEYRULE_PARTS_MAX + 1])
{
	char hp[KEYRULE_PARTS_MAX + 1];
	size_t hlen = header_part(kp, hp, KEYRULE_PARTS_MAX);
	int n = 0, h;

	if (hlen > KEYRULE_PARTS_MAX / 2) {
		/* Long values: their digest stands for them. */
		if ((h = header_digest(kp, hp, sizeof(hp))) < 0)
			return -1;
		hlen = (size_t)h;
	}
	hp[hlen] = '\0';
	if (hlen > 0)
		n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,
		    "%c%s", KEYRULE_SEP, hp);
	if (kp->post)
		n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,
		    "%cm=POST", KEYRULE_SEP);
	if (kp->body_digest != NULL)
		n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,
		    "%cb=%s", KEYRULE_SEP, kp->body_digest);
	if (kp->graphql_digest != NULL)
		n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,
		    "%cg=%s", KEYRULE_SEP, kp->graphql_digest);
	if (kp->credential_digest != NULL)
		n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,
		    "%cc=%s", KEYRULE_SEP, kp->credential_digest);
	if (kp->claims_digest != NULL)
		n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,
		    "%cj=%s", KEYRULE_SEP, kp->claims_digest);
	return n;
}

int
keyrule_url_tag(const char *url, char tag[KEYRULE_TAG_MAX + 1])
{
	struct keyrule_digest d;
	char hex[KEYRULE_DIGEST_HEX + 1];

	/* Not secret: anyone may purge a URL they can name. */
	keyrule_digest_init(&d, NULL, 0, "url");
	keyrule_digest_part(&d, url, strlen(url));
	tag[0] = '\0';
	if (keyrule_digest_hex(&d, hex) == -1)
		return -1;
	snprintf(tag, KEYRULE_TAG_MAX + 1, "%s%s", KEYRULE_TAG_PREFIX, hex);
	return 0;
}

/*
 * The URL part is built in what the other parts leave, so that they are
 * never cut: a long URL ends in its hash (cache_key.h) before them. The
 * tag is of the URL's own key, as a purge by URL builds it.
 */
int
keyrule_build(const struct key_parts *kp, char key[CACHE_KEY_MAX + 1],
    char tag[KEYRULE_TAG_MAX + 1])
{
	char suffix[KEYRULE_PARTS_MAX + 1], url[CACHE_KEY_MAX + 1];
	int n = key_suffix(kp, suffix);
	size_t slen = (size_t)n;

	tag[0] = '\0';
	if (n < 0 || cache_key_for_within(kp->host, kp->path, kp->query, kp->sort_query,
	    CACHE_KEY_MAX - slen, key) == -1)
		return -1;
	if (slen == 0)
		return 0;
	if (cache_key_for(kp->host, kp->path, kp->query, kp->sort_query,
	    url) == -1)
		return -1;
	if (keyrule_url_tag(url, tag) == -1)
		return -1;
	memcpy(key + strlen(key), suffix, slen + 1);
	return 0;
}
