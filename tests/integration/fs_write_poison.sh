#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_write_poison: a transfer error on a write streamed behind the writer
# over data=tcp (libmaru's fail point libmaru.write.reply, armed in one
# marufs for the 5th WRITE reply it reads: marud is said to have refused
# that frame with EIO) poisons the file: close() returns EIO, the version is
# abandoned, and nothing of it is visible on either mount, while the
# writer's log names the version and why. The next file written on the same
# mount publishes whole and reads back right on the other. Real: marud,
# both marufs mounts, the sockets (a Unix socket, data=tcp); emulated: the
# transfer error (a fail point in the writer's libmaru).
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"
skip_unless_failpoints

marud_start
MARU_FAILPOINT="libmaru.write.reply=5*error:EIO" marufs_mount -o data=tcp
marufs_mount -o data=tcp
A=$MNT
B=$MNT2

head -c $((2 << 20)) /dev/urandom >"$T/src"
python3 - "$A/f" "$T/src" <<'PY' || fail "a failed WRITE was not reported at close"
import errno, os, sys
dst, src = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
fd = os.open(dst, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
err = None
try:
    for off in range(0, len(data), 128 << 10):
        os.write(fd, data[off:off + (128 << 10)])
except OSError as e:
    err = e
try:
    os.close(fd)
except OSError as e:
    err = err or e
if err is None or err.errno != errno.EIO:
    raise SystemExit(f"write/close returned {err!r}, not EIO")
PY
# nothing partial anywhere: not on the writer's mount, not on the other
sleep 0.2
[ ! -e "$A/f" ] || fail "the poisoned file is visible on the writer's mount ($(stat -c %s "$A/f") bytes)"
[ ! -e "$B/f" ] || fail "the poisoned file is visible on the other mount ($(stat -c %s "$B/f") bytes)"
grep -q "will not be published" "$T/marufs-1.log" ||
	fail "the writer's log does not say the version will not be published"
grep -q "abandoned, not published" "$T/marufs-1.log" ||
	fail "the writer's log does not say the version was abandoned"
abandoned=$(awk '$1 == "maru_client_abandoned_total" { print $2 }' "$A/.maru/stats")
assert_eq "$abandoned" 1 "maru_client_abandoned_total"

# the fail point fired once: the next file goes through whole
cp "$T/src" "$A/g" || fail "second write failed"
cmp "$T/src" "$B/g" || fail "second file differs on the other mount"
frames=$(awk '$1 == "maru_client_tcp_frames_total{dir=\"write\"}" { print $2 }' "$A/.maru/stats")
[ "${frames:-0}" -ge 16 ] || fail "WRITE frames not counted: '$frames'"
marufs_umount "$B"
marufs_umount "$A"
marud_stop
