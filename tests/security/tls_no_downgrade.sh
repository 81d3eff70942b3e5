#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tls_no_downgrade: neither side falls back to clear text.
# - A mount with tls_ca= against a marud without TLS fails (no TLS answer).
# - A mount with tls_ca= against a server that answers in clear (what a man
#   in the middle stripping TLS would do) fails at once, and the only bytes
#   the mount sent were a TLS ClientHello: no frame in clear, no key proof.
# - A TLS 1.2 client (openssl s_client -tls1_2) is refused by a TLS marud;
#   TLS 1.3 from the same tool is served.
# - A mount without TLS against a TLS marud is refused, with and without a
#   key: marud answers EPROTONOSUPPORT, logs the refusal, and the mount says
#   to give tls_ca=; the unix socket of that marud still serves in clear.
# Fails if either side ever accepted the other's clear text.
set -euo pipefail
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/tls_lib.sh"

skip_unless_fuse
tls_certs "$T/pki"
port=$(pick_port)
ca="tls_ca=$T/pki/ca.pem"

# a TLS client, a clear marud
tls_marud_start "$port"
mount_must_fail "does the peer speak TLS" "maru://127.0.0.1:$port" "data=tcp,timeout_ms=2000,$ca"
marud_stop

# a TLS client, a server answering in clear
fake=$(pick_port)
python3 "$(dirname "$0")/tls_fake_clear.py" "$fake" "$T/sent" >"$T/fake.log" 2>&1 &
fake_pid=$!
on_exit "kill $fake_pid 2>/dev/null || true"
wait_for 10 grep -q ready "$T/fake.log" || fail "the clear server did not start"
start=$SECONDS
mount_must_fail "no TLS 1.3 handshake" "maru://127.0.0.1:$fake" "data=tcp,timeout_ms=8000,$ca"
[ $((SECONDS - start)) -lt 5 ] || fail "a clear answer was retried until the timeout"
[ "$(head -c 1 "$T/sent" | od -An -tx1 | tr -d ' ')" = 16 ] ||
	fail "the mount's first byte was not a TLS handshake record"
! grep -q -a MARU "$T/sent" || fail "the mount sent a marud frame in clear"

# a clear client, a TLS marud (without, then with a key)
tls_marud_start "$port" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
# TLS 1.3 only
if openssl s_client -connect "127.0.0.1:$port" -tls1_2 -CAfile "$T/pki/ca.pem" \
	</dev/null >"$T/tls12.out" 2>&1; then
	fail "marud accepted TLS 1.2: $(grep -a Protocol "$T/tls12.out")"
fi
grep -q "alert handshake failure" "$T/tls12.out" || fail "TLS 1.2 not refused by alert: $(tail -3 "$T/tls12.out")"
openssl s_client -connect "127.0.0.1:$port" -tls1_3 -CAfile "$T/pki/ca.pem" \
	</dev/null >"$T/tls13.out" 2>&1 || fail "TLS 1.3 from openssl failed: $(tail -3 "$T/tls13.out")"
grep -q "Verify return code: 0 (ok)" "$T/tls13.out" || fail "openssl did not verify marud's certificate"
mount_must_fail "speaks only TLS on tcp" "maru://127.0.0.1:$port" "data=tcp,timeout_ms=8000"
grep -q "TLS refused: clear text at a TLS listener" "$T/marud.log" || fail "marud did not log the refusal"
marufs_mount -o data=tcp
echo clear-unix >"$LAST_MNT/f"
[ "$(cat "$LAST_MNT/f")" = clear-unix ] || fail "the unix socket does not serve in clear"
marufs_umount "$LAST_MNT"
marud_stop
head -c 64 /dev/urandom >"$T/key"
chmod 600 "$T/key"
tls_marud_start "$port" --key-file "$T/key" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
mount_must_fail "speaks only TLS on tcp" "maru://127.0.0.1:$port" \
	"data=tcp,timeout_ms=8000,key_file=$T/key"
marufs_mount -u "maru://127.0.0.1:$port" -o "data=tcp,key_file=$T/key,$ca"
echo keyed >"$LAST_MNT/g"
[ "$(cat "$LAST_MNT/g")" = keyed ] || fail "TLS with the key inside it does not serve"
marufs_umount "$LAST_MNT"
marud_stop
