# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_refresh.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- one fetch (proxy/proxy_refresh.c) ---------------------------------------
    Mutant("renewal_loss_unnoticed", "proxy/proxy_refresh.c",
           "else if (r == FENCE_LOST)\n\t\tmark_lost(rf);",
           "else if (0)\n\t\tmark_lost(rf);",
           ["renewal_never_extends_a_lock_another_fetch_holds"],
           "a fetch whose renewal found the lock taken over goes on as the holder"),
    Mutant("lock_never_renewed", "proxy/proxy_refresh.c",
           "if (rf->report.mode == RF_LOCKED)\n\t\ttimer_arm(rf->renew_ev",
           "if (0)\n\t\ttimer_arm(rf->renew_ev",
           ["slow_origin_lock_is_renewed"],
           "a fetch slower than lock_ttl lets a second fetcher in"),
    Mutant("lock_never_released", "proxy/proxy_refresh.c",
           "\tif (rf->report.mode == RF_DIRECT || rf->lost)\n\t\treturn RF_DONE;",
           "\tif (1)\n\t\treturn RF_DONE;",
           ["waiters_of_a_failed_fetch_get_its_error_without_a_backoff"],
           "after an unstored fetch the key stays locked until lock_ttl"),
    Mutant("stale_post_refresh_sends_the_requests_body", "proxy/proxy_refresh.c",
           "base != NULL ? base->request :", "base != NULL ? NULL :",
           ["a_stale_post_entry_refreshes_in_the_background_with_its_stored_body",
            "an_early_refresh_of_a_post_entry_sends_its_stored_body"],
           "a refresh does not replay the body stored with the entry"),
    Mutant("post_refresh_sends_validators", "proxy/proxy_refresh.c",
           "a->mode == RF_LOCKED &&\n\t    strcmp(rf->sent.method, \"POST\") != 0)",
           "a->mode == RF_LOCKED)",
           ["a_post_entry_is_refreshed_without_validators"],
           "a POST refresh carries If-None-Match: a 412 (not 304) from the origin"),
    Mutant("operator_refresh_ranked_with_pass_through", "proxy/proxy_refresh.c",
           "rf->budget = a->lowest ? BUDGET_OPERATOR :", "rf->budget = a->lowest ? BUDGET_PASS :",
           ["operators_refresh_waits_behind_pass_through_for_an_origin_slot"],
           "a client's pass-through request waits for an origin slot behind an "
           "operator's refresh"),
    Mutant("pool_cached_post_query_not_replayable", "proxy/proxy_refresh.c",
           "\t\t.replayable = 1,\n",
           "\t\t.replayable = strcmp(rf->sent.method, \"POST\") != 0,\n",
           ["cached_post_query_reset_is_retried_elsewhere_a_mutation_never"],
           "a POST query the route caches, reset before any byte, fails instead "
           "of going to another server"),
    Mutant("stale_copy_kept_when_redis_is_gone", "proxy/proxy_refresh.c",
           "\telse if (rf->report.result == RFR_REDIS_ERROR && rf->stale_copy)\n"
           "\t\tnear_drop(rf->px, rf->key);",
           "\telse if (rf->report.result == RFR_REDIS_ERROR && rf->stale_copy)\n"
           "\t\t(void)0;",
           ["a_stale_copy_whose_refresh_cannot_reach_redis_gives_way_to_a_direct_fetch"],
           "while Redis is down a stale copy is served until it expires, never refetched"),
    Mutant("unwanted_fetch_still_sent", "proxy/proxy_refresh.c",
           "\tif (rf->step != RF_FETCH || rf->fetch == NULL || origin_sent(rf->fetch))\n"
           "\t\treturn;\n\torigin_cancel(&rf->fetch);",
           "\tif (1)\n\t\treturn;\n\torigin_cancel(&rf->fetch);",
           ["clients_that_leave_while_queued_cost_the_origin_nothing"],
           "a miss every client of which left is still fetched when a slot frees"),
    Mutant("not_stored_for_no_said_reason", "proxy/proxy_refresh.c",
           "\t\t\t    cache_is_full(rf->px->cache))",
           "\t\t\t    0)",
           ["a_full_redis_is_said_in_health_cache_status_and_the_log_once_a_second"],
           "a miss Redis had no room for says nothing of why it was not stored"),
    Mutant("change_refreshes_rank_with_cold_misses", "proxy/proxy_refresh.c",
           "BUDGET_EARLY : BUDGET_STALE;", "BUDGET_EARLY : BUDGET_MISS;",
           ["bulk_update_of_100000_rows_goes_through_the_budget"],
           "the refreshes a bulk change causes queue with clients' cold misses, which "
           "wait behind them"),
    Mutant("jwt_refresh_token_not_checked_at_send", "proxy/proxy_refresh.c",
           "\trf->token_expired = !jwt_still_valid(rf->px, &rf->headers);",
           "\trf->token_expired = 0;",
           ["a_refresh_whose_token_expires_while_it_waits_for_a_slot_is_not_sent"],
           "a refresh that waited for its slot sends a token that expired meanwhile"),
]
