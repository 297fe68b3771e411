/*
 * struct req: one client request, from its head to its one reply.
 *
 *	RECV -> PASS (uncacheable: straight to the upstream)
 *	     -> JOIN (wait for this key's flight)
 *	     -> DELIVER -> FINISH
 *
 * A cacheable request joins the flight of its key (proxy_flight.c), which
 * hands it its answer; a near-cache hit is delivered without one.
 */

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#include "cache/cache.h"
#include "cache/cache_entry.h"
#include "cache/cache_key.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_hdr.h"
#include "upstream/upstream.h"

#define REQ_MAGIC		0x52455155u	/* "REQU" */
#define CACHE_STATUS_MAX	160
#define VIA_TOKEN		"1.1 corral"
#define VIA_MAX			1024	/* the origin's Via lines, joined */
#define STREAM_END_CHECK_MS	20	/* an ended stream still being sent */

/* Every live request, for a drain and for shutdown. */
static TAILQ_HEAD(, req)	all_reqs = TAILQ_HEAD_INITIALIZER(all_reqs);

static void req_run(struct req *req);
static void req_free(struct req *req, uint64_t bytes);
static void stream_abort(struct req *req);

char *
req_client_address(struct req *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req->ev);
	char *peer = NULL;
	ev_uint16_t port;

	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &peer, &port);
	return peer;
}

/*
 * Who asked. A client's own X-Forwarded-* and Forwarded are dropped, so
 * that it cannot speak for Corral; only a peer in trusted_proxies (a
 * proxy in front of Corral) has its values kept, with the peer appended
 * to its X-Forwarded-For.
 */
void
req_forward_headers(struct req *req, struct evkeyvalq *dst, int flags)
{
	struct evkeyvalq *in = req_headers(req);
	char *peer = req_client_address(req);
	int trusted = peer != NULL && conf_trusted_proxy(req->px->conf, peer);
	const char *host = NULL, *proto = NULL;
	const struct evkeyval *h;
	struct evbuffer *xff;

	hdr_copy(in, dst, flags | HDR_DROP_FORWARDED);
	/* Corral has the body already: libevent answered any 100-continue. */
	evhttp_remove_header(dst, "Expect");
	if ((flags & HDR_DROP_HOST) && req->rt.key_host && req->host[0] != '\0')
		evhttp_add_header(dst, "Host", req->host);	/* it is keyed */
	if ((xff = evbuffer_new()) == NULL)
		return;
	TAILQ_FOREACH(h, in, next) {
		if (!trusted)
			break;
		if (strcasecmp(h->key, "X-Forwarded-For") == 0)
			evbuffer_add_printf(xff, "%s, ", h->value);
		else if (host == NULL &&
		    strcasecmp(h->key, "X-Forwarded-Host") == 0)
			host = h->value;
		else if (proto == NULL &&
		    strcasecmp(h->key, "X-Forwarded-Proto") == 0)
			proto = h->value;
		else if (strcasecmp(h->key, "Forwarded") == 0)
			evhttp_add_header(dst, h->key, h->value);
	}
	if (peer != NULL) {
		evbuffer_add_printf(xff, "%s", peer);
		evbuffer_add(xff, "", 1);
		evhttp_add_header(dst, "X-Forwarded-For",
		    (const char *)evbuffer_pullup(xff, -1));
	}
	evbuffer_free(xff);
	if (host != NULL || req->host[0] != '\0')
		evhttp_add_header(dst, "X-Forwarded-Host",
		    host != NULL ? host : req->host);
	evhttp_add_header(dst, "X-Forwarded-Proto", proto != NULL ? proto :
	    "http");
}

static void
on_body_sent(const void *data, size_t len, void *arg)
{
	struct cache_entry *e = arg;

	entry_unref(&e);
}

/* The body of e by reference: the entry is kept until it is sent. */
static struct evbuffer *
body_of(struct cache_entry *e)
{
	struct evbuffer *body;

	if ((body = evbuffer_new()) == NULL)
		return NULL;
	if (evbuffer_add_reference(body, e->body, e->body_len, on_body_sent,
	    entry_ref(e)) == 0)
		return body;
	entry_unref(&e);	/* the reference just taken */
	evbuffer_free(body);
	return NULL;
}

/* The targeted fields Corral read are its own, not the client's: are they
 * dropped from what req is sent? */
static int
strip_targeted(const struct req *req)
{
	return req->rt.origin_cache_control && !req->rt.forward_targeted_cc;
}

/* Writes v in decimal to out (24 bytes); returns out. */
static const char *
fmt_uint(uint64_t v, char out[24])
{
	char *p = out + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return p;
}

/* A hit's Age, in out: the origin's own (if it is a cache too, and sent
 * one valid Age; else origin_age is -1) plus the time e has been stored. */
static const char *
hit_age(const struct cache_entry *e, int64_t origin_age, char out[24])
{
	int64_t age = (util_now_ms() - e->stored_ms) / 1000;

	if (origin_age >= 0)
		age += origin_age;
	return fmt_uint(age > 0 ? (uint64_t)age : 0, out);
}

