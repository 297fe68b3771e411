# SPDX-License-Identifier: MIT
"""Mutants of conf/conf_pool.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("conf_weight_ignored", "conf/conf_pool.c",
           "\t*w = (int)n;", "\t*w = 1;",
           ["test_conf"], "weight=N is read and dropped"),
    Mutant("conf_only_the_first_server", "conf/conf_pool.c",
           "\tp->nservers = n;", "\tp->nservers = n > 0 ? 1 : 0;",
           ["test_conf", "route_with_its_own_pool_never_sends_to_the_default_pool"],
           "url keeps its first server only"),
    Mutant("conf_unknown_pool_accepted", "conf/conf_pool.c",
           "if (r->upstream[0] != '\\0' &&\n\t\t    conf_pool_find",
           "if (0 &&\n\t\t    conf_pool_find",
           ["test_conf", "pool_config_errors_name_file_and_line"],
           "a route naming no pool is accepted (its requests go to the default)"),
    # -- the small edges of issue 34 (conf/, proxy/main.c, proxy_json.c,
    #    Makefile, scripts/make-deb) ---------------------------------------------
    Mutant("pool_named_default_accepted", "conf/conf_pool.c",
           "\tif (len == strlen(POOL_DEFAULT_NAME) &&",
           "\tif (0 && len == strlen(POOL_DEFAULT_NAME) &&",
           ["test_conf"],
           "[upstream default] and [upstream] give the same /metrics series"),
]
