/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging (log.h), as text or JSON lines, to stderr or a file.
 * Calls common/util.c only.
 */

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#define LOG_PATH_MAX	1024
#define LOG_FILE_MODE	0644

enum log_level log_current_level = LOGL_INFO;
enum log_format log_current_format = LOG_FORMAT_TEXT;

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const char *const format_names[] = { "text", "json" };

/* Where lines go: stderr, or a file opened by log_open(). */
static struct {
	int	 fd;
	char	 path[LOG_PATH_MAX];	/* "" for stderr */
} out = { STDERR_FILENO, "" };

void
log_set_level(enum log_level level)
{
	log_current_level = level;
}

int
log_parse_level(const char *name, enum log_level *out_level)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(name, level_names[i]) == 0) {
			*out_level = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

const char *
log_level_name(enum log_level level)
{
	return level_names[level];
}

void
log_set_format(enum log_format format)
{
	log_current_format = format;
}

int
log_parse_format(const char *name, enum log_format *out_format)
{
	for (size_t i = 0; i < ARRAY_LEN(format_names); i++) {
		if (strcmp(name, format_names[i]) == 0) {
			*out_format = (enum log_format)i;
			return 0;
		}
	}
	return -1;
}

int
log_file_open(const char *path, const char *what, char *err, size_t errlen)
{
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, LOG_FILE_MODE);
	if (fd == -1)
		snprintf(err, errlen, "cannot open %s %s: %s", what, path,
		    strerror(errno));
	return fd;
}

int
log_open(const char *path, char *err, size_t errlen)
{
	int fd;

	if (strcmp(path, "-") == 0) {
		log_close();
		return 0;
	}
	if (strlen(path) >= sizeof(out.path)) {
		snprintf(err, errlen, "log path too long: %s", path);
		return -1;
	}
	if ((fd = log_file_open(path, "error log", err, errlen)) == -1)
		return -1;
	log_close();
	out.fd = fd;
	snprintf(out.path, sizeof(out.path), "%s", path);
	return 0;
}

int
log_reopen(char *err, size_t errlen)
{
	int fd;

	if (out.path[0] == '\0')
		return 0;
	if ((fd = log_file_open(out.path, "error log", err, errlen)) == -1)
		return -1;
	close(out.fd);
	out.fd = fd;
	return 0;
}

void
log_close(void)
{
	if (out.fd != STDERR_FILENO)
		close(out.fd);
	out.fd = STDERR_FILENO;
	out.path[0] = '\0';
}

/*
 * Appends msg to line[*len..max), control bytes as \xHH: a request target
 * or header quoted in a message cannot forge or break a line.
 */
static void
add_escaped(char *line, size_t *len, size_t max, const char *msg)
{
	static const char hex[] = "0123456789abcdef";

	for (; *msg != '\0'; msg++) {
		unsigned char c = (unsigned char)*msg;

		if (c >= 0x20 && c != 0x7f) {
			if (*len + 1 > max)
				return;
			line[(*len)++] = (char)c;
		} else {
			if (*len + 4 > max)
				return;
			line[(*len)++] = '\\';
			line[(*len)++] = 'x';
			line[(*len)++] = hex[c >> 4];
			line[(*len)++] = hex[c & 0xf];
		}
	}
}

/* Appends msg to line[*len] as a JSON string body, stopping where the
 * next escape would not fit before end (the room kept for the line's
 * close). */
static void
add_json(char *line, size_t *len, size_t end, const char *msg)
{
	char esc[UTIL_JSON_CHAR_MAX];
	size_t n;

	for (; *msg != '\0'; msg++) {
		n = util_json_char((unsigned char)*msg, esc);
		if (*len + n > end)
			break;
		memcpy(line + *len, esc, n);
		*len += n;
	}
}

/* One write(2) per line, so lines from one process never interleave. */
void
log_msg(enum log_level level, const char *fmt, ...)
{
	static const char json_close[] = "\"}";
	char line[LOG_LINE_MAX], msg[LOG_LINE_MAX];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	size_t len;
	int n, json = log_current_format == LOG_FORMAT_JSON;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	len = json ? (size_t)snprintf(line, sizeof(line), "{\"time\":\"") : 0;
	len += strftime(line + len, sizeof(line) - len, "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line + len, sizeof(line) - len, json ?
	    ".%03ldZ\",\"level\":\"%s\",\"msg\":\"" : ".%03ldZ %-5s ",
	    ts.tv_nsec / 1000000L, level_names[level]);
	len += (size_t)n;
	va_start(ap, fmt);
	if (json) {
		vsnprintf(msg, sizeof(msg), fmt, ap);
		/* Room for the close, the newline and a NUL. */
		add_json(line, &len, sizeof(line) - sizeof(json_close) - 1, msg);
		memcpy(line + len, json_close, sizeof(json_close) - 1);
		len += sizeof(json_close) - 1;
	} else {
		n = vsnprintf(msg, sizeof(msg), fmt, ap);
		if (n > 0)
			add_escaped(line, &len, sizeof(line) - 1, msg);
	}
	va_end(ap);
	line[len++] = '\n';	/* len <= sizeof(line) - 1 here */
	while (write(out.fd, line, len) == -1 && errno == EINTR)
		;
}