/*
 * What a reply takes from its entry's stored fields, in one pass: they are
 * end-to-end already (filtered when the entry was made). emit() gets each
 * field to send as it is; Content-Length is Corral's to set, Via and,
 * from the cache, Age are ours to rewrite, and with strip the targeted
 * fields Corral read are its own, not the client's.
 */
struct stored_fields {
	char		 via[VIA_MAX];	/* the origin's hops, then ours */
	int64_t		 origin_age;	/* its one valid Age, or -1 */
	int		 has_date;
};

static void
stored_fields(const struct cache_entry *e, const struct conf_route *rt,
    int strip, int cached, void (*emit)(void *, const char *, const char *),
    void *arg, struct stored_fields *sf)
{
	const char *origin_age = NULL;
	const struct evkeyval *h;
	size_t via_len = 0;
	int ages = 0;

	sf->has_date = 0;
	sf->via[0] = '\0';
	TAILQ_FOREACH(h, &e->headers, next) {
		if (strcasecmp(h->key, "Via") == 0) {
			via_len += snprintf(sf->via + via_len,
			    sizeof(sf->via) - via_len, "%s, ", h->value);
			if (via_len >= sizeof(sf->via))
				via_len = sizeof(sf->via) - 1;
		} else if (cached && strcasecmp(h->key, "Age") == 0) {
			origin_age = h->value, ages++;
		} else if (strcasecmp(h->key, "Content-Length") != 0 &&
		    !(strip && hdr_is_targeted(h->key, rt))) {
			sf->has_date |= strcasecmp(h->key, "Date") == 0;
			emit(arg, h->key, h->value);
		}
	}
	snprintf(sf->via + via_len, sizeof(sf->via) - via_len, VIA_TOKEN);
	sf->origin_age = ages == 1 ? hdr_delta_seconds(origin_age) : -1;
}

static void
emit_header(void *arg, const char *name, const char *value)
{
	evhttp_add_header(arg, name, value);
}

static void
emit_line(void *arg, const char *name, const char *value)
{
	evbuffer_add_printf(arg, "%s: %s\r\n", name, value);
}

/*
 * What a rendered head depends on besides its entry: whether the targeted
 * fields are dropped, and which they are (a reload may change them).
 */
static uint64_t
head_tag(const struct conf_route *rt, int strip)
{
	return strip ? util_hash(rt->targeted_cc) | 2 : 1;
}

/*
 * The part of a hit's head that is the same for every hit of e, rendered
 * into e once: the stored fields (end-to-end already) but Via, Age,
 * Content-Length and, with strip, the targeted fields Corral consumed;
 * Via with ours last; a Date if the origin sent none; Content-Length.
 * e->head_aux is the origin's Age to add, -1 if none counts.
 */
static int
render_head(struct cache_entry *e, const struct conf_route *rt, int strip,
    uint64_t tag)
{
	struct evbuffer *b = evbuffer_new();
	struct stored_fields sf;
	char date[64], *head;
	size_t len;

	if (b == NULL)
		return -1;
	stored_fields(e, rt, strip, 1, emit_line, b, &sf);
	evbuffer_add_printf(b, "Via: %s\r\n", sf.via);
	if (!sf.has_date) {
		hdr_format_date(e->stored_ms, date, sizeof(date));
		evbuffer_add_printf(b, "Date: %s\r\n", date);
	}
	evbuffer_add_printf(b, "Content-Length: %zu\r\n", e->body_len);
	len = evbuffer_get_length(b);
	if ((head = malloc(len)) == NULL ||
	    evbuffer_remove(b, head, len) != (int)len) {
		free(head);
		evbuffer_free(b);
		return -1;
	}
	evbuffer_free(b);
	free(e->head);
	e->head = head;
	e->head_len = len;
	e->head_tag = tag;
	e->head_aux = sf.origin_age;
	return 0;
}

/*
 * A hit with a body, as HTTP/1.1: the head is the entry's rendering plus
 * three lines, instead of a field list built and formatted per request.
 * libevent still writes the reply (so that it knows the exchange is over
 * and what to do with the connection); its own head (status line, Date,
 * Content-Length: 0, maybe Connection) is then replaced in the output
 * buffer, keeping its status line, before the body. 0 if this reply does
 * not qualify, and nothing was sent.
 */
