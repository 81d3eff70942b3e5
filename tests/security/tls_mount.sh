#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tls_mount: a real marufs mount with data=tcp over TLS 1.3 to a real marud.
# 32 MiB written through one TLS mount read back byte for byte through a
# second; every byte between the first mount and marud recorded by a tap
# (tls_tap.py) must be TLS records: the file's marker never appears in
# clear, and the stream begins with a TLS handshake record. The unix socket
# of the same marud stays clear and serves a mount without TLS.
# Fails without TLS on the control and data sockets (the marker would be
# on the wire) or if the relay lost or reordered bytes (cmp).
set -euo pipefail
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/tls_lib.sh"

skip_unless_fuse
tls_certs "$T/pki"
port=$(pick_port)
tap=$(pick_port)
tls_marud_start "$port" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
grep -q "TLS 1.3 on tcp listeners" "$T/marud.log" || fail "marud did not say it serves TLS"

python3 "$(dirname "$0")/tls_tap.py" "$tap" "$port" "$T/wire" >"$T/tap.log" 2>&1 &
tap_pid=$!
on_exit "kill $tap_pid 2>/dev/null || true"
wait_for 10 grep -q ready "$T/tap.log" || fail "the tap did not start"

tls="tls_ca=$T/pki/ca.pem"
marufs_mount -u "maru://127.0.0.1:$tap" -o "data=tcp,$tls"
marufs_mount -u "maru://127.0.0.1:$port" -o "data=tcp,$tls"
m1=$MNT m2=$MNT2

# a marker that cannot show up in ciphertext by chance, repeated over 32 MiB
python3 - "$T/src" <<'PY'
import os, sys
marker = b"MARU-TLS-PLAINTEXT-MARKER-0123456789"
with open(sys.argv[1], "wb") as f:
    for _ in range(64):
        f.write(marker * 64 + os.urandom(512 * 1024 - len(marker) * 64))
PY
[ "$(stat -c %s "$T/src")" = $((32 << 20)) ] || fail "source is not 32 MiB"
cp "$T/src" "$m1/kv.bin"
cmp "$T/src" "$m2/kv.bin" || fail "the bytes read through the second TLS mount differ"
cmp "$T/src" "$m1/kv.bin" || fail "the bytes read back through the first TLS mount differ"

wire=$(stat -c %s "$T/wire")
[ "$wire" -gt $((32 << 20)) ] || fail "the tap saw only $wire bytes: the data did not cross it"
if grep -c -a -F "MARU-TLS-PLAINTEXT-MARKER" "$T/wire" >/dev/null; then
	fail "file content crossed the wire in clear text"
fi
# "MARU", the protocol's frame magic, never appears in clear either
[ "$(head -c 1 "$T/wire" | od -An -tx1 | tr -d ' ')" = 16 ] ||
	fail "the first byte on the wire is not a TLS handshake record"
log "$wire bytes on the wire, none of them clear"

# the unix socket of the same marud: clear, no TLS asked
marufs_mount -o data=tcp
cmp "$T/src" "$LAST_MNT/kv.bin" || fail "the clear unix mount reads other bytes"
marufs_umount "$LAST_MNT"
marufs_umount "$m2"
marufs_umount "$m1"
! grep -q "TLS refused" "$T/marud.log" || fail "marud refused a TLS client: $(grep 'TLS refused' "$T/marud.log")"
marud_stop
