#include "proxy/proxy_hdr.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/http.h>

#include "common/util.h"

static const char *const hop_by_hop[] = {
	"Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Proxy-Connection", "TE", "Trailer",
	"Transfer-Encoding", "Upgrade",
};

/* Statuses stored under the route's TTL (heuristically cacheable ones,
 * RFC 9110 section 15.1, less 404/405/410/414/501). */
static const int storable_status[] = { 200, 203, 204, 300, 301, 308 };

int
hdr_is_hop_by_hop(const char *name, const char *connection)
{
	for (size_t i = 0; i < ARRAY_LEN(hop_by_hop); i++)
		if (strcasecmp(name, hop_by_hop[i]) == 0)
			return 1;
	return connection != NULL && util_list_has_token(connection, name);
}

static int
dropped(const char *name, int flags)
{
	if ((flags & HDR_DROP_HOST) && strcasecmp(name, "Host") == 0)
		return 1;
	if ((flags & HDR_DROP_LENGTH) && strcasecmp(name, "Content-Length") == 0)
		return 1;
	if ((flags & HDR_DROP_CONDITIONAL) &&
	    (strncasecmp(name, "If-", 3) == 0 || strcasecmp(name, "Range") == 0))
		return 1;
	if ((flags & HDR_DROP_ENCODING) &&
	    strcasecmp(name, "Accept-Encoding") == 0)
		return 1;
	if ((flags & HDR_DROP_CREDENTIALS) &&
	    (strcasecmp(name, "Authorization") == 0 ||
	    strcasecmp(name, "Cookie") == 0))
		return 1;
	return 0;
}

void
hdr_copy(const struct evkeyvalq *src, struct evkeyvalq *dst, int flags)
{
	const char *connection = evhttp_find_header(src, "Connection");
	const struct evkeyval *h;

	TAILQ_FOREACH(h, src, next) {
		if (hdr_is_hop_by_hop(h->key, connection) || dropped(h->key, flags))
			continue;
		evhttp_add_header(dst, h->key, h->value);
	}
}

int
hdr_status_storable(int status)
{
	for (size_t i = 0; i < ARRAY_LEN(storable_status); i++)
		if (status == storable_status[i])
			return 1;
	return 0;
}

int
hdr_storable(const struct evkeyvalq *headers, const char **why)
{
	const struct evkeyval *h;

	TAILQ_FOREACH(h, headers, next) {
		if (strcasecmp(h->key, "Set-Cookie") == 0) {
			*why = "set-cookie";
			return 0;
		}
		if (strcasecmp(h->key, "Cache-Control") != 0)
			continue;
		if (util_list_has_token(h->value, "no-store")) {
			*why = "no-store";
			return 0;
		}
		if (util_list_has_token(h->value, "private")) {
			*why = "private";
			return 0;
		}
	}
	return 1;
}

int
hdr_shareable(const struct evkeyvalq *headers)
{
	const char *why;

	/* Any status may be shared with the requests that waited for it;
	 * per-user or no-store responses go to their own requester only. */
	return hdr_storable(headers, &why);
}