static int
deliver_rendered(struct req *req, struct cache_entry *e, uint64_t *sentp)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req->ev);
	struct evkeyvalq *out_headers;
	int strip = strip_targeted(req);
	uint64_t tag = head_tag(&req->rt, strip);
	char line[128], tail[CACHE_STATUS_MAX + 80], cs[CACHE_STATUS_MAX];
	char num[24];
	struct evbuffer_ptr eol;
	struct bufferevent *bev;
	struct evbuffer *out, *body;
	const char *conn;
	size_t written;
	int n, status_len;

	if (e->body_len == 0 || req->head || req->conditional ||
	    req->ev->major != 1 || req->ev->minor != 1 || evcon == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL)
		return 0;
	out = bufferevent_get_output(bev);
	if (evbuffer_get_length(out) != 0)
		return 0;	/* not alone in the buffer: the usual way */
	if ((e->head == NULL || e->head_tag != tag) &&
	    render_head(e, &req->rt, strip, tag) == -1)
		return 0;
	if ((body = body_of(e)) == NULL)
		return 0;
	out_headers = evhttp_request_get_output_headers(req->ev);
	if (req->px->draining)
		evhttp_add_header(out_headers, "Connection", "close");
	evhttp_send_reply(req->ev, e->status, NULL, NULL);
	written = evbuffer_get_length(out);
	eol = evbuffer_search(out, "\r\n", 2, NULL);
	n = eol.pos < 0 || (size_t)eol.pos + 2 > sizeof(line) ? -1 :
	    (int)evbuffer_remove(out, line, (size_t)eol.pos + 2);
	evbuffer_drain(out, written);
	if (n < 0)	/* cannot be: libevent's status lines are short */
		n = snprintf(line, sizeof(line), "HTTP/1.1 %d OK\r\n",
		    e->status);
	status_len = n;
	cache_status(req, req->upstream_status != 0 ? req->upstream_status :
	    e->status, cs, sizeof(cs));
	/* libevent's own choice to close (the client asked, a stop) */
	conn = evhttp_find_header(out_headers, "Connection");
	n = snprintf(tail, sizeof(tail), "Cache-Status: %s\r\nAge: %s\r\n%s\r\n",
	    cs, hit_age(e, e->head_aux, num),
	    conn != NULL && evutil_ascii_strcasecmp(conn, "close") == 0 ?
	    "Connection: close\r\n" : "");
	evbuffer_add(out, line, (size_t)status_len);
	evbuffer_add(out, e->head, e->head_len);
	evbuffer_add(out, tail, (size_t)n);
	evbuffer_add_buffer(out, body);
	evbuffer_free(body);
	if (req->px->access_log != NULL)	/* the record names it */
		evhttp_add_header(out_headers, "Cache-Status", cs);
	*sentp = e->body_len;
	return 1;
}

/* Sends the one reply this request gets; returns the body bytes sent. */
static uint64_t
deliver(struct req *req)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req->ev);
	struct cache_entry *e = req->entry;
	char cs[CACHE_STATUS_MAX], num[24], date[64];
	int cached = req->pass_kind == OUT_NONE;	/* not passed through */
	int strip = strip_targeted(req);
	struct stored_fields sf;
	struct evbuffer *body;
	uint64_t sent;
	int code, status;

	if (e == NULL) {
		code = error_code(req);
		cache_status(req, code, cs, sizeof(cs));
		evhttp_add_header(out, "Cache-Status", cs);
		evhttp_add_header(out, "Content-Type", "text/plain");
		evhttp_add_header(out, "Connection", "close");
		if ((body = evbuffer_new()) != NULL)
			evbuffer_add_printf(body, "%d %s\n", code,
			    error_text(req, code));
		sent = body != NULL && !req->head ? evbuffer_get_length(body) : 0;
		evhttp_send_reply(req->ev, code, NULL, req->head ? NULL : body);
		if (body != NULL)
			evbuffer_free(body);
		return sent;
	}

	if (cached && deliver_rendered(req, e, &sent))
		return sent;
	status = e->status;
	stored_fields(e, &req->rt, strip, cached, emit_header, out, &sf);
	evhttp_add_header(out, "Via", sf.via);
	if (req->px->draining)
		evhttp_add_header(out, "Connection", "close");
	/* fwd-status: what the upstream said, a 304 for a revalidation. */
	cache_status(req, req->upstream_status != 0 ? req->upstream_status :
	    e->status, cs, sizeof(cs));
	evhttp_add_header(out, "Cache-Status", cs);
	if (cached) {
		evhttp_add_header(out, "Age", hit_age(e, sf.origin_age, num));
		if (!sf.has_date) {
			hdr_format_date(e->stored_ms, date, sizeof(date));
			evhttp_add_header(out, "Date", date);
		}
		if (status == 200 && req->conditional && hdr_not_modified(
		    evhttp_request_get_input_headers(req->ev), &e->headers)) {
			STAT_INC(req->px->stats, req->route, not_modified);
			evhttp_remove_header(out, "Content-Type");
			evhttp_send_reply(req->ev, HTTP_NOTMODIFIED, NULL, NULL);
			return 0;
		}
	}
	if (req->head || e->body_len == 0) {
		if (req->head && e->status != 204 && e->status != 304) {
			snprintf(num, sizeof(num), "%zu", e->body_len);
			evhttp_add_header(out, "Content-Length",
			    req->head_length[0] != '\0' ? req->head_length : num);
		}
		evhttp_send_reply(req->ev, e->status, NULL, NULL);
		return 0;
	}
	if ((body = body_of(e)) == NULL) {
		evhttp_send_reply(req->ev, HTTP_SERVUNAVAIL, NULL, NULL);
		return 0;
	}
	evhttp_send_reply(req->ev, e->status, NULL, body);
	evbuffer_free(body);
	return e->body_len;
}

