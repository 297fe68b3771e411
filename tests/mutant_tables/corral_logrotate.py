# SPDX-License-Identifier: MIT
"""Mutants of dist/corral.logrotate (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("logrotate_signals_every_corral", "dist/corral.logrotate",
           "{ [ -s /run/corral/corral.pid ] && kill -USR1 \"$(cat /run/corral/corral.pid)\"; }",
           "pkill -USR1 -x corral",
           ["logrotate_fallback_signals_only_the_instance_of_its_pid_file"],
           "without systemd, logrotate signals every process called corral"),
]
