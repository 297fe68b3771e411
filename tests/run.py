#!/usr/bin/env python3
"""Runs Corral's tests: the C unit-test binaries, then every scenario.

    python3 tests/run.py --bin build/asan/corral --unit build/asan/unit [-k substring]...

Unit binaries print "PASS name" / "FAIL name: why" per test; a binary that
exits non-zero without a FAIL line (a crash, a sanitizer report) is one
failure named after it. Scenarios are the @scenario functions in
tests/scenarios/*.py; each runs in its own child process (so a hung one can
be killed with everything it started) with a fresh Env and a time limit,
two at a time by default (-j), each with free ports of its own class; a
scenario marked alone runs with nothing beside it. What a passing scenario
reports (Env.report: figures it measured) is printed under its line (a
failing one's is in its output). A scenario marked
@expected_failure(reason, message) that fails as the mark says prints
"XFAIL name" and counts as passed; if it passes, or fails otherwise, it
is a FAIL.

Every process a scenario starts carries its mark (harness.procs.MARK_ENV,
"<run>/<scenario>", in its environment). Once a scenario has ended,
passing or failing, whatever still carries its mark is killed: after a
time limit that is how the scenario is stopped; otherwise it is a process
its Env failed to stop, and the run fails with a line naming it. A last
check after every scenario says that none of the run's processes is left.
The last line printed is "N passed, M failed"; the exit status is 1 if M > 0.
"""

import argparse
import glob
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
SCENARIO_GLOB = os.path.join(TESTS_DIR, "scenarios", "*.py")
UNIT_TIMEOUT_S = 60
LOG_TAIL_LINES = 30
LEFTOVER_GRACE_S = 10	# for a scenario's processes still exiting when it ends

SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}

sys.path.insert(0, TESTS_DIR)
import harness  # noqa: E402
from harness.procs import MARK_ENV, kill_pids, mark_of, marked  # noqa: E402

# This run's mark: each scenario's is RUN_MARK/name. Given by a caller
# (tests/mutants.py) that must find the processes of a run it stopped.
RUN_MARK = os.environ.get(MARK_ENV) or f"run{os.getpid()}"


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.leftovers = []	# (scenario, pid, command line) that outlived it

    def ok(self, name, note=""):
        self.passed += 1
        print(f"PASS {name}{note}", flush=True)

    def xfail(self, name, note):
        self.passed += 1
        print(f"XFAIL {name}{note}", flush=True)

    def fail(self, name, reason, details=""):
        self.failed += 1
        print(f"FAIL {name}: {reason}", flush=True)
        if details:
            print("    " + details.rstrip("\n").replace("\n", "\n    "), flush=True)


def one_line(text):
    lines = [l.strip() for l in str(text).strip().splitlines() if l.strip()]
    return lines[0] if lines else "(no message)"


# -- unit tests -------------------------------------------------------------------

def selected(name, keywords):
    """Is the test name chosen by -k (any of them; all without -k)?"""
    return not keywords or any(k in name for k in keywords)


