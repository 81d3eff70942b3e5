#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""metrics_http.py: the client side of tests/integration/metrics_http.sh.

  get PORT             GET /metrics from 127.0.0.1:PORT, print the body
                       (fails unless 200 with the 0.0.4 text content type)
  check M0 M1 F0 F1 POOL
                       marud's text before/after a workload (M0, M1) and a
                       mount's (F0, F1): the families are there, every sample
                       carries pool="POOL", the counters the workload moves
                       moved, histograms are consistent
  refusals PORT        404/405/413 answers, oversized headers refused,
                       connections over the bound closed, then a GET works
"""
import http.client
import re
import socket
import sys
import time
import urllib.error
import urllib.request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def get(port):
    r = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20)
    ct = r.headers.get("Content-Type", "")
    if r.status != 200 or not ct.startswith("text/plain; version=0.0.4"):
        sys.exit(f"GET /metrics: {r.status} {ct}")
    sys.stdout.write(r.read().decode())


def parse(path):
    """{(name, frozenset(labels)): value}, {family: type}"""
    samples, types = {}, {}
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("# TYPE "):
            _, _, fam, typ = line.split(" ", 3)
            types[fam] = typ
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise SystemExit(f"{path}: not a sample line: {line!r}")
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples, types


def val(samples, name, **want):
    """The sum of name's samples whose labels include want."""
    total, seen = 0.0, False
    for (n, labels), v in samples.items():
        d = dict(labels)
        if n == name and all(d.get(k) == w for k, w in want.items()):
            total += v
            seen = True
    if not seen:
        raise SystemExit(f"no sample {name} {want}")
    return total


MARUD_FAMILIES = [
    "marud_pool_capacity_bytes", "marud_pool_used_bytes", "marud_pool_pending_bytes",
    "marud_pool_evictable_bytes", "marud_pool_pinned_bytes", "marud_evictions_total",
    "marud_evicted_bytes_total", "marud_evicted_age_seconds", "marud_enospc_total",
    "marud_ops_total", "marud_request_duration_seconds", "marud_cache_requests_total",
    "marud_connections", "marud_events_total", "marud_journal_checkpoint_hold_max_seconds",
]
MOUNT_FAMILIES = MARUD_FAMILIES + [
    "maru_client_bytes_total", "maru_client_request_duration_seconds",
    "maru_client_transfer_duration_seconds", "maru_client_connected",
    "marufs_fuse_ops_total", "marufs_fuse_request_duration_seconds",
    "marufs_publish_visible_seconds", "marufs_lookups_total", "marufs_publishes_total",
]


def families(path, samples, types, need, pool):
    bad = 0
    for fam in need:
        if fam not in types:
            print(f"{path}: family {fam} missing")
            bad += 1
    for (name, labels), _ in samples.items():
        if dict(labels).get("pool") != pool:
            print(f"{path}: {name} {dict(labels)} lacks pool=\"{pool}\"")
            return bad + 1
    return bad


def histogram_sane(samples, name, **want):
    """Cumulative buckets, +Inf == _count."""
    buckets = sorted((float(dict(l)["le"]), v) for (n, l), v in samples.items()
                     if n == name + "_bucket" and
                     all(dict(l).get(k) == w for k, w in want.items()))
    if not buckets:
        raise SystemExit(f"no buckets of {name} {want}")
    prev = 0
    for le, v in buckets:
        if v < prev:
            raise SystemExit(f"{name} {want}: bucket le={le} {v} < {prev}")
        prev = v
    if buckets[-1][1] != val(samples, name + "_count", **want):
        raise SystemExit(f"{name} {want}: +Inf bucket != _count")
    return buckets[-1][1]


def hcount(samples, name, **want):
    """A histogram's count, 0 before its first observation (no child yet)."""
    try:
        return histogram_sane(samples, name, **want)
    except SystemExit:
        return 0


def moved(what, before, after, at_least=1):
    if after - before < at_least:
        print(f"{what}: {before} -> {after}, expected +{at_least}")
        return 1
    print(f"ok {what}: {before:g} -> {after:g}")
    return 0


