#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/lib/hsflood.py: connections that never authenticate, for
# the handshake-limit case (fs_handshake_flood.sh). Real TCP sockets to
# marud, from source addresses given on the command line (127.0.0.x on
# loopback: each is a distinct source to marud):
#
#   idle  IDLE connections spread over the idle sources; they send nothing.
#   slow  SLOW connections over the slow sources; half announce an 8 MiB
#         AUTH frame (a whole header) and then trickle one byte a second,
#         half trickle the AUTH header itself one byte a second.
#
# Whatever marud closes is opened again after REOPEN seconds, for SECONDS
# in all, so the pressure stays on. Every second it writes one status line
# to stdout: "t=S open=N opened=N closed=N" (closed: by marud), and at the
# end "done opened=N closed=N maxopen=N maxlife=S" (maxlife: the longest
# any of its connections stayed open as this side sees it, those still open
# at the end included; a connection whose last ACK marud's kernel dropped
# with its accept queue full looks open here for ever although marud never
# had it, so the case measures marud's side: lib/heldwatch.py).
#
#   hsflood.py HOST PORT SECONDS REOPEN IDLE idle_src,... SLOW slow_src,...
import errno
import os
import resource
import selectors
import socket
import struct
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
seconds, reopen = float(sys.argv[3]), float(sys.argv[4])
n_idle, idle_src = int(sys.argv[5]), sys.argv[6].split(",")
n_slow, slow_src = int(sys.argv[7]), sys.argv[8].split(",")

PROTO_MAGIC, PROTO_VERSION, OP_AUTH = 0x5552414D, 1, 3


def header(length):
    # magic, version, op, len, status, reqid, generation (proto.h)
    return struct.pack("<IHHIiQQ", PROTO_MAGIC, PROTO_VERSION, OP_AUTH, length, 0, 1, 0)


soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = n_idle + n_slow + 256
if soft < want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

sel = selectors.DefaultSelector()
# slot: kind, src, sock or None, when to reopen, bytes to trickle, pos
slots = []
for i in range(n_idle):
    slots.append({"kind": "idle", "src": idle_src[i % len(idle_src)]})
for i in range(n_slow):
    trickle = header(8 << 20) if i % 2 == 0 else header(64)
    # the first kind sends its header at once, then a byte a second of "payload"
    slots.append({"kind": "slow", "src": slow_src[i % len(slow_src)],
                  "data": trickle, "whole": i % 2 == 0})
opened = closed = maxopen = 0
maxlife = 0.0
nopen = 0


def open_slot(s):
    global opened, nopen, maxopen
    k = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    k.setblocking(False)
    try:
        k.bind((s["src"], 0))
        rc = k.connect_ex((host, port))
    except OSError as e:
        k.close()
        s["sock"], s["when"] = None, time.monotonic() + reopen
        return
    if rc not in (0, errno.EINPROGRESS):
        k.close()
        s["sock"], s["when"] = None, time.monotonic() + reopen
        return
    # its life counts from when the connection is made (a SYN the backlog
    # dropped is retried by the kernel: not a connection marud holds)
    s["sock"], s["pos"] = k, 0
    if rc == 0:
        s["since"] = time.monotonic()
        sel.register(k, selectors.EVENT_READ, s)
    else:
        s["since"] = None
        sel.register(k, selectors.EVENT_READ | selectors.EVENT_WRITE, s)
    opened += 1
    nopen += 1
    maxopen = max(maxopen, nopen)
    if s["kind"] == "slow" and s["whole"]:
        s["pending_whole"] = True


def drop_slot(s):
    global closed, nopen, maxlife
    if s["since"] is not None:
        maxlife = max(maxlife, time.monotonic() - s["since"])
    sel.unregister(s["sock"])
    s["sock"].close()
    s["sock"], s["when"] = None, time.monotonic() + reopen
    closed += 1
    nopen -= 1


def trickle(s):
    k = s["sock"]
    try:
        if s.pop("pending_whole", False):
            k.send(s["data"])
            s["pos"] = len(s["data"])
            return
        if s["whole"] or s["pos"] >= len(s["data"]):
            k.send(b"\0")  # the announced payload, a byte at a time
        else:
            k.send(s["data"][s["pos"]:s["pos"] + 1])
            s["pos"] += 1
    except BlockingIOError:
        pass
    except OSError:
        drop_slot(s)


start = time.monotonic()
for s in slots:
    open_slot(s)
next_tick = start + 1.0
while True:
    now = time.monotonic()
    if now - start >= seconds:
        break
    for key, mask in sel.select(timeout=max(0.0, min(0.1, next_tick - now))):
        s = key.data
        if s["since"] is None and mask & selectors.EVENT_WRITE:
            if s["sock"].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                drop_slot(s)
                continue
            s["since"] = time.monotonic()
            sel.modify(s["sock"], selectors.EVENT_READ, s)
        if not mask & selectors.EVENT_READ:
            continue
        try:
            b = s["sock"].recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            b = b""
        if not b:
            drop_slot(s)
    now = time.monotonic()
    for s in slots:
        if s.get("sock") is None and now >= s["when"]:
            open_slot(s)
    if now >= next_tick:
        next_tick += 1.0
        for s in slots:
            if s["kind"] == "slow" and s.get("sock") is not None and s["since"] is not None:
                trickle(s)
        print(f"t={now - start:.0f} open={nopen} opened={opened} closed={closed}", flush=True)
for s in slots:
    if s.get("sock") is not None and s["since"] is not None:
        maxlife = max(maxlife, time.monotonic() - s["since"])
print(f"done opened={opened} closed={closed} maxopen={maxopen} maxlife={maxlife:.1f}",
      flush=True)
