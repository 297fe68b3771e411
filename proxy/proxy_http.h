/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_HTTP_H
#define PROXY_PROXY_HTTP_H

/* The public, admin and peer listeners; their connections are
 * proxy_conn.c's. */

#include <stddef.h>

struct conf;
struct listen_socks;
struct proxy;

/* Makes the listening sockets of conf's listen and admin_listen ("listen
 * 127.0.0.1:8080: Address already in use" in err when one cannot be had),
 * once per instance: its workers share them. 0 or -1. */
int	http_bind(const struct conf *conf, struct listen_socks *ls, char *err,
	    size_t errlen);
void	http_unbind(struct listen_socks *ls);
int	http_listen(struct proxy *px, char *err, size_t errlen);
/* A stop: the public listener closes; what is open goes on. */
void	http_stop_accepting(struct proxy *px);
/* Closes every listener and connection. */
void	http_close(struct proxy *px);
/* SIGHUP: the tls listeners' certificate and key read again (open
 * connections keep theirs); on an error the running ones go on. */
void	http_reload(struct proxy *px, const struct conf *c);

#endif
