# SPDX-License-Identifier: MIT
"""Mutants of Makefile (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("release_warnings_before_the_distributions_flags", "Makefile",
           "REL_CC   = $(CC) $(DEFS) $(REL_FLAGS) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PKG_CFLAGS)",
           "REL_CC   = $(CC) $(BASE) $(REL_FLAGS) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS)",
           ["release_build_keeps_the_projects_warnings"],
           "dpkg's -Wformat undoes -Wformat=2 in the release build"),
    Mutant("installed_config_names_no_pid_file", "Makefile",
           "\t  install -m 644 build/dist/corral.conf $(DESTDIR)$(CONFDIR)/corral.conf; \\",
           "\t  install -m 644 conf/corral.conf $(DESTDIR)$(CONFDIR)/corral.conf; \\",
           ["make_install_lays_out_every_file"],
           "without systemd, logrotate and an upgrade find no PID file"),
]
