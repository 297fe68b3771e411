# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_hdr.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("stale_if_error_from_the_end_of_staleness", "proxy/proxy_hdr.c",
           "return now < fresh_until_ms + f.sie_ms;",
           "return now < fresh_until_ms + f.swr_ms + f.sie_ms;",
           ["stale_if_error_window_runs_from_the_end_of_freshness"],
           "an entry is served on errors stale_while_revalidate past its stale_if_error"),
    # -- proxy/proxy_hdr.c --
    Mutant("set_cookie_response_shared", "proxy/proxy_hdr.c",
           '\t*why = hl_find(resp, "Set-Cookie") != NULL ? "set-cookie" :',
           '\t*why = 0 ? "set-cookie" :',
           ["test_hdr", "per_user_answer_long_enough_to_stream_goes_to_its_requester_only"],
           "a response that sets one user's cookie is stored and served to everyone"),
    Mutant("age_not_subtracted", "proxy/proxy_hdr.c",
           "\t\tlifetime -= secs(age);",
           "\t\t(void)age;",
           ["test_hdr"],
           "an answer that aged in another cache is kept for its whole max-age again"),
    Mutant("if_none_match_by_prefix", "proxy/proxy_hdr.c",
           "if (n == taglen && n > 0 && strncmp(p, tag, n) == 0)",
           "if (n > 0 && strncmp(p, tag, n) == 0)",
           ["test_hdr"],
           'If-None-Match: "v" gets a 304 for an entry whose ETag is "v1"'),
    # -- strict to the last detail (issue 27) -----------------------------------
    Mutant("age_list_not_first_member", "proxy/proxy_hdr.c",
           "n = strcspn(age, \",\");", "n = strlen(age);",
           ["age_list_or_repeated_age_counts_its_first_value", "test_hdr"],
           "Age: 7200, 0 is ignored: a response 2 h old is served as fresh"),
    Mutant("targeted_directive_type_unchecked", "proxy/proxy_hdr.c",
           "if (m->type != SF_INTEGER || m->integer < 0)",
           "if (m->integer < 0)",
           ["targeted_cache_control_that_is_not_a_dictionary", "test_hdr"],
           "max-age=\"10000\" in CDN-Cache-Control overrides Cache-Control: no-store"),
    # -- signed-in traffic: what may go to another request ----------------------
    Mutant("authorized_answer_shared_without_public", "proxy/proxy_hdr.c",
           "\t    authorized && !cc->public_ && cc->s_maxage < 0 &&",
           "\t    0 && !cc->public_ && cc->s_maxage < 0 &&",
           ["cache_authorized_on_never_hands_one_users_answer_to_another",
            "test_hdr"],
           "with cache_authorized = on, one user's answer goes to every waiter"),
    Mutant("underscored_fields_forwarded", "proxy/proxy_hdr.c",
           "\tif ((flags & HDR_DROP_UNDERSCORED) && strchr(name, '_') != NULL)",
           "\tif ((flags & HDR_DROP_UNDERSCORED) && strchr(name, '_') == NULL &&\n"
           "\t    strchr(name, '_') != NULL)",
           ["a_credential_spelled_with_underscores_never_reaches_the_origin",
            "a_keyed_field_spelled_with_underscores_cannot_poison_the_unkeyed_entry"],
           "X_API_Key reaches an origin that reads it as X-API-Key"),
]
