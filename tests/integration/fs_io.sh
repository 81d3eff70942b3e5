#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_io: the basic write -> close (publish) -> read cycle on a marufs mount:
# small and multi-MiB files through the page cache and with O_DIRECT, reads
# at offsets, a file nothing was written to, and close-to-open between two
# mounts of the same pool (an open on the second mount right after the close
# on the first sees the new bytes; stat catches up through the event stream).
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount
marufs_mount

echo hello >"$MNT/a"
assert_eq "$(cat "$MNT/a")" hello "small file read back"
assert_eq "$(stat -c %s "$MNT/a")" 6 "small file size"

head -c $((7 << 20 | 12345)) /dev/urandom >"$T/big"
cp "$T/big" "$MNT/big"
cmp "$T/big" "$MNT/big" || fail "7 MiB file differs after cp"
assert_eq "$(stat -c %s "$MNT/big")" "$(stat -c %s "$T/big")" "big file size"

# O_DIRECT both ways, with 4 MiB requests (split by the kernel into 1 MiB)
head -c $((16 << 20)) /dev/urandom >"$T/direct"
dd if="$T/direct" of="$MNT/direct" bs=4M oflag=direct status=none ||
	fail "O_DIRECT write"
dd if="$MNT/direct" of="$T/direct.back" bs=4M iflag=direct status=none ||
	fail "O_DIRECT read"
cmp "$T/direct" "$T/direct.back" || fail "O_DIRECT round trip differs"

# reads at offsets, including the tail after lseek(SEEK_END)
assert_eq "$(tail -c 4096 "$MNT/big" | md5sum)" "$(tail -c 4096 "$T/big" | md5sum)" "tail read"
assert_eq "$(dd if="$MNT/big" bs=1 skip=5000000 count=777 status=none | md5sum)" \
	"$(dd if="$T/big" bs=1 skip=5000000 count=777 status=none | md5sum)" "pread at an odd offset"

# touch: a file nothing was written to still appears, empty
touch "$MNT/empty"
[ -f "$MNT/empty" ] || fail "touched file missing"
assert_eq "$(stat -c %s "$MNT/empty")" 0 "touched file size"
wait_for 5 test -f "$MNT2/empty" || fail "touched file not visible on the second mount"

# close-to-open across mounts: create on one, open on the other
python3 - "$MNT" "$MNT2" <<'PY' || fail "close-to-open across mounts"
import os, sys
a, b = sys.argv[1], sys.argv[2]
for i in range(20):
    data = os.urandom(100000 + i)
    with open(f"{a}/c2o", "wb") as f:
        f.write(data)
    with open(f"{b}/c2o", "rb") as f:
        got = f.read()
    assert got == data, f"round {i}: mount 2 read {len(got)} bytes, not the new version"
    a, b = b, a
PY

# a name cached as missing on mount 2 appears once mount 1 publishes it
[ ! -e "$MNT2/later" ] || fail "later exists before it was written"
echo now >"$MNT/later"
wait_for 5 test -e "$MNT2/later" || fail "negative entry on mount 2 never invalidated"
assert_eq "$(cat "$MNT2/later")" now "published file read on mount 2"

# nothing pending is visible on the other mount before close
python3 - "$MNT" "$MNT2" <<'PY' || fail "pending file leaked to the other mount"
import os, sys
a, b = sys.argv[1], sys.argv[2]
fd = os.open(f"{a}/inflight", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"x" * 1000)
assert os.path.getsize(f"{a}/inflight") == 1000, "writer does not see its own size"
assert not os.path.exists(f"{b}/inflight"), "other mount sees a pending file"
os.close(fd)
with open(f"{b}/inflight", "rb") as f:
    assert f.read() == b"x" * 1000
PY

marufs_umount "$MNT2"
marufs_umount
marud_stop
