#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/origin.py, with TCP_NODELAY on its sockets.

The origin writes a response's head and body in two send() calls. On a
keep-alive connection Nagle's algorithm then holds the body back until the
peer ACKs the head, and a delayed ACK makes that 40 ms: every reused
upstream connection of a proxy (and the bench's warm-up walk) would see
responses 40 ms late. The bench measures the proxies, not that stall, so it
runs the same origin with Nagle off. Arguments are tests/origin.py's.
"""

import os
import sys

sys.dont_write_bytecode = True	# leave no __pycache__ in tests/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
import origin  # noqa: E402

origin.Handler.disable_nagle_algorithm = True

if __name__ == "__main__":
    sys.exit(origin.main())
