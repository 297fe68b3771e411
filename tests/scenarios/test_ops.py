"""Running Corral as a system service: JSON logs, the service manager's
notifications, make install, the Debian package, the manual pages and the
Grafana dashboard."""

import json
import os
import re

from harness import expect, expect_eq, read_text, scenario, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def json_lines(path, n, what):
    """Waits for n lines in path; each must be one JSON object."""
    wait_for(lambda: len(read_text(path).splitlines()) >= n, what=f"{n} lines in {what}")
    out = []
    for line in read_text(path).splitlines():
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise AssertionError(f"{what}: not one JSON object a line ({e}):\n{line}")
        expect(isinstance(obj, dict), f"{what}: not an object: {line}")
        out.append(obj)
    return out


@scenario
def log_format_json_writes_one_object_a_line_to_both_logs(env):
    access = os.path.join(env.workdir, "access.log")
    errors = os.path.join(env.workdir, "error.log")
    redis, origin = env.redis(), env.origin()
    origin.script("/r/a?x=1", body="hello")
    corral = env.corral(redis, origin, routes={"/r/": {}}, extra={"server": {
        "access_log": access, "error_log": errors, "log_format": "json"}})
    agent = 'probe/1.0 "quoted" \\ caf\xe9'
    corral.get("/r/a?x=1", headers={"User-Agent": agent})
    corral.get("/r/a?x=1", headers={"User-Agent": agent})

    miss, hit = json_lines(access, 2, "the access log")
    fields = ["time", "client", "method", "uri", "proto", "status", "bytes", "referer",
              "user_agent", "cache", "cache_status", "route", "upstream_ms",
              "lock_wait_ms", "total_ms"]
    expect_eq(list(miss), fields, "the access log's fields, in order")
    expect_eq((miss["client"], miss["method"], miss["uri"], miss["proto"], miss["status"],
               miss["bytes"], miss["referer"], miss["user_agent"], miss["route"]),
              ("127.0.0.1", "GET", "/r/a?x=1", "HTTP/1.1", 200, 5, None, agent, "/r/"),
              "request fields; the user agent with a quote, a backslash and a byte past ASCII")
    expect_eq((miss["cache"], hit["cache"]), ("miss", "hit"), "cache outcomes")
    expect(miss["cache_status"].startswith("corral; fwd=miss; fwd-status=200; stored"),
           f"the miss's Cache-Status: {miss['cache_status']!r}")
    expect(hit["cache_status"].startswith("corral; hit; ttl="),
           f"the hit's Cache-Status: {hit['cache_status']!r}")
    expect(isinstance(miss["upstream_ms"], int) and hit["upstream_ms"] is None,
           f"upstream_ms: {miss['upstream_ms']!r}, {hit['upstream_ms']!r}")
    expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", miss["time"]),
           f"access time: {miss['time']!r}")

    lines = json_lines(errors, 1, "the error log")
    expect_eq(list(lines[0]), ["time", "level", "msg"], "the error log's fields")
    expect(any("listening on" in l["msg"] and l["level"] == "info" for l in lines),
           f"the start-up line as JSON: {lines}")
    expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", lines[0]["time"]),
           f"error log time: {lines[0]['time']!r}")
    expect_eq(corral.log().strip(), "", "nothing on stderr")
