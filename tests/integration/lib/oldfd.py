#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
tests/integration/lib/oldfd.py FILE READY GO: a descriptor of the generation
before a marud restart, held by a process marud does not inherit. Opens FILE
and reads from it, creates READY, waits for GO to exist, reads again and
prints "read" when that worked, "EIO" when it failed with EIO, else the
error. The restart cases start it in the background and check what it says.
"""
import errno
import os
import sys
import time

fd = os.open(sys.argv[1], os.O_RDONLY)
assert len(os.pread(fd, 100, 0)) == 100
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
try:
    os.pread(fd, 100, 4096)
    print("read")
except OSError as e:
    print("EIO" if e.errno == errno.EIO else e.strerror)
os.close(fd)
