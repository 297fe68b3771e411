/* SPDX-License-Identifier: MIT */
#ifndef COMMON_UTIL_H
#define COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

/* A refresh-lock token: 128 bits from the OS's random source, as hex. */
#define UTIL_TOKEN_BYTES	16
#define UTIL_TOKEN_HEX		(UTIL_TOKEN_BYTES * 2)

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))

int64_t	util_now_ms(void);		/* wall clock, ms since the epoch */
int64_t	util_mono_us(void);		/* monotonic clock, microseconds */
struct timeval util_timeval(int64_t ms);	/* ms (>= 0) as a timeval */

/* Fills out with UTIL_TOKEN_HEX hex digits and a NUL. 0 or -1. */
int	util_random_token(char out[UTIL_TOKEN_HEX + 1]);
/* A uniform random double in (0, 1]. */
double	util_random_unit(void);

/* "250ms", "10s", "5m", "1h" or "0". 0 or -1. */
int	util_parse_duration(const char *s, int64_t *ms);
/* "512", "64k", "10m", "1g" (powers of 1024). 0 or -1. */
int	util_parse_size(const char *s, int64_t *bytes);
/* "on", "off", "yes", "no", "true", "false", "1", "0". 0 or -1. */
int	util_parse_bool(const char *s, int *out);
/* "host:port" or "[v6]:port". 0 or -1. */
int	util_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

/* Writes ms as the shortest exact "Nh", "Nm", "Ns" or "Nms". */
void	util_format_duration(int64_t ms, char *out, size_t outlen);

/* The JSON form of one byte inside a string: itself, or an escape ("\\n",
 * "\\u001f"; bytes outside printable ASCII as "\\u00HH", so that the
 * line stays valid UTF-8). Writes it and a NUL to out; returns its length. */
#define UTIL_JSON_CHAR_MAX	7
size_t	util_json_char(unsigned char ch, char out[UTIL_JSON_CHAR_MAX]);

/* Case-insensitive: does the comma-separated list hv contain token? */
int	util_list_has_token(const char *hv, const char *token);
/* FNV-1a of a string: 64 bits for hash tables, not for secrets. */
uint64_t util_hash(const char *s);
/* The value of one hex digit (either case), or -1 if c is none. */
int	util_hex_value(int c);
/* The FNV-1a state after len more bytes at s, from h: UTIL_HASH_INIT, or
 * the state reached over what precedes them. */
#define UTIL_HASH_INIT	0xcbf29ce484222325ULL
uint64_t util_hash_more(uint64_t h, const char *s, size_t len);
/* max, or less so as to be at most 1/share of the process's descriptors
 * (RLIMIT_NOFILE): a bound for one use of them among others. */
int	util_fd_share(int max, int share);

#endif
