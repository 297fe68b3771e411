/* SPDX-License-Identifier: MIT */
/*
 * Peer streaming: the workers of one instance share a response in flight.
 *
 * A cold miss is fetched by the one process of the fleet that wins the
 * key's lock, and the requests of that process get the body as it arrives
 * (proxy_flight.c). With workers > 1, so do the requests of its siblings:
 *
 *	worker S asks the lock	peer_publish(): its row of the shared table
 *				says "fetching hash(K)" until its fetch ends
 *				(or at once, if it finds the lock busy)
 *	worker A finds K busy	peer_find(K) says S; peer_fetch() asks S over
 *				S's socket: GET, Corral-Peer-Key: K
 *	S			a flight for K whose response streams: the
 *				response, the origin's status and head, as it
 *				goes to S's own waiters (flight_attach_peer);
 *				anything else: 204 at once ("no stream")
 *	A			streams it to its own waiters; on a 204, an
 *				error or a cut, A's waiters wait for the fill
 *				as before. A stores nothing, takes no lock and
 *				sends nothing to the origin.
 *
 * Each worker listens on the abstract Unix socket
 * "corral-<master pid>-<slot>-<worker pid>" (the listener is
 * proxy_http.c's; this file holds the table and the asking side). Anyone on the host may
 * connect to an abstract socket, so a request is served only when the
 * kernel says it comes from a sibling worker (SO_PEERCRED), and the
 * asker reads only from the process it meant to ask (upstream.h's
 * listen_pid). Whatever comes in, a peer request can only be given what
 * a client of the public port asking for the same URL could be: a
 * shareable response already streaming to clients. It starts no fetch,
 * sends nothing to Redis and takes no lock.
 *
 * Claims: while Redis cannot lock a key, the workers of one instance
 * still fetch it once. The worker whose compare-and-swap sets the key's
 * cell fetches; its siblings wait until the cell is cleared and read the
 * entry from the shared near cache (proxy_flight.c's SIBLING step).
 */

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/hlist.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "proxy/proxy_flow.h"
#include "proxy/proxy_peer.h"

#define PEER_HOST		"corral-peer"	/* the Host of a peer request */

/* A key's entry in the table: FNV-1a, never 0 (a free entry). */
static uint64_t
key_hash(const char *key)
{
	uint64_t h = util_hash(key);

	return h != 0 ? h : 1;
}

void
peer_socket_name(const struct proxy *px, int slot, pid_t pid,
    char out[PEER_NAME_MAX])
{
	snprintf(out, PEER_NAME_MAX, "corral-%d-%d-%d", (int)px->master_pid,
	    slot, (int)pid);
}

void
peer_forget(struct peer_row *row)
{
	for (int i = 0; i < PEER_FETCHES_MAX; i++)
		atomic_store_explicit(&row->fetching[i], 0,
		    memory_order_relaxed);
}

int
peer_publish(struct proxy *px, const char *key)
{
	struct peer_row *row = &px->slots[px->slot].peer;
	uint64_t h = key_hash(key);

	if (px->peer_lev == NULL)
		return -1;
	for (int i = 0; i < PEER_FETCHES_MAX; i++) {
		if (atomic_load_explicit(&row->fetching[i],
		    memory_order_relaxed) == 0) {
			atomic_store_explicit(&row->fetching[i], h,
			    memory_order_release);
			return i;
		}
	}
	return -1;	/* full: its siblings' waiters wait as before */
}

void
peer_withdraw(struct proxy *px, int *entry)
{
	if (*entry >= 0)
		atomic_store_explicit(&px->slots[px->slot].peer.fetching[*entry],
		    0, memory_order_release);
	*entry = -1;
}

int
peer_find(struct proxy *px, const char *key)
{
	uint64_t h = key_hash(key);

	if (px->peers == NULL || strchr(key, ' ') != NULL)
		return -1;	/* a key goes in a header with '\n' as ' ' */
	for (int s = 0; s < px->nslots; s++) {
		const struct peer_row *row = &px->slots[s].peer;

		if (s == px->slot || px->slots[s].pid <= 0)
			continue;
		for (int i = 0; i < PEER_FETCHES_MAX; i++)
			if (atomic_load_explicit(&row->fetching[i],
			    memory_order_acquire) == h)
				return s;
	}
	return -1;
}

