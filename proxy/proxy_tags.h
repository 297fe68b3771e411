#ifndef PROXY_PROXY_TAGS_H
#define PROXY_PROXY_TAGS_H

/*
 * Tags that responses name beyond Surrogate-Key (proxy_tags.c): a stored
 * GraphQL query's objects, and what a successful write's answer purges
 * (purge_header; a GraphQL mutation's objects).
 */

#include <stddef.h>

#include "conf/conf.h"
#include "upstream/upstream.h"

#define GRAPHQL_TAGS_MAX	64	/* Type:id tags of one response */
#define GRAPHQL_TYPES_MAX	16	/* its types with a tag of their own */
#define WRITE_PURGE_MAX		64	/* purge_header tags of one answer */

struct proxy;

/* The tags a stored GraphQL query response (body, len bytes) is filed
 * under, each through fn: "Type:id" for its first GRAPHQL_TAGS_MAX
 * distinct objects, "Type:+" for the types of any more, and "Type" for
 * each type it holds within a list. How many. */
int	graphql_response_tags(const char *body, size_t len,
	    void (*fn)(const char *tag, void *arg), void *arg);
/*
 * A successful write's answer resp, on route rt (index route, for the
 * counters), to target uri: the tags its purge_header fields name and,
 * when mutation (a GraphQL mutation on a graphql route), those of the
 * objects it returns (none when it reports errors), soft-purged
 * fleet-wide without waiting. How many tags; -1 when a mutation's answer
 * could not be read (cut past what is kept, not JSON): its objects
 * purged nothing, and the caller invalidates as for any write.
 */
int	write_purge(struct proxy *px, const struct conf_route *rt, int route,
	    const char *uri, const struct upstream_response *resp,
	    int mutation);

#endif
