/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_SHARE_H
#define PROXY_PROXY_SHARE_H

/*
 * The local share's counters (proxy_budget.h): while Redis is unavailable,
 * the slots each worker holds of a cap (a pool's max_requests, or one
 * server's max_requests_per_server), in its row of the memory the workers
 * share (struct budget_slot). A cap is named by its identity, not by a
 * column: each worker keeps a cap's slots in a column of its own choosing
 * named by that identity, and counting a cap sums the columns of that
 * name in every row, so that workers whose pools differ (one still drains
 * a pool a reload removed) never add up unrelated caps.
 */

#include <stdint.h>

struct proxy;
struct budget_slot;

/* The identity of pool's cap (server NULL), or of one server's (its URL);
 * never 0. */
uint64_t share_id(const char *pool, const char *server);
/* One slot of the cap id, if the instance holds fewer than share: the
 * column it is counted in (for share_give), or -1. */
int	share_take(struct proxy *px, uint64_t id, int64_t share);
/* Gives back the slot counted in *colp (-1: none); sets it to -1. */
void	share_give(struct proxy *px, int *colp);
/* A row whose worker died or starts: it holds nothing. */
void	share_forget(struct budget_slot *row);

#endif
