#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum log_level log_current_level = LOGL_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void
log_set_level(enum log_level level)
{
	log_current_level = level;
}

int
log_parse_level(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
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
log_msg(enum log_level level, const char *fmt, ...)
{
	char stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);

	flockfile(stderr);
	fprintf(stderr, "%s.%03ldZ %-5s ", stamp, ts.tv_nsec / 1000000L,
	    level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}
