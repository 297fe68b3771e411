# SPDX-License-Identifier: MIT
"""The documents themselves: the README stays a short entry with `make run`
first, every relative link of the markdown documents leads to a file and
heading that exist, the configuration guide names every key, the docs'
tables list every /stats counter, Cache-Status detail and admin path the
code has, the alerting rules parse, and HACKING.md's Layout names every
file of the code's folders. (Metrics, which need a running corral, are
checked with the manual pages in test_ops.py.)
"""

import os
import re
import shutil
import subprocess

from harness import docs, expect, expect_eq, scenario

README_MAX_LINES = 450
MAKE_RUN_WITHIN = 40
CODE_DIRS = ("proxy", "cache", "conf", "upstream", "common", "auth", "changes", "codec")


@scenario
def readme_is_short_and_starts_with_make_run(env):
    lines = docs.doc("README.md").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    expect(len(lines) <= README_MAX_LINES,
           f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): "
           f"the rest belongs in docs/ or HACKING.md")
    first = [i for i, line in enumerate(lines, 1) if "make run" in line]
    expect(first and first[0] <= MAKE_RUN_WITHIN,
           f"`make run` within the README's first {MAKE_RUN_WITHIN} lines "
           f"(first at line {first[0] if first else None})")
    expect("make test" in "\n".join(lines[:MAKE_RUN_WITHIN]),
           f"`make test` within the README's first {MAKE_RUN_WITHIN} lines")


@scenario
def every_relative_link_of_the_docs_leads_to_a_file_and_heading(env):
    names = docs.markdown_docs()
    for want in ("README.md", "HACKING.md", "docs/design.md", "docs/operations.md",
                 "docs/http.md", "docs/workers.md"):
        expect(want in names, f"{want} is one of the documents: {names}")
    counted = sum(len(docs.links(docs.doc(n))) for n in names)
    expect(counted >= 100, f"the links found in the documents: {counted}")
    bad = [b for n in names for b in docs.broken_links(n)]
    expect_eq(bad, [], "links to a file or heading that is not there")


@scenario
def the_configuration_guide_names_every_key_in_its_section(env):
    help_text = env.run_corral("-h").stdout
    keys, started = set(), False
    for line in help_text.splitlines():
        if line.startswith("SECTION"):
            started = True
        elif started and line.strip():
            keys.add((line[:15].strip(), line[16:].split()[0]))
    expect(len(keys) >= 80, f"corral -h lists the keys:\n{help_text}")
    guide = docs.guide_keys()
    expect_eq(sorted(keys - guide), [],
              "keys corral -h lists and docs/operations.md's Configuration does not name")
    expect_eq(sorted(guide - keys), [],
              "keys docs/operations.md's Configuration names and corral -h does not know")


def stats_counters():
    """The /stats counters, from STATS_FIELDS (proxy/proxy_stats.h)."""
    text = docs.doc("proxy/proxy_stats.h")
    fields = text[text.index("#define STATS_FIELDS(X)"):]
    fields = fields[:fields.index("\n\n")]
    return re.findall(r"^\s*X\((\w+),", fields, re.M)


def documented_counters(text):
    """The counters of the COUNTERS table of /stats, with a row such as
    `upstream_2xx` ... `upstream_5xx` read as the names between."""
    out = set()
    for row in docs.table_rows(text, "| counter | meaning |"):
        names = re.findall(r"`(\w+)`", row[0])
        m = re.match(r"`(\w*?)(\d)(\w*)` \.\.\. `\w*?(\d)\w*`$", row[0])
        if m:
            names = [f"{m.group(1)}{d}{m.group(3)}"
                     for d in range(int(m.group(2)), int(m.group(4)) + 1)]
        out.update(names)
    return out