/* ---- streaming: a reply that goes out as the response arrives ------ */

int
stream_wanted(const struct upstream_response *resp, int cached)
{
	const char *cl = evhttp_find_header(&resp->headers, "Content-Length");
	/* Its digits were checked on the upstream side. */
	long long len = cl != NULL ? strtoll(cl, NULL, 10) : -1;

	/* No body, or an answer a flight may replace (a 5xx by a stale
	 * entry, a 304 by the stored body); and a short body comes whole. */
	if (resp->status < 200 || resp->status == 204 || resp->status == 304 ||
	    (cached && resp->status >= 500))
		return 0;
	return len < 0 || len > STREAM_MIN_BYTES;
}

/* Via: every hop the origin's Via lists, then ours. */
static void
add_via(struct evkeyvalq *out, const struct evkeyvalq *in)
{
	char line[VIA_MAX];
	size_t used = 0;
	const struct evkeyval *h;

	TAILQ_FOREACH(h, in, next) {
		if (strcasecmp(h->key, "Via") != 0)
			continue;
		used += (size_t)snprintf(line + used, sizeof(line) - used,
		    "%s, ", h->value);
		if (used >= sizeof(line))
			used = sizeof(line) - 1;
	}
	snprintf(line + used, sizeof(line) - used, VIA_TOKEN);
	evhttp_remove_header(out, "Via");
	evhttp_add_header(out, "Via", line);
}

/*
 * A sibling's request gets the response as the origin sent it: status and
 * end-to-end headers, with its length when it had one. The sibling makes
 * of it what its own clients get (Via, Cache-Status, its route's rules).
 */
static int
peer_stream_start(struct req *req, const struct upstream_response *resp)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req->ev);
	const char *cl = evhttp_find_header(&resp->headers, "Content-Length");

	hdr_copy(&resp->headers, out, HDR_DROP_LENGTH);
	if (cl != NULL)
		evhttp_add_header(out, "Content-Length", cl);
	evhttp_send_reply_start(req->ev, resp->status, NULL);
	req->streaming = 1;
	return 0;
}

int
req_stream_start(struct req *req, const struct upstream_response *resp,
    int collapsed)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req->ev);
	const char *cl = evhttp_find_header(&resp->headers, "Content-Length");
	const char *conn = evhttp_find_header(&resp->headers, "Connection");
	int strip = strip_targeted(req);
	char cs[CACHE_STATUS_MAX], date[64];
	const struct evkeyval *h;

	assert(req->magic == REQ_MAGIC && !req->streaming);
	if (evhttp_request_get_connection(req->ev) == NULL || req->head)
		return -1;
	if (req->peer)
		return peer_stream_start(req, resp);
	TAILQ_FOREACH(h, &resp->headers, next) {
		/* End-to-end ones, as an entry keeps them. */
		if (hdr_is_hop_by_hop(h->key, conn) ||
		    strcasecmp(h->key, "Content-Length") == 0 ||
		    strcasecmp(h->key, "Via") == 0 ||
		    (strip && hdr_is_targeted(h->key, &req->rt)))
			continue;
		evhttp_add_header(out, h->key, h->value);
	}
	add_via(out, &resp->headers);
	if (cl != NULL)		/* checked by the upstream side */
		evhttp_add_header(out, "Content-Length", cl);
	if (evhttp_find_header(out, "Date") == NULL) {
		hdr_format_date(util_now_ms(), date, sizeof(date));
		evhttp_add_header(out, "Date", date);
	}
	if (req->pass_kind != OUT_NONE)
		snprintf(cs, sizeof(cs), "corral; fwd=%s; fwd-status=%d",
		    req->pass_kind == OUT_METHOD ? "method" : "bypass",
		    resp->status);
	else
		snprintf(cs, sizeof(cs), "corral; fwd=miss; fwd-status=%d%s",
		    resp->status, collapsed ? "; collapsed" : "");
	evhttp_add_header(out, "Cache-Status", cs);
	if (req->px->draining)
		evhttp_add_header(out, "Connection", "close");
	evhttp_send_reply_start(req->ev, resp->status, NULL);
	req->streaming = 1;
	req->stream_status = resp->status;
	req->waited_us = util_mono_us() - req->t_join_us;	/* its wait */
	return 0;
}

size_t
req_stream_backlog(struct req *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req->ev);
	struct bufferevent *bev, *wire;
	size_t n;

	if (evcon == NULL)
		return 0;	/* the client left */
	bev = evhttp_connection_get_bufferevent(evcon);
	n = evbuffer_get_length(bufferevent_get_output(bev));
	if ((wire = bufferevent_get_underlying(bev)) != NULL)
		n += evbuffer_get_length(bufferevent_get_output(wire));
	return n;
}

