/* SPDX-License-Identifier: MIT */
/*
 * HTTP header rules (proxy_hdr.h): hop-by-hop filtering, paths as the
 * origin resolves them, freshness as a shared cache decides it, and the
 * fields Corral reads or writes. Pure: it calls conf/ and common/ only.
 */

#include "proxy/proxy_hdr.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>


#include "common/fields.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy_sf.h"
#include "common/hlist.h"

/* Statuses stored under the route's TTL (heuristically cacheable ones,
 * RFC 9110 section 15.1, less 404/405/410/414/501). */
static const int storable_status[] = { 200, 203, 204, 300, 301, 308 };

int
hdr_is_hop_by_hop(const char *name, const char *connection)
{
	if (field_hop_by_hop(name) != NULL)
		return 1;
	return connection != NULL && util_list_has_token(connection, name);
}

static int
dropped(const char *name, int flags)
{
	if ((flags & HDR_DROP_HOST) && strcasecmp(name, "Host") == 0)
		return 1;
	if ((flags & HDR_DROP_LENGTH) && strcasecmp(name, "Content-Length") == 0)
		return 1;
	if ((flags & HDR_DROP_CONDITIONAL) &&
	    (strncasecmp(name, "If-", 3) == 0 || strcasecmp(name, "Range") == 0))
		return 1;
	if ((flags & HDR_DROP_ENCODING) &&
	    strcasecmp(name, "Accept-Encoding") == 0)
		return 1;
	if ((flags & HDR_DROP_CREDENTIALS) &&
	    (strcasecmp(name, "Authorization") == 0 ||
	    strcasecmp(name, "Cookie") == 0))
		return 1;
	if ((flags & HDR_DROP_FORWARDED) &&
	    (strncasecmp(name, "X-Forwarded-", 12) == 0 ||
	    strcasecmp(name, "Forwarded") == 0))
		return 1;
	if ((flags & HDR_DROP_UNDERSCORED) && strchr(name, '_') != NULL)
		return 1;
	return 0;
}

/* Drops the last segment, and the "/" before it, of s[0..*out). */
static void
pop_segment(const char *s, char **out)
{
	while (*out > s) {
		(*out)--;
		if (**out == '/')
			break;
	}
}

void
hdr_normalize_path(char *path)
{
	char *in, *out;

	for (in = out = path; *in != '\0'; out++) {
		if (in[0] == '%' && in[1] == '2' && (in[2] == 'e' ||
		    in[2] == 'E')) {
			*out = '.';
			in += 3;
		} else {
			*out = *in++;
		}
	}
	*out = '\0';
	/* RFC 3986 5.2.4, steps A to E; out never passes in. */
	for (in = out = path; *in != '\0';) {
		if (strncmp(in, "../", 3) == 0) {
			in += 3;
		} else if (strncmp(in, "./", 2) == 0 ||
		    strncmp(in, "/./", 3) == 0) {
			in += 2;
		} else if (strcmp(in, "/.") == 0) {
			in[1] = '\0';
		} else if (strncmp(in, "/../", 4) == 0) {
			in += 3;
			pop_segment(path, &out);
		} else if (strcmp(in, "/..") == 0) {
			in[1] = '\0';
			pop_segment(path, &out);
		} else if (strcmp(in, ".") == 0 || strcmp(in, "..") == 0) {
			in += strlen(in);
		} else {
			do
				*out++ = *in++;
			while (*in != '\0' && *in != '/');
		}
	}
	*out = '\0';
}

void
hdr_copy(const struct hlist *src, struct hlist *dst, int flags)
{
	const char *connection = hl_find(src, "Connection");
	const struct hfield *h;

	HL_FOREACH(h, src) {
		if (hdr_is_hop_by_hop(h->key, connection) || dropped(h->key, flags))
			continue;
		hl_add(dst, h->key, h->value);
	}
}

/* tchar (RFC 9110 5.6.2): how many of the bytes at p are one. */
static size_t
token_len(const char *p)
{
	size_t n = 0;

	while (isalnum((unsigned char)p[n]) ||
	    (p[n] != '\0' && strchr("!#$%&'*+-.^_`|~", p[n]) != NULL))
		n++;
	return n;
}

