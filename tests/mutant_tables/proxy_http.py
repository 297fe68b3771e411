# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_http.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("peer_socket_open_to_anyone", "proxy/proxy_http.c",
           "\tif (!from_sibling(px, r)) {",
           "\tif (0 && !from_sibling(px, r)) {",
           ["a_peer_socket_answers_no_process_but_a_sibling_worker"],
           "any process on the host can read a response in flight"),
    Mutant("admin_connections_uncapped", "proxy/proxy_http.c",
           "\tif (px->admin_conns >= conf->admin_max_connections) {",
           "\tif (0) {",
           ["idle_admin_connections_are_capped_and_never_starve_the_public_port"],
           "idle admin connections take every descriptor; the public port starves"),
    Mutant("admin_outsiders_counted_with_the_allowed", "proxy/proxy_http.c",
           "if (conf->nadmin_allow > 0 && !peer_allowed(px, sa)) {",
           "if (conf->nadmin_allow > 0 && !peer_allowed(px, sa) && 0) {",
           ["idle_connections_from_outside_admin_allow_never_lock_the_operators_out"],
           "idle connections from outside admin_allow fill admin_max_connections: "
           "operators and their probes are locked out"),
    Mutant("admin_outsiders_uncapped", "proxy/proxy_http.c",
           "if (px->admin_outside >= ADMIN_OUTSIDE_MAX) {", "if (0) {",
           ["idle_connections_from_outside_admin_allow_never_lock_the_operators_out"],
           "peers outside admin_allow hold as many idle connections as they like"),
    Mutant("admin_outsiders_never_released", "proxy/proxy_http.c",
           "\tpx->admin_outside--;",
           "\t(void)0;",
           ["idle_connections_from_outside_admin_allow_never_lock_the_operators_out"],
           "/health from outside admin_allow stays refused once its connections closed"),
    Mutant("admin_turned_away_left_open", "proxy/proxy_http.c",
           "\t\t(void)send(fd, reply, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);\n\tevutil_closesocket(fd);",
           "\t\t(void)send(fd, reply, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);",
           ["idle_admin_connections_are_capped_and_never_starve_the_public_port"],
           "an admin connection past the cap is answered but keeps its descriptor"),
    # -- proxy/proxy_http.c --
    Mutant("max_connections_off_by_one", "proxy/proxy_http.c",
           "int full = px->nclients >= px->conf->max_connections;",
           "int full = px->nclients > px->conf->max_connections;",
           ["at_most_max_connections_clients_are_accepted"],
           "one client more than max_connections is let in"),
    Mutant("accept_failures_logged_every_time", "proxy/proxy_http.c",
           "\tif (now - px->accept_logged_ms >= ACCEPT_LOG_MS) {",
           "\tif (1) {",
           ["descriptor_exhaustion_backs_off_quietly_and_recovers"],
           "a descriptor shortage writes a log line per failed accept(): the log floods"),
    # -- start-up and stop: one instance per address, a master that always
    #    ends (proxy/proxy_http.c, proxy/main.c) --------------------------------
    Mutant("listeners_share_the_port_with_anyone", "proxy/proxy_http.c",
           "\t    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||\n",
           "\t    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||\n"
           "\t    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||\n",
           ["a_second_instance_on_the_same_address_is_refused"],
           "a second instance on the address starts and takes part of the traffic"),
]
