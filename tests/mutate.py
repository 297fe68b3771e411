#!/usr/bin/env python3
"""Sampled, mechanical mutation tests: make test-mutants-sampled MODULE=...

    python3 tests/mutate.py MODULE... [-n 20] [--seed S] [--tests T]... [-j 1]
    python3 tests/mutate.py MODULE... --list     # the sites, nothing run

tests/mutants.py runs mutants written by hand; this one draws them. It
reads one C module (a file, or every .c file of a folder) crudely, with
its comments, string and character literals and preprocessor lines left
out, and finds every site of these mutations:

    <  <=  >  >=      one for its neighbour across the boundary (< for <=)
    ==  !=            one for the other
    &&  ||            one for the other
    an integer        one more, one less
    !x                the ! dropped
    return 0, 1, -1   0 for 1 or -1, 1 for 0 (a swapped answer)

It samples N of them at random (the seed is printed: --seed repeats a
run), and for each, as tests/mutants.py does and with its functions: in a
scratch copy of the tree (build/mutants/sampled, sampled2, ...: the real
tree is never touched) it changes that one place, rebuilds
build/asan/corral (and the unit binaries named), runs the tests aimed at
the module (AIMED below, or --tests), and puts the file back. It prints
one line per mutation, KILLED, SURVIVED or BUILD-ERROR, with the line as
it was and as it became, then "N killed, M survived, K build errors
(seed S)". The exit status is 1 when one survived.

A mutation a survivor showed to be equivalent (no test could tell it
from the code: it changes nothing a client, the origin, Redis or a figure
can see) is listed in EQUIVALENT, by its file, function and line, with
why; it is reported as such and not run. Any other survivor needs a
test.
"""

import argparse
import fcntl
import os
import random
import re
import sys
import threading
import time
import queue
from collections import namedtuple

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS_DIR)
import mutants  # noqa: E402
from audit_mutants import scenarios_by_file  # noqa: E402

ROOT = mutants.ROOT
SCRATCH = os.path.join(ROOT, "build", "mutants", "sampled")
DEFAULT_N = 20
TIME_LIMIT_S = 900		# a mutant's tests, at most (a hang is a kill)

# The tests aimed at each module: unit binaries (test_NAME), scenario files
# (test_NAME.py: every scenario in it) and substrings of scenario names.
AIMED = {
    "proxy/proxy_hdr.c": ["test_hdr", "test_semantics_targeted.py", "test_signed_in.py",
                          "test_http_semantics.py"],
    "proxy/proxy_key.c": ["test_keyrule", "test_key_rules.py", "test_signed_in.py"],
    "cache/cache_keyrule.c": ["test_keyrule", "test_key_rules.py", "sort_query"],
    "cache/cache_graphql.c": ["test_keyrule", "graphql"],
    "proxy/proxy_maint.c": ["maintenance"],
    "proxy/proxy_auth.c": ["test_auth", "test_control.py"],
    "proxy/proxy_budget.c": ["test_budget.py", "per_server_cap", "full_server",
                             "server_slot", "capped_retry", "keeps_to_its_share_of_each",
                             "origin_budget_and_per_server_cap"],
    "proxy/proxy_budget_fleet.c": ["test_budget.py", "server_slot", "keeps_to_its_share_of_each",
                                   "budget_gauges", "local_share"],
    "proxy/proxy_purge.c": ["test_purge_tags.py", "purge_by_", "purges_of_keys",
                            "purge_needs_a_token", "soft_prefix_purge", "purge_drops_the_memory",
                            "purge_and_a_new_entry", "warm_fetches", "refresh_of_100",
                            "operators_refresh", "entry_of_a_", "entry_shows"],
    "proxy/proxy_pool.c": ["test_pool.py", "a_server_out_in_one_worker"],
    "conf/conf_secret.c": ["test_conf", "password_file", "token_file", "acl_user"],
}

