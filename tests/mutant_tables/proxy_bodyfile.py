# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_bodyfile.c (tests/mutants.py runs them)."""

from . import Mutant

SENDFILE = "a_large_body_goes_by_sendfile_from_its_eighth_answer_and_its_file_goes_with_it"

MUTANTS = [
    Mutant("bodyfile_min_exclusive", "proxy/proxy_bodyfile.c",
           "len < BODYFILE_MIN ||", "len <= BODYFILE_MIN ||",
           [SENDFILE],
           "a body of exactly 32 KiB never gets a file"),
    Mutant("bodyfile_one_ask_early", "proxy/proxy_bodyfile.c",
           "(++f->asks & 63) != BODYFILE_ASKS", "(++f->asks & 63) != BODYFILE_ASKS - 1",
           [SENDFILE],
           "a body gets its file on the seventh answer, not the eighth"),
    Mutant("bodyfile_bytes_unbounded", "proxy/proxy_bodyfile.c",
           "\t    counters.bytes + (int64_t)len > max_bytes ||\n", "",
           ["body_files_stay_within_l1_max_bytes_and_the_rest_go_from_memory"],
           "the files of a worker grow past l1_max_bytes"),
    Mutant("bodyfile_bytes_bound_exclusive", "proxy/proxy_bodyfile.c",
           "counters.bytes + (int64_t)len > max_bytes ||",
           "counters.bytes + (int64_t)len >= max_bytes ||",
           ["body_files_stay_within_l1_max_bytes_and_the_rest_go_from_memory"],
           "a file that would fill the bound exactly is refused"),
    Mutant("bodyfile_drop_keeps_its_count", "proxy/proxy_bodyfile.c",
           "\tcounters.files--;\n", "",
           [SENDFILE],
           "a file let go still counts as held (and against the bound)"),
    Mutant("bodyfile_plain_is_the_body", "proxy/proxy_bodyfile.c",
           "const unsigned char *p = plain ? e->plain : e->body;",
           "const unsigned char *p = e->body;",
           [SENDFILE],
           "an identity client of a compressed entry is sent the compressed bytes "
           "from the file (with the decoded length)"),
]
