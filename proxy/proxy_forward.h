#ifndef PROXY_PROXY_FORWARD_H
#define PROXY_PROXY_FORWARD_H

/*
 * The request as it goes upstream: its target as the origin resolves it,
 * what its headers and method say of it, and the headers sent, with who
 * asked written by Corral, not taken from the client.
 */

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

struct conf;

/* The client's address, or NULL when the connection is gone. */
char	*forward_client(struct evhttp_request *ev);
/*
 * The host and the target of ev as the origin resolves them: *hostp (the
 * absolute-form target's, else Host's, in normal form: common/host.h),
 * *urip (path[?query]), *pathp the normalized path ("//a/b" is a path,
 * not the authority "a") and *copyp what holds it, or NULL. The caller
 * frees *hostp, *urip and *copyp, also after -1 (no memory).
 */
int	forward_target(struct evhttp_request *ev, char **hostp, char **urip,
	    const char **pathp, char **copyp);
/* Appends to dst what goes upstream for ev: its end-to-end headers less
 * those flags name and its Host; Host: asked if keyed; and who asked
 * (X-Forwarded-*, kept from a trusted proxy only), with X-Forwarded-Host
 * asked if keyed, else conf's forwarded_host (if any), never the
 * client's. */
void	forward_headers(struct evhttp_request *ev, const struct conf *conf,
	    const char *asked, int keyed, struct evkeyvalq *dst, int flags);

/* Notes what the request's headers say of it: credentials (Authorization
 * or Cookie) and a condition (If-None-Match or If-Modified-Since). */
void	forward_note(struct evhttp_request *ev, int *credentials,
	    int *conditional);
/* Does the method change the resource (RFC 9110 9.2.1)? */
int	forward_unsafe(enum evhttp_cmd_type cmd);

#endif