# (file, the function, the line as written and as mutated, both stripped):
# why no test can tell the mutant from the code.
EQUIVALENT = {
    ("proxy/proxy_auth.c", "auth_admit", "ev_uint16_t port = 0;", "ev_uint16_t port = 1;"):
        "the peer's port is only ever an output of evhttp_connection_get_peer, never read",
    ("proxy/proxy_auth.c", "refused", "ev_uint16_t port = 0;", "ev_uint16_t port = 1;"):
        "the peer's port is only ever an output of evhttp_connection_get_peer, never read",
    ("cache/cache_graphql.c", "escape", "if (end - p < 6 || p[0] != '\\\\' || p[1] != 'u' ||",
     "if (end - p <= 6 || p[0] != '\\\\' || p[1] != 'u' ||"):
        "end is the body's: exactly 6 bytes after a high surrogate leave no room for the "
        "string's closing quote, and string_at refuses the body either way",
    ("cache/cache_graphql.c", "skip_value", "return -1;", "return 0;"):
        "past the depth bound or the end, the value is never a ',' or a closing bracket: "
        "every caller refuses the body at the same byte, and makes no deeper call",
    ("cache/cache_graphql.c", "graphql_read", "if ((buf = malloc(3 * len + 1)) == NULL)",
     "if ((buf = malloc(3 * len + 0)) == NULL)"):
        "the three parts are each at most their JSON text (len): nothing is written past "
        "3 * len (the tests run under ASan)",
    ("cache/cache_keyrule.c", "fold_name", "if (c == '%' && i + 2 < n &&",
     "if (c == '%' && i + 2 <= n &&"):
        "the byte after a name is '=', a separator or its end, never a hex digit: an "
        "escape the name's end cuts is decoded neither way",
    ("cache/cache_keyrule.c", "key_suffix",
     "n += snprintf(out + n, KEYRULE_PARTS_MAX + 1 - (size_t)n,",
     "n += snprintf(out + n, KEYRULE_PARTS_MAX + 0 - (size_t)n,"):
        "the parts take at most 1 + KEYRULE_PARTS_MAX / 2 for the headers, then 7 and 3 "
        "times 35 bytes: no snprintf of key_suffix ever meets its bound",
    ("cache/cache_keyrule.c", "keyrule_build", "return 0;", "return 1;"):
        "its one caller (proxy_key.c) tells only -1 from the rest",
    ("proxy/proxy_key.c", "rule_query", "return 0;", "return 1;"):
        "both callers tell only -1 from the rest",
    ("proxy/proxy_key.c", "rule_query", "return *out != NULL ? 0 : -1;",
     "return *out != NULL ? 1 : -1;"):
        "both callers tell only -1 from the rest",
    ("proxy/proxy_key.c", "fetch_shared_headers", "anonymous ? HDR_DROP_CREDENTIALS : 0);",
     "anonymous ? HDR_DROP_CREDENTIALS : 1);"):
        "1 is HDR_DROP_HOST, in the flags already",
    ("proxy/proxy_key.c", "body_digest",
     "const char *body = len > 0 ? (const char *)evbuffer_pullup(in, -1) : \"\";",
     "const char *body = len > 0 ? (const char *)evbuffer_pullup(in, -2) : \"\";"):
        "evbuffer_pullup linearizes the whole buffer for any negative size",
    ("proxy/proxy_key.c", "graphql_param", "if (nlen > len)", "if (nlen >= len)"):
        "when they are equal, nlen = len changes nothing",
    ("proxy/proxy_pool.c", "pool_new", "if ((p = calloc(1, sizeof(*p))) == NULL)",
     "if ((p = calloc(2, sizeof(*p))) == NULL)"):
        "room for two pools, the second never touched",
    ("proxy/proxy_budget.c", "rank", "w = MAX(0, MIN(w, RANK_SPAN - 1));",
     "w = MAX(1, MIN(w, RANK_SPAN - 1));"):
        "a miss's weight is its waitlist, the lead included: 0 only once every client "
        "left, and then its fetch is dropped unsent (refresh_unwanted), never ranked",
    ("proxy/proxy_budget.c", "on_acquired", "b->rewake = 0;", "b->rewake = 1;"):
        "a rewake left set makes a later answer pump the queue once more: spare asks "
        "to Redis, the same ticket granted each slot (no test bounds the asks: their "
        "number follows the machine's timing)",
    ("proxy/proxy_budget.c", "on_freed", "assert(b->magic == BUDGET_MAGIC && b->main == b);",
     "assert(b->magic == BUDGET_MAGIC || b->main == b);"):
        "an assertion made weaker: the invariant holds, nothing else changes",
    ("proxy/proxy_budget.c", "budget_new", "on_hello_tick(-1, 0, b);",
     "on_hello_tick(-2, 0, b);"):
        "the callback reads neither its descriptor nor its event flags",
    ("proxy/proxy_budget.c", "budget_new", "on_hello_tick(-1, 0, b);",
     "on_hello_tick(-0, 0, b);"):
        "the callback reads neither its descriptor nor its event flags",
    ("proxy/proxy_budget.c", "budget_new", "on_hello_tick(-1, 0, b);",
     "on_hello_tick(-1, 1, b);"):
        "the callback reads neither its descriptor nor its event flags",
}

