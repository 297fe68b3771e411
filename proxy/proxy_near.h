/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_NEAR_H
#define PROXY_PROXY_NEAR_H

/*
 * The near caches: the worker's own (cache_l1.h), then the one its
 * instance's workers share (cache_l2.h), asked as one. Keys are flight
 * keys ("K" or a variant "K\nID").
 */

#include <stdint.h>

struct cache_entry;
struct proxy;

/* A fresh copy of key, or with stale_ok a stale one (in its
 * stale_while_revalidate window): the caller takes the reference. NULL
 * when neither holds one. */
struct cache_entry *near_get(struct proxy *px, const char *key,
	    int64_t now_ms, int stale_ok);
/* e is fresh, or stale (in its stale_while_revalidate window): both keep
 * it. */
void	near_put(struct proxy *px, const char *key, struct cache_entry *e);
/* The worker's copy of key started a refresh now (within_ms 0); or did it
 * start one less than within_ms ago? So that a stale copy's hits start
 * one refresh a lock_poll, not one each. */
int	near_refresh_asked(struct proxy *px, const char *key, int64_t within_ms);
/* Drops key and its variants from both. */
void	near_drop(struct proxy *px, const char *key);
void	near_drop_prefix(struct proxy *px, const char *prefix);
/* A fill of key: the copies here are older. Returns e if it may serve
 * (fresh, not a Vary marker; both caches keep it then), else NULL. */
struct cache_entry *near_fill(struct proxy *px, const char *key,
	    struct cache_entry *e);
/* cache_on_purge()'s callback: a purge or invalidation anywhere in the
 * fleet, of key, or NULL when some may have been missed. */
void	near_on_purge(const char *key, void *arg);

#endif