struct upstream_fetch *
peer_fetch(struct proxy *px, int slot, const char *key, const char *uri,
    upstream_data_cb *on_data, upstream_done_cb *cb, void *arg)
{
	const struct conf *conf = px->conf;
	char name[PEER_NAME_MAX], value[FLOW_KEY_MAX + 1], *p;
	char *url;
	size_t urllen = sizeof("http://" PEER_HOST) + strlen(uri);
	pid_t pid = px->slots[slot].pid;
	struct hlist headers;
	struct upstream_fetch *f;
	struct upstream_request ur = {
		.method = "GET",
		.connect_timeout_ms = conf->pools[0].connect_timeout_ms,
		.timeout_ms = conf_timeout_max(conf),	/* the sibling's fetch's,
							 * whatever its pool */
		/* As a refresh's: a body the flight takes whole (none, from
		 * a sibling) is bounded; a streamed one is its clients'. */
		.max_body_bytes = PASS_BODY_MAX,
		.on_data = on_data,
		.data_arg = arg,
		.keep_body = 0,
		.abstract_socket = name,
		.listen_pid = pid,
	};

	assert(slot != px->slot && slot < px->nslots);
	if (pid <= 0 || (url = malloc(urllen)) == NULL)
		return NULL;
	snprintf(url, urllen, "http://" PEER_HOST "%s", uri);
	peer_socket_name(px, slot, pid, name);
	snprintf(value, sizeof(value), "%s", key);
	while ((p = strchr(value, '\n')) != NULL)
		*p = ' ';
	hl_init(&headers);
	hl_add(&headers, PEER_KEY_HEADER, value);
	ur.url = url;
	ur.headers = &headers;
	f = upstream_fetch(px->peers, &ur, cb, arg);
	hl_free(&headers);
	free(url);
	return f;
}

/* ---- the instance's claims: one fetch per instance without Redis ---- */

#define CLAIM_PID_BITS		32
#define CLAIM_PID_MASK		((UINT64_C(1) << CLAIM_PID_BITS) - 1)

/* key's cell, and what it holds while this worker claims it. FNV-1a's
 * upper bits hardly change with a key's last bytes: they are mixed first
 * (MurmurHash3's finalizer). */
static _Atomic uint64_t *
claim_cell(struct proxy *px, const char *key, uint64_t *mine)
{
	uint64_t h = util_hash(key);
	struct peer_row *row;

	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	row = &px->slots[h % (uint64_t)px->nslots].peer;
	*mine = (h & ~CLAIM_PID_MASK) | ((uint64_t)getpid() & CLAIM_PID_MASK);
	return &row->claims[(h >> CLAIM_PID_BITS) % PEER_CLAIMS_MAX];
}

/* Is pid a running worker of this instance (not this one)? */
static int
sibling_pid(const struct proxy *px, uint64_t pid)
{
	for (int s = 0; s < px->nslots; s++)
		if (s != px->slot && px->slots[s].pid > 0 &&
		    (uint64_t)px->slots[s].pid == pid)
			return 1;
	return 0;
}

enum peer_claim
peer_claim(struct proxy *px, const char *key)
{
	_Atomic uint64_t *cell;
	uint64_t mine, held;

	if (px->nslots < 2)
		return CLAIM_NONE;
	cell = claim_cell(px, key, &mine);
	held = atomic_load_explicit(cell, memory_order_acquire);
	for (;;) {
		if (held != 0 && sibling_pid(px, held & CLAIM_PID_MASK))
			return (held & ~CLAIM_PID_MASK) == (mine &
			    ~CLAIM_PID_MASK) ? CLAIM_SIBLING : CLAIM_NONE;
		if (held != 0 && (held & CLAIM_PID_MASK) == (mine &
		    CLAIM_PID_MASK))
			return CLAIM_NONE;	/* a fetch of ours has it */
		/* Free, or left by a worker that died. */
		if (atomic_compare_exchange_weak_explicit(cell, &held, mine,
		    memory_order_acq_rel, memory_order_acquire))
			return CLAIM_TAKEN;
	}
}

void
peer_unclaim(struct proxy *px, const char *key)
{
	uint64_t mine, expected;
	_Atomic uint64_t *cell;

	if (px->nslots < 2)
		return;
	cell = claim_cell(px, key, &mine);
	expected = mine;
	(void)atomic_compare_exchange_strong_explicit(cell, &expected, 0,
	    memory_order_release, memory_order_relaxed);
}

int
peer_claimed(struct proxy *px, const char *key)
{
	_Atomic uint64_t *cell;
	uint64_t mine, held;

	if (px->nslots < 2)
		return 0;
	cell = claim_cell(px, key, &mine);
	held = atomic_load_explicit(cell, memory_order_acquire);
	return (held & ~CLAIM_PID_MASK) == (mine & ~CLAIM_PID_MASK) &&
	    sibling_pid(px, held & CLAIM_PID_MASK);
}