/* A streamed reply whose body is all queued: it ends once sent (or once
 * its client has gone). */
static void
on_stream_end(evutil_socket_t fd, short what, void *arg)
{
	struct req *req = arg;
	struct evhttp_request *ev = req->ev;

	assert(req->magic == REQ_MAGIC && req->end_ev != NULL);
	if (req_stream_backlog(req) > 0) {
		timer_arm(req->end_ev, STREAM_END_CHECK_MS);
		return;
	}
	event_free(req->end_ev);
	req->end_ev = NULL;
	req_free(req, req->streamed);	/* before ev goes: the log reads it */
	evhttp_send_reply_end(ev);	/* may free ev at once */
}

/* What was queued for the client has been sent. */
static void
on_stream_written(struct evhttp_connection *evcon, void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC && req->streaming);
	if (req->end_ev != NULL) {
		event_active(req->end_ev, EV_TIMEOUT, 0);
	} else if (req->flight != NULL) {
		flight_stream_drained(req);
	} else if (req->paused && req->fetch != NULL &&
	    req_stream_backlog(req) <= (size_t)req->px->conf->stream_window / 2) {
		req->paused = 0;
		upstream_resume(req->fetch);
	}
}

size_t
req_stream_data(struct req *req, struct evbuffer *chunk)
{
	struct evbuffer *buf;

	assert(req->magic == REQ_MAGIC && req->streaming);
	if (evhttp_request_get_connection(req->ev) == NULL)
		return 0;
	if ((buf = evbuffer_new()) == NULL ||
	    evbuffer_add_buffer_reference(buf, chunk) == -1) {
		if (buf != NULL)
			evbuffer_free(buf);
		return 0;	/* the end will find it short */
	}
	req->streamed += evbuffer_get_length(buf);
	evhttp_send_reply_chunk_with_cb(req->ev, buf, on_stream_written, req);
	evbuffer_free(buf);
	return req_stream_backlog(req);
}

void
req_stream_end(struct req *req, int ok, enum outcome o, int64_t upstream_ms)
{
	assert(req->magic == REQ_MAGIC && req->streaming);
	upstream_cancel(&req->fetch);
	req->outcome = o;
	if (upstream_ms >= 0)
		req->upstream_ms = upstream_ms;
	if (!ok) {
		log_warn("%s: the response was cut short after %" PRIu64
		    " bytes; closing the client's connection", req->uri,
		    req->streamed);
		stream_abort(req);
		return;
	}
	/* libevent ends a reply (and may close the connection) as soon as
	 * its own buffer is empty: only once the client has taken all of
	 * it, so that nothing queued below is lost. */
	if ((req->end_ev = evtimer_new(req->px->base, on_stream_end,
	    req)) == NULL) {
		stream_abort(req);
		return;
	}
	on_stream_end(-1, 0, req);
}

/* Counts, logs and frees req, whose reply has gone (or been given up). */
static void
req_free(struct req *req, uint64_t bytes)
{
	struct proxy *px = req->px;

	if (!req->peer) {	/* the sibling counts its own clients */
		log_access(req, bytes);
		count_outcome(req);
	}
	if (req->end_ev != NULL)
		event_free(req->end_ev);
	TAILQ_REMOVE(&all_reqs, req, all_link);
	px->nrequests--;
	px->npeers -= req->peer;
	entry_unref(&req->entry);
	free(req->uri);
	free(req->host);
	req->magic = 0;
	free(req);
}

/*
 * A reply under way that cannot be completed: the client's connection is
 * closed, so that a cut body can never pass for a whole one (its length
 * or final chunk never comes). req is freed.
 */
static void
stream_abort(struct req *req)
{
	struct evhttp_request *ev = req->ev;
	struct evhttp_connection *evcon = evhttp_request_get_connection(ev);

	req_free(req, req->streamed);	/* before ev goes */
	if (evcon != NULL)
		evhttp_connection_free(evcon);	/* frees ev */
	else
		evhttp_send_reply_end(ev);	/* the client left: frees ev */
}

static void
req_finish(struct req *req)
{
	assert(req->magic == REQ_MAGIC);
	upstream_cancel(&req->fetch);
	flight_leave(req);
	req->waited_us = util_mono_us() - req->t_join_us;	/* measured once */
	if (req->streaming) {
		req->outcome = OUT_UNAVAILABLE;
		stream_abort(req);
		return;
	}
	if (req->peer) {
		/* No stream for it: the sibling waits for the entry. */
		evhttp_send_reply(req->ev, HTTP_NOCONTENT, NULL, NULL);
		req_free(req, 0);
		return;
	}
	req_free(req, deliver(req));
}

