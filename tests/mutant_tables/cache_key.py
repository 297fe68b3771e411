# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_key.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("key_host_bytes_unescaped", "cache/cache_key.c",
           "\t\tif (safe_class(c) & SAFE_HOST)\n\t\t\temit(s, c);",
           "\t\tif (1)\n\t\t\temit(s, c);",
           ["test_key"],
           "a Host of a.test/admin makes the key of a.test's /admin page"),
    Mutant("key_unreserved_escapes_kept", "cache/cache_key.c",
           "\t\t\tif (safe_class(c) & SAFE_UNRESERVED)\n\t\t\t\temit(s, c);",
           "\t\t\tif (0)\n\t\t\t\temit(s, c);",
           ["test_key"],
           "/%61 and /a are two keys and two fetches"),
    Mutant("key_long_urls_collide", "cache/cache_key.c",
           "\th[0] = fmix64(s->h1 ^ (uint64_t)s->len);\n\th[1] = fmix64(s->h2 + (uint64_t)s->len);",
           "\th[0] = fmix64((uint64_t)s->len);\n\th[1] = h[0];",
           ["test_key"],
           "two long URLs with the same prefix and length share one entry: one page served for another"),
    Mutant("key_covers_a_longer_name", "cache/cache_key.c",
           "(key[base_len] == '\\0' || key[base_len] == CACHE_VARIANT_SEP);",
           "1;",
           ["test_key", "test_l1"],
           "a purge of /a drops /ab too"),
    Mutant("key_slot_ignores_the_hash_tag", "cache/cache_key.c",
           "\t    close > open + 1)\n\t\treturn crc16(open + 1",
           "\t    close > open + 1 && 0)\n\t\treturn crc16(open + 1",
           ["test_key"],
           "a key's entry, lock and tags land on different cluster slots: CROSSSLOT"),
]
