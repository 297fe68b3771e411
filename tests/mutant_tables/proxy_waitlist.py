# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_waitlist.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("vary_every_waiter_shares_the_leads_variant", "proxy/proxy_waitlist.c",
           "\t    strcmp(id, v->variant) == 0;",
           "\t    1;",
           ["cold_stampede_with_different_vary_values_each_gets_its_own_variant"],
           "waiters get the variant of another request's headers"),
    Mutant("per_user_response_shared_with_waiters", "proxy/proxy_waitlist.c",
           "|| (v->partial && v->entry != NULL) ||\n\t\t    (!lead && !v->shareable))",
           "|| (v->partial && v->entry != NULL))",
           ["private_answer_of_a_shared_fetch_goes_to_its_requester_only"],
           "a private or no-store answer goes to every waiter"),
]
