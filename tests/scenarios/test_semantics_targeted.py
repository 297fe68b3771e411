# SPDX-License-Identifier: MIT
"""Targeted cache control (RFC 9213): an origin gives the shared cache its
own rules in CDN-Cache-Control, or in a field meant for Corral alone
(targeted_cache_control, Corral-Cache-Control by default), above
Cache-Control and Expires; the fields Corral read are not passed on."""

import re

from harness import corral_config, expect, expect_eq, free_port, scenario, HOST

ORIGIN_ROUTE = {"/": {"origin_cache_control": "on", "ttl": "0"}}


@scenario
def cdn_cache_control_rules_over_cache_control(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/t/cdn", headers={"Cache-Control": "no-store",
                                     "CDN-Cache-Control": "max-age=600"})
    corral = env.corral(redis, origin, routes=ORIGIN_ROUTE)
    first = corral.get("/t/cdn", {"Host": HOST})
    expect_eq((first.status, first.cache_status.stored), (200, True),
              f"stored by CDN-Cache-Control despite no-store: {first.cache_status.raw!r}")
    second = corral.get("/t/cdn", {"Host": HOST})
    expect(second.cache_status.hit and second.cache_status.ttl > 500,
           f"a hit with CDN-Cache-Control's lifetime: {second.cache_status.raw!r}")
    for r in (first, second):
        expect_eq(r.headers.get("CDN-Cache-Control"), None, "CDN-Cache-Control passed on")
        expect_eq(r.headers.get("Cache-Control"), "no-store", "Cache-Control for clients")
    expect_eq(origin.count("/t/cdn"), 1, "origin fetches")


@scenario
def corral_targeted_field_rules_over_both(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/t/own", headers={"Cache-Control": "max-age=5",
                                     "CDN-Cache-Control": "no-store",
                                     "Corral-Cache-Control": "max-age=300"})
    origin.script("/t/private", headers={"Cache-Control": "max-age=300",
                                         "Corral-Cache-Control": "private"})
    corral = env.corral(redis, origin, routes=ORIGIN_ROUTE)
    corral.get("/t/own", {"Host": HOST})
    r = corral.get("/t/own", {"Host": HOST})
    expect(r.cache_status.hit and 200 < r.cache_status.ttl <= 300,
           f"Corral-Cache-Control's 300 s: {r.cache_status.raw!r}")
    expect_eq((r.headers.get("Corral-Cache-Control"), r.headers.get("CDN-Cache-Control")),
              (None, None), "targeted fields passed on")
    corral.get("/t/private", {"Host": HOST})
    r = corral.get("/t/private", {"Host": HOST})
    expect(not r.cache_status.hit, f"private for Corral: not stored: {r.cache_status.raw!r}")
    expect_eq(origin.count("/t/private"), 2, "origin fetches of the private one")


@scenario
def targeted_fields_are_configurable_and_can_be_forwarded(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/t/edge", headers={"Cache-Control": "no-store",
                                      "Edge-Control": "max-age=120",
                                      "Corral-Cache-Control": "no-store"})
    routes = {"/": {"origin_cache_control": "on", "ttl": "0",
                    "targeted_cache_control": "Edge-Control",
                    "forward_targeted_cache_control": "on"}}
    corral = env.corral(redis, origin, routes=routes)
    corral.get("/t/edge", {"Host": HOST})
    r = corral.get("/t/edge", {"Host": HOST})
    expect(r.cache_status.hit, f"Edge-Control's max-age=120 rules: {r.cache_status.raw!r}")
    expect_eq(r.headers.get("Edge-Control"), "max-age=120", "forwarded when configured")

    text = corral_config("127.0.0.1:6379", "http://127.0.0.1:9", free_port(), free_port(),
                         routes={"/": {"targeted_cache_control": "Good-Name, Bad/Name"}})
    path = env.config_file(text, "targeted.conf")
    p = env.run_corral("-t", "-c", path)
    line = next(n for n, l in enumerate(text.splitlines(), 1) if "targeted_cache" in l)
    expect_eq(p.returncode, 1, f"corral -t on a bad field name (stderr {p.stderr!r})")
    expect(re.search(re.escape(f"{path}:{line}:") + r".*Bad/Name", p.stderr),
           f"the error names the bad field with file:line: {p.stderr!r}")