/* A forwarded-pair's value, token or quoted-string: its end, or NULL. */
static const char *
pair_value_end(const char *p)
{
	if (*p != '"')
		return token_len(p) > 0 ? p + token_len(p) : NULL;
	for (p++; *p != '"'; p++)
		if (*p == '\0' || (*p == '\\' && *++p == '\0'))
			return NULL;
	return p + 1;
}

char *
hdr_forwarded_without(const char *v, const char *param)
{
	size_t plen = strlen(param), cap = strlen(v) * 2 + 1;
	char *out = malloc(cap), *o = out;
	const char *p = v, *start, *end;
	int pairs = 0;	/* pairs written to the current element */

	if (out == NULL)
		return NULL;
	for (;;) {
		p += strspn(p, " \t");
		if (*p == ',')
			pairs = 0;	/* the next element */
		if (*p == ';' || *p == ',') {
			p++;
			continue;
		}
		if (*p == '\0')
			break;
		start = p;
		p += token_len(p);
		if (p == start || *p != '=' ||
		    (end = pair_value_end(p + 1)) == NULL)
			goto bad;
		if ((size_t)(p - start) != plen ||
		    strncasecmp(start, param, plen) != 0) {
			if (o > out)
				o += snprintf(o, 3, "%s", pairs > 0 ? ";" : ", ");
			memcpy(o, start, (size_t)(end - start));
			o += end - start;
			pairs++;
		}
		p = end + strspn(end, " \t");
		if (*p != '\0' && *p != ';' && *p != ',')
			goto bad;
	}
	*o = '\0';
	if (o > out)
		return out;
bad:
	free(out);
	return NULL;
}

int
hdr_status_storable(int status)
{
	for (size_t i = 0; i < ARRAY_LEN(storable_status); i++)
		if (status == storable_status[i])
			return 1;
	return 0;
}

#define TARGETED_MAX	1024	/* a targeted field longer than this is ignored */

/* The Cache-Control directives a shared cache acts on. */
struct cc {
	int	no_store, no_cache, private_, public_, must_revalidate;
	int64_t	s_maxage, max_age, swr, sie;	/* seconds; -1: absent */
};

static int
key_is(const struct sf_member *m, const char *name)
{
	return m->key_len == strlen(name) && memcmp(m->key, name, m->key_len) == 0;
}

/* Parses "name" or "name=value" directives of every line of field (a
 * Cache-Control; a targeted one is a Structured Field: parse_targeted). */
static void
parse_cc(const struct hlist *headers, const char *field, struct cc *cc)
{
	const struct hfield *h;

	memset(cc, 0, sizeof(*cc));
	cc->s_maxage = cc->max_age = cc->swr = cc->sie = -1;
	HL_FOREACH(h, headers) {
		const char *p = h->value;

		if (strcasecmp(h->key, field) != 0)
			continue;
		while (*p != '\0') {
			char name[32];
			size_t n = 0;
			int64_t v = -1;

			while (*p == ' ' || *p == '\t' || *p == ',')
				p++;
			while (*p != '\0' && *p != ',' && *p != '=' &&
			    *p != ' ' && n < sizeof(name) - 1)
				name[n++] = (char)tolower((unsigned char)*p++);
			name[n] = '\0';
			while (*p == ' ')
				p++;
			if (*p == '=') {
				p++;
				if (*p == '"')
					p++;
				if (isdigit((unsigned char)*p))
					v = strtoll(p, NULL, 10);
			}
			p += strcspn(p, ",");
			if (strcmp(name, "no-store") == 0)
				cc->no_store = 1;
			else if (strcmp(name, "no-cache") == 0)
				cc->no_cache = 1;
			else if (strcmp(name, "private") == 0)
				cc->private_ = 1;
			else if (strcmp(name, "public") == 0)
				cc->public_ = 1;
			else if (strcmp(name, "must-revalidate") == 0 ||
			    strcmp(name, "proxy-revalidate") == 0)
				cc->must_revalidate = 1;
			else if (strcmp(name, "s-maxage") == 0 && v >= 0)
				cc->s_maxage = v;
			else if (strcmp(name, "max-age") == 0 && v >= 0)
				cc->max_age = v;
			else if (strcmp(name, "stale-while-revalidate") == 0 && v >= 0)
				cc->swr = v;
			else if (strcmp(name, "stale-if-error") == 0 && v >= 0)
				cc->sie = v;
		}
	}
}

