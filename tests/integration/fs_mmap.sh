#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_mmap: mmap(2) on a marufs mount: MAP_SHARED and MAP_PRIVATE reads of a
# published file, MAP_SHARED writes to a file being written (written back
# before the publish at close), and a private copy-on-write mapping that
# never reaches the file.
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount
marufs_mount

python3 - "$MNT" "$MNT2" <<'PY' || fail "mmap"
import mmap, os, sys
m, m2 = sys.argv[1], sys.argv[2]
data = os.urandom(3 << 20)
with open(f"{m}/mapped", "wb") as f:
    f.write(data)
with open(f"{m}/mapped", "rb") as f:
    sh = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
    assert sh[:] == data, "MAP_SHARED read"
    pr = mmap.mmap(f.fileno(), 0, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
    pr[0:5] = b"XXXXX"
    assert pr[5:] == data[5:] and pr[:5] == b"XXXXX", "MAP_PRIVATE copy-on-write"
    sh.close(); pr.close()
assert open(f"{m}/mapped", "rb").read() == data, "a private mapping reached the file"

# shared writable mapping of a pending file
fd = os.open(f"{m}/mwrite", os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o644)
os.ftruncate(fd, 1 << 20)
w = mmap.mmap(fd, 1 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
w[:] = bytes(range(256)) * 4096
w.flush()
w.close()
os.close(fd)
want = bytes(range(256)) * 4096
assert open(f"{m}/mwrite", "rb").read() == want, "MAP_SHARED writes lost on this mount"
assert open(f"{m2}/mwrite", "rb").read() == want, "MAP_SHARED writes not published"
PY
marufs_umount "$MNT2"
marufs_umount
marud_stop
