# SPDX-License-Identifier: MIT
"""Mutants of scripts/make-deb (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("deb_stamped_with_the_build_time", "scripts/make-deb",
           "export SOURCE_DATE_EPOCH\t# dpkg-deb: the ar members' and tar entries' times\n",
           "",
           ["deb_built_twice_is_the_same_byte_for_byte"],
           "two builds of one version make two different .deb files"),
]