/* A targeted field's directive (RFC 9213 2.1): the deltas are Integers
 * of at least 0, the flags Booleans (false: absent); a known directive of
 * another type makes the whole field invalid. Unknown ones are ignored. */
static int
on_directive(const struct sf_member *m, void *arg)
{
	static const char *const deltas[] = { "s-maxage", "max-age",
	    "stale-while-revalidate", "stale-if-error" };
	static const char *const flags[] = { "no-store", "no-cache",
	    "private", "public", "must-revalidate", "proxy-revalidate" };
	struct cc *cc = arg;
	int64_t *delta[] = { &cc->s_maxage, &cc->max_age, &cc->swr, &cc->sie };
	int *flag[] = { &cc->no_store, &cc->no_cache, &cc->private_,
	    &cc->public_, &cc->must_revalidate, &cc->must_revalidate };

	for (size_t i = 0; i < ARRAY_LEN(deltas); i++) {
		if (!key_is(m, deltas[i]))
			continue;
		if (m->type != SF_INTEGER || m->integer < 0)
			return -1;
		*delta[i] = m->integer;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_LEN(flags); i++) {
		if (!key_is(m, flags[i]))
			continue;
		if (m->type != SF_BOOLEAN)
			return -1;
		*flag[i] |= (int)m->integer;
		return 0;
	}
	return 0;
}

/* Every line of a targeted field as one Dictionary into cc: 0, or -1
 * when it is not one (then it is ignored as a whole). */
static int
parse_targeted(const struct hlist *headers, const char *field,
    struct cc *cc)
{
	char buf[TARGETED_MAX];
	const char *v;
	int lines;

	memset(cc, 0, sizeof(*cc));
	cc->s_maxage = cc->max_age = cc->swr = cc->sie = -1;
	if ((v = hdr_join(headers, field, buf, sizeof(buf), &lines)) == NULL ||
	    lines < 0)
		return -1;
	return sf_dict_parse(v, on_directive, cc);
}


#define MS_PER_S	INT64_C(1000)
#define SECONDS_MAX	(INT64_C(1) << 31)	/* delta-seconds cap, RFC 9111 1.2.2 */
#define VARY_LIST_MAX	512	/* a Vary list longer than this is not stored */

const char *
hdr_join(const struct hlist *headers, const char *name, char *out,
    size_t outlen, int *lines)
{
	const struct hfield *h;
	size_t used = 0;
	int n = 0, cut = 0;

	out[0] = '\0';
	HL_FOREACH(h, headers) {
		if (strcasecmp(h->key, name) != 0)
			continue;
		used += (size_t)snprintf(out + used, outlen - used, "%s%s",
		    n++ > 0 ? ", " : "", h->value);
		if (used >= outlen) {
			used = outlen - 1;
			cut = 1;
		}
	}
	if (lines != NULL)
		*lines = cut ? -1 : n;
	return n > 0 ? out : NULL;
}

int64_t
hdr_delta_seconds(const char *s)
{
	int64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		if (v < SECONDS_MAX)
			v = v * 10 + (*s - '0');
	}
	return v > SECONDS_MAX ? SECONDS_MAX : v;
}

/* RFC 9111 5.1: Age is a singleton, but a list (on one line or several)
 * counts by its first member; an invalid one is ignored. */
int64_t
hdr_age(const struct hlist *headers)
{
	char buf[32];
	const char *age = hl_find(headers, "Age");
	size_t n;

	if (age == NULL)
		return -1;
	age += strspn(age, " \t");
	n = strcspn(age, ",");
	while (n > 0 && (age[n - 1] == ' ' || age[n - 1] == '\t'))
		n--;
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, age, n);
	buf[n] = '\0';
	return hdr_delta_seconds(buf);
}

