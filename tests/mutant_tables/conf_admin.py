# SPDX-License-Identifier: MIT
"""Mutants of conf/conf_admin.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("token_credential_read_next_to_the_conf", "conf/conf_admin.c",
           "if (file[0] == '/' || strchr(file, '/') == NULL ||", "if (file[0] == '/' ||",
           ["token_file_from_a_systemd_credential_or_group_readable_is_taken"],
           "admin_token_file = NAME under LoadCredential= is looked for next to the "
           "configuration, and Corral does not start"),
    Mutant("token_next_to_a_relative_conf_left_relative", "conf/conf_admin.c",
           "\tif (base[0] == '/')\n", "\tif (1)\n",
           ["token_file_from_a_systemd_credential_or_group_readable_is_taken"],
           "admin_token_file = ./NAME beside corral -c corral.conf is refused as "
           "neither absolute nor a credential"),
    Mutant("token_read_scope_lost", "conf/conf_admin.c",
           "\t\tt->scope = SCOPE_READ;", "\t\tt->scope = SCOPE_ALL;",
           ["purge_needs_a_token_with_its_scope"],
           "a token marked read may change everything"),
    Mutant("token_short_accepted", "conf/conf_admin.c",
           "if (lens[0] < CONF_TOKEN_MIN ||", "if (lens[0] < 1 ||",
           ["bad_token_files_refuse_to_start_and_keep_the_old_tokens"],
           "a guessable five-letter token is taken without a word"),
]
