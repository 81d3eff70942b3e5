#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tls_mutual: marud with --tls-client-ca requires a client certificate from
# that CA. A mount without one fails at once saying so, and marud logs the
# refused handshake; a certificate from another CA is never offered (the
# mount says why); one from a forged CA with the trusted CA's name is
# refused by marud's alert after the handshake, reported by the mount at
# once; a certificate from the CA mounts and moves data (checked on a
# second mount).
# tls_cert without tls_key is an error. Fails if marud served a client
# without a certificate, or one from a CA it was not told to trust.
set -euo pipefail
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/tls_lib.sh"

skip_unless_fuse
tls_certs "$T/pki"
tls_cert_sign "$T/pki" cli2 maru-client-other "extendedKeyUsage=clientAuth" ca2
chmod 600 "$T/pki/cli2.key"
port=$(pick_port)
uri="maru://127.0.0.1:$port"
ca="tls_ca=$T/pki/ca.pem"
tls_marud_start "$port" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key" \
	--tls-client-ca "$T/pki/ca.pem"

start=$SECONDS
mount_must_fail "asks for a client certificate" "$uri" "data=tcp,timeout_ms=8000,$ca"
[ $((SECONDS - start)) -lt 5 ] || fail "no client certificate was retried until the timeout"
wait_for 5 grep -q "TLS refused" "$T/marud.log" || fail "marud did not log the refused handshake"

n=$(grep -c "TLS refused" "$T/marud.log")
start=$SECONDS
mount_must_fail "from another CA than the one that signed ours" "$uri" \
	"data=tcp,timeout_ms=8000,$ca,tls_cert=$T/pki/cli2.pem,tls_key=$T/pki/cli2.key"
[ $((SECONDS - start)) -lt 5 ] || fail "a refused client certificate was retried until the timeout"
[ "$(grep -c "TLS refused" "$T/marud.log")" -gt "$n" ] ||
	fail "marud did not refuse a client certificate from another CA"
# from a forged CA with the trusted CA's name (so the mount offers it):
# marud's verdict comes after the client's handshake (TLS 1.3), as an
# alert the mount must report at once
tls_ca "$T/pki" forged ca
tls_cert_sign "$T/pki" cli3 maru-client-forged "extendedKeyUsage=clientAuth" forged
chmod 600 "$T/pki/cli3.key"
start=$SECONDS
mount_must_fail "tls_cert=, was refused" "$uri" \
	"data=tcp,timeout_ms=8000,$ca,tls_cert=$T/pki/cli3.pem,tls_key=$T/pki/cli3.key"
[ $((SECONDS - start)) -lt 5 ] || fail "a client certificate refused by alert was retried until the timeout"
grep -q "certificate refused" "$T/marud.log" || fail "marud did not log why it refused the forged certificate"
mount_must_fail "come" "$uri" "data=tcp,$ca,tls_cert=$T/pki/cli.pem"

cert="$ca,tls_cert=$T/pki/cli.pem,tls_key=$T/pki/cli.key"
marufs_mount -u "$uri" -o "data=tcp,$cert"
marufs_mount -u "$uri" -o "data=tcp,$cert"
head -c $((4 << 20)) /dev/urandom >"$T/src"
cp "$T/src" "$MNT/a"
cmp "$T/src" "$MNT2/a" || fail "mutual TLS mounts read other bytes"
marufs_umount "$MNT2"
marufs_umount
marud_stop