def check(m0, m1, f0, f1, pool):
    (sm0, _), (sm1, tm1) = parse(m0), parse(m1)
    (sf0, _), (sf1, tf1) = parse(f0), parse(f1)
    bad = families(m1, sm1, tm1, MARUD_FAMILIES, pool)
    bad += families(f1, sf1, tf1, MOUNT_FAMILIES, pool)
    for fam, typ in list(tm1.items()) + list(tf1.items()):
        if typ == "counter" and not fam.endswith("_total"):
            print(f"counter {fam} without _total")
            bad += 1
    bad += moved("marud publishes", val(sm0, "marud_ops_total", op="PUBLISH"),
                 val(sm1, "marud_ops_total", op="PUBLISH"), 11)
    bad += moved("marud publish latency count",
                 hcount(sm0, "marud_request_duration_seconds", op="PUBLISH"),
                 histogram_sane(sm1, "marud_request_duration_seconds", op="PUBLISH"), 11)
    bad += moved("marud lookup misses",
                 val(sm0, "marud_cache_requests_total", op="lookup", result="miss"),
                 val(sm1, "marud_cache_requests_total", op="lookup", result="miss"))
    bad += moved("marud open hits",
                 val(sm0, "marud_cache_requests_total", op="open", result="hit"),
                 val(sm1, "marud_cache_requests_total", op="open", result="hit"), 8)
    ev = val(sm1, "marud_evictions_total") - val(sm0, "marud_evictions_total")
    bad += moved("marud evictions", 0, ev)
    bad += moved("marud evicted-age histogram (one per eviction)", 0,
                 histogram_sane(sm1, "marud_evicted_age_seconds"), ev)
    bad += moved("marud used bytes", val(sm0, "marud_pool_used_bytes"),
                 val(sm1, "marud_pool_used_bytes"), 8 * 65536)
    if val(sm1, "marud_pool_pinned_bytes") > val(sm1, "marud_pool_used_bytes"):
        print("pinned bytes over used bytes")
        bad += 1
    bad += moved("mount FUSE writes", val(sf0, "marufs_fuse_ops_total", op="write"),
                 val(sf1, "marufs_fuse_ops_total", op="write"), 8)
    bad += moved("mount FUSE lookup histogram", 0,
                 histogram_sane(sf1, "marufs_fuse_request_duration_seconds", op="lookup"))
    bad += moved("mount libmaru publish histogram", 0,
                 histogram_sane(sf1, "maru_client_request_duration_seconds", op="PUBLISH"), 8)
    bad += moved("mount publish-to-visible (mount 2's publishes seen here)", 0,
                 histogram_sane(sf1, "marufs_publish_visible_seconds"), 3)
    bad += moved("mount bytes written", val(sf0, "maru_client_bytes_total", dir="write"),
                 val(sf1, "maru_client_bytes_total", dir="write"), 8 * 65536)
    if bad:
        sys.exit(1)


def status_of(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        r.read()
        return r.status, r.getheader("Allow")
    except (ConnectionError, http.client.HTTPException, socket.timeout) as e:
        return type(e).__name__, None
    finally:
        c.close()


def refusals(port):
    bad = 0
    want = [("GET", "/", 404), ("GET", "/metricsx", 404), ("GET", "/metrics/x", 404),
            ("GET", "/stats", 404), ("POST", "/metrics", 405), ("PUT", "/metrics", 405),
            ("DELETE", "/metrics", 405), ("HEAD", "/metrics", 405)]
    for method, path, code in want:
        st, allow = status_of(port, method, path)
        if st != code or (code == 405 and allow != "GET"):
            print(f"{method} {path}: {st} (Allow {allow}), expected {code}")
            bad += 1
    st, _ = status_of(port, "GET", "/metrics", body=b"x" * 100)
    if st != 413:
        print(f"GET /metrics with a body: {st}, expected 413")
        bad += 1
    # headers past the request bound: refused, never served
    st, _ = status_of(port, "GET", "/metrics", headers={"X-Big": "a" * 65536})
    if st == 200:
        print("GET /metrics with 64 KiB of headers: served")
        bad += 1
    print(f"ok oversized headers: {st}")
    # connections past the bound (8 per address) are closed at once
    socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(24)]
    time.sleep(0.5)
    closed = 0
    for s in socks:
        s.settimeout(0.2)
        try:
            if s.recv(1) == b"":
                closed += 1
        except (socket.timeout, ConnectionError):
            pass
    for s in socks:
        s.close()
    if closed < 24 - 8:
        print(f"only {closed} of 24 idle connections closed (bound 8 per address)")
        bad += 1
    print(f"ok {closed} of 24 idle connections closed")
    time.sleep(0.3)
    st, _ = status_of(port, "GET", "/metrics")
    if st != 200:
        print(f"GET /metrics after the flood: {st}")
        bad += 1
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "get":
        get(int(sys.argv[2]))
    elif cmd == "check":
        check(*sys.argv[2:7])
    elif cmd == "refusals":
        refusals(int(sys.argv[2]))
    else:
        sys.exit(__doc__)
