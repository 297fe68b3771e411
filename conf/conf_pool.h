/* SPDX-License-Identifier: MIT */
#ifndef CONF_CONF_POOL_H
#define CONF_CONF_POOL_H

/*
 * Inside conf/: the upstream pools' part of reading a configuration
 * (conf_pool.c). The value types (conf_value.c) hand this file the values
 * of url and balance; the loader (conf.c) the [upstream NAME] headers,
 * and the pools once the whole file is read.
 */

#include <stddef.h>
#include <stdio.h>

#include "conf/conf.h"
#include "conf/conf_show.h"

/* "http://a:8080 weight=3, http://b:8080": every server into p. 0, or -1
 * with the reason in err. */
int	conf_pool_servers(struct conf_pool *p, const char *v, char *err,
	    size_t errlen);
/* "least_outstanding" or "round-robin". */
int	conf_pool_balance(enum conf_balance *b, const char *v, char *err,
	    size_t errlen);
/* A "[upstream NAME]" header: the new pool's index (its keys then go in
 * c->pools[index], which the caller fills with the defaults), or -1 with
 * the reason in err. */
int	conf_pool_begin(struct conf *c, const char *name, size_t len, int line,
	    char *err, size_t errlen);
/* After the whole file: what the pools and the routes' upstream need of
 * each other. Writes "path:line: what" for each error; their number. */
int	conf_pool_check(struct conf *c, const char *path, FILE *errs);

#endif
