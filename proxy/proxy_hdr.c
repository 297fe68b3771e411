#include "proxy/proxy_hdr.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include <event2/http.h>

#include "common/util.h"
#include "conf/conf.h"

static const char *const hop_by_hop[] = {
	"Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Proxy-Connection", "TE", "Trailer",
	"Transfer-Encoding", "Upgrade",
};

/* Statuses stored under the route's TTL (heuristically cacheable ones,
 * RFC 9110 section 15.1, less 404/405/410/414/501). */
static const int storable_status[] = { 200, 203, 204, 300, 301, 308 };

int
hdr_is_hop_by_hop(const char *name, const char *connection)
{
	for (size_t i = 0; i < ARRAY_LEN(hop_by_hop); i++)
		if (strcasecmp(name, hop_by_hop[i]) == 0)
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
hdr_copy(const struct evkeyvalq *src, struct evkeyvalq *dst, int flags)
{
	const char *connection = evhttp_find_header(src, "Connection");
	const struct evkeyval *h;

	TAILQ_FOREACH(h, src, next) {
		if (hdr_is_hop_by_hop(h->key, connection) || dropped(h->key, flags))
			continue;
		evhttp_add_header(dst, h->key, h->value);
	}
}

int
hdr_status_storable(int status)
{
	for (size_t i = 0; i < ARRAY_LEN(storable_status); i++)
		if (status == storable_status[i])
			return 1;
	return 0;
}

int
hdr_shareable(const struct evkeyvalq *headers)
{
	const char *why;

	/* Any status may be shared with the requests that waited for it;
	 * per-user or no-store responses go to their own requester only. */
	return hdr_storable(headers, &why);
}

/* The Cache-Control directives a shared cache acts on. */
struct cc {
	int	no_store, no_cache, private_, public_, must_revalidate;
	int64_t	s_maxage, max_age, swr, sie;	/* seconds; -1: absent */
};

/* Parses "name" or "name=value" directives of every Cache-Control line. */
static void
parse_cc(const struct evkeyvalq *headers, struct cc *cc)
{
	const struct evkeyval *h;

	memset(cc, 0, sizeof(*cc));
	cc->s_maxage = cc->max_age = cc->swr = cc->sie = -1;
	TAILQ_FOREACH(h, headers, next) {
		const char *p = h->value;

		if (strcasecmp(h->key, "Cache-Control") != 0)
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

int
hdr_storable(const struct evkeyvalq *headers, const char **why)
{
	struct cc cc;

	if (evhttp_find_header(headers, "Set-Cookie") != NULL) {
		*why = "set-cookie";
		return 0;
	}
	parse_cc(headers, &cc);
	if (cc.no_store) {
		*why = "no-store";
		return 0;
	}
	if (cc.private_) {
		*why = "private";
		return 0;
	}
	return 1;
}

#define MS_PER_S	INT64_C(1000)
#define SECONDS_MAX	(INT64_C(1) << 31)	/* delta-seconds cap, RFC 9111 1.2.2 */

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

void
hdr_freshness(int status, const struct evkeyvalq *resp, int authorized,
    const struct conf_route *rt, int64_t now_ms, struct freshness *f)
{
	const char *vary = evhttp_find_header(resp, "Vary");
	const char *expires, *date, *age, *why;
	int64_t status_ttl = conf_status_ttl(rt, status), lifetime, t;
	int strict, validators;
	struct cc cc;

	not_storable(f, "");
	if (status >= 500)
		REFUSE(f, "status");
	if (!hdr_storable(resp, &why))
		REFUSE(f, why);
	if (vary != NULL && strchr(vary, '*') != NULL)
		REFUSE(f, "vary");
	parse_cc(resp, &cc);
	if (authorized && !cc.public_ && cc.s_maxage < 0 && !cc.must_revalidate)
		REFUSE(f, "authorization");

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
	expires = evhttp_find_header(resp, "Expires");
	if (cc.no_cache)
		lifetime = 0;
	else if (cc.s_maxage >= 0)
		lifetime = secs(cc.s_maxage);
	else if (cc.max_age >= 0)
		lifetime = secs(cc.max_age);
	else if (expires != NULL) {
		/* An invalid Expires means already expired (RFC 9111 5.3). */
		date = evhttp_find_header(resp, "Date");
		t = hdr_parse_date(expires);
		lifetime = t < 0 ? 0 : t - (date != NULL &&
		    hdr_parse_date(date) >= 0 ? hdr_parse_date(date) : now_ms);
	} else {
		/* The origin says nothing: the route's ttl is the default. */
		lifetime = status_ttl >= 0 ? status_ttl :
		    hdr_status_storable(status) ? rt->ttl_ms : 0;
		if (lifetime == 0)
			REFUSE(f, "no freshness");
	}
	if (status == 206 || status == 304 || status < 200)
		REFUSE(f, "status");
	if ((age = evhttp_find_header(resp, "Age")) != NULL &&
	    isdigit((unsigned char)*age))
		lifetime -= secs(strtoll(age, NULL, 10));
	f->ttl_ms = lifetime > 0 ? lifetime : 0;
	f->swr_ms = cc.swr >= 0 ? secs(cc.swr) : strict ? 0 : rt->swr_ms;
	f->sie_ms = cc.sie >= 0 ? secs(cc.sie) : strict ? 0 :
	    rt->stale_if_error_ms;
	validators = evhttp_find_header(resp, "ETag") != NULL ||
	    evhttp_find_header(resp, "Last-Modified") != NULL;
	if (f->ttl_ms == 0 && f->swr_ms == 0 && f->sie_ms == 0 && !validators)
		REFUSE(f, "no freshness");
	f->storable = 1;
}

int64_t
hdr_parse_date(const char *s)
{
	static const char *const formats[] = {
		"%a, %d %b %Y %H:%M:%S GMT",	/* IMF-fixdate */
		"%A, %d-%b-%y %H:%M:%S GMT",	/* RFC 850 */
		"%a %b %e %H:%M:%S %Y",		/* asctime */
	};
	struct tm tm;
	const char *end;

	for (size_t i = 0; i < ARRAY_LEN(formats); i++) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, formats[i], &tm);
		if (end != NULL && *end == '\0')
			return (int64_t)timegm(&tm) * MS_PER_S;
	}
	return -1;
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
hdr_not_modified(const struct evkeyvalq *req, const struct evkeyvalq *stored)
{
	const char *inm = evhttp_find_header(req, "If-None-Match");
	const char *ims = evhttp_find_header(req, "If-Modified-Since");
	const char *etag, *lm, *p, *tag;
	size_t taglen;
	int64_t since, modified;

	if (inm != NULL) {
		/* "*" matches any stored representation, with an ETag or not. */
		if (strspn(inm, " \t") + 1 == strlen(inm) &&
		    inm[strspn(inm, " \t")] == '*')
			return 1;
		if ((etag = evhttp_find_header(stored, "ETag")) == NULL)
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
	if (ims == NULL || (lm = evhttp_find_header(stored, "Last-Modified")) == NULL)
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
hdr_merge_304(struct evkeyvalq *stored, const struct evkeyvalq *fresh)
{
	const char *connection = evhttp_find_header(fresh, "Connection");
	const struct evkeyval *h;

	/* First every stored header a 304's one replaces, then those. */
	TAILQ_FOREACH(h, fresh, next)
		if (replaces_on_304(h->key, connection))
			while (evhttp_remove_header(stored, h->key) == 0)
				;
	TAILQ_FOREACH(h, fresh, next)
		if (replaces_on_304(h->key, connection))
			evhttp_add_header(stored, h->key, h->value);
}