static int64_t
secs(int64_t s)
{
	return (s > SECONDS_MAX ? SECONDS_MAX : s) * MS_PER_S;
}

static void
not_storable(struct freshness *f, const char *why)
{
	memset(f, 0, sizeof(*f));
	f->why = why;
}

#define REFUSE(f, why) do {						\
	not_storable((f), (why));					\
	return;								\
} while (0)

int
hdr_tags(const struct hlist *headers, void (*fn)(const char *tag,
    void *arg), void *arg)
{
	const struct hfield *h;
	char tag[HDR_TAG_MAX + 1];
	int n = 0, dropped = 0;

	HL_FOREACH(h, headers) {
		const char *sep, *p = h->value;

		if (strcasecmp(h->key, "Surrogate-Key") == 0)
			sep = " \t";
		else if (strcasecmp(h->key, "Cache-Tag") == 0)
			sep = ", \t";
		else
			continue;
		while (*(p += strspn(p, sep)) != '\0') {
			size_t len = strcspn(p, sep);

			if (len <= HDR_TAG_MAX && n < HDR_TAGS_MAX) {
				memcpy(tag, p, len);
				tag[len] = '\0';
				fn(tag, arg);
				n++;
			} else {
				dropped++;
			}
			p += len;
		}
	}
	return dropped;
}

#define CDN_CC	"CDN-Cache-Control"

/*
 * The next field name the route reads as targeted cache control, from *p
 * (start at its targeted_cc): each of that list, then CDN-Cache-Control.
 * Its length goes in *len; NULL after the last. No copy: a hit on an
 * origin_cache_control route asks this of every header it sends.
 */
static const char *
next_targeted(const char **p, size_t *len)
{
	const char *name;

	if (*p == NULL)
		return NULL;
	*p += strspn(*p, ", ");
	if (**p == '\0') {
		*p = NULL;
		*len = sizeof(CDN_CC) - 1;
		return CDN_CC;
	}
	name = *p;
	*len = strcspn(name, ", ");
	*p += *len;
	return name;
}

const char *
hdr_targeted(const struct hlist *resp, const struct conf_route *rt,
    char *name, size_t namelen)
{
	const char *p = rt->targeted_cc, *t;
	size_t len;

	struct cc cc;

	while ((t = next_targeted(&p, &len)) != NULL) {
		snprintf(name, namelen, "%.*s", (int)len, t);
		if (hl_find(resp, name) != NULL &&
		    parse_targeted(resp, name, &cc) == 0)
			return name;
	}
	return NULL;
}

int
hdr_is_targeted(const char *name, const struct conf_route *rt)
{
	const char *p = rt->targeted_cc, *t;
	size_t len;

	while ((t = next_targeted(&p, &len)) != NULL)
		if (strlen(name) == len && strncasecmp(name, t, len) == 0)
			return 1;
	return 0;
}

/* The directives that rule resp for rt into cc: its targeted field (in
 * origin_cache_control mode, when it has a valid one), else its
 * Cache-Control. The targeted field's name, or NULL. */
static const char *
directives(const struct hlist *resp, const struct conf_route *rt,
    char *name, size_t namelen, struct cc *cc)
{
	const char *target = rt != NULL && rt->origin_cache_control ?
	    hdr_targeted(resp, rt, name, namelen) : NULL;

	if (target == NULL || parse_targeted(resp, target, cc) == -1) {
		parse_cc(resp, "Cache-Control", cc);
		return NULL;
	}
	return target;
}

/* Is a response that directives cc rule one to share? */
static int
shared_by(const struct hlist *resp, const struct cc *cc, int authorized,
    const char **why)
{
	*why = hl_find(resp, "Set-Cookie") != NULL ? "set-cookie" :
	    cc->no_store ? "no-store" : cc->private_ ? "private" :
	    authorized && !cc->public_ && cc->s_maxage < 0 &&
	    !cc->must_revalidate ? "authorization" : NULL;
	return *why == NULL;
}