/* A passed-through response as it arrives: a long one is streamed. */
static int
on_pass_data(const struct upstream_response *resp, struct evbuffer *chunk,
    void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC);
	if (chunk == NULL)
		return stream_wanted(resp, 0) && req_stream_start(req, resp,
		    0) == 0 ? UPSTREAM_STREAM : 0;
	if (req->streaming && req_stream_data(req, chunk) >
	    (size_t)req->px->conf->stream_window)
		req->paused = 1;
	return req->paused ? UPSTREAM_PAUSE : 0;
}

/* RFC 9111 4.4: a successful unsafe request invalidates: this process's
 * copy at once, Redis's (queued ahead of any later lookup) and the
 * fleet's by the broadcast. */
static void
pass_invalidate(struct req *req, int status)
{
	if (req->key[0] != '\0' && status < 400) {
		near_drop(req->px, req->key);
		if (cache_invalidate(req->px->cache, req->key, NULL,
		    NULL) != NULL)
			STAT_INC(req->px->stats, req->route, invalidations);
	}
}

static void
on_pass_fetched(struct upstream_response *resp, void *arg)
{
	struct req *req = arg;

	assert(req->magic == REQ_MAGIC);
	req->fetch = NULL;
	req->upstream_ms = resp->elapsed_ms;
	count_upstream(req->px, req->route, resp);
	if (req->streaming) {
		int ok = resp->result == UPSTREAM_OK;

		if (ok) {
			pass_invalidate(req, resp->status);
		} else {
			log_warn("upstream %s: %s (%s), after its head",
			    req->uri, upstream_result_name(resp->result),
			    resp->error);
			req->uerr = resp->result;
		}
		upstream_response_free(&resp);
		req_stream_end(req, ok, ok ? req->pass_kind :
		    OUT_UPSTREAM_ERROR, req->upstream_ms);
		return;
	}
	if (resp->result != UPSTREAM_OK) {
		log_warn("upstream %s: %s (%s)", req->uri,
		    upstream_result_name(resp->result), resp->error);
		req->outcome = OUT_UPSTREAM_ERROR;
		req->uerr = resp->result;
	} else {
		const char *cl = evhttp_find_header(&resp->headers,
		    "Content-Length");
		if (req->head && cl != NULL)
			snprintf(req->head_length, sizeof(req->head_length),
			    "%s", cl);
		req->entry = entry_from_response(resp, "", 0);
		req->outcome = req->entry != NULL ? req->pass_kind :
		    OUT_UNAVAILABLE;
		pass_invalidate(req, resp->status);
	}
	upstream_response_free(&resp);
	req->step = REQ_DELIVER;
	req_run(req);
}

static int
pass_start(struct req *req)
{
	struct proxy *px = req->px;
	struct evbuffer *in = evhttp_request_get_input_buffer(req->ev);
	struct evkeyvalq headers;
	size_t urllen = strlen(px->conf->upstream_url) + strlen(req->uri) + 1;
	char *url;
	const char *method = method_name(evhttp_request_get_command(req->ev));
	struct upstream_request ur;

	if ((url = malloc(urllen)) == NULL)
		return -1;
	snprintf(url, urllen, "%s%s", px->conf->upstream_url, req->uri);
	TAILQ_INIT(&headers);
	req_forward_headers(req, &headers, HDR_DROP_HOST | HDR_DROP_LENGTH);
	memset(&ur, 0, sizeof(ur));
	ur.method = method;
	ur.url = url;
	ur.headers = &headers;
	ur.body_len = evbuffer_get_length(in);
	ur.body = ur.body_len > 0 ? evbuffer_pullup(in, -1) : NULL;
	ur.connect_timeout_ms = px->conf->upstream_connect_timeout_ms;
	ur.timeout_ms = px->conf->upstream_timeout_ms;
	ur.max_body_bytes = PASS_BODY_MAX;
	ur.on_data = on_pass_data;
	ur.data_arg = req;
	ur.keep_body = 0;	/* a streamed body goes to its client only */
	STAT_INC(px->stats, req->route, upstream_fetches);
	req->fetch = upstream_fetch(px->upstream, &ur, on_pass_fetched, req);
	evhttp_clear_headers(&headers);
	free(url);
	return req->fetch != NULL ? 0 : -1;
}

/*
 * Notes what later steps ask of the request's headers. Whether it may be
 * forwarded at all (framing, lengths, the head's size) was decided by the
 * strict reader before libevent saw it (proxy_frame.c).
 */
static void
note_headers(struct req *req)
{
	const struct evkeyval *h;

	TAILQ_FOREACH(h, evhttp_request_get_input_headers(req->ev), next) {
		if (strcasecmp(h->key, "Authorization") == 0 ||
		    strcasecmp(h->key, "Cookie") == 0)
			req->credentials = 1;
		else if (strcasecmp(h->key, "If-None-Match") == 0 ||
		    strcasecmp(h->key, "If-Modified-Since") == 0)
			req->conditional = 1;
	}
}

/*
 * A fresh entry in this process's memory answers without a Redis round
 * trip. When early refresh may be due, the request takes the usual path
 * instead, so that the refresh can start.
 */
