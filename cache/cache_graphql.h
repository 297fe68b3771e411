#ifndef CACHE_CACHE_GRAPHQL_H
#define CACHE_CACHE_GRAPHQL_H

/*
 * Just enough of a GraphQL-over-HTTP POST body to key it: the JSON object
 * {"query": "...", "operationName": "...", "variables": {...}, ...} and,
 * in its query text, whether any operation it defines is a mutation or a
 * subscription. Pure.
 *
 * Anything it cannot vouch for is not a query: a body that is not one
 * JSON object, a member named twice, a top-level member name with an
 * escape or a byte outside printable ASCII, or that differs from query,
 * operationName or variables only in case, more than GRAPHQL_EXTRA_MAX
 * other members, a query that is not a string,
 * a document with no operation, or one that defines (or names, outside a
 * selection) a mutation or subscription anywhere, even beside a query.
 */

#include <stddef.h>

#include "cache/cache_keyrule.h"

#define GRAPHQL_DEPTH_MAX	64	/* JSON nesting of a body */
#define GRAPHQL_EXTRA_MAX	16	/* members besides query, operationName
					 * and variables (more: not cached) */
/* What a request body is sent as (GraphQL over HTTP: application/json). */
#define GRAPHQL_MEDIA_TYPE	"application/json"

enum graphql_kind {
	GRAPHQL_QUERY,		/* cacheable: d holds its digest */
	GRAPHQL_MUTATION,	/* or a subscription: sent, never cached */
	GRAPHQL_INVALID,	/* not one we can vouch for: sent, not cached */
};

/*
 * Is ctype (a Content-Type value; NULL: none) one a body is read as:
 * application/json, case-insensitive, with no parameter but charset=utf-8
 * (or "utf-8")? Another type (application/graphql, a form, another
 * charset) may be read otherwise by the server: not one we can vouch for.
 */
int	graphql_media_type(const char *ctype);
/*
 * Reads body (len bytes). For a query, feeds d with its query text (the
 * JSON string decoded), its operationName ("" when absent or null; an
 * empty string is told apart from those), its variables (their JSON
 * text without the whitespace between tokens; "" when absent or null),
 * and every other member by its name and compact value, in the body's
 * order (documentId, extensions.persistedQuery: a server may run the
 * document one names instead of the text).
 */
enum graphql_kind graphql_read(const char *body, size_t len,
	    struct keyrule_digest *d);

/*
 * The objects of a response body (len bytes): fn runs for every object
 * within its "data" member, at any depth up to GRAPHQL_DEPTH_MAX, that has
 * a string "__typename" and an "id" (a string, decoded, or a number as
 * written) of at most GRAPHQL_NAME_MAX and GRAPHQL_ID_MAX bytes; listed
 * is 1 when it is within an array. The number of objects, or -1 when
 * the body is not one JSON object.
 */
#define GRAPHQL_NAME_MAX	64	/* __typename */
#define GRAPHQL_ID_MAX		64	/* id */
typedef void graphql_object_cb(const char *type, size_t tlen, const char *id,
    size_t idlen, int listed, void *arg);
int	graphql_objects(const char *body, size_t len, graphql_object_cb *fn,
	    void *arg);
/* Is body (len bytes) a request for a mutation (or a subscription)? */
int	graphql_is_mutation(const char *body, size_t len);

/* What a query text q (len bytes, decoded: a GET's query parameter)
 * defines: GRAPHQL_QUERY, GRAPHQL_MUTATION (or a subscription), or
 * GRAPHQL_INVALID. Feeds nothing. */
enum graphql_kind graphql_document(const char *q, size_t len);
/*
 * Does a response body (len bytes) report errors: is it a JSON object
 * whose member "errors" is there and neither null nor []? (GraphQL over
 * HTTP answers 200 with them: permission denied, bad variables, a
 * resolver that failed.) A body that is not one JSON object does not.
 */
int	graphql_errors(const char *body, size_t len);

#endif