int
hdr_shareable(const struct hlist *resp, int authorized,
    const struct conf_route *rt, const char **why)
{
	char tbuf[CONF_FIELDS_MAX];
	struct cc cc;

	(void)directives(resp, rt, tbuf, sizeof(tbuf), &cc);
	return shared_by(resp, &cc, authorized, why);
}

/* The lifetime the origin gives a response (RFC 9111 4.2.1) into
 * *lifetime: none with no-cache, then s-maxage, max-age, or (without a
 * targeted field) Expires less Date. 0, or -1 when it gives none. */
static int
origin_lifetime(const struct hlist *resp, const struct cc *cc,
    int targeted, int64_t now_ms, int64_t *lifetime)
{
	char exp_buf[64];
	const char *expires, *date;
	int64_t t;
	int lines;

	if (cc->no_cache)
		*lifetime = 0;
	else if (cc->s_maxage >= 0)
		*lifetime = secs(cc->s_maxage);
	else if (cc->max_age >= 0)
		*lifetime = secs(cc->max_age);
	else if (targeted || (expires = hdr_join(resp, "Expires", exp_buf,
	    sizeof(exp_buf), &lines)) == NULL)
		return -1;
	else {
		/* An invalid Expires means already expired (RFC 9111 5.3);
		 * so does more than one. */
		date = hl_find(resp, "Date");
		t = lines == 1 ? hdr_parse_date(expires) : -1;
		*lifetime = t < 0 ? 0 : t - (date != NULL &&
		    hdr_parse_date(date) >= 0 ? hdr_parse_date(date) : now_ms);
	}
	return 0;
}

void
hdr_freshness(int status, const struct hlist *resp, int authorized,
    const struct conf_route *rt, int64_t now_ms, struct freshness *f)
{
	char vary_buf[VARY_LIST_MAX], tbuf[CONF_FIELDS_MAX];
	const char *vary, *why, *target;
	int64_t status_ttl = conf_status_ttl(rt, status), lifetime, age;
	int strict, validators, lines;
	struct cc cc;

	vary = hdr_join(resp, "Vary", vary_buf, sizeof(vary_buf), &lines);

	not_storable(f, "");
	if (status >= 500)
		REFUSE(f, "status");
	/* A field meant for Corral overrides Cache-Control and Expires. */
	target = directives(resp, rt, tbuf, sizeof(tbuf), &cc);
	if (!shared_by(resp, &cc, authorized, &why))
		REFUSE(f, why);
	if (vary != NULL && (strchr(vary, '*') != NULL || lines < 0))
		REFUSE(f, "vary");	/* every line counts (RFC 9110 5.3) */

	if (!rt->origin_cache_control) {
		f->ttl_ms = status_ttl >= 0 ? status_ttl :
		    hdr_status_storable(status) ? rt->ttl_ms : 0;
		if (f->ttl_ms == 0)
			REFUSE(f, "status");
		f->swr_ms = rt->swr_ms;
		f->sie_ms = rt->stale_if_error_ms;
		f->storable = 1;
		return;
	}

	strict = cc.no_cache || cc.must_revalidate || cc.s_maxage >= 0;
	if (origin_lifetime(resp, &cc, target != NULL, now_ms, &lifetime) ==
	    -1) {
		/* The origin says nothing: the route's ttl is the default. */
		lifetime = status_ttl >= 0 ? status_ttl :
		    hdr_status_storable(status) ? rt->ttl_ms : 0;
		if (lifetime == 0)
			REFUSE(f, "no-freshness");
	}
	if (status == 206 || status == 304 || status < 200)
		REFUSE(f, "status");
	if ((age = hdr_age(resp)) >= 0)	/* an invalid Age is ignored */
		lifetime -= secs(age);
	f->ttl_ms = lifetime > 0 ? lifetime : 0;
	f->swr_ms = cc.swr >= 0 ? secs(cc.swr) : strict ? 0 : rt->swr_ms;
	f->sie_ms = cc.sie >= 0 ? secs(cc.sie) : strict ? 0 :
	    rt->stale_if_error_ms;
	validators = hl_find(resp, "ETag") != NULL ||
	    hl_find(resp, "Last-Modified") != NULL;
	if (f->ttl_ms == 0 && f->swr_ms == 0 && f->sie_ms == 0 && !validators)
		REFUSE(f, "no-freshness");
	f->storable = 1;
}

