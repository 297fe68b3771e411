/* SPDX-License-Identifier: MIT */
/*
 * The file's text as an error message quotes it (conf_show.h).
 */

#include "conf/conf_show.h"

#include <ctype.h>
#include <string.h>

const char *
conf_show(const char *s, size_t len, char out[CONF_SHOW_BUF])
{
	size_t i;

	for (i = 0; i < len && s[i] != '\0' && i < CONF_SHOW_MAX; i++)
		out[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (i < len && s[i] != '\0') {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
	return out;
}
