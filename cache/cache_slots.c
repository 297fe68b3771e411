/* SPDX-License-Identifier: MIT */
/*
 * A CLUSTER SLOTS reply read into a slot map (cache_slots.h). Pure: it
 * reads the reply and writes the map, and touches no connection, node or
 * table; cache_route.c applies the map.
 */

#include "cache/cache_slots.h"

#include <stdlib.h>
#include <string.h>

#define PORT_MAX		65535

static int
reply_int(const redisReply *r, long long *out)
{
	if (r->type == REDIS_REPLY_INTEGER) {
		*out = r->integer;
		return 0;
	}
	return -1;
}

/* A node of a CLUSTER SLOTS range: [host, port, id, ...]. Host "" or
 * "?" means the node asked. 0 or -1. */
static int
node_addr(const redisReply *m, const char *asked, struct slot_node *out)
{
	const char *host;
	long long p;

	if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
	    m->element[0]->type != REDIS_REPLY_STRING ||
	    reply_int(m->element[1], &p) == -1 || p <= 0 || p > PORT_MAX)
		return -1;
	host = m->element[0]->str;
	if (*host == '\0' || strcmp(host, "?") == 0)
		host = asked;
	if (strlen(host) >= sizeof(out->host))
		return -1;
	memcpy(out->host, host, strlen(host) + 1);
	out->port = (int)p;
	return 0;
}

/* One range [lo, hi, primary, replica...] into r: 0, or -1 when it is
 * not one with a usable primary. */
static int
read_range(const redisReply *e, const char *asked, struct slot_range *r)
{
	long long lo, hi;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    reply_int(e->element[0], &lo) == -1 ||
	    reply_int(e->element[1], &hi) == -1 ||
	    lo < 0 || hi >= SLOTS_COUNT || lo > hi ||
	    node_addr(e->element[2], asked, &r->primary) == -1)
		return -1;
	r->lo = (int)lo;
	r->hi = (int)hi;
	if (e->elements < 4 || node_addr(e->element[3], asked,
	    &r->replica) == -1)
		memset(&r->replica, 0, sizeof(r->replica));
	return 0;
}

int
slots_read(const redisReply *reply, const char *asked, struct slot_map *map)
{
	map->nranges = 0;
	map->ranges = NULL;
	/* A range holds one slot at least. */
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0 ||
	    reply->elements > SLOTS_COUNT ||
	    (map->ranges = calloc(reply->elements, sizeof(*map->ranges))) ==
	    NULL)
		return -1;
	for (size_t i = 0; i < reply->elements; i++)
		if (read_range(reply->element[i], asked,
		    &map->ranges[map->nranges++]) == -1) {
			slots_free(map);
			return -1;
		}
	return 0;
}

void
slots_free(struct slot_map *map)
{
	free(map->ranges);
	map->ranges = NULL;
	map->nranges = 0;
}
