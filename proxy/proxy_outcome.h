/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_OUTCOME_H
#define PROXY_PROXY_OUTCOME_H

/*
 * What an answer is called, everywhere it is reported: the Cache-Status
 * value, the status and text of an answer Corral makes up, the counters
 * and the access log's cache label. Pure: it reads an answer and writes
 * counters, and calls nothing of the flow.
 */

#include <stddef.h>
#include <stdint.h>

#define HTTP_UNAUTHORIZED	401	/* claims: no valid token (jwt_reject) */
#define HTTP_MISDIRECTED	421	/* a Host not served */
#define HTTP_CLIENT_GONE	499	/* logged only: nginx's "client closed
					 * request" */
#define HTTP_BAD_GATEWAY	502
#define HTTP_GATEWAY_TIMEOUT	504


#include "proxy/proxy_flow.h"
#include "proxy/proxy_method.h"

#define CACHE_STATUS_MAX	160	/* a Cache-Status value */

struct stats;

/* The Cache-Status value of answer a (fwd-status: what the upstream said). */
void	outcome_value(const struct answer *a, int fwd_status, char *out,
	    size_t outlen);
/* The status and text of an answer Corral makes up itself. */
int	outcome_error_code(const struct answer *a);
const char *outcome_error_text(const struct answer *a, int code);
/* The status of the reply answer a makes (an entry's, or Corral's own). */
int	outcome_code(const struct answer *a);
/* Counts a finished request under route (-1: none), which waited
 * waited_us for another's fetch, if it did. */
void	outcome_count(struct stats *st, int route, const struct answer *a,
	    int64_t waited_us);
/* Counts one finished upstream fetch: its status class and duration. */
void	outcome_count_upstream(struct stats *st, int route,
	    const struct upstream_response *resp);
/* The cache label of an outcome, as metrics and the access log name it. */
const char *outcome_label(enum outcome o);
/* n tags (hdr_tags) of the response stored at key were not filed:
 * counted (n 0: nothing), and said at most once every STATUS_LOG_MS. */
void	outcome_tags_dropped(struct stats *st, int route, const char *key,
	    int n);
/* A variant of key was not stored: key has max variants (counted; said at
 * most once every STATUS_LOG_MS). */
void	outcome_variants_full(struct stats *st, int route, const char *key,
	    int max);
/* Did an answer of outcome o wait for another request's fetch? */
int	outcome_waited(enum outcome o);
const char *outcome_method(enum hmethod cmd);

#endif
