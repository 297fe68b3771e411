#ifndef COMMON_LOG_H
#define COMMON_LOG_H

/* Leveled logging to stderr or a file. The level is checked before any
 * formatting happens, so disabled debug lines cost one comparison. */

enum log_level {
	LOGL_ERROR = 0,
	LOGL_WARN,
	LOGL_INFO,
	LOGL_DEBUG
};

extern enum log_level log_current_level;

void	log_set_level(enum log_level level);
int	log_parse_level(const char *name, enum log_level *out);
const char *log_level_name(enum log_level level);
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

#endif
