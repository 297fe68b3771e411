/* SPDX-License-Identifier: MIT */
/*
 * The local share's counters in shared memory (proxy_share.h). Only a
 * worker writes its own row; any reads them all.
 */

#include "proxy/proxy_share.h"

#include <stdatomic.h>
#include <string.h>

#include "common/util.h"
#include "proxy/proxy.h"

uint64_t
share_id(const char *pool, const char *server)
{
	/* The pool's name with its '\0', so that no pool and server pair
	 * reads as another. */
	uint64_t h = util_hash_more(UTIL_HASH_INIT, pool, strlen(pool) + 1);

	if (server != NULL)
		h = util_hash_more(h, server, strlen(server));
	return h != 0 ? h : 1;		/* 0: a free column */
}

static struct budget_slot *
my_row(struct proxy *px)
{
	return &px->slots[px->slot].budget;
}

/* This worker's column for id: the one it has, else a free one (no slot
 * held in it) named id now. -1: none left. */
static int
column(struct budget_slot *row, uint64_t id)
{
	for (int i = 0; i < BUDGET_COLUMNS; i++)
		if (atomic_load(&row->id[i]) == id)
			return i;
	for (int i = 0; i < BUDGET_COLUMNS; i++) {
		if (atomic_load(&row->local[i]) == 0) {
			atomic_store(&row->id[i], id);
			return i;
		}
	}
	return -1;
}

/*
 * Every worker names its column and adds its own slot first, then counts
 * them all, so that two at once can never both take the last one (both
 * may miss it: they look again). A column renamed meanwhile held nothing.
 */
int
share_take(struct proxy *px, uint64_t id, int64_t share)
{
	struct budget_slot *row = my_row(px);
	int64_t sum = 0;
	int col;

	if ((col = column(row, id)) == -1)
		return -1;
	atomic_fetch_add(&row->local[col], 1);
	for (int w = 0; w < px->nslots; w++) {
		struct budget_slot *r = &px->slots[w].budget;

		for (int i = 0; i < BUDGET_COLUMNS; i++)
			if (atomic_load(&r->id[i]) == id)
				sum += atomic_load(&r->local[i]);
	}
	if (sum <= share)
		return col;
	atomic_fetch_sub(&row->local[col], 1);
	return -1;
}

void
share_give(struct proxy *px, int *colp)
{
	if (*colp == -1)
		return;
	atomic_fetch_sub(&my_row(px)->local[*colp], 1);
	*colp = -1;
}

void
share_forget(struct budget_slot *row)
{
	for (int i = 0; i < BUDGET_COLUMNS; i++) {
		atomic_store(&row->local[i], 0);
		atomic_store(&row->id[i], 0);
	}
}
