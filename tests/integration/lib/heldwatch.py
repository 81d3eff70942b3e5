#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/lib/heldwatch.py: how long marud holds connections, from
# marud's side: every INTERVAL seconds it lists the established TCP sockets
# on marud's port (ss), and follows each peer address:port from the first
# sample it is in to the last one it is in without a gap. Peers whose
# address is in SKIP (the real mounts) are left out. Runs while PID lives;
# prints "maxheld=S peers=N" at the end: the longest any peer was held.
#
#   heldwatch.py PORT PID INTERVAL SKIP_ADDR,...
import os
import subprocess
import sys
import time

port, pid, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
skip = set(sys.argv[4].split(",")) if len(sys.argv) > 4 else set()
first = {}
maxheld = 0.0
seen_ever = set()


def alive(p):
    try:
        os.kill(p, 0)
        return True
    except OSError:
        return False


while alive(pid):
    now = time.monotonic()
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True).stdout
    peers = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        peer = f[-1]
        if peer.rsplit(":", 1)[0] in skip:
            continue
        peers.add(peer)
    for p in list(first):
        if p not in peers:
            del first[p]  # gone (or a gap: a later one with its port is new)
    for p in peers:
        first.setdefault(p, now)
        maxheld = max(maxheld, now - first[p])
    seen_ever |= peers
    time.sleep(interval)
print(f"maxheld={maxheld:.1f} peers={len(seen_ever)}", flush=True)
