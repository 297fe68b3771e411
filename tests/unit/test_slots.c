/* SPDX-License-Identifier: MIT */
/*
 * cache_slots.c: CLUSTER SLOTS replies, as Redis sends them (RESP read by
 * hiredis's own reader), into a slot map; and the replies refused whole.
 */

#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cache/cache_slots.h"
#include "tests/unit/unit.h"

/* The reply Redis would send as resp (RESP2 text), read by hiredis. */
static redisReply *
reply_of(const char *resp)
{
	redisReader *r = redisReaderCreate();
	void *reply = NULL;

	if (r == NULL || redisReaderFeed(r, resp, strlen(resp)) != REDIS_OK ||
	    redisReaderGetReply(r, &reply) != REDIS_OK)
		reply = NULL;
	redisReaderFree(r);
	return reply;
}

static int
read_map(const char *resp, struct slot_map *map)
{
	redisReply *reply = reply_of(resp);
	int rc;

	if (reply == NULL)
		return -2;
	rc = slots_read(reply, "10.0.0.9", map);
	freeReplyObject(reply);
	return rc;
}


static void
t_ranges_with_their_primary_and_first_replica(void)
{
	struct slot_map map;
	const char *resp = "*2\r\n"
	    "*4\r\n:0\r\n:8191\r\n*3\r\n$8\r\n10.0.0.1\r\n:7000\r\n$1\r\na\r\n"
	    "*3\r\n$8\r\n10.0.0.2\r\n:7001\r\n$1\r\nb\r\n"
	    "*3\r\n:8192\r\n:16383\r\n*3\r\n$0\r\n\r\n:7002\r\n$1\r\nc\r\n";

	CHECK(read_map(resp, &map) == 0);
	CHECK(map.nranges == 2);
	CHECK(map.ranges[0].lo == 0 && map.ranges[0].hi == 8191);
	CHECK_STR(map.ranges[0].primary.host, "10.0.0.1");
	CHECK(map.ranges[0].primary.port == 7000);
	CHECK_STR(map.ranges[0].replica.host, "10.0.0.2");
	CHECK(map.ranges[0].replica.port == 7001);
	CHECK(map.ranges[1].lo == 8192 && map.ranges[1].hi == 16383);
	/* "" names the node asked; no replica named: port 0. */
	CHECK_STR(map.ranges[1].primary.host, "10.0.0.9");
	CHECK(map.ranges[1].replica.port == 0);
	slots_free(&map);
	CHECK(map.ranges == NULL && map.nranges == 0);
}

static void
t_a_reply_that_is_not_a_map_is_refused_whole(void)
{
	static const char *const bad[] = {
		"-ERR This instance has cluster support disabled\r\n",
		"*0\r\n",
		":1\r\n",
		"*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",	/* hi */
		"*1\r\n*3\r\n:-1\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n",	/* lo */
		"*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n",	/* lo > hi */
		"*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:0\r\n",	/* port */
		"*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:65536\r\n",
		"*1\r\n*3\r\n:0\r\n:5\r\n*1\r\n$1\r\nh\r\n",	/* no port */
		"*1\r\n*2\r\n:0\r\n:5\r\n",			/* no primary */
		"*2\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n"
		    "*3\r\n$1\r\n0\r\n:9\r\n*2\r\n$1\r\nh\r\n:1\r\n",	/* lo text */
	};
	struct slot_map map;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(read_map(bad[i], &map) == -1);
		CHECK(map.nranges == 0 && map.ranges == NULL);
	}
	/* The bounds themselves are fine; a bad replica is no replica. */
	CHECK(read_map("*1\r\n*4\r\n:16383\r\n:16383\r\n*2\r\n$1\r\nh\r\n"
	    ":65535\r\n*2\r\n$1\r\nr\r\n:0\r\n", &map) == 0);
	CHECK(map.ranges[0].primary.port == 65535 &&
	    map.ranges[0].replica.port == 0);
	slots_free(&map);
}

int
main(void)
{
	RUN(t_ranges_with_their_primary_and_first_replica);
	RUN(t_a_reply_that_is_not_a_map_is_refused_whole);
	return unit_exit();
}
