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
 * operationName or variables only in case, a query that is not a string,
 * a document with no operation, or one that defines (or names, outside a
 * selection) a mutation or subscription anywhere, even beside a query.
 */

#include <stddef.h>

#include "cache/cache_keyrule.h"

#define GRAPHQL_DEPTH_MAX	64	/* JSON nesting of a body */
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
 * empty string is told apart from those) and its variables (their JSON
 * text without the whitespace between tokens; "" when absent or null);
 * nothing else of the body counts.
 */
enum graphql_kind graphql_read(const char *body, size_t len,
	    struct keyrule_digest *d);

#endif