@scenario
def the_docs_tables_list_every_counter_cache_status_detail_and_admin_path(env):
    ops, http = docs.doc(docs.OPERATIONS), docs.doc(docs.HTTP)

    counters = stats_counters()
    expect(len(counters) > 40, f"STATS_FIELDS: {counters}")
    listed = documented_counters(ops)
    expect_eq(sorted(set(counters) - listed), [],
              "/stats counters docs/operations.md's COUNTERS table lacks")
    expect_eq(sorted(listed - set(counters)), [],
              "counters docs/operations.md lists and STATS_FIELDS lacks")

    details = docs.cache_status_details()
    expect({"redis-full", "lock-lost", "no-store", "lock-wait-timeout", "cache-unavailable",
            "hit-for-miss"} <= details,
           f"the details found in the code: {details}")
    table = "\n".join(" ".join(row) for row in docs.table_rows(http, "| value | meaning |"))
    expect_eq(sorted(d for d in details if not re.search(re.escape(d) + r"(?![a-z-])", table)),
              [], "Cache-Status details docs/http.md's Cache-Status table lacks")

    paths = set(re.findall(r'strcmp\(path, "(/[a-z.]*)"\)', docs.doc("proxy/proxy_admin.c")))
    expect(len(paths) >= 10, f"the admin paths: {paths}")
    first = " ".join(row[0] for row in docs.table_rows(ops, "| path | what |"))
    expect_eq(sorted(p for p in paths if not re.search(r"`(?:[A-Z]+ )?" + re.escape(p) +
                                                        r"(?:\?[^`]*)?`", first)),
              [], "admin paths docs/operations.md's table of the admin listener lacks")


@scenario
def the_alerting_rules_parse_and_use_documented_metrics(env):
    ops = docs.doc(docs.OPERATIONS)
    alerts = docs.section(ops, "### Alerts")
    m = re.search(r"```yaml\n(.*?)```", alerts, re.S)
    expect(m is not None, "docs/operations.md's Alerts has a yaml block")
    rules = m.group(1)
    families = set(docs.table_names(ops, "| metric | type | labels | meaning |"))
    used = set(re.findall(r"\b(corral_[a-z0-9_]+)", rules))
    expect(len(used) >= 5, f"the metrics the rules use: {used}")
    expect_eq(sorted(used - families), [], "metrics the rules use and the metrics table lacks")
    path = os.path.join(env.workdir, "alerts.yml")
    with open(path, "w") as f:
        f.write(rules)
    promtool = shutil.which("promtool")
    expect(promtool is not None, "promtool not found: scripts/install-deps test installs it")
    p = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    expect_eq(p.returncode, 0, f"promtool check rules:\n{p.stdout}{p.stderr}")


@scenario
def hacking_layout_names_every_file_of_the_code(env):
    layout = docs.section(docs.doc("HACKING.md"), "## Layout")
    named = set(re.findall(r"`([^`\s]+)`", layout))
    missing = []
    for d in CODE_DIRS:
        for name in sorted(os.listdir(os.path.join(docs.ROOT, d))):
            if name.startswith(".") or not os.path.isfile(os.path.join(docs.ROOT, d, name)):
                continue
            if name not in named and f"{d}/{name}" not in named:
                missing.append(f"{d}/{name}")
    expect_eq(missing, [], "files HACKING.md's Layout does not name")
    for name in sorted(os.listdir(docs.ROOT)):
        if os.path.isdir(os.path.join(docs.ROOT, name)) and not name.startswith(".") \
                and name not in ("build", "__pycache__"):
            expect(f"{name}/" in named, f"HACKING.md's Layout names the folder {name}/")


SPDX = "SPDX-License-Identifier: MIT"
SCRIPTS = ("Makefile", "bench/run", "bench/profile", "bench/install-deps", ".ci/run")


def tree_files():
    """The files git tracks; outside a git checkout (a copy of the tree),
    every file but the build's."""
    git = subprocess.run(["git", "ls-files"], cwd=docs.ROOT, capture_output=True, text=True)
    if git.returncode == 0 and git.stdout.strip():
        return git.stdout.split("\n")
    found = []
    for top, dirs, files in os.walk(docs.ROOT):
        dirs[:] = [d for d in dirs if d not in ("build", ".git", "__pycache__")]
        found += [os.path.relpath(os.path.join(top, f), docs.ROOT) for f in files]
    return found


def licensed_sources():
    """The code's files: C, Python, awk and the scripts (test fixtures and
    fuzzing corpora are data)."""
    for path in tree_files():
        if not path or path.startswith(("tests/fixtures/", "fuzz/corpus/")):
            continue
        if (path.endswith((".c", ".h", ".py", ".awk")) or path in SCRIPTS
                or path.startswith("scripts/")):
            yield path


@scenario
def every_source_file_names_its_licence(env):
    missing, seen = [], 0
    for path in licensed_sources():
        seen += 1
        with open(os.path.join(docs.ROOT, path), encoding="utf-8", errors="replace") as f:
            head = [f.readline() for _ in range(3)]
        if not any(SPDX in line for line in head):
            missing.append(path)
    expect(seen > 200, f"source files found: {seen}")
    expect_eq(missing, [], f"files without \"{SPDX}\" in their first three lines")
    expect(os.path.exists(os.path.join(docs.ROOT, "LICENSE")), "LICENSE")
