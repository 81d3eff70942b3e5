#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tls_wrong_ca: a mount that trusts another CA than the one that signed
# marud's certificate is refused at once (-EACCES, not a timeout), with the
# reason in its log; so is a mount whose URI names a host the certificate
# does not (127.0.0.2 is not in its names), and a CA file that holds no
# certificate. The right CA then mounts. Fails if libmaru skipped the
# chain or the name check, or retried a refused certificate until its
# timeout.
set -euo pipefail
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/tls_lib.sh"

skip_unless_fuse
tls_certs "$T/pki"
port=$(pick_port)
tls_marud_start "$port" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
uri="maru://127.0.0.1:$port"

start=$SECONDS
mount_must_fail "certificate refused" "$uri" "data=tcp,timeout_ms=8000,tls_ca=$T/pki/ca2.pem"
[ $((SECONDS - start)) -lt 5 ] || fail "a wrong CA took $((SECONDS - start)) s: retried until the timeout"
grep -q "issuer is unknown" "$TLS_REFUSED_LOG" ||
	fail "the refusal does not say why: $(cat "$TLS_REFUSED_LOG")"

# the loopback by another address, not in the certificate (a key: marud
# serves no address but 127.0.0.1 without one)
port2=$(pick_port)
marud_stop
head -c 64 /dev/urandom >"$T/key"
chmod 600 "$T/key"
marud_start --listen "unix:$MARUD_SOCK" --listen "tcp://127.0.0.2:$port2" \
	--key-file "$T/key" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
mount_must_fail "certificate refused" "maru://127.0.0.2:$port2" \
	"data=tcp,timeout_ms=8000,key_file=$T/key,tls_ca=$T/pki/ca.pem"
grep -q "does not match" "$TLS_REFUSED_LOG" ||
	fail "the name mismatch is not said: $(cat "$TLS_REFUSED_LOG")"
marud_stop

tls_marud_start "$port" --tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
: >"$T/empty.pem"
mount_must_fail "no certificate in it" "$uri" "data=tcp,tls_ca=$T/empty.pem"
marufs_mount -u "$uri" -o "data=tcp,tls_ca=$T/pki/ca.pem"
echo ok >"$MNT/f"
[ "$(cat "$MNT/f")" = ok ] || fail "the right CA mounted but the file reads wrong"
marufs_umount
marud_stop
