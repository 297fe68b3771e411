# SPDX-License-Identifier: MIT
"""Mutants of conf/conf_secret.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("secret_file_readable_by_others_accepted", "conf/conf_secret.c",
           "if (st.st_mode & OTHERS_MAY) {", "if (0) {",
           ["password_file_errors_name_the_file_and_line_never_the_secret",
            "bad_token_files_refuse_to_start_and_keep_the_old_tokens", "test_conf"],
           "a password or token file anyone on the host can read is used"),
    Mutant("secret_file_newline_kept", "conf/conf_secret.c",
           "while (len > 0 && (buf[len - 1] == '\\n' || buf[len - 1] == '\\r'))",
           "while (0)",
           ["acl_user_with_password_file_or_credential_caches_once_for_the_fleet"],
           "a password file ending in a newline (as editors write it) is refused"),
    Mutant("secret_credentials_prefix_not_understood", "conf/conf_secret.c",
           "\tif (strncmp(name, SECRET_CREDENTIALS_PREFIX, plen) == 0)\n\t\tname += plen;\n",
           "\tif (0)\n\t\tname += plen;\n",
           ["acl_user_with_password_file_or_credential_caches_once_for_the_fleet",
            "token_file_from_a_systemd_credential_or_group_readable_is_taken"],
           "password_file = $CREDENTIALS_DIRECTORY/name, as systemd writes it, "
           "is refused"),
    Mutant("secret_file_of_two_lines_accepted", "conf/conf_secret.c",
           "strpbrk(buf, \"\\r\\n\") != NULL", "0",
           ["password_file_errors_name_the_file_and_line_never_the_secret"],
           "a file with a second line sends both lines as the password"),
    Mutant("token_file_mode_unchecked", "conf/conf_secret.c",
           "if (group == SECRET_GROUP_READS && (st.st_mode & S_IWGRP)) {", "if (0) {",
           ["token_file_from_a_systemd_credential_or_group_readable_is_taken"],
           "a token file its group may write is taken: any member adds a token"),
    Mutant("secret_file_others_may_write", "conf/conf_secret.c",
           "#define OTHERS_MAY\t\t(S_IROTH | S_IWOTH)", "#define OTHERS_MAY\t\tS_IROTH",
           ["test_conf"],
           "a token file or Redis password others may write (0602) is used"),
    Mutant("token_file_group_may_write", "conf/conf_secret.c",
           "if (group == SECRET_GROUP_READS && (st.st_mode & S_IWGRP)) {", "if (0) {",
           ["test_conf"],
           "a token file its group may write (0620) is used"),
]