int
hdr_stale_if_error(int status, const struct hlist *headers,
    int64_t fresh_until_ms, const struct conf_route *rt)
{
	struct freshness f;
	int64_t now = util_now_ms();

	hdr_freshness(status, headers, 0, rt, now, &f);
	return now < fresh_until_ms + f.sie_ms;
}

static const char *const day_names[] = {
	"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
	"Saturday",
};
static const char *const month_names[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
	"Nov", "Dec",
};

/* n digits at *p, moved past; -1 if any is not a digit. */
static int
digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

/* Does *p start with want? If so, moves past it. */
static int
lit(const char **p, const char *want)
{
	size_t n = strlen(want);

	if (strncmp(*p, want, n) != 0)
		return 0;
	*p += n;
	return 1;
}

/* A day name, short ("Sun") or long ("Sunday"), moved past. */
static int
day_name(const char **p, int full)
{
	for (size_t i = 0; i < ARRAY_LEN(day_names); i++) {
		size_t n = full ? strlen(day_names[i]) : 3;

		if (strncmp(*p, day_names[i], n) == 0) {
			*p += n;
			return 1;
		}
	}
	return 0;
}

static int
month_name(const char **p)
{
	for (size_t i = 0; i < ARRAY_LEN(month_names); i++)
		if (lit(p, month_names[i]))
			return (int)i;
	return -1;
}

/* "HH:MM:SS", moved past. */
static int
time_of_day(const char **p, struct tm *tm)
{
	tm->tm_hour = digits(p, 2);
	if (!lit(p, ":"))
		return 0;
	tm->tm_min = digits(p, 2);
	if (!lit(p, ":"))
		return 0;
	tm->tm_sec = digits(p, 2);
	return tm->tm_hour >= 0 && tm->tm_hour <= 23 && tm->tm_min >= 0 &&
	    tm->tm_min <= 59 && tm->tm_sec >= 0 && tm->tm_sec <= 60;
}

/*
 * RFC 9110 5.6.7, exactly: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT",
 * RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" and asctime "Sun Nov  6
 * 08:49:37 1994". One-digit hours, extra spaces and the like are invalid.
 */
int64_t
hdr_parse_date(const char *s)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	const char *p = s;
	struct tm tm;
	int ok, leap;

	memset(&tm, 0, sizeof(tm));
	if (day_name(&p, 0) && lit(&p, ", ")) {
		/* IMF-fixdate */
		tm.tm_mday = digits(&p, 2);
		ok = lit(&p, " ") && (tm.tm_mon = month_name(&p)) >= 0 &&
		    lit(&p, " ") && (tm.tm_year = digits(&p, 4)) >= 0 &&
		    lit(&p, " ") && time_of_day(&p, &tm) && lit(&p, " GMT");
	} else if ((p = s, day_name(&p, 1)) && lit(&p, ", ")) {
		/* RFC 850: a two-digit year more than 50 years ahead is in
		 * the past (RFC 9110 5.6.7). */
		struct tm now;
		time_t t = time(NULL);

		gmtime_r(&t, &now);
		tm.tm_mday = digits(&p, 2);
		ok = lit(&p, "-") && (tm.tm_mon = month_name(&p)) >= 0 &&
		    lit(&p, "-") && (tm.tm_year = digits(&p, 2)) >= 0 &&
		    lit(&p, " ") && time_of_day(&p, &tm) && lit(&p, " GMT");
		tm.tm_year += (now.tm_year + 1900) / 100 * 100;
		if (tm.tm_year > now.tm_year + 1900 + 50)
			tm.tm_year -= 100;
	} else if ((p = s, day_name(&p, 0)) && lit(&p, " ")) {
		/* asctime: the day is two digits or a space and one */
		ok = (tm.tm_mon = month_name(&p)) >= 0 && lit(&p, " ");
		tm.tm_mday = *p == ' ' ? (p++, digits(&p, 1)) : digits(&p, 2);
		ok = ok && lit(&p, " ") && time_of_day(&p, &tm) &&
		    lit(&p, " ") && (tm.tm_year = digits(&p, 4)) >= 0;
	} else {
		return -1;
	}
	if (!ok || *p != '\0' || tm.tm_mday < 1 || tm.tm_year < 1900)
		return -1;
	leap = (tm.tm_year % 4 == 0 && tm.tm_year % 100 != 0) ||
	    tm.tm_year % 400 == 0;
	if (tm.tm_mday > mdays[tm.tm_mon] || (tm.tm_mon == 1 && !leap &&
	    tm.tm_mday > 28))
		return -1;
	tm.tm_year -= 1900;
	return (int64_t)timegm(&tm) * MS_PER_S;
}

