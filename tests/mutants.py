#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mutation tests of the lock protocol and the request flow: make test-mutants.

    python3 tests/mutants.py [-k NAME]... [--list] [--no-baseline]

Each mutant below changes one thing Corral must get right (a token compare,
NX or PX on the lock, a wake-up, ...) by replacing an exact text of one
file, and names the tests that must fail because of it. The runner mirrors
the working tree (the files git tracks or would track) into a scratch copy,
build/mutants/tree, and works only there, so an interrupted run never
leaves the real tree changed. For each mutant it applies the change,
rebuilds build/asan/corral there (incrementally: one object and the link),
runs the named tests, and puts the file back. A mutant is killed when one
of its tests fails, and survives when they all pass.

Before the mutants, the named tests run once on the unchanged copy: a test
that fails there could kill anything, so the run stops. A find-text that is
not in its file exactly once is a stale mutant: an error, never a survivor.

Two mutants run at once (-j, one on a single core), each in a scratch copy
of its own (build/mutants/tree, tree2, ...) and with free ports of its own
class (run.py's CORRAL_TEST_RUNS and CORRAL_TEST_RUN).

The last line is "N killed, M survived"; the exit status is 0 only when
every mutant was killed (and none was stale or failed to build).

The mutants are in tests/mutant_tables/, one table per module (the file
of the code it changes: proxy_conn.py for proxy/proxy_conn.c; docs.py for
the documents), so that a change to a file shows its mutants in one place.
Adding a mutant: append a Mutant(name, file, find, replace, tests, why) to
its module's table's MUTANTS (a new module: a new table). find must occur
exactly once in file (include a neighbouring line if it does not); tests are substrings of test names as run.py -k takes
them (a unit binary's name, e.g. "test_upstream", runs that binary); why
says what the change breaks. Run it alone with tests/mutants.py -k NAME.
"""

import argparse
import os
import queue
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from harness.procs import MARK_ENV, kill_pids, marked  # noqa: E402
from mutant_tables import MUTANTS, Mutant  # noqa: E402,F401

SCRATCH = os.path.join(ROOT, "build", "mutants", "tree")	# the first copy


def scratch(i):
    """The i-th scratch copy: tree, tree2, tree3, ..."""
    return SCRATCH if i == 0 else f"{SCRATCH}{i + 1}"
BUILD_TIMEOUT_S = 600
TESTS_TIMEOUT_S = 1200
REASON_CHARS = 200	# of the failure that killed a mutant


# -- the scratch tree -----------------------------------------------------------

def tree_files():
    """The working tree's files as git sees them: tracked, or untracked and
    not ignored (so uncommitted changes are mutated and tested too)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], cwd=ROOT, capture_output=True,
                         check=True).stdout
    return sorted({p for p in out.decode().split("\0")
                   if p and os.path.isfile(os.path.join(ROOT, p))})


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    """Writes data with a new mtime, so make rebuilds what depends on it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def mirror(tree):
    """Makes tree hold exactly the working tree's files (its build/ kept),
    writing only those that differ: objects of unchanged sources stay
    valid."""
    files = tree_files()
    for rel in files:
        data, dst = read(os.path.join(ROOT, rel)), os.path.join(tree, rel)
        if not os.path.exists(dst) or read(dst) != data:
            write(dst, data)
            shutil.copymode(os.path.join(ROOT, rel), dst)
    wanted = set(files)
    for dirpath, dirnames, filenames in os.walk(tree):
        if dirpath == tree and "build" in dirnames:
            dirnames.remove("build")
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), tree)
            if rel not in wanted:
                os.remove(os.path.join(tree, rel))


def unit_names(tests):
    return [t for t in tests if t.startswith("test_")]


def build(tests, tree, jobs=1):
    """Builds corral (and the unit binaries tests names) in tree; returns
    None or the tail of make's output on failure."""
    targets = ["build/asan/corral"] + [f"build/asan/unit/{u}" for u in unit_names(tests)]
    p = subprocess.run(["make", "-s", f"-j{jobs}", "-C", tree, *targets],
                       capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if p.returncode != 0:
        return "\n".join((p.stdout + p.stderr).splitlines()[-20:])
    return None


def run_tests(tests, tree, run=0, runs=1, jobs=1):
    """Runs the tests in tree, stopping at the first failure, as run run of
    runs at once (each with ports of its own); returns (all passed, the
    names of the failed ones)."""
    cmd = [sys.executable, os.path.join(tree, "tests", "run.py"), "-x", "-j", str(jobs),
           "--bin", os.path.join(tree, "build", "asan", "corral")]
    if unit_names(tests):
        cmd += ["--unit", os.path.join(tree, "build", "asan", "unit")]
    for t in tests:
        cmd += ["-k", t]
    # Every process of the run carries this mark: a run stopped at the
    # time limit leaves none of its scenarios' processes behind.
    mark = f"mutants{os.getpid()}-{run}"
    env = dict(os.environ, CORRAL_TEST_RUNS=str(runs), CORRAL_TEST_RUN=str(run),
               **{MARK_ENV: mark})
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=TESTS_TIMEOUT_S, cwd=tree, env=env)
    except subprocess.TimeoutExpired:
        kill_pids(marked(mark, prefix=True))
        return False, ["(the tests timed out)"]
    failed = [line[5:][:REASON_CHARS] for line in p.stdout.splitlines()
              if line.startswith("FAIL ")]
    passed = [line for line in p.stdout.splitlines() if line.startswith("PASS ")]
    if p.returncode == 0 and not passed:
        return False, ["(no test matched: " + ", ".join(tests) + ")"]
    return p.returncode == 0, failed or [f"(run.py exited with {p.returncode})"]


