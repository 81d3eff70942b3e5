#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/lib/cutproxy.py: a stream proxy between clients and marud
# that the fault cases use as a network they can cut. It listens on a unix
# socket and forwards each connection to marud's unix socket. SIGUSR1 cuts
# the network: every forwarded connection is reset on both sides and new
# ones are accepted and closed at once (a client sees its peer gone, not a
# hang). SIGHUP partitions it instead: nothing is forwarded either way and
# nothing is closed; bytes already read wait in the proxy, new connections
# are accepted and wait unconnected, as a peer behind a dropped link looks
# (silence, not an error). SIGUSR2 restores it (a partition's held bytes
# then go on). It writes "cut" / "held" / "up" to its stdout as it changes
# state, and exits on SIGTERM.
#
#   cutproxy.py LISTEN_PATH TARGET_PATH
import os
import signal
import socket
import struct
import sys
import threading

listen_path, target_path = sys.argv[1], sys.argv[2]
lock = threading.RLock()  # the signal handlers take it on the main thread
live = set()
down = False
flowing = threading.Event()  # cleared while partitioned (SIGHUP)
flowing.set()


def reset(s):
    try:
        # SO_LINGER 0: close sends RST on TCP; on unix it just closes
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def pump(src, dst):
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
                break
            flowing.wait()
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        reset(s)


def serve(c):
    flowing.wait()
    try:
        t = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        t.connect(target_path)
    except OSError:
        c.close()
        return
    with lock:
        if down:
            c.close()
            t.close()
            return
        live.add((c, t))
    a = threading.Thread(target=pump, args=(c, t), daemon=True)
    b = threading.Thread(target=pump, args=(t, c), daemon=True)
    a.start()
    b.start()
    a.join()
    b.join()
    with lock:
        live.discard((c, t))
    c.close()
    t.close()


def on_cut(signum, frame):
    global down
    with lock:
        down = True
        for c, t in list(live):
            reset(c)
            reset(t)
    print("cut", flush=True)


def on_hold(signum, frame):
    flowing.clear()
    print("held", flush=True)


def on_up(signum, frame):
    global down
    with lock:
        down = False
    flowing.set()
    print("up", flush=True)


signal.signal(signal.SIGUSR1, on_cut)
signal.signal(signal.SIGUSR2, on_up)
signal.signal(signal.SIGHUP, on_hold)
signal.signal(signal.SIGTERM, lambda s, f: os._exit(0))
try:
    os.unlink(listen_path)
except FileNotFoundError:
    pass
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(listen_path)
ls.listen(128)
print("listening", flush=True)
while True:
    c, _ = ls.accept()
    with lock:
        refuse = down
    if refuse:
        reset(c)
        c.close()
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
