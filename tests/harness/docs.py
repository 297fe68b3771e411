"""The project's documents as the tests read them: the markdown files
(README.md, HACKING.md, docs/*.md), their tables, headings and links, and
the configuration guide's keys (docs/operations.md, "Configuration").
"""

import glob
import os
import re

from .wait import read_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPERATIONS = "docs/operations.md"
HTTP = "docs/http.md"


def doc(name):
    """The text of a file of the tree, by its path from the top."""
    return read_text(os.path.join(ROOT, name))


def markdown_docs():
    """The markdown documents, by their paths from the top."""
    found = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return ["README.md", "HACKING.md"] + found


def prose(text):
    """text with its fenced code blocks blanked out (spaces), so that lines
    and offsets still count as in text."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
            out.append(" " * len(line))
        else:
            out.append(" " * len(line) if fence else line)
    return "\n".join(out)


def table_rows(text, header):
    """The rows (each a list of its cells, stripped) of the table under the
    line that is exactly header."""
    rows = text[text.index(header + "\n"):].split("\n")[2:]
    out = []
    for row in rows:
        if not row.startswith("|"):
            break
        out.append([c.strip() for c in row.split("|")[1:-1]])
    return out


def table_names(text, header):
    """The first cells of the table under header, split at ", ", without
    their backquotes."""
    return [c.strip().strip("`") for row in table_rows(text, header)
            for c in row[0].split(", ")]


def section(text, heading):
    """The text under a heading line (e.g. "## Configuration"), up to the
    next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    i = text.index("\n" + heading + "\n") + 1
    m = re.compile(r"^#{1,%d} " % level, re.M).search(prose(text), i + len(heading))
    return text[i:m.start() if m else len(text)]


def guide_keys():
    """{(section, key)} named in the configuration guide's tables: rows
    of the form | `key` | `[section]` | what to know |."""
    guide = section(doc(OPERATIONS), "## Configuration")
    return set((s, k) for k, s in re.findall(
        r"^\| `([a-z0-9_]+(?:\.TABLE)?)` \| `(\[[a-z]+(?: PREFIX| NAME)?\])` \|", guide,
        re.M))


def slug(heading):
    """The anchor GitHub gives a heading's text."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text):
    """Every heading's anchor, with GitHub's -1, -2 ... for repeats."""
    seen, out = {}, set()
    for line in prose(text).split("\n"):
        m = re.match(r"^#{1,6} (.*)$", line)
        if not m:
            continue
        a = slug(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


def links(text):
    """(line number, target) of every markdown link and image outside code."""
    out = []
    for i, line in enumerate(prose(text).split("\n"), 1):
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            out.append((i, target))
    return out


def broken_links(name):
    """The relative links of one document that lead nowhere: a file that
    is not there, or a #anchor that is no heading of the .md it names."""
    bad = []
    here = os.path.dirname(os.path.join(ROOT, name))
    for line, target in links(doc(name)):
        if re.match(r"^[a-z]+:", target):
            continue	# http:, https:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(here, path)) if path else os.path.join(ROOT, name)
        if not os.path.exists(full):
            bad.append(f"{name}:{line}: {target}: no such file")
        elif anchor and full.endswith(".md") and anchor not in anchors(read_text(full)):
            bad.append(f"{name}:{line}: {target}: no such heading in "
                       f"{os.path.relpath(full, ROOT)}")
    return bad


def cache_status_details():
    """Every detail= value of Cache-Status the code can write: the ones
    proxy_outcome.c names (plain_detail() and its values), why a fetched
    answer was not stored (proxy_decide.c, proxy_refresh.c) and why a
    response may not be shared (proxy_hdr.c)."""
    def src(name):
        return doc(os.path.join("proxy", name))
    outcome = src("proxy_outcome.c")
    found = set(re.findall(r"detail=([a-z-]+)", outcome))
    found |= set(re.findall(r'"(origin-busy|upstream-error|stale-if-error|cache-unavailable)"',
                            outcome))
    plain = outcome[outcome.index("plain_detail(enum outcome o)"):]
    found |= set(re.findall(r'return "([a-z-]+)";', plain[:plain.index("\n}\n")]))
    found |= set(re.findall(r'return "([a-z-]+)";', src("proxy_decide.c")))
    found |= set(re.findall(r'not_stored = "([a-z-]+)"', src("proxy_refresh.c")))
    hdr = src("proxy_hdr.c")
    found |= set(re.findall(r'REFUSE\(f, "([a-z-]+)"\)', hdr))
    shared = re.search(r"\*why = (.*?);", hdr, re.S).group(1)
    found |= set(re.findall(r'"([a-z-]+)"', shared)) - {"Set-Cookie"}
    return found