def run_units(unit_dir, keywords, tally):
    if not os.path.isdir(unit_dir):
        tally.fail("unit", f"no unit-test directory {unit_dir}")
        return
    for name in sorted(os.listdir(unit_dir)):
        path = os.path.join(unit_dir, name)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        if not selected(name, keywords):
            continue
        try:
            p = subprocess.run([path], capture_output=True, text=True, errors="replace",
                               timeout=UNIT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            tally.fail(name, f"timed out after {UNIT_TIMEOUT_S} s",
                       harness.tail(str(e.stdout or ""), LOG_TAIL_LINES))
            continue
        saw_fail = False
        for line in p.stdout.splitlines():
            if line.startswith("PASS "):
                tally.ok(f"{name}.{line[5:].strip()}")
            elif line.startswith("FAIL "):
                saw_fail = True
                test, _, why = line[5:].partition(": ")
                tally.fail(f"{name}.{test.strip()}", why.strip() or "failed")
        if p.returncode != 0 and not saw_fail:
            how = (f"exited with {p.returncode}" if p.returncode > 0
                   else f"died of signal {-p.returncode}")
            tally.fail(name, how, harness.tail(p.stderr, LOG_TAIL_LINES))
        elif saw_fail and harness.sanitizer_report(p.stderr):
            print("    " + harness.tail(p.stderr, LOG_TAIL_LINES).replace("\n", "\n    "))


# -- scenarios ----------------------------------------------------------------------

def load_scenarios(path):
    """Imports one scenario file; returns its @scenario functions."""
    before = len(harness.SCENARIOS)
    module_name = "scenario_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return harness.SCENARIOS[before:]


def run_child(path, name, workdir, binary):
    """In the child process: runs one scenario; writes result.json to workdir."""
    result = {"ok": False, "reason": "scenario not found", "details": ""}
    try:
        fn = next(f for f in load_scenarios(path) if f.__name__ == name)
        with harness.Env(workdir, binary) as env:
            fn(env)
        result = {"ok": True, "reason": "", "details": ""}
    except StopIteration:
        pass
    except BaseException as e:	# noqa: BLE001 - every failure is reported
        reason = one_line(e) if str(e) else type(e).__name__
        if not isinstance(e, AssertionError):
            reason = f"{type(e).__name__}: {reason}"
        result = {"ok": False, "reason": reason, "assertion": isinstance(e, AssertionError),
                  "details": "".join(traceback.format_exception(type(e), e, e.__traceback__))}
    with open(os.path.join(workdir, "result.json"), "w") as f:
        json.dump(result, f)
    return 0 if result["ok"] else 1


def corral_log_tails(workdir):
    out = []
    for log in sorted(glob.glob(os.path.join(workdir, "corral*.log"))):
        text = harness.tail(harness.read_text(log), LOG_TAIL_LINES)
        out.append(f"--- {os.path.basename(log)} (last {LOG_TAIL_LINES} lines)\n{text}")
    return "\n".join(out)


# Runs of run.py side by side (tests/mutants.py -j) share the port classes:
# run RUN of RUNS takes the classes RUN * slots ... RUN * slots + slots - 1.
RUNS = int(os.environ.get("CORRAL_TEST_RUNS", "1"))
RUN = int(os.environ.get("CORRAL_TEST_RUN", "0"))


class Running:
    """One scenario running in its child process, in port class slot."""

    def __init__(self, path, fn, binary, slot, slots):
        self.fn, self.slot = fn, slot
        self.mark = f"{RUN_MARK}/{fn.__name__}"
        self.workdir = tempfile.mkdtemp(prefix=f"corral-{fn.__name__}-")
        env = dict(os.environ, CORRAL_TEST_DIR=self.workdir, PYTHONDONTWRITEBYTECODE="1",
                   CORRAL_TEST_PORT_CLASS=str(RUN * slots + slot),
                   CORRAL_TEST_PORT_CLASSES=str(RUNS * slots), **{MARK_ENV: self.mark})
        cmd = [sys.executable, os.path.abspath(__file__), "--child", path, fn.__name__,
               "--workdir", self.workdir]
        if binary:
            cmd += ["--bin", binary]
        self.started = time.monotonic()
        with open(os.path.join(self.workdir, "scenario.log"), "wb") as out:
            self.child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                          env=env, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        self.timed_out = False

    def done(self):
        """Has it ended (killed, with all it started, past its time limit)?"""
        if self.child.poll() is not None:
            return True
        if time.monotonic() - self.started < self.fn.scenario_timeout:
            return False
        self.timed_out = True
        os.killpg(self.child.pid, signal.SIGKILL)	# the child and all it started
        self.child.wait()
        return True

    def sweep(self, tally):
        """Kills what still carries the scenario's mark once it has ended:
        after its time limit, the rest of it (a corral has a group of its
        own); else what its Env left, each noted in tally."""
        if self.timed_out:
            kill_pids(marked(self.mark))
            return
        try:
            harness.wait_for(lambda: not marked(self.mark), timeout=LEFTOVER_GRACE_S,
                             what=f"the processes of {self.fn.__name__} to exit",
                             interval=0.1)
        except AssertionError:
            left = marked(self.mark)
            kill_pids(left)
            tally.leftovers += [(self.fn.__name__, pid, cmd) for pid, cmd in left.items()]


def run_scenarios(todo, binary, tally, keep_logs, jobs, first_failure):
    """Runs the (path, fn) in todo, up to jobs at once, each in a port
    class of its own; an alone scenario with nothing beside it. Results are
    reported as they end."""
    running = []
    todo = list(todo)
    while todo or running:
        for r in [r for r in running if r.done()]:
            running.remove(r)
            r.sweep(tally)
            report_scenario(r, tally, keep_logs)
        if first_failure and tally.failed:
            todo = []
        busy = {r.slot for r in running}
        while todo and len(running) < jobs and not any(r.fn.scenario_alone for r in running):
            path, fn = todo[0]
            if fn.scenario_alone and running:
                break
            todo.pop(0)
            slot = min(set(range(jobs)) - busy)
            busy.add(slot)
            running.append(Running(path, fn, binary, slot, jobs))
            if fn.scenario_alone:
                break
        if running:
            time.sleep(0.02)


def verdict(result, expected):
    """PASS, XFAIL or FAIL, and why, for a scenario's result; expected is
    its @expected_failure (reason, message), or None. Only an assertion
    whose first line holds message is the expected failure: a crash, a
    time-out or another assertion is a FAIL as ever."""
    if expected is None:
        return ("PASS", "") if result["ok"] else ("FAIL", result["reason"])
    reason, message = expected
    if result["ok"]:
        return "FAIL", f"now passes: remove the @expected_failure mark ({reason})"
    if result.get("assertion") and message in result["reason"]:
        return "XFAIL", f"{reason}: {result['reason']}"
    return "FAIL", f"{result['reason']} (marked expected to fail with {message!r}: " \
                   f"this is another failure)"


def report_scenario(run, tally, keep_logs):
    name, workdir, child = run.fn.__name__, run.workdir, run.child
    took = time.monotonic() - run.started
    result = {"ok": False, "reason": f"runner child exited with {child.returncode} "
              "without a result", "details": ""}
    try:
        with open(os.path.join(workdir, "result.json")) as f:
            result = json.load(f)
    except (OSError, ValueError):
        pass
    if run.timed_out:
        result = {"ok": False, "details": "",
                  "reason": f"timed out after {run.fn.scenario_timeout} s"}
    status, why = verdict(result, run.fn.scenario_expected_failure)
    figures = harness.read_text(os.path.join(workdir, harness.REPORT_FILE)).rstrip("\n")
    if status != "FAIL":
        if status == "PASS":
            tally.ok(name, f" ({took:.1f} s)")
        else:
            tally.xfail(name, f" ({took:.1f} s): {why}")
        if figures:
            print("    " + figures.replace("\n", "\n    "), flush=True)
        if not keep_logs:
            shutil.rmtree(workdir, ignore_errors=True)
        return
    details = result.get("details", "")
    scenario_out = harness.read_text(os.path.join(workdir, "scenario.log")).strip()
    if scenario_out:
        details += f"\n--- scenario output\n{harness.tail(scenario_out, LOG_TAIL_LINES)}"
    logs = corral_log_tails(workdir)
    if logs:
        details += "\n" + logs
    details += f"\n(logs kept in {workdir})"
    tally.fail(name, why, details.strip("\n"))


def check_leftovers(tally):
    """The last check: no process of any scenario of this run is left (any
    found now is killed too); one FAIL line naming those that were."""
    late = {pid: (mark_of(pid) or "?/?", cmd) for pid, cmd in
            marked(RUN_MARK, prefix=True).items()}
    kill_pids(late)
    left = tally.leftovers + [(mark.rsplit("/", 1)[-1], pid, cmd)
                              for pid, (mark, cmd) in late.items()]
    if not left:
        print("no process of any scenario outlived it", flush=True)
        return
    tally.fail("leftover processes", f"{len(left)} processes outlived their scenario "
               "(killed now)", "\n".join(f"{name}: pid {pid}: {cmd}" for name, pid, cmd in left))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Runs Corral's unit and scenario tests.")
    ap.add_argument("--bin", help="the corral binary the scenarios start")
    ap.add_argument("--unit", help="directory of unit-test executables")
    ap.add_argument("-k", dest="keywords", action="append",
                    help="run only tests whose name contains this (repeatable: any of them)")
    ap.add_argument("-x", dest="first_failure", action="store_true",
                    help="stop at the first failure")
    ap.add_argument("-j", dest="jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="scenarios run at once (default: 2, or 1 on one core)")
    ap.add_argument("--keep-logs", action="store_true", help="keep logs of passing scenarios")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "SCENARIO"), help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    os.environ.update(SANITIZER_ENV)
    binary = os.path.abspath(args.bin) if args.bin else None
    if args.child:
        return run_child(args.child[0], args.child[1], args.workdir, binary)

    tally = Tally()
    if args.unit:
        run_units(args.unit, args.keywords, tally)
    # The harness's own checks first, alone: if they fail, no other
    # scenario can be trusted.
    paths = sorted(glob.glob(SCENARIO_GLOB),
                   key=lambda p: (os.path.basename(p) != "test_harness.py", p))
    first, rest = [], []
    for path in paths:
        try:
            scenarios = load_scenarios(path)
        except Exception as e:	# noqa: BLE001 - a broken file is one failure
            tally.fail(os.path.basename(path), f"cannot load: {e!r}",
                       traceback.format_exc())
            continue
        chosen = [(path, fn) for fn in scenarios if selected(fn.__name__, args.keywords)]
        (first if os.path.basename(path) == "test_harness.py" else rest).extend(chosen)
    run_scenarios(first, binary, tally, args.keep_logs, 1, args.first_failure)
    if not (args.first_failure and tally.failed):
        run_scenarios(rest, binary, tally, args.keep_logs, max(1, args.jobs),
                      args.first_failure)
    check_leftovers(tally)
    print(f"{tally.passed} passed, {tally.failed} failed", flush=True)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
