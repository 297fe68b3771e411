# SPDX-License-Identifier: MIT
"""Mutants of common/arena.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("arena_keeps_a_block_past_its_limit", "common/arena.c",
           "\tif (b->next == NULL && b->cap <= ARENA_KEEP_MAX) {",
           "\tif (b->next == NULL) {",
           ["test_arena"],
           "a connection that once read a huge request keeps its memory for good"),
]
