#!/usr/bin/env python3
"""Which configuration keys no scenario sets to a value other than their
default: the key table comes from `corral -h`, the settings from the text
of the scenarios and the harness (Python standard library only).

    python3 tests/config_keys.py [--bin build/asan/corral]

A setting is found where a key is written with a value, in any of the
forms the scenarios use: a dict entry ("ttl": "1s"), a keyword argument
(pool_extra(max_fails=3)) or an INI line inside a string ("ttl = 1s").
A literal value is compared with the default (durations, sizes and
booleans in any spelling); a value computed at run time (a variable, an
f-string) counts as another value. The scan is textual and crude: it
proves that a scenario writes the key with another value, not that it
looks at what that value changes, and a name two sections share
(timeout, max_body_bytes) counts once for both.

It prints each key no scenario sets otherwise, one a line, then a count;
the exit status is 1 when there is any. test_config.py's
every_config_key_is_set_otherwise_by_a_scenario runs it.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
SOURCES = [os.path.join(TESTS_DIR, "scenarios", "*.py"),
           os.path.join(TESTS_DIR, "harness", "*.py")]

DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
SIZE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
BOOLEANS = {"on": "1", "yes": "1", "true": "1", "off": "0", "no": "0", "false": "0"}


def key_table(binary):
    """[(section, key, default)] of `corral -h` ("(empty)" as "")."""
    out = subprocess.run([binary, "-h"], capture_output=True, text=True, check=False)
    text = out.stdout + out.stderr
    keys, seen = [], False
    for line in text.splitlines():
        if line.startswith("SECTION"):
            seen = True
            continue
        m = re.match(r"^\[(server|redis|upstream|route PREFIX)\]\s+(\S+)\s+(\S+)", line)
        if seen and m:
            section = m.group(1).split()[0]
            default = "" if m.group(3) == "(empty)" else m.group(3)
            keys.append((section, m.group(2), default))
    if not keys:
        raise SystemExit(f"{binary} -h printed no key table")
    return keys


def normal(value):
    """A value in one spelling: durations in ms, sizes in bytes, booleans
    as 1 or 0, numbers without a trailing .0."""
    v = value.strip().strip("'\"").strip().lower()
    if v in BOOLEANS:
        return BOOLEANS[v]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", v)
    if m:
        return f"{float(m.group(1)) * DURATION_MS[m.group(2)]:g}ms"
    m = re.fullmatch(r"(\d+)([kmg]?)", v)
    if m:
        return str(int(m.group(1)) * SIZE[m.group(2)])
    m = re.fullmatch(r"\d+\.\d+", v)
    if m:
        return f"{float(v):g}"
    return v


def literal(expr):
    """The text of a plain string or number literal, or None when expr is
    computed (an f-string with a field, a name, a call)."""
    expr = expr.strip()
    m = re.fullmatch(r"""(?:"([^"{}\\]*)"|'([^'{}\\]*)'|f"([^"{}\\]*)"|(-?\d+(?:\.\d+)?))""",
                     expr)
    if not m:
        return None
    return next(g for g in m.groups() if g is not None)


# Names the harness's own functions take as keyword arguments too
# (timeout=, prefix=, url=, ...): their keyword form says nothing.
PYTHON_KEYWORDS = {"timeout", "url", "prefix", "mode", "address", "username", "password"}
# A key spelled like a section of corral_config's extra= ({"upstream": up}):
# only a literal value of it is a setting.
SECTION_NAMES = {"upstream"}


def settings(text, key):
    """The values key is written with in text: literal text, or None for
    a computed one."""
    k = re.escape(key)
    found = []
    # "key": value   (a dict entry; the value up to a comma or a brace)
    for m in re.finditer(rf"""["']{k}["']\s*:\s*([^,}}\n]+)""", text):
        value = literal(m.group(1))
        if value is not None or key not in SECTION_NAMES:
            found.append(value)
    # key=value      (a keyword argument)
    if key not in PYTHON_KEYWORDS:
        for m in re.finditer(rf"""[(,\s]{k}=([^,)\n]+)""", text):
            found.append(literal(m.group(1)))
    # key = value    (an INI line inside a string, at the start of a line:
    # one word, then the end of the line or of the string)
    for m in re.finditer(rf"""(?:\\n|\n|["'])[ \t]*{k} = ([^\s\\"']+)(?=\\n|\n|["']|$)""",
                         text):
        value = m.group(1)
        found.append(None if "{" in value else value)
    return found


def uncovered(binary):
    """[(section, key, default)] that no scenario sets otherwise."""
    texts = [open(p, encoding="utf-8").read() for pattern in SOURCES
             for p in sorted(glob.glob(pattern))]
    text = "\n".join(texts)
    missing = []
    for section, key, default in key_table(binary):
        values = settings(text, key)
        if not any(v is None or normal(v) != normal(default) for v in values):
            missing.append((section, key, default))
    return missing


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "asan", "corral"))
    args = ap.parse_args(argv)
    missing = uncovered(args.bin)
    for section, key, default in missing:
        print(f"[{section}] {key} (default {default or '(empty)'})")
    print(f"{len(missing)} keys no scenario sets to another value")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
