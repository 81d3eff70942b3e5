#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The publish checksum over rdma. Emulated: the software verbs device
# (tests/softverbs). A data=rdma client hashes the bytes as it copies them
# into its staging buffers and hands PUBLISH the digest (marud then does not
# read the version); it must equal the one marud computes itself for the
# same bytes published over tcp (whose data path does not hash), for one
# sequential write, several, and a rewrite that breaks the stream.
. "$(dirname "$0")/lib/common.sh"
[ -n "${MARU_RDMA_PRELOAD:-}" ] || skip "needs the software verbs device (suite rdma)"
MARU_DATA=rdma marud_start
marufs_mount -o data=rdma
marufs_mount -o data=tcp
xa() { getfattr --only-values -n user.maru.xxh3 "$1"; }
head -c $((3 << 20 | 12345)) /dev/urandom >"$T/big"
for m in "$MNT" "$MNT2"; do
	cp "$T/big" "$m/one"
	python3 - "$T/big" "$m/pieces" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as f:
    for i in range(0, len(data), 70001):
        f.write(data[i:i + 70001])
PY
	python3 - "$T/big" "$m/rewrite" <<'PY'
import os, sys
data = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_CREAT | os.O_WRONLY, 0o644)
os.pwrite(fd, data, 0)
os.pwrite(fd, data[:4096], 0)	# not a continuation: the stream stops
os.close(fd)
PY
done
for n in one pieces rewrite; do
	cmp "$T/big" "$MNT/$n" || fail "$n: bytes differ over rdma"
	assert_eq "$(xa "$MNT/$n")" "$(xa "$MNT2/$n")" "$n: rdma client digest vs marud's"
done
w=$(maru_stats "$MNT" | awk '$1 == "maru_client_bytes_total{path=\"rdma\",dir=\"write\"}" { print $2 }')
[ "${w:-0}" -ge $((3 << 20)) ] || fail "the rdma mount did not write over rdma ($w bytes)"
marufs_umount "$MNT2"
marufs_umount
marud_stop