# -- the run --------------------------------------------------------------------

def check_mutant(m):
    """None if m applies to the tree, else why it is stale."""
    path = os.path.join(SCRATCH, m.file)
    if not os.path.exists(path):
        return f"{m.file} does not exist"
    n = read(path).decode().count(m.find)
    return None if n == 1 else f"its find-text occurs {n} times in {m.file}, not once"


def run_mutant(m, tree, run, runs):
    """'killed', 'survived' or 'error', and a note."""
    path = os.path.join(tree, m.file)
    original = read(path)
    write(path, original.decode().replace(m.find, m.replace).encode())
    try:
        failure = build(m.tests, tree)
        if failure:
            return "error", f"does not build:\n{failure}"
        passed, failed = run_tests(m.tests, tree, run, runs)
        if passed:
            return "survived", f"{', '.join(m.tests)} passed ({m.why})"
        return "killed", f"by {failed[0]}"
    finally:
        write(path, original)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Mutation tests of Corral's lock protocol.")
    ap.add_argument("-k", dest="keywords", action="append",
                    help="only the mutants whose name contains this (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running the tests on the unchanged tree first")
    ap.add_argument("-j", dest="jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="mutants at once, each in its own copy (default 2)")
    args = ap.parse_args(argv)
    jobs = max(1, args.jobs)
    trees = [scratch(i) for i in range(jobs)]

    mutants = [m for m in MUTANTS
               if not args.keywords or any(k in m.name for k in args.keywords)]
    if args.list:
        for m in mutants:
            print(f"{m.name}: {m.file}: {m.why}\n    tests: {', '.join(m.tests)}")
        return 0
    if not mutants:
        print("no mutant matches")
        return 1
    started = time.monotonic()
    for tree in trees:
        mirror(tree)
    stale = [(m, why) for m in mutants for why in [check_mutant(m)] if why]
    for m, why in stale:
        print(f"STALE {m.name}: {why}", flush=True)
    if stale:
        print(f"{len(stale)} stale mutants: update their find-text")
        return 1

    tests = sorted({t for m in mutants for t in m.tests})
    for tree in trees:
        failure = build(tests, tree, jobs)
        if failure:
            print(f"the unchanged tree does not build:\n{failure}")
            return 1
    if not args.no_baseline:
        passed, failed = run_tests(tests, trees[0], jobs=jobs)
        if not passed:
            print(f"the mutants' tests fail on the unchanged tree: {', '.join(failed)}")
            return 1
        print(f"baseline: {len(tests)} test names pass on the unchanged tree "
              f"({time.monotonic() - started:.0f} s)", flush=True)

    counts = {"killed": 0, "survived": 0, "error": 0}
    todo = queue.Queue()
    for m in mutants:
        todo.put(m)
    lock = threading.Lock()

    def worker(run):
        while True:
            try:
                m = todo.get_nowait()
            except queue.Empty:
                return
            t0 = time.monotonic()
            verdict, note = run_mutant(m, trees[run], run, jobs)
            with lock:
                counts[verdict] += 1
                print(f"{verdict.upper()} {m.name} ({time.monotonic() - t0:.0f} s): {note}",
                      flush=True)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for tree in trees:
        build([], tree)	# leave the copies' binaries unmutated
    took = time.monotonic() - started
    errors = f", {counts['error']} errors" if counts["error"] else ""
    print(f"{counts['killed']} killed, {counts['survived']} survived{errors} "
          f"({took:.0f} s)", flush=True)
    return 0 if counts["survived"] == 0 and counts["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