Site = namedtuple("Site", "file line col old new kind")


# -- the sites ------------------------------------------------------------------

TOKEN = re.compile(r"""
    (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])*')
  | (?P<number>\b(?:0[xX][0-9a-fA-F]+|\d+)(?:[uUlL]*)\b(?![.eE]))
  | (?P<float>\b\d+\.\d*(?:[eE][-+]?\d+)?|\b\d+[eE][-+]?\d+)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||->|\+\+|--|[<>!=&|])
  | (?P<other>.)
""", re.S | re.X)

FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
        "&&": "||", "||": "&&"}


def preprocessor_lines(text):
    """The indices of characters on preprocessor lines (with their
    continuations)."""
    spans, pos = [], 0
    for line in text.splitlines(keepends=True):
        spans.append((pos, line))
        pos += len(line)
    skip, inside = set(), False
    for start, line in spans:
        if inside or line.lstrip().startswith("#"):
            skip.add(start)
            inside = line.rstrip("\n").endswith("\\")
        else:
            inside = False
    return skip, spans


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def number_text(old, delta):
    """An integer literal plus delta, in its own base and suffix (None if
    it would be negative)."""
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)", old)
    digits, suffix = m.group(1), m.group(2)
    if digits[:2].lower() == "0x":
        base, fmt = 16, lambda v: hex(v)
    elif len(digits) > 1 and digits[0] == "0":
        base, fmt = 8, lambda v: "0" + oct(v)[2:]
    else:
        base, fmt = 10, str
    value = int(digits, base) + delta
    return fmt(value) + suffix if value >= 0 else None


def sites_of(rel):
    """Every mutation site of one C file."""
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        text = f.read()
    skip, spans = preprocessor_lines(text)
    line_start = {}
    for start, line in spans:
        for i in range(start, start + len(line)):
            line_start[i] = start
    found = []
    tokens = [(m.lastgroup, m.group(), m.start()) for m in TOKEN.finditer(text)
              if not (m.lastgroup == "other" and m.group().isspace())]
    none = (None, "", -1)
    for i, (kind, tok, pos) in enumerate(tokens):
        if line_start[pos] in skip or kind in ("comment", "string", "char"):
            continue
        if re.search(r"__attribute__|_Static_assert", text[line_start[pos]:text.find(
                "\n", pos)]):
            continue	# a compiler's check, not the program
        prev = tokens[i - 1] if i > 0 else none
        before = tokens[i - 2] if i > 1 else none
        nxt = tokens[i + 1] if i + 1 < len(tokens) else none
        line = line_of(text, pos)
        if kind == "op" and tok in FLIP:
            found.append(Site(rel, line, pos, tok, FLIP[tok], "operator"))
        elif kind == "op" and tok == "!":
            found.append(Site(rel, line, pos, "!", "", "negation"))
        elif kind == "number":
            if prev[1] == "[" and nxt[1] == "]":
                continue	# an array's size: one more or less is room
            if nxt[1] == ";" and prev[1] == "return" and tok in ("0", "1"):
                found.append(Site(rel, line, pos, tok, "1" if tok == "0" else "0",
                                  "return"))
                continue
            if nxt[1] == ";" and prev[1] == "-" and before[1] == "return" and tok == "1":
                found.append(Site(rel, line, prev[2], "-1", "0", "return"))
                continue
            for delta in (1, -1):
                new = number_text(tok, delta)
                if new is not None:
                    found.append(Site(rel, line, pos, tok, new, "constant"))
    return found


