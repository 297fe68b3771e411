/* SPDX-License-Identifier: MIT */
/*
 * Small helpers every module may call (util.h): clocks, random tokens,
 * parsing durations and sizes, JSON escapes and a string hash. Calls
 * nothing of Corral.
 */

#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

int64_t
util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
util_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timeval
util_timeval(int64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	return tv;
}

static int
fill_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
util_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
util_random_token(char out[UTIL_TOKEN_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[UTIL_TOKEN_BYTES];

	if (fill_random(raw, sizeof(raw)) == -1)
		return -1;
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[i * 2] = hex[raw[i] >> 4];
		out[i * 2 + 1] = hex[raw[i] & 0xf];
	}
	out[UTIL_TOKEN_HEX] = '\0';
	return 0;
}

double
util_random_unit(void)
{
	uint64_t r = 0;

	if (fill_random(&r, sizeof(r)) == -1)
		r = (uint64_t)util_mono_us() * 6364136223846793005ULL;
	/* 53 random bits, shifted into (0, 1]. */
	return ((double)(r >> 11) + 1.0) / 9007199254740992.0;
}

/* Parses a non-negative decimal prefix; *end is left after the digits. */
static int
parse_uint(const char *s, int64_t *out, const char **end)
{
	int64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	*end = p;
	return 0;
}

static int
scale(int64_t v, int64_t mult, int64_t *out)
{
	if (v > INT64_MAX / mult)
		return -1;
	*out = v * mult;
	return 0;
}

int
util_parse_duration(const char *s, int64_t *ms)
{
	static const struct { const char *unit; int64_t mult; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
	};
	const char *end;
	int64_t v;

	if (parse_uint(s, &v, &end) == -1)
		return -1;
	if (*end == '\0')
		return v == 0 ? (*ms = 0, 0) : -1;
	for (size_t i = 0; i < ARRAY_LEN(units); i++)
		if (strcmp(end, units[i].unit) == 0)
			return scale(v, units[i].mult, ms);
	return -1;
}

int
util_parse_size(const char *s, int64_t *bytes)
{
	const char *end;
	int64_t v;

	if (parse_uint(s, &v, &end) == -1)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		*bytes = v;
		return 0;
	case 'k':
		return end[1] == '\0' ? scale(v, 1024, bytes) : -1;
	case 'm':
		return end[1] == '\0' ? scale(v, 1024 * 1024, bytes) : -1;
	case 'g':
		return end[1] == '\0' ? scale(v, 1024 * 1024 * 1024, bytes) : -1;
	default:
		return -1;
	}
}

int
util_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };

	for (size_t i = 0; i < ARRAY_LEN(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return (*out = 1, 0);
		if (strcasecmp(s, no[i]) == 0)
			return (*out = 0, 0);
	}
	return -1;
}

int
util_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
	const char *colon, *hs = s;
	size_t hl;
	int64_t p;
	const char *end;

	if (*s == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			return -1;
		hs = s + 1;
		hl = (size_t)(close - hs);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return -1;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen)
		return -1;
	if (parse_uint(colon + 1, &p, &end) == -1 || *end != '\0' ||
	    p < 1 || p > 65535)
		return -1;
	memcpy(host, hs, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

void
util_format_duration(int64_t ms, char *out, size_t outlen)
{
	if (ms != 0 && ms % 3600000 == 0)
		snprintf(out, outlen, "%" PRId64 "h", ms / 3600000);
	else if (ms != 0 && ms % 60000 == 0)
		snprintf(out, outlen, "%" PRId64 "m", ms / 60000);
	else if (ms != 0 && ms % 1000 == 0)
		snprintf(out, outlen, "%" PRId64 "s", ms / 1000);
	else
		snprintf(out, outlen, "%" PRId64 "ms", ms);
}

uint64_t
util_hash(const char *s)
{
	return util_hash_more(UTIL_HASH_INIT, s, strlen(s));
}

uint64_t
util_hash_more(uint64_t h, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x00000100000001b3ULL;
	return h;
}

int
util_list_has_token(const char *hv, const char *token)
{
	size_t tl = strlen(token);
	const char *p = hv;

	while (p != NULL && *p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *start = p;
		while (*p != '\0' && *p != ',' && *p != '=' && *p != ' ' && *p != '\t')
			p++;
		if ((size_t)(p - start) == tl && strncasecmp(start, token, tl) == 0)
			return 1;
		p = strchr(p, ',');
	}
	return 0;
}

size_t
util_json_char(unsigned char ch, char out[UTIL_JSON_CHAR_MAX])
{
	switch (ch) {
	case '"':
		return (size_t)snprintf(out, UTIL_JSON_CHAR_MAX, "\\\"");
	case '\\':
		return (size_t)snprintf(out, UTIL_JSON_CHAR_MAX, "\\\\");
	case '\n':
		return (size_t)snprintf(out, UTIL_JSON_CHAR_MAX, "\\n");
	case '\t':
		return (size_t)snprintf(out, UTIL_JSON_CHAR_MAX, "\\t");
	default:
		if (ch < 0x20 || ch >= 0x7f)
			return (size_t)snprintf(out, UTIL_JSON_CHAR_MAX,
			    "\\u%04x", ch);
		out[0] = (char)ch;
		out[1] = '\0';
		return 1;
	}
}

int
util_fd_share(int max, int share)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / (rlim_t)share < (rlim_t)max)
		return (int)(rl.rlim_cur / (rlim_t)share);
	return max;
}
