# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_unzip.c and what it leans on (tests/mutants.py
runs them)."""

from . import Mutant

STREAMED = "a_body_decoded_as_its_client_takes_it_arrives_whole_with_its_length"

MUTANTS = [
    Mutant("unzip_window_ignored", "proxy/proxy_unzip.c",
           "hreq_backlog(u->ev) < UNZIP_WINDOW &&", "1 &&",
           [STREAMED],
           "a slow client's body is decoded whole into its connection's buffer"),
    Mutant("unzip_every_decoder", "proxy/proxy_unzip.h",
           "#define UNZIP_MAX\t(CODEC_DECODERS_MAX / 2)",
           "#define UNZIP_MAX\tCODEC_DECODERS_MAX",
           ["decoded_bodies_held_for_slow_clients_are_bounded"],
           "slow identity clients can hold every decoder, and what is stored goes "
           "unchecked"),
    Mutant("unzip_without_its_length", "proxy/proxy_unzip.c",
           "\t(void)hl_add(&ev->out, \"Content-Length\", num);\n", "",
           [STREAMED],
           "a body decoded as it goes is sent chunked, without its length"),
    Mutant("unzip_never_hears_a_broken_socket", "proxy/proxy_conn.c",
           "\tif (c->written != NULL)\n\t\tevent_active(c->written_ev, EV_TIMEOUT, 0);\n"
           "\tif (!c->busy)",
           "\tif (!c->busy)",
           [STREAMED],
           "a decoding whose client went away holds its decoder and entry for good"),
]
