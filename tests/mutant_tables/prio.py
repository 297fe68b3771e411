# SPDX-License-Identifier: MIT
"""Mutants of common/prio.h (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("a_source_file_without_its_licence_line", "common/prio.h",
           "/* SPDX-License-Identifier: MIT */\n#ifndef COMMON_PRIO_H",
           "#ifndef COMMON_PRIO_H",
           ["every_source_file_names_its_licence"],
           "a source file that does not say its licence"),
]
