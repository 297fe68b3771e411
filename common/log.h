/* SPDX-License-Identifier: MIT */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

/* Leveled logging to stderr or a file. The level is checked before any
 * formatting happens, so disabled debug lines cost one comparison. */

#include <stddef.h>

enum log_level {
	LOGL_ERROR = 0,
	LOGL_WARN,
	LOGL_INFO,
	LOGL_DEBUG
};

/* How every line is written (log_format): plain text, or one JSON object
 * a line for log shippers. */
enum log_format {
	LOG_FORMAT_TEXT = 0,
	LOG_FORMAT_JSON
};

#define LOG_LINE_MAX	4096	/* longer messages are cut */

extern enum log_level log_current_level;
extern enum log_format log_current_format;

void	log_set_level(enum log_level level);
int	log_parse_level(const char *name, enum log_level *out);
const char *log_level_name(enum log_level level);
void	log_set_format(enum log_format format);
/* "text" or "json". 0 or -1. */
int	log_parse_format(const char *name, enum log_format *out);

/* Sends the log to path (appending, created 0644) or, for "-", to stderr,
 * where it goes until this is called. 0, or -1 with err filled in. */
int	log_open(const char *path, char *err, size_t errlen);
/* Opens the path again (after logrotate moved the file). On failure the
 * log keeps its old file and -1 is returned, with err filled in. */
int	log_reopen(char *err, size_t errlen);
/* Back to stderr. */
void	log_close(void);
/* Opens path for appending, created 0644, as every log file is opened.
 * The fd, or -1 with err naming what failed ("access log ...: why"). */
int	log_file_open(const char *path, const char *what, char *err,
	    size_t errlen);

void	log_msg(enum log_level level, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

#define log_at(lvl, ...) do {						\
	if ((lvl) <= log_current_level)					\
		log_msg((lvl), __VA_ARGS__);				\
} while (0)
#define log_error(...)	log_at(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...)	log_at(LOGL_WARN, __VA_ARGS__)
#define log_info(...)	log_at(LOGL_INFO, __VA_ARGS__)
#define log_debug(...)	log_at(LOGL_DEBUG, __VA_ARGS__)
/* A machine's step, at debug level: "refresh 42 LOCK -> FETCH". */
#define log_step(machine, id, from, to)					\
	log_debug("%s %llu %s -> %s", (machine), (unsigned long long)(id), \
	    (from), (to))

#endif