def c_files(module):
    """The C files a module names: itself, or every .c file of a folder."""
    path = os.path.join(ROOT, module)
    if os.path.isdir(path):
        return sorted(os.path.join(module, n) for n in os.listdir(path) if n.endswith(".c"))
    if not os.path.isfile(path):
        raise SystemExit(f"no file or folder {module}")
    return [module]


def source_line(rel, n):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read().splitlines()[n - 1]


def mutated_line(site):
    """(the line as written, as mutated), both stripped."""
    with open(os.path.join(ROOT, site.file), encoding="utf-8") as f:
        text = f.read()
    start = text.rfind("\n", 0, site.col) + 1
    end = text.find("\n", site.col)
    line = text[start:end]
    at = site.col - start
    return line.strip(), (line[:at] + site.new + line[at + len(site.old):]).strip()


def function_of(site):
    """The function the site is in: the last definition before it (the
    name at the start of a line, then its '(', as Corral writes them)."""
    with open(os.path.join(ROOT, site.file), encoding="utf-8") as f:
        lines = f.read().splitlines()[:site.line]
    for line in reversed(lines):
        m = re.match(r"([A-Za-z_]\w*)\(", line)
        if m:
            return m.group(1)
    return ""


def equivalent(site):
    old, new = mutated_line(site)
    return EQUIVALENT.get((site.file, function_of(site), old, new))


# -- the tests ------------------------------------------------------------------

def aimed_tests(module, files, given):
    """The tests of run.py -k for module: given, or AIMED's (a scenario
    file stands for each scenario in it)."""
    entries = given or AIMED.get(module) or next(
        (AIMED[f] for f in files if f in AIMED), None)
    if not entries:
        raise SystemExit(f"no tests aimed at {module}: add it to AIMED or give --tests")
    where = scenarios_by_file()
    tests = []
    for e in entries:
        if e.endswith(".py"):
            tests += sorted(t for t, f in where.items() if f == e)
        else:
            tests.append(e)
    return list(dict.fromkeys(tests))


