#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tests/security/tls_tap.py: a TCP relay that records what crosses it.

usage: tls_tap.py LISTEN_PORT TARGET_PORT CAPTURE_FILE

Listens on 127.0.0.1:LISTEN_PORT, forwards each connection to
127.0.0.1:TARGET_PORT and appends every byte it forwards (both ways) to
CAPTURE_FILE, so a case can show what an observer on the wire would see.
Prints "ready" once listening. Runs until killed.
"""
import socket
import sys
import threading

lock = threading.Lock()


def pump(src, dst, cap):
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
                break
            with lock:
                cap.write(b)
                cap.flush()
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    lport, tport, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    cap = open(path, "ab")
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(64)
    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        t = socket.create_connection(("127.0.0.1", tport))
        for a, b in ((c, t), (t, c)):
            threading.Thread(target=pump, args=(a, b, cap), daemon=True).start()


main()
