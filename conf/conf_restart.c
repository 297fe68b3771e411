/* SPDX-License-Identifier: MIT */
/*
 * The keys a reload cannot change: the listeners are bound, Redis is
 * connected, the logs and near caches opened when a process starts.
 * proxy_life.c keeps their running values until a restart and marks in
 * restart_pending those the file changed; corral -h and corral.conf(5)
 * mark them from this one list.
 */

#include "conf/conf.h"

#include <stdio.h>
#include <string.h>

const char *const conf_restart_keys[CONF_RESTART_KEYS] = {
	"server.listen", "server.admin_listen", "server.workers",
	"server.l1_max_bytes", "server.l2_max_bytes", "server.access_log",
	"server.error_log", "server.log_format", "server.pid_file", "redis.mode",
	"redis.address", "redis.master_name", "redis.db",
	"redis.prefix", "redis.timeout",
};

int
conf_needs_restart(const char *section, const char *name)
{
	size_t sl = strlen(section);

	for (int i = 0; i < CONF_RESTART_KEYS; i++) {
		const char *k = conf_restart_keys[i];

		if (strncmp(k, section, sl) == 0 && k[sl] == '.' &&
		    strcmp(k + sl + 1, name) == 0)
			return 1;
	}
	return 0;
}

int
conf_restart_pending(const struct conf *c, const char *names[])
{
	int n = 0;

	for (int k = 0; k < CONF_RESTART_KEYS; k++)
		if (c->restart_pending & (1u << k))
			names[n++] = conf_restart_keys[k];
	return n;
}

void
conf_restart_pending_text(const struct conf *c, char *out, size_t outlen)
{
	const char *names[CONF_RESTART_KEYS];
	int n = conf_restart_pending(c, names);
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n && len < outlen; i++)
		len += (size_t)snprintf(out + len, outlen - len, "%s%s",
		    i > 0 ? ", " : "", names[i]);
}
