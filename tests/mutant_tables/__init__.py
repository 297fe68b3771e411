# SPDX-License-Identifier: MIT
"""The mutants tests/mutants.py runs, one table per module: a file of the
code (proxy_conn.py for proxy/proxy_conn.c), docs.py for the docs. Each
table's MUTANTS is a list of Mutant(name, file, find, replace, tests, why).
All of them, in the order of the tables' names, are MUTANTS here.
"""

import importlib
import os
from collections import namedtuple

Mutant = namedtuple("Mutant", "name file find replace tests why")

TABLES = sorted(f[:-3] for f in os.listdir(os.path.dirname(os.path.abspath(__file__)))
                if f.endswith(".py") and f != "__init__.py")
MUTANTS = [m for t in TABLES
           for m in importlib.import_module(f".{t}", __name__).MUTANTS]
