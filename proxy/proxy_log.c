/* SPDX-License-Identifier: MIT */
/*
 * The access log (proxy_log.h): opening and reopening its file, and the
 * one line of each finished request, as text or JSON. Calls common/ only.
 */

#include "proxy/proxy_log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/log.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"

#define ACCESS_LOG_MAGIC	0x41434c47u	/* "ACLG" */
#define TIME_FIELD_MAX		40

struct access_log {
	uint32_t	 magic;
	int		 fd;
	char		 path[CONF_PATH_MAX];	/* "" for stdout */
	int		 failing;	/* the last write failed (warned once) */
};

int
access_log_open(const char *path, struct access_log **out, char *err,
    size_t errlen)
{
	struct access_log *al;

	*out = NULL;
	if (strcmp(path, "off") == 0)
		return 0;
	if (strlen(path) >= sizeof(al->path)) {
		snprintf(err, errlen, "access log path too long: %s", path);
		return -1;
	}
	if ((al = calloc(1, sizeof(*al))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	al->magic = ACCESS_LOG_MAGIC;
	if (strcmp(path, "-") == 0) {
		al->fd = STDOUT_FILENO;
	} else {
		if ((al->fd = log_file_open(path, "access log", err, errlen)) == -1) {
			free(al);
			return -1;
		}
		snprintf(al->path, sizeof(al->path), "%s", path);
	}
	*out = al;
	return 0;
}

int
access_log_reopen(struct access_log *al, char *err, size_t errlen)
{
	int fd;

	if (al == NULL)
		return 0;
	assert(al->magic == ACCESS_LOG_MAGIC);
	if (al->path[0] == '\0')
		return 0;
	if ((fd = log_file_open(al->path, "access log", err, errlen)) == -1)
		return -1;
	close(al->fd);
	al->fd = fd;
	return 0;
}

void
access_log_close(struct access_log **alp)
{
	struct access_log *al = *alp;

	if (al == NULL)
		return;
	if (al->path[0] != '\0')
		close(al->fd);
	al->magic = 0;
	free(al);
	*alp = NULL;
}

/* s as a quoted field, or "-" when s is NULL or empty. */
static void
add_escaped(struct evbuffer *out, const char *s, int quoted)
{
	if (s == NULL || *s == '\0') {
		evbuffer_add(out, quoted ? "\"-\"" : "-", quoted ? 3 : 1);
		return;
	}
	if (quoted)
		evbuffer_add(out, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x7f ||
		    (!quoted && ch == ' '))
			evbuffer_add_printf(out, "\\x%02X", ch);
		else
			evbuffer_add(out, s, 1);
	}
	if (quoted)
		evbuffer_add(out, "\"", 1);
}

/* A time field, " name=ms" or ,"name":ms; "-" or null when ms < 0. */
static void
add_ms(struct evbuffer *out, const char *name, int64_t ms, int json)
{
	evbuffer_add_printf(out, json ? ",\"%s\":" : " %s=", name);
	if (ms < 0)
		evbuffer_add_printf(out, "%s", json ? "null" : "-");
	else
		evbuffer_add_printf(out, "%" PRId64, ms);
}

static void
format_text(const struct access_record *r, const struct tm *tm,
    struct evbuffer *out)
{
	char when[TIME_FIELD_MAX];

	if (strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S %z", tm) == 0)
		snprintf(when, sizeof(when), "-");
	add_escaped(out, r->client, 0);
	evbuffer_add_printf(out, " - - [%s] \"%s ", when, r->method);
	add_escaped(out, r->uri, 0);
	evbuffer_add_printf(out, " HTTP/%d.%d\" %d %" PRIu64 " ",
	    r->proto_major, r->proto_minor, r->status, r->bytes);
	add_escaped(out, r->referer, 1);
	evbuffer_add(out, " ", 1);
	add_escaped(out, r->user_agent, 1);
	evbuffer_add_printf(out, " cache=%s route=", r->cache);
	add_escaped(out, r->route, 0);
	add_ms(out, "upstream_ms", r->upstream_ms, 0);
	add_ms(out, "lock_wait_ms", r->lock_wait_ms, 0);
	add_ms(out, "total_ms", r->total_ms, 0);
	if (r->key != NULL)
		evbuffer_add_printf(out, " key=%s", r->key);
}

/* ,"name":"s" or ,"name":null when s is NULL. */
static void
json_field(struct evbuffer *out, const char *name, const char *s)
{
	char esc[UTIL_JSON_CHAR_MAX];
	size_t n;

	evbuffer_add_printf(out, ",\"%s\":", name);
	if (s == NULL) {
		evbuffer_add(out, "null", 4);
		return;
	}
	evbuffer_add(out, "\"", 1);
	for (; *s != '\0'; s++) {
		n = util_json_char((unsigned char)*s, esc);
		evbuffer_add(out, esc, n);
	}
	evbuffer_add(out, "\"", 1);
}

static void
format_json(const struct access_record *r, const struct tm *tm,
    struct evbuffer *out)
{
	char when[TIME_FIELD_MAX], proto[TIME_FIELD_MAX];

	if (strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", tm) == 0)
		snprintf(when, sizeof(when), "-");
	snprintf(proto, sizeof(proto), "HTTP/%d.%d", r->proto_major,
	    r->proto_minor);
	evbuffer_add_printf(out, "{\"time\":\"%s\"", when);	/* no escapes */
	json_field(out, "client", r->client);
	json_field(out, "method", r->method);
	json_field(out, "uri", r->uri);
	json_field(out, "proto", proto);
	evbuffer_add_printf(out, ",\"status\":%d,\"bytes\":%" PRIu64,
	    r->status, r->bytes);
	json_field(out, "referer", r->referer);
	json_field(out, "user_agent", r->user_agent);
	json_field(out, "cache", r->cache);
	json_field(out, "cache_status", r->cache_status);
	json_field(out, "route", r->route);
	add_ms(out, "upstream_ms", r->upstream_ms, 1);
	add_ms(out, "lock_wait_ms", r->lock_wait_ms, 1);
	add_ms(out, "total_ms", r->total_ms, 1);
	json_field(out, "key", r->key);
	evbuffer_add(out, "}", 1);
}

void
access_log_format(const struct access_record *r, time_t now,
    struct evbuffer *out)
{
	struct tm tm;

	localtime_r(&now, &tm);
	if (log_current_format == LOG_FORMAT_JSON)
		format_json(r, &tm, out);
	else
		format_text(r, &tm, out);
	evbuffer_add(out, "\n", 1);
}

void
access_log_write(struct proxy *px, const struct access_record *r)
{
	struct access_log *al = px->access_log;
	struct evbuffer *line;
	const char *p;
	size_t len;
	ssize_t n;

	if (al == NULL && LOGL_DEBUG > log_current_level)
		return;
	if ((line = evbuffer_new()) == NULL)
		return;
	access_log_format(r, time(NULL), line);
	len = evbuffer_get_length(line);
	if ((p = (const char *)evbuffer_pullup(line, -1)) == NULL)
		goto out;
	if (al == NULL) {
		log_debug("access: %.*s", (int)(len - 1), p);
		goto out;
	}
	assert(al->magic == ACCESS_LOG_MAGIC);
	/* One write per line: an O_APPEND write lands whole. */
	while (len > 0) {
		if ((n = write(al->fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			if (!al->failing)
				log_warn("access log: %s (lines are lost until "
				    "a write succeeds)", strerror(errno));
			al->failing = 1;
			goto out;
		}
		p += n;
		len -= (size_t)n;
	}
	al->failing = 0;
out:
	evbuffer_free(line);
}
