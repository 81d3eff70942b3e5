#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tests/multihost/mh_tool.py: the timed POSIX sequences and the raw TCP load
of the multihost cases, where a shell would add a fork per step to what it
measures.

  createloop DIR PREFIX SECONDS OUT   create (or truncate), write 4 KiB, close
                                      files in DIR for SECONDS; one latency
                                      (ms) a line
  stat DIR NAME...                    stat each name in its own thread, all
                                      at once; "NAME ms errno" a line
  interrupt DIR NAME SECONDS          stat DIR/NAME, interrupted by a signal
                                      after SECONDS; prints "ms errno"
  writecut FILE SYNCDIR               write 1 MiB of 2 MiB, create SYNCDIR/
                                      ready, wait for SYNCDIR/go, write the
                                      rest, create SYNCDIR/wrote, wait for
                                      SYNCDIR/close, close; prints
                                      "write=ERRNO close=ERRNO" (0 = success)
  write SRC DST                       copy SRC (read first) to DST; prints the
                                      ns from DST's open to its close
  read FILE                           read FILE whole; prints the ns from open
                                      to close
  flood ADDR PORT IDLE SLOW SECONDS READY
                                      IDLE connections that send nothing and
                                      SLOW that announce an 8 MiB AUTH frame
                                      and send one byte a second; READY is
                                      written once all are connected; after
                                      SECONDS prints "connected=N idle_closed=N
                                      slow_closed=N"
"""
import errno
import os
import resource
import select
import signal
import socket
import struct
import sys
import threading
import time

PROTO_MAGIC = 0x5552414D
OP_AUTH = 3


def now_ms():
    return time.monotonic() * 1000.0


def createloop(d, prefix, secs, out):
    data = b"x" * 4096
    end = time.monotonic() + float(secs)
    lat = []
    i = 0
    while time.monotonic() < end:
        # 1000 names over and over: each close publishes a new version, and
        # the pool's names and bytes stay bounded however fast the loop runs
        path = os.path.join(d, "%s%d" % (prefix, i % 1000))
        t0 = now_ms()
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.close(fd)
        lat.append(now_ms() - t0)
        i += 1
    with open(out, "w") as f:
        f.write("".join("%.3f\n" % v for v in lat))


def stat_many(d, names):
    res = {}

    def one(n):
        t0 = now_ms()
        e = 0
        try:
            os.stat(os.path.join(d, n))
        except OSError as ex:
            e = ex.errno
        res[n] = (now_ms() - t0, e)

    ts = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for n in names:
        print("%s %.0f %s" % (n, res[n][0], errno.errorcode.get(res[n][1], res[n][1])))


class Interrupted(Exception):
    pass


def interrupt(d, name, secs):
    def on_alarm(sig, frame):
        raise Interrupted()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(secs))
    t0 = now_ms()
    e = "0"
    try:
        os.stat(os.path.join(d, name))
    except Interrupted:
        e = "EINTR"
    except OSError as ex:
        e = errno.errorcode.get(ex.errno, str(ex.errno))
    print("%.0f %s" % (now_ms() - t0, e))


def writecut(path, sync):
    """Steps handshaked through files in directory sync: the case creates
    "go" and "close" when it wants the next step; this side creates "ready"
    and "wrote"."""
    def wait(name):
        while not os.path.exists(os.path.join(sync, name)):
            time.sleep(0.05)

    def done(name):
        open(os.path.join(sync, name), "w").close()

    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, os.urandom(1 << 20))
    done("ready")
    wait("go")
    we = 0
    try:
        os.write(fd, os.urandom(1 << 20))
    except OSError as ex:
        we = ex.errno
    done("wrote")
    wait("close")
    ce = 0
    try:
        os.close(fd)
    except OSError as ex:
        ce = ex.errno
    print("write=%s close=%s" % (errno.errorcode.get(we, we) if we else 0,
                                 errno.errorcode.get(ce, ce) if ce else 0))


def flood(addr, port, idle, slow, secs, ready):
    n = idle + slow + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(n, soft), hard), hard))
    socks = []
    for i in range(idle + slow):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((addr, int(port)))
        except BlockingIOError:
            pass
        socks.append(s)
    # wait (bounded) until every connect finished one way or the other
    # (poll, not select: the descriptors pass FD_SETSIZE)
    by_fd = {s.fileno(): s for s in socks}
    pending = set(by_fd)
    end = time.monotonic() + 20
    while pending and time.monotonic() < end:
        p = select.poll()
        for fd in pending:
            p.register(fd, select.POLLOUT)
        for fd, _ in p.poll(500):
            pending.discard(fd)
    connected = 0
    for s in socks:
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
            connected += 1
    hdr = struct.pack("<IHHIiQQ", PROTO_MAGIC, 1, OP_AUTH, 8 << 20, 0, 1, 0)
    slow_socks = socks[idle:]
    for s in slow_socks:
        try:
            s.send(hdr)
        except OSError:
            pass
    with open(ready, "w") as f:
        f.write("%d\n" % connected)
    closed = set()
    end = time.monotonic() + float(secs)
    while time.monotonic() < end:
        for s in slow_socks:
            if s.fileno() in closed:
                continue
            try:
                s.send(b"\0")
            except OSError:
                closed.add(s.fileno())
        # an EOF or a reset on any socket: marud closed it
        p = select.poll()
        for s in socks:
            if s.fileno() not in closed:
                p.register(s.fileno(), select.POLLIN)
        for fd, _ in p.poll(0):
            try:
                if by_fd[fd].recv(4096) == b"":
                    closed.add(fd)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(fd)
        time.sleep(1)
    idle_closed = sum(1 for s in socks[:idle] if s.fileno() in closed)
    slow_closed = sum(1 for s in slow_socks if s.fileno() in closed)
    print("connected=%d idle_closed=%d slow_closed=%d" % (connected, idle_closed, slow_closed))
    sys.stdout.flush()


def timed_write(src, dst):
    with open(src, "rb") as f:
        data = memoryview(f.read())
    t0 = time.monotonic_ns()
    fd = os.open(dst, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    off = 0
    while off < len(data):
        off += os.write(fd, data[off:off + (4 << 20)])
    os.close(fd)
    print(time.monotonic_ns() - t0)


def timed_read(path):
    buf = bytearray(4 << 20)
    t0 = time.monotonic_ns()
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass
    print(time.monotonic_ns() - t0)


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "createloop":
        createloop(*args)
    elif cmd == "stat":
        stat_many(args[0], args[1:])
    elif cmd == "interrupt":
        interrupt(*args)
    elif cmd == "writecut":
        writecut(*args)
    elif cmd == "write":
        timed_write(*args)
    elif cmd == "read":
        timed_read(*args)
    elif cmd == "flood":
        flood(args[0], args[1], int(args[2]), int(args[3]), args[4], args[5])
    else:
        sys.exit("mh_tool: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