void
hdr_format_date(int64_t ms, char *out, size_t outlen)
{
	time_t t = (time_t)(ms / MS_PER_S);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, outlen, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* The opaque part of an entity tag, for weak comparison. */
static const char *
opaque_tag(const char *tag, size_t *len)
{
	if (strncmp(tag, "W/", 2) == 0)
		tag += 2;
	*len = strlen(tag);
	return tag;
}

int
hdr_not_modified(const struct hlist *req, const struct hlist *stored)
{
	const char *inm = hl_find(req, "If-None-Match");
	const char *ims = hl_find(req, "If-Modified-Since");
	const char *etag, *lm, *p, *tag;
	size_t taglen;
	int64_t since, modified;

	if (inm != NULL) {
		/* "*" matches any stored representation, with an ETag or not. */
		if (strspn(inm, " \t") + 1 == strlen(inm) &&
		    inm[strspn(inm, " \t")] == '*')
			return 1;
		if ((etag = hl_find(stored, "ETag")) == NULL)
			return 0;
		tag = opaque_tag(etag, &taglen);
		for (p = inm; *p != '\0'; ) {
			size_t n;
			while (*p == ' ' || *p == '\t' || *p == ',')
				p++;
			n = strcspn(p, ",");
			while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
				n--;
			if (n == 1 && *p == '*')
				return 1;
			if (n >= 2 && strncmp(p, "W/", 2) == 0) {
				p += 2;
				n -= 2;
			}
			if (n == taglen && n > 0 && strncmp(p, tag, n) == 0)
				return 1;
			p += strcspn(p, ",");
		}
		return 0;
	}
	if (ims == NULL || (lm = hl_find(stored, "Last-Modified")) == NULL)
		return 0;
	since = hdr_parse_date(ims);
	modified = hdr_parse_date(lm);
	return since >= 0 && modified >= 0 && modified <= since;
}

/* May a 304's header of this name replace the stored ones? Not the
 * hop-by-hop ones, nor those that describe the stored body. */
static int
replaces_on_304(const char *name, const char *connection)
{
	static const char *const kept[] = {
		"Content-Length", "Content-Encoding", "Content-Range",
		"Transfer-Encoding",
	};

	if (hdr_is_hop_by_hop(name, connection))
		return 0;
	for (size_t i = 0; i < ARRAY_LEN(kept); i++)
		if (strcasecmp(name, kept[i]) == 0)
			return 0;
	return 1;
}

void
hdr_merge_304(struct hlist *stored, const struct hlist *fresh)
{
	const char *connection = hl_find(fresh, "Connection");
	const struct hfield *h;

	/* First every stored header a 304's one replaces, then those. */
	HL_FOREACH(h, fresh)
		if (replaces_on_304(h->key, connection))
			while (hl_remove(stored, h->key) == 0)
				;
	HL_FOREACH(h, fresh)
		if (replaces_on_304(h->key, connection))
			hl_add(stored, h->key, h->value);
}
