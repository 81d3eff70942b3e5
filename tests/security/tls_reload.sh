#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tls_reload: SIGHUP reloads marud's certificate and key. An observer
# (openssl s_client) sees the new certificate on a new connection at once;
# a mount made before keeps working on its sessions; a reload that cannot
# load the files keeps the running certificate and says so. Then a reload
# to a certificate from another CA: new mounts must trust that CA, and the
# mount made before the reloads still reads through its old sessions.
# Fails if the reload did not take, restarted anything, or cut live sessions.
set -euo pipefail
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/tls_lib.sh"

skip_unless_fuse
tls_certs "$T/pki"
tls_cert_sign "$T/pki" srvb "127.0.0.1/O=second" \
	"subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" ca
tls_cert_sign "$T/pki" srvc "127.0.0.1/O=third" \
	"subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" ca2
chmod 600 "$T/pki"/*.key
port=$(pick_port)
uri="maru://127.0.0.1:$port"
install -m 600 "$T/pki/srv.pem" "$T/live.pem"
install -m 600 "$T/pki/srv.key" "$T/live.key"
tls_marud_start "$port" --tls-cert "$T/live.pem" --tls-key "$T/live.key"
pid=$MARUD_PID

# the subject of the certificate a new connection is served, CA given
served()
{
	openssl s_client -connect "127.0.0.1:$port" -tls1_3 -CAfile "$1" </dev/null 2>/dev/null |
		openssl x509 -noout -subject 2>/dev/null
}
reloads=0
hup()
{
	reloads=$((reloads + 1))
	marud_signal HUP
	wait_for 5 eval '[ "$(grep -c "SIGHUP: reloading" "$T/marud.log")" -ge '"$reloads"' ]' ||
		fail "marud did not take SIGHUP"
}

s=$(served "$T/pki/ca.pem")
[[ "$s" == *127.0.0.1* && "$s" != *second* ]] || fail "first certificate not served: '$s'"
marufs_mount -u "$uri" -o "data=tcp,tls_ca=$T/pki/ca.pem"
old=$MNT
head -c $((2 << 20)) /dev/urandom >"$T/a"
cp "$T/a" "$old/a"

install -m 600 "$T/pki/srvb.pem" "$T/live.pem"
install -m 600 "$T/pki/srvb.key" "$T/live.key"
hup
grep -q "certificate $T/live.pem reloaded" "$T/marud.log" || fail "marud did not say it reloaded"
s=$(served "$T/pki/ca.pem")
[[ "$s" == *second* ]] || fail "a new connection was not served the new certificate: '$s'"
cmp "$T/a" "$old/a" || fail "the mount made before the reload reads other bytes"
cp "$T/a" "$old/b"
marufs_mount -u "$uri" -o "data=tcp,tls_ca=$T/pki/ca.pem"
cmp "$T/a" "$LAST_MNT/b" || fail "a mount after the reload reads other bytes"
marufs_umount "$LAST_MNT"

# a broken key: the running certificate stays
echo "not a key" >"$T/live.key"
hup
wait_for 5 grep -q "reload failed, new connections keep the running certificate" "$T/marud.log" ||
	fail "a failed reload was not said"
s=$(served "$T/pki/ca.pem")
[[ "$s" == *second* ]] || fail "a failed reload lost the running certificate: '$s'"

# another CA: new mounts must trust it; the old mount's sessions live on
install -m 600 "$T/pki/srvc.pem" "$T/live.pem"
install -m 600 "$T/pki/srvc.key" "$T/live.key"
hup
s=$(served "$T/pki/ca2.pem")
[[ "$s" == *third* ]] || fail "the third certificate was not served: '$s'"
mount_must_fail "certificate refused" "$uri" "data=tcp,timeout_ms=3000,tls_ca=$T/pki/ca.pem"
# written through sessions made under the first certificate (a new one
# would have to trust ca2, which this mount does not)
head -c $((1 << 20)) /dev/urandom >"$T/c"
cp "$T/c" "$old/c" || fail "the mount made before the reloads lost its sessions"
marufs_mount -u "$uri" -o "data=tcp,tls_ca=$T/pki/ca2.pem"
cmp "$T/a" "$LAST_MNT/a" || fail "a mount trusting the new CA reads other bytes"
cmp "$T/c" "$LAST_MNT/c" || fail "what the old mount wrote after the reloads reads other bytes"
marufs_umount "$LAST_MNT"
[ "$MARUD_PID" = "$pid" ] && proc_alive "$pid" || fail "marud restarted"
marufs_umount "$old"
marud_stop
