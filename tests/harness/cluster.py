# SPDX-License-Identifier: MIT
"""Redis Cluster and Redis Sentinel for scenario tests: real redis-server
processes on free loopback ports, started and stopped by the scenario's Env.

    cluster = start_cluster(env)          # 3 primaries, 3 replicas
    corral = env.corral(cluster.address, origin, extra=cluster.corral_extra(),
                        wait_redis=True)
    group = start_sentinels(env)          # 1 primary, 1 replica, 3 sentinels

The cluster is built with CLUSTER MEET, ADDSLOTSRANGE and REPLICATE (no
redis-cli: it sleeps a second per check) and waited for with wait_for.
"""

import os

from .keys import HOST, cache_key
from .redis import RedisServer
from .resp import RespClient, _decode
from .wait import expect, free_port, slow, wait_for

CLUSTER_NODE_TIMEOUT_MS = 500	# short: a killed primary fails over in about 2 s
SENTINEL_DOWN_AFTER_MS = 500
SENTINEL_FAILOVER_TIMEOUT_MS = 3000
MASTER_NAME = "corral"
SLOTS = 16384


# -- hash slots (Redis Cluster specification, appendix A) ----------------------------

def _crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(name):
    """The hash slot of a Redis key: its {hash tag} if it has one."""
    start = name.find("{")
    if start >= 0:
        end = name.find("}", start + 1)
        if end > start + 1:
            name = name[start + 1:end]
    return _crc16(name.encode()) % SLOTS


def path_slot(path, host=HOST):
    """The slot of every Redis key corral keeps for path."""
    return key_slot(cache_key(path, host))


def paths_in_slots(ranges, per_range, prefix="/k", avoid=()):
    """per_range paths for each (lo, hi) slot range: {range_index: [paths]}."""
    found = {i: [] for i in range(len(ranges))}
    n = 0
    while any(len(v) < per_range for v in found.values()):
        path = f"{prefix}{n}"
        n += 1
        if path in avoid:
            continue
        slot = path_slot(path)
        for i, (lo, hi) in enumerate(ranges):
            if lo <= slot <= hi and len(found[i]) < per_range:
                found[i].append(path)
    return found


def path_in_slot(slot, prefix="/s", avoid=()):
    """A path whose keys live in slot."""
    n = 0
    while True:
        path = f"{prefix}{n}"
        if path not in avoid and path_slot(path) == slot:
            return path
        n += 1


# -- processes ------------------------------------------------------------------------

class RedisProcess(RedisServer):
    """A redis-server (or sentinel) with extra arguments, in its own directory."""

    def __init__(self, workdir, name, args, config_text=None, cluster=False):
        self.name = name
        self.workdir = os.path.join(workdir, name)
        os.makedirs(self.workdir, exist_ok=True)
        self.log_path = os.path.join(self.workdir, "redis.log")
        self.args = args
        self.config_text = config_text
        self.cluster = cluster
        self.start()

    def argv(self, binary):
        if self.config_text is not None:
            conf = os.path.join(self.workdir, "sentinel.conf")
            with open(conf, "w") as f:
                f.write(self.config_text.format(port=self.port, dir=self.workdir))
            argv = [binary, conf, "--sentinel"]
        else:
            argv = super().argv(binary) + list(self.args)
        if self.cluster:	# the bus port is port + 10000 unless named: maybe > 65535
            self.bus_port = free_port()
            argv += ["--cluster-port", str(self.bus_port)]
        return argv

    def info(self, section):
        return self.fields("INFO", section)

    def reconnect(self):
        """A new client connection (sentinels kill the old ones on failover)."""
        self.client.close()
        self.client = RespClient(self.host, self.port, auth=self.auth)
        return self

    def fields(self, *command):
        """A "name:value" text reply (INFO, CLUSTER INFO) as a dict."""
        text = self.cmd(*command)
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def role(self):
        return _decode(self.client.command("ROLE"))[0]


