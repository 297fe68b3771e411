"""Large responses: no Nagle stall on keep-alive connections, and bodies
that flow to the requester and to every waiter of the same flight as they
arrive, with bounded memory."""

import http.client
import time

from harness import expect, expect_eq, scenario, HOST

KIB = 1024


@scenario
def sequential_large_hits_on_one_connection_never_wait_for_a_delayed_ack(env):
    # Linux delays an ACK by 40 ms or more. Without TCP_NODELAY, a
    # response's last partial segment waits for the ACK of the one before
    # it on every other request of a keep-alive connection.
    redis, origin = env.redis(), env.origin()
    origin.script("/big/1", body="x" * (100 * KIB))
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    conn = http.client.HTTPConnection(corral.host, corral.port, timeout=10)
    took = []
    for i in range(12):
        t0 = time.monotonic()
        conn.request("GET", "/big/1", headers={"Host": HOST})
        resp = conn.getresponse()
        body = resp.read()
        took.append((time.monotonic() - t0) * 1000)
        expect_eq((resp.status, len(body)), (200, 100 * KIB), f"request {i}")
    conn.close()
    hits = took[2:]	# the fill and the first lookup aside
    expect(max(hits) < 30, f"each 100 KiB hit well under the 40 ms delayed ACK: "
           f"{', '.join(f'{t:.1f}' for t in hits)} ms")