static int
near_hit(struct req *req, const struct conf_route *rt)
{
	struct cache_entry *e = near_get(req->px, req->key, util_now_ms());

	if (e == NULL)
		return 0;
	if (xfetch_due(rt, e)) {
		/* Due: the flight refreshes without drawing again. */
		req->early_due = 1;
		entry_unref(&e);
		return 0;
	}
	req->entry = e;
	req->outcome = OUT_HIT;
	STAT_INC(req->px->stats, req->route, near_hits);
	return 1;
}

/* A method that changes the resource (RFC 9110 9.2.1). */
static int
unsafe(enum evhttp_cmd_type cmd)
{
	return cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
	    cmd == EVHTTP_REQ_DELETE || cmd == EVHTTP_REQ_PATCH;
}

/* Decides how the request is served. */
static void
req_recv(struct req *req)
{
	struct proxy *px = req->px;
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req->ev);
	struct evkeyvalq *in = evhttp_request_get_input_headers(req->ev);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req->ev);
	const char *target = u != NULL ? evhttp_uri_get_path(u) : NULL;
	const char *query = u != NULL ? evhttp_uri_get_query(u) : NULL;
	const char *host = evhttp_find_header(in, "Host");
	const char *uhost = u != NULL ? evhttp_uri_get_host(u) : NULL;
	const struct conf_route *rt;
	const char *path;
	char *copy = NULL;
	size_t len;
	int dots;

	if (target == NULL || target[0] == '\0')
		target = "/";
	if (uhost != NULL) {
		/* RFC 9112 3.2.2: an absolute-form target names the host;
		 * a Host header that says otherwise is ignored. */
		len = strlen(uhost) + sizeof(":65535");
		if ((req->host = malloc(len)) != NULL)
			snprintf(req->host, len, evhttp_uri_get_port(u) >= 0 ?
			    "%s:%d" : "%s", uhost, evhttp_uri_get_port(u));
	} else {
		req->host = strdup(host != NULL ? host : "");
	}
	/* The path the origin resolves is the one routed, keyed and sent;
	 * only a '.' or a %-escape (%2E) can make it another. */
	dots = strpbrk(target, ".%") != NULL;
	path = target;
	if (dots && (copy = strdup(target)) != NULL) {
		hdr_normalize_path(copy);
		path = copy;
	}
	len = strlen(target) + (query != NULL ? strlen(query) + 1 : 0) + 1;
	if ((dots && copy == NULL) || (req->uri = malloc(len)) == NULL ||
	    req->host == NULL) {
		free(copy);
		req->outcome = OUT_UNAVAILABLE;
		req->step = REQ_DELIVER;
		return;
	}
	host = req->host;
	snprintf(req->uri, len, "%s%s%s", path, query != NULL ? "?" : "",
	    query != NULL ? query : "");
	rt = conf_route_match(px->conf, path);
	req->route = rt != NULL ? (int)(rt - px->conf->routes) : -1;
	if (rt != NULL)
		req->rt = *rt;	/* a reload does not change it midway */
	req->head = cmd == EVHTTP_REQ_HEAD;
	STAT_INC(px->stats, req->route, requests);

	/* Only the key_host routes key on the client's Host; the others on
	 * the upstream's, so that every name of the fleet shares entries. */
	if (rt == NULL || !rt->key_host)
		host = px->conf->upstream_authority;
	note_headers(req);
	if (!conf_host_allowed(px->conf, req->host)) {
		log_info("rejected %s: host %s is not served", req->uri,
		    req->host);
		req->reject_code = HTTP_MISDIRECTED;
		req->outcome = OUT_REJECTED;
		req->step = REQ_DELIVER;
	} else if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		/* If it succeeds, the cached entry of its URL is dropped
		 * (with no memory for the key, it is not). */
		if (rt != NULL && unsafe(cmd) && cache_key_for(host, path,
		    query, rt->sort_query, req->key) == -1)
			req->key[0] = '\0';
		req->pass_kind = OUT_METHOD;
		req->step = REQ_PASS;
	} else if (rt == NULL || (!rt->cache_authorized && req->credentials)) {
		req->pass_kind = OUT_BYPASS;
		req->step = REQ_PASS;
	} else if (cache_key_for(host, path, query, rt->sort_query,
	    req->key) == -1) {
		req->outcome = OUT_UNAVAILABLE;
		req->step = REQ_DELIVER;
	} else {
		variant_key(px, req->key, in);
		req->step = near_hit(req, rt) ? REQ_DELIVER : REQ_JOIN;
	}
	free(copy);
}

