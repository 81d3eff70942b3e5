#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_enospc: a full pool on a marufs mount. With --eviction none a write that
# cannot get memory fails with ENOSPC at write(), close() reports it too, and
# nothing of the file is ever published (not even the bytes that fit); the
# memory returns to free. With LRU eviction writes succeed by evicting older
# unopened files, while a file held open survives.
. "$(dirname "$0")/lib/common.sh"

marud_start --size 16M --eviction none
marufs_mount
marufs_mount

echo keep >"$MNT/keep"
python3 - "$MNT" "$MNT2" <<'PY' || fail "ENOSPC"
import errno, os, sys
m, m2 = sys.argv[1], sys.argv[2]
fd = os.open(f"{m}/huge", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
chunk, err = b"q" * (1 << 20), None
for i in range(64):
    try:
        os.write(fd, chunk)
    except OSError as e:
        err = e
        break
assert err is not None and err.errno == errno.ENOSPC, f"no ENOSPC from write: {err!r}"
try:
    os.close(fd)
    raise SystemExit("close after a failed write returned success")
except OSError as e:
    assert e.errno == errno.ENOSPC, f"close: {e!r}"
assert not os.path.exists(f"{m}/huge"), "a partial file was published"
assert not os.path.exists(f"{m2}/huge"), "a partial file is visible on the other mount"
PY
assert_eq "$(cat "$MNT/keep")" keep "other files untouched"
wait_accounting_ok
# the memory came back: the same amount fits now in smaller pieces
for i in 1 2 3 4; do
	head -c $((2 << 20)) /dev/zero >"$MNT/piece$i" || fail "write after ENOSPC"
done
marufs_umount "$MNT2"
marufs_umount
marud_stop

marud_start --size 16M
marufs_mount
M=$LAST_MNT	# the third mount of this case
head -c $((2 << 20)) /dev/urandom >"$T/pinned"
cp "$T/pinned" "$M/pinned"
exec 5<"$M/pinned"
for i in $(seq 1 20); do
	head -c $((1 << 20)) /dev/zero >"$M/lru$i" || fail "write $i with eviction on"
done
[ ! -e "$M/lru1" ] || fail "nothing was evicted from a 16 MiB pool after 22 MiB of writes: $(ls "$M" | tr "\n" " ") $(grep evict "$M/.maru/stats")"
[ -e "$M/lru20" ] || fail "the newest file was evicted"
cmp "$T/pinned" /dev/fd/5 || fail "an open file lost its bytes to eviction"
exec 5<&-
wait_accounting_ok 10 "$M"
marufs_umount "$M"
marud_stop
