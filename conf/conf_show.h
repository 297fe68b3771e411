/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_SHOW_H
#define CONF_CONF_SHOW_H

/*
 * Inside conf/: the file's text as an error message quotes it
 * (conf_show.c), for conf.c and the parts of reading that live beside it.
 */

#include <stddef.h>

#define CONF_SHOW_MAX	60	/* characters of the file quoted */
#define CONF_SHOW_BUF	(CONF_SHOW_MAX + 4)

/* Copies at most len bytes of s for a message: unprintable bytes become
 * '?', and text past CONF_SHOW_MAX is cut and ends in "...". */
const char *conf_show(const char *s, size_t len, char out[CONF_SHOW_BUF]);

#endif
