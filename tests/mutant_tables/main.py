# SPDX-License-Identifier: MIT
"""Mutants of proxy/main.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("master_keeps_the_old_configuration", "proxy/main.c",
           "\t\t\tfree(conf);\n\t\t\tconf = new;",
           "\t\t\tfree(new);",
           ["a_worker_respawned_after_a_reload_runs_what_the_instance_runs"],
           "a worker started after a crash loses the reload's routes and TTLs"),
    Mutant("stop_waits_for_workers_that_are_gone", "proxy/main.c",
           "\ttell_workers(sig);\n\tif (workers_left() == 0)\n\t\tevent_base_loopexit(master.base, NULL);",
           "\ttell_workers(sig);",
           ["a_stop_signal_ends_the_master_while_no_worker_runs"],
           "a stop signal that arrives while no worker runs is never acted on"),
    Mutant("workers_that_cannot_start_are_restarted_forever", "proxy/main.c",
           "\tif (master.fails[i] >= START_TRIES) {",
           "\tif (0) {",
           ["workers_that_cannot_start_are_restarted_three_times"],
           "a worker that cannot start is restarted forever: the start never fails"),
    Mutant("stop_never_kills_a_hung_worker", "proxy/main.c",
           "\tmaster.status = 1;\n\ttell_workers(SIGKILL);",
           "\tmaster.status = 1;",
           ["a_stop_kills_a_stopped_worker_after_shutdown_timeout"],
           "a stopped or hung worker keeps the master from ever exiting"),
    Mutant("corral_s_sends_no_token", "proxy/main.c",
           '\tasked = snprintf(ask, sizeof(ask), "GET " SHOW_PATH',
           '\tauth[0] = \'\\0\';\n\tasked = snprintf(ask, sizeof(ask), "GET " SHOW_PATH',
           ["corral_s_sends_the_admin_token"],
           "corral -s prints 401 and exits with admin_token_file"),
]