static void
req_run(struct req *req)
{
	assert(req->magic == REQ_MAGIC);
	for (;;) {
		switch (req->step) {
		case REQ_RECV:
			req_recv(req);
			continue;
		case REQ_PASS:
			if (req->pass_kind == OUT_NONE)
				req->pass_kind = OUT_BYPASS;
			/* Once a stop begins, nothing new goes upstream. */
			if (req->px->draining || pass_start(req) == -1) {
				req->outcome = OUT_UNAVAILABLE;
				req->step = REQ_DELIVER;
				continue;
			}
			return;
		case REQ_JOIN:
			req->t_join_us = util_mono_us();
			req->step = REQ_DELIVER;	/* when the flight ends */
			if (flight_join(req->px, req, req->key, req->uri,
			    req->route, &req->rt, req->early_due) == -1) {
				req->outcome = OUT_UNAVAILABLE;
				continue;
			}
			return;		/* req may be answered already */
		case REQ_DELIVER:
		case REQ_FINISH:
			req->step = REQ_FINISH;
			req_finish(req);
			return;
		}
	}
}

void
flow_recv(struct proxy *px, struct evhttp_request *ev)
{
	struct req *req;

	assert(px->magic == PROXY_MAGIC);
	if ((req = calloc(1, sizeof(*req))) == NULL) {
		evhttp_send_error(ev, HTTP_SERVUNAVAIL, NULL);
		return;
	}
	req->magic = REQ_MAGIC;
	req->px = px;
	req->ev = ev;
	req->step = REQ_RECV;
	req->route = -1;
	req->upstream_ms = -1;
	req->t_start_us = req->t_join_us = util_mono_us();
	TAILQ_INSERT_TAIL(&all_reqs, req, all_link);
	px->nrequests++;
	req_run(req);
}

void
flow_peer_recv(struct proxy *px, struct evhttp_request *ev, const char *key)
{
	struct req *req;

	assert(px->magic == PROXY_MAGIC);
	if ((req = calloc(1, sizeof(*req))) == NULL ||
	    (req->uri = strdup(evhttp_request_get_uri(ev))) == NULL) {
		free(req);
		evhttp_send_error(ev, HTTP_SERVUNAVAIL, NULL);
		return;
	}
	req->magic = REQ_MAGIC;
	req->px = px;
	req->ev = ev;
	req->peer = 1;
	req->route = -1;
	req->upstream_ms = -1;
	req->t_start_us = req->t_join_us = util_mono_us();
	snprintf(req->key, sizeof(req->key), "%s", key);
	TAILQ_INSERT_TAIL(&all_reqs, req, all_link);
	px->nrequests++;
	px->npeers++;
	req->step = REQ_DELIVER;	/* when its flight ends, or now */
	if (flight_attach_peer(px, req) == -1)
		req_run(req);
}

/*
 * Past the stop deadline: every fetch that holds a lock gives it up and
 * releases the lock (so the fleet does not wait out lock_ttl), and every
 * client still waiting gets a 503. Releases finish asynchronously.
 */

void
req_answer(struct req *req, const struct handover *h)
{
	assert(req->magic == REQ_MAGIC);
	req->outcome = h->outcome;
	req->entry = h->entry;
	req->uerr = h->uerr;
	req->not_forwarded = h->not_forwarded;
	snprintf(req->failure, sizeof(req->failure), "%s", h->failure);
	if (h->upstream_ms >= 0)
		req->upstream_ms = h->upstream_ms;
	if (h->upstream_status != 0)
		req->upstream_status = h->upstream_status;
	req->step = REQ_DELIVER;
	req_run(req);
}

void
req_pass(struct req *req, int hit_for_miss)
{
	assert(req->magic == REQ_MAGIC);
	req->hit_for_miss = hit_for_miss;
	req->step = REQ_PASS;
	req_run(req);
}

void
req_to_variant(struct req *req, const char *spec)
{
	char id[CACHE_VARIANT_MAX];
	size_t base = strcspn(req->key, "\n");

	assert(req->magic == REQ_MAGIC);
	variant_id(spec, req_headers(req), id);
	snprintf(req->key + base, sizeof(req->key) - base, "\n%s", id);
	req->step = REQ_JOIN;
	req_run(req);
}

struct evkeyvalq *
req_headers(const struct req *req)
{
	return evhttp_request_get_input_headers(req->ev);
}

/* Past the stop deadline: a request that waits on its own fetch gets a
 * 503 now. */
void
req_abandon_all(void)
{
	struct req *req, *next;

	for (req = TAILQ_FIRST(&all_reqs); req != NULL; req = next) {
		next = TAILQ_NEXT(req, all_link);
		if (req->fetch == NULL)
			continue;
		req->outcome = OUT_UNAVAILABLE;
		req_finish(req);
	}
}

void
req_remap(const struct conf *old, const struct conf *new)
{
	struct req *req;

	TAILQ_FOREACH(req, &all_reqs, all_link)
		if (req->route >= 0)
			req->route = conf_route_index(new,
			    old->routes[req->route].prefix);
}

void
req_shutdown_all(void)
{
	struct req *req;

	while ((req = TAILQ_FIRST(&all_reqs)) != NULL) {
		req->outcome = OUT_UNAVAILABLE;
		req_finish(req);
	}
}
