/* SPDX-License-Identifier: MIT */
/*
 * A subscriber connection: a bufferevent, hiredis's RESP reader, and one
 * callback for everything the server sends. See cache_sub.h. The answer
 * to its AUTH is its own: the connection is up once it is accepted, and
 * lost when refused.
 *
 * Calls cache_adapter.c (what an AUTH error means). Called by
 * cache_route.c and cache_sentinel.c.
 */

#include "cache/cache_sub.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <hiredis/hiredis.h>

#include "cache/cache_adapter.h"
#include "common/log.h"

#define SUB_MAGIC	0x53554253u	/* "SUBS" */
#define SUB_ARGS_MAX	8

struct sub {
	uint32_t		 magic;
	struct bufferevent	*bev;
	redisReader		*reader;
	sub_up_cb		*on_up;
	sub_reply_cb		*on_reply;
	void			*arg;
	int			 in_cb;		/* inside a bufferevent callback */
	int			 dead;		/* closed from inside one */
	int			 lost;		/* on_reply(NULL) was called */
	int			 connected;
	int			 authing;	/* AUTH sent, not yet answered */
};

static void
sub_free(struct sub *s)
{
	bufferevent_free(s->bev);
	redisReaderFree(s->reader);
	s->magic = 0;
	free(s);
}

static void
lose(struct sub *s)
{
	if (s->lost || s->dead)
		return;
	s->lost = 1;
	s->on_reply(NULL, s->arg);
}

/* The AUTH answered: up if it was accepted (and connected), else lost. */
static void
on_auth(struct sub *s, const redisReply *reply)
{
	s->authing = 0;
	if (reply->type == REDIS_REPLY_ERROR &&
	    !adapter_auth_not_needed(reply->str)) {
		/* The command connection says so, once. */
		log_debug("redis: subscriber: AUTH refused: %s", reply->str);
		lose(s);
	} else if (s->connected && s->on_up != NULL) {
		s->on_up(s->arg);
	}
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct sub *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	void *reply;

	assert(s->magic == SUB_MAGIC);
	s->in_cb = 1;
	while (!s->dead && !s->lost && evbuffer_get_length(in) > 0) {
		size_t len = evbuffer_get_contiguous_space(in);

		if (redisReaderFeed(s->reader, (const char *)evbuffer_pullup(in,
		    (ssize_t)len), len) != REDIS_OK) {
			lose(s);
			break;
		}
		evbuffer_drain(in, len);
		for (;;) {
			if (redisReaderGetReply(s->reader, &reply) != REDIS_OK) {
				log_warn("redis: subscriber: bad reply: %s",
				    s->reader->errstr);
				lose(s);
				break;
			}
			if (reply == NULL)
				break;
			if (s->authing)
				on_auth(s, reply);
			else
				s->on_reply(reply, s->arg);
			freeReplyObject(reply);
			if (s->dead)
				break;
		}
	}
	s->in_cb = 0;
	if (s->dead)
		sub_free(s);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct sub *s = arg;

	assert(s->magic == SUB_MAGIC);
	s->in_cb = 1;
	if (what & BEV_EVENT_CONNECTED) {
		s->connected = 1;
		if (s->on_up != NULL && !s->authing)
			s->on_up(s->arg);
	} else if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		lose(s);
	}
	s->in_cb = 0;
	if (s->dead)
		sub_free(s);
}

struct sub *
sub_open(struct event_base *base, const char *host, int port,
    const char *unix_path, const char *user, const char *password,
    sub_up_cb *on_up, sub_reply_cb *on_reply, void *arg)
{
	struct sub *s;
	struct sockaddr_un sun;
	int rc;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->magic = SUB_MAGIC;
	s->on_up = on_up;
	s->on_reply = on_reply;
	s->arg = arg;
	s->reader = redisReaderCreate();
	s->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (s->reader == NULL || s->bev == NULL)
		goto fail;
	bufferevent_setcb(s->bev, on_read, NULL, on_event, s);
	if (bufferevent_enable(s->bev, EV_READ | EV_WRITE) == -1)
		goto fail;
	if (host == NULL) {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", unix_path);
		rc = bufferevent_socket_connect(s->bev,
		    (struct sockaddr *)&sun, sizeof(sun));
	} else {
		rc = bufferevent_socket_connect_hostname(s->bev, NULL,
		    AF_UNSPEC, host, port);
	}
	if (rc == -1)
		goto fail;
	if (password != NULL && password[0] != '\0') {
		const char *argv[] = { "AUTH", user, password };
		int named = user != NULL && user[0] != '\0';

		if (!named)
			argv[1] = password;
		if (sub_send(s, named ? 3 : 2, argv) == -1)
			goto fail;
		s->authing = 1;
	}
	return s;
fail:
	if (s->bev != NULL)
		bufferevent_free(s->bev);
	if (s->reader != NULL)
		redisReaderFree(s->reader);
	free(s);
	return NULL;
}

int
sub_send(struct sub *s, int argc, const char **argv)
{
	size_t lens[SUB_ARGS_MAX];
	char *cmd;
	int len, rc;

	assert(s->magic == SUB_MAGIC && argc <= SUB_ARGS_MAX);
	if (s->dead || s->lost)
		return -1;
	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	if ((len = redisFormatCommandArgv(&cmd, argc, argv, lens)) < 0)
		return -1;
	rc = bufferevent_write(s->bev, cmd, (size_t)len);
	redisFreeCommand(cmd);
	return rc;
}

void
sub_close(struct sub **sp)
{
	struct sub *s = *sp;

	if (s == NULL)
		return;
	assert(s->magic == SUB_MAGIC);
	*sp = NULL;
	if (s->in_cb)
		s->dead = 1;	/* freed when the callback returns */
	else
		sub_free(s);
}