def run_site(site, tests, tree, run, runs):
    """'killed', 'survived' or 'build-error', and a note."""
    path = os.path.join(tree, site.file)
    original = mutants.read(path)
    text = original.decode()
    if text[site.col:site.col + len(site.old)] != site.old:
        return "build-error", f"{site.file} changed: {site.old!r} is not at {site.col}"
    mutated = text[:site.col] + site.new + text[site.col + len(site.old):]
    mutants.write(path, mutated.encode())
    try:
        failure = mutants.build(tests, tree)
        if failure:
            return "build-error", failure.splitlines()[-1] if failure else ""
        passed, failed = mutants.run_tests(tests, tree, run, runs)
        if passed:
            return "survived", ""
        return "killed", f"by {failed[0]}"
    finally:
        mutants.write(path, original)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Sampled mutation tests of one module.")
    ap.add_argument("modules", nargs="+", metavar="MODULE",
                    help="a C file or a folder of them, e.g. proxy/proxy_hdr.c")
    ap.add_argument("-n", type=int, default=DEFAULT_N, help=f"mutations drawn "
                    f"(default {DEFAULT_N}) from all the modules' sites")
    ap.add_argument("--seed", type=int, help="the draw's seed (default: a new one, printed)")
    ap.add_argument("--tests", action="append", help="tests to run instead of AIMED's "
                    "(run.py -k; a unit binary by its name; repeatable)")
    ap.add_argument("-j", dest="jobs", type=int, default=1,
                    help="mutations at once, each in its own copy (default 1)")
    ap.add_argument("--time-limit", type=int, default=TIME_LIMIT_S,
                    help=f"seconds a mutation's tests may take (default {TIME_LIMIT_S})")
    ap.add_argument("--line", type=int, action="append",
                    help="of the draw, only the sites on this line (repeatable: to run "
                         "the survivors of a draw again)")
    ap.add_argument("--scratch", default="sampled", help="the scratch copies' name under "
                    "build/mutants (default sampled: sampled, sampled2, ...), for two "
                    "runs at once")
    ap.add_argument("--list", action="store_true", help="print the drawn sites and exit")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running the tests on the unchanged copy first")
    args = ap.parse_args(argv)

    files = [f for m in args.modules for f in c_files(m)]
    sites = [s for f in files for s in sites_of(f)]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    drawn = sorted(random.Random(seed).sample(sites, min(args.n, len(sites))),
                   key=lambda s: (s.file, s.col, s.new))
    module = " ".join(args.modules)
    print(f"{module}: {len(sites)} sites in {len(files)} files, {len(drawn)} drawn "
          f"(seed {seed})", flush=True)
    if args.line:
        drawn = [s for s in drawn if s.line in args.line]
        print(f"of them, {len(drawn)} on lines {', '.join(map(str, args.line))}", flush=True)
    if args.list:
        for s in drawn:
            old, new = mutated_line(s)
            print(f"{s.file}:{s.line}: {s.kind}: {old}  =>  {new}")
        return 0
    tests = aimed_tests(args.modules[0] if len(args.modules) == 1 else None, files,
                        args.tests)
    print(f"tests: {', '.join(tests)}", flush=True)
    mutants.TESTS_TIMEOUT_S = args.time_limit
    jobs = max(1, args.jobs)
    scratch = os.path.join(os.path.dirname(SCRATCH), args.scratch)
    trees = [scratch if i == 0 else f"{scratch}{i + 1}" for i in range(jobs)]
    started = time.monotonic()
    locks = []
    for tree in trees:
        os.makedirs(tree, exist_ok=True)
        locks.append(open(tree + ".lock", "w"))	# beside it: mirror() empties it
        try:
            fcntl.flock(locks[-1], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print(f"another run uses {tree}: give this one --scratch NAME")
            return 1
    for tree in trees:
        mutants.mirror(tree)
        failure = mutants.build(tests, tree, jobs)
        if failure:
            print(f"the unchanged tree does not build:\n{failure}")
            return 1
    if not args.no_baseline:
        passed, failed = mutants.run_tests(tests, trees[0], jobs=jobs)
        if not passed:
            print(f"the tests fail on the unchanged tree: {', '.join(failed)}")
            return 1
        print(f"baseline: the tests pass on the unchanged tree "
              f"({time.monotonic() - started:.0f} s)", flush=True)

    counts = {"killed": 0, "survived": 0, "build-error": 0, "equivalent": 0}
    todo, lock = queue.Queue(), threading.Lock()
    for s in drawn:
        todo.put(s)

    def worker(run):
        while True:
            try:
                s = todo.get_nowait()
            except queue.Empty:
                return
            old, new = mutated_line(s)
            why = equivalent(s)
            t0 = time.monotonic()
            if why is not None:
                verdict, note = "equivalent", why
            else:
                verdict, note = run_site(s, tests, trees[run], run, jobs)
            with lock:
                counts[verdict] += 1
                print(f"{verdict.upper()} {s.file}:{s.line} ({s.kind}, "
                      f"{time.monotonic() - t0:.0f} s): {old}  =>  {new}"
                      + (f"\n    {note}" if note else ""), flush=True)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for tree in trees:
        mutants.build([], tree)	# leave the copies' binaries unmutated
    print(f"{module}: {counts['killed']} killed, {counts['survived']} survived, "
          f"{counts['build-error']} build errors, {counts['equivalent']} equivalent "
          f"(seed {seed}, {time.monotonic() - started:.0f} s)", flush=True)
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
