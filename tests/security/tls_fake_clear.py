#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tests/security/tls_fake_clear.py: a server that answers in clear text.

usage: tls_fake_clear.py PORT CAPTURE_FILE

Stands where a TLS marud should be (or where a man in the middle strips
TLS): every connection's first bytes are recorded to CAPTURE_FILE and
answered with a clear marud frame header (magic "MARU", status 0). A
client that expects TLS must fail rather than go on in clear. Prints
"ready" once listening; runs until killed.
"""
import socket
import struct
import sys

port, path = int(sys.argv[1]), sys.argv[2]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(16)
print("ready", flush=True)
while True:
    c, _ = ls.accept()
    c.settimeout(2)
    try:
        b = c.recv(4096)
        with open(path, "ab") as f:
            f.write(b)
        # magic, version 1, op 0, len 0, status 0, reqid 0, generation 0
        c.sendall(struct.pack("<IHHIiQQ", 0x5552414D, 1, 0, 0, 0, 0, 0))
    except OSError:
        pass
    c.close()
