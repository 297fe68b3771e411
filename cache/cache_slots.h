/* SPDX-License-Identifier: MIT */
#ifndef CACHE_CACHE_SLOTS_H
#define CACHE_CACHE_SLOTS_H

/*
 * The cluster's slot map as CLUSTER SLOTS says it: ranges of hash slots,
 * each with its primary and the first replica named. Pure; private to
 * cache/ (cache_route.c applies it).
 */

#include <hiredis/hiredis.h>

#include "cache/cache_key.h"
#include "conf/conf.h"

#define SLOTS_COUNT		CACHE_KEY_SLOTS

struct slot_node {
	char		 host[CONF_HOST_MAX];
	int		 port;		/* 0: none */
};

struct slot_range {
	int		 lo, hi;	/* slots lo..hi */
	struct slot_node primary;
	struct slot_node replica;	/* port 0: none named */
};

struct slot_map {
	int		 nranges;
	struct slot_range *ranges;	/* owned: slots_free() */
};

/*
 * Reads a CLUSTER SLOTS reply from the node at asked (a host "" or "?"
 * in it names that node) into map: 0, or -1 (map empty) when it is not an
 * array of ranges [lo, hi, primary, replica...] whose slots are in
 * 0..16383 and whose primary is a host and a port (or there is no
 * memory). slots_free() frees what it read, either way.
 */
int	slots_read(const redisReply *reply, const char *asked,
	    struct slot_map *map);
void	slots_free(struct slot_map *map);

#endif
