#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tls_restart: a TLS mount lives through what a clear one does. marud
# restarts (same pool file, same certificate): the mount reconnects through
# new TLS sessions and reads and writes again. marud stopped (SIGSTOP): a
# call ends within timeout_ms, and an interrupted one (a signal with a
# handler: FUSE INTERRUPT, libmaru's cancel token) at once, although every
# socket is a TLS session's. Fails if the TLS layer hid a timeout, a cancel
# or a reconnect from libmaru.
set -euo pipefail
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/tls_lib.sh"

skip_unless_fuse
tls_certs "$T/pki"
port=$(pick_port)
tls_marud_start "$port" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key" \
	--pool "file:$T/pool" --size 256M
marufs_mount -u "maru://127.0.0.1:$port" -o "data=tcp,timeout_ms=3000,tls_ca=$T/pki/ca.pem"
head -c $((3 << 20)) /dev/urandom >"$T/a"
cp "$T/a" "$MNT/a"

marud_restart
wait_for 10 cmp -s "$T/a" "$MNT/a" || fail "the TLS mount did not read again after marud restarted"
cp "$T/a" "$MNT/b" || fail "the TLS mount did not write again after marud restarted"
cmp "$T/a" "$MNT/b" || fail "what the TLS mount wrote after the restart reads other bytes"

kill -STOP "$MARUD_PID"
on_exit "kill -CONT $MARUD_PID 2>/dev/null || true"
start=$SECONDS
if stat "$MNT/missing-$$" 2>/dev/null; then
	fail "a lookup succeeded while marud was stopped"
fi
[ $((SECONDS - start)) -le 6 ] || fail "a call took $((SECONDS - start)) s with timeout_ms=3000"
kill -CONT "$MARUD_PID"
marufs_umount
marufs_mount -u "maru://127.0.0.1:$port" -o "data=tcp,timeout_ms=60000,tls_ca=$T/pki/ca.pem"
kill -STOP "$MARUD_PID"
# a caller with a signal handler: the signal interrupts its lookup
python3 - "$LAST_MNT/missing2-$$" <<'PY' || fail "an interrupted call through TLS did not end at once"
import errno, os, signal, sys, time
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.3)
t = time.time()
try:
    os.stat(sys.argv[1])
    sys.exit("stat succeeded while marud was stopped")
except OSError as e:
    print("# interrupted call: %s after %.2f s" % (errno.errorcode.get(e.errno), time.time() - t),
          file=sys.stderr)
    sys.exit(0 if time.time() - t < 3 else 1)
PY
kill -CONT "$MARUD_PID"
cmp "$T/a" "$LAST_MNT/b" || fail "the TLS mount reads other bytes after SIGCONT"
marufs_umount "$LAST_MNT"
marud_stop