class RedisCluster:
    """3 primaries with a replica each. nodes[i] for i < 3 are the first
    primaries, nodes[i + 3] their replicas; primary_of(slot) follows a
    failover or a migration."""

    RANGES = [(0, 5460), (5461, 10922), (10923, 16383)]

    def __init__(self, env, node_timeout_ms=CLUSTER_NODE_TIMEOUT_MS):
        args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout_ms),
                "--cluster-require-full-coverage", "no",
                "--cluster-replica-validity-factor", "0",
                "--cluster-allow-replica-migration", "no"]
        self.nodes = []
        for i in range(6):
            self.nodes.append(env.track(RedisProcess(env.workdir, env.name("cnode"), args,
                                                     cluster=True)))
        first = self.nodes[0]
        for n in self.nodes[1:]:
            n.cmd("CLUSTER", "MEET", first.host, str(first.port), str(first.bus_port))
        for n, (lo, hi) in zip(self.nodes[:3], self.RANGES):
            n.cmd("CLUSTER", "ADDSLOTSRANGE", str(lo), str(hi))
        wait_for(lambda: all(len(self.known(n)) == 6 for n in self.nodes),
                 timeout=slow(20), what="every cluster node to know the 5 others")
        for replica, primary in zip(self.nodes[3:], self.nodes[:3]):
            replica.cmd("CLUSTER", "REPLICATE", primary.cmd("CLUSTER", "MYID"))
        wait_for(self.healthy, timeout=slow(30), what="the cluster to be ok with 3 replicas")
        self.show_replicas()
        self.address = ", ".join(n.address for n in self.nodes[:3])

    @staticmethod
    def known(node):
        return [line for line in node.cmd("CLUSTER", "NODES").splitlines() if line]

    def healthy(self):
        for n in self.nodes:
            if not n.running():
                continue
            if n.fields("CLUSTER", "INFO").get("cluster_state") != "ok":
                return False
        replicas = [n for n in self.nodes if n.running() and n.role() == "slave"]
        return len(replicas) == 3 and all(
            r.info("replication").get("master_link_status") == "up" for r in replicas)

    def show_replicas(self):
        """Writes once to every primary: CLUSTER SLOTS leaves out a replica
        that has replicated nothing yet, as a fresh cluster's have not."""
        for primary, (lo, hi) in zip(self.nodes[:3], self.RANGES):
            n = 0
            while not lo <= key_slot(f"replicated{n}") <= hi:
                n += 1
            primary.cmd("SET", f"replicated{n}", "1")
        wait_for(lambda: all(len(entry) > 3 for n in self.nodes
                             for entry in _decode(n.client.command("CLUSTER", "SLOTS"))),
                 timeout=slow(20), what="every node's CLUSTER SLOTS to name the replicas")

    def stop(self):
        pass	# every node is tracked by the Env itself

    def corral_extra(self, timeout="1s"):
        return {"redis": {"mode": "cluster", "address": self.address, "timeout": timeout}}

    def node_id(self, node):
        return node.cmd("CLUSTER", "MYID")

    def primary_of(self, slot):
        """The running node that owns slot, as a running node sees it."""
        for n in self.nodes:
            if not n.running():
                continue
            for entry in _decode(n.client.command("CLUSTER", "SLOTS")):
                if entry[0] <= slot <= entry[1]:
                    port = entry[2][1]
                    return next(x for x in self.nodes if x.port == port)
        raise AssertionError(f"no node owns slot {slot}")

    def replica_of(self, primary):
        pid = self.node_id(primary)
        for n in self.nodes:
            if n is not primary and n.running() and n.role() == "slave" and \
                    f"master_host:{primary.host}" in n.cmd("INFO", "replication") and \
                    n.info("replication").get("master_port") == str(primary.port):
                return n
        raise AssertionError(f"no replica of {primary.name} ({pid})")

    def node_with_key(self, key):
        """The primaries holding key (exactly one if all is well)."""
        slot = str(key_slot(key))
        return [n for n in self.nodes if n.running() and n.role() == "master"
                and key in n.cmd("CLUSTER", "GETKEYSINSLOT", slot, "1000")]

    def migrate_slot(self, slot, source, target, finish=True):
        """Moves slot from source to target as redis-cli --cluster reshard
        does: IMPORTING, MIGRATING, MIGRATE every key, then (finish) NODE
        everywhere."""
        sid, tid = self.node_id(source), self.node_id(target)
        target.cmd("CLUSTER", "SETSLOT", str(slot), "IMPORTING", sid)
        source.cmd("CLUSTER", "SETSLOT", str(slot), "MIGRATING", tid)
        self.move_keys(slot, source, target)
        if finish:
            self.finish_migration(slot, source, target)

    def move_keys(self, slot, source, target):
        keys = source.cmd("CLUSTER", "GETKEYSINSLOT", str(slot), "1000")
        if keys:
            source.cmd("MIGRATE", target.host, str(target.port), "", "0", "5000",
                       "KEYS", *keys)

    def finish_migration(self, slot, source, target):
        tid = self.node_id(target)
        for n in (target, source):
            n.cmd("CLUSTER", "SETSLOT", str(slot), "NODE", tid)
        for n in self.nodes:
            if n.running() and n.role() == "master" and n not in (source, target):
                n.cmd("CLUSTER", "SETSLOT", str(slot), "NODE", tid)


def start_cluster(env, node_timeout_ms=CLUSTER_NODE_TIMEOUT_MS):
    """A Redis Cluster of 3 primaries and 3 replicas, stopped with env."""
    return env.track(RedisCluster(env, node_timeout_ms))


SENTINEL_CONF = """port {port}
bind 127.0.0.1
dir {dir}
sentinel monitor %s 127.0.0.1 %%d 2
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
""" % (MASTER_NAME, MASTER_NAME, SENTINEL_DOWN_AFTER_MS, MASTER_NAME,
       SENTINEL_FAILOVER_TIMEOUT_MS, MASTER_NAME)


class SentinelGroup:
    """A primary, its replica, and 3 sentinels watching it as MASTER_NAME."""

    def __init__(self, env):
        self.primary = env.track(RedisProcess(env.workdir, env.name("primary"), []))
        self.replica = env.track(RedisProcess(
            env.workdir, env.name("replica"),
            ["--replicaof", self.primary.host, str(self.primary.port)]))
        wait_for(lambda: self.replica.info("replication").get("master_link_status") == "up",
                 timeout=slow(20), what="the replica to sync")
        conf = SENTINEL_CONF.replace("%d", str(self.primary.port))
        self.sentinels = [env.track(RedisProcess(env.workdir, env.name("sentinel"), [],
                                                 config_text=conf)) for _ in range(3)]
        wait_for(self.watching, timeout=slow(20),
                 what="every sentinel to see the replica and the other sentinels")
        self.address = ", ".join(s.address for s in self.sentinels)

    def watching(self):
        for s in self.sentinels:
            info = s.info("sentinel")
            line = info.get("master0", "")
            if "slaves=1" not in line or "sentinels=3" not in line:
                return False
        return True

    def named_primary(self):
        """host:port the first running sentinel names."""
        for s in self.sentinels:
            if s.running():
                host, port = _decode(s.client.command(
                    "SENTINEL", "get-master-addr-by-name", MASTER_NAME))
                return f"{host}:{port}"
        raise AssertionError("no sentinel running")

    def corral_extra(self, timeout="1s"):
        return {"redis": {"mode": "sentinel", "address": self.address,
                          "master_name": MASTER_NAME, "timeout": timeout}}

    def stop(self):
        pass	# every process is tracked by the Env itself


def start_sentinels(env):
    return env.track(SentinelGroup(env))


def redis_figures(corral):
    return corral.stats()["redis"]


def expect_all_ok(results, what):
    bad = [r for r in results if r.status != 200]
    expect(not bad, f"{what}: {len(bad)} answers were not 200, e.g. {bad[:1]}")


__all__ = ["CLUSTER_NODE_TIMEOUT_MS", "MASTER_NAME", "RedisCluster", "RedisProcess",
           "SentinelGroup", "expect_all_ok", "key_slot", "path_in_slot", "path_slot",
           "paths_in_slots", "redis_figures", "start_cluster", "start_sentinels"]
