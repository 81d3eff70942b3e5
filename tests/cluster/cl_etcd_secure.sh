#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cl_etcd_secure: etcd's own TLS and authentication, honoured by marud's
# membership and by libmaru's cluster client. One etcd member in a host of
# its own serves https only and asks for a client certificate
# (--client-cert-auth) and, with auth enabled, a user whose role may read
# and write /marufs/ only. Certificates are made here with openssl(1).
#  - marud with cluster-etcd-ca/-cert/-key and cluster-etcd-user/
#    -password-file joins; libmaru's client with the same sees the pool;
#  - a cluster mount with etcd_ca, etcd_cert, etcd_key, etcd_user and
#    etcd_password_file in its URI's query lists the pool and does I/O;
#    one without them does not mount;
#  - a wrong password: marud serves and says etcd refused the credentials;
#  - no CA (plain http to the https member): marud serves and says it
#    cannot join.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/security/tls_lib.sh"

: "${CL_TOOL:?}"
cl_init
skip_unless_cmd openssl
mh_host e1
a=${MH_ADDR[e1]}
C=$T/certs
mkdir -p "$C"
tls_ca "$C" ca
tls_cert_sign "$C" etcd "$a" "subjectAltName=IP:$a
extendedKeyUsage=serverAuth,clientAuth" ca
# the client certificate has no CommonName: with auth on, etcd 3.4's JSON
# gateway refuses one that has (HTTP 400, "CommonName of client sending a
# request against gateway will be ignored"), the user is the password's
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/cli.key" \
	-out "$C/cli.csr" -subj "/O=marufs pools" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >"$C/cli.ext"
openssl x509 -req -in "$C/cli.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial \
	-out "$C/cli.pem" -days 2 -extfile "$C/cli.ext" 2>/dev/null
chmod 600 "$C"/*.key

nsenter --net="/run/netns/$(mh_ns e1)" etcd --name e1 --data-dir "$T/etcd-e1" \
	--listen-client-urls "https://$a:2379" --advertise-client-urls "https://$a:2379" \
	--listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
	--initial-cluster "e1=http://$a:2380" --initial-cluster-token "$CL_CLUSTER" \
	--cert-file "$C/etcd.pem" --key-file "$C/etcd.key" --trusted-ca-file "$C/ca.pem" \
	--client-cert-auth >>"$T/etcd-e1.log" 2>&1 &
CL_ETCD_PID[e1]=$!
CL_ETCD=$a:2379
CL_ETCD_HOSTS=(e1)
ectl()
{
	ETCDCTL_API=3 mh_run e1 etcdctl --endpoints "https://$a:2379" --cacert "$C/ca.pem" \
		--cert "$C/cli.pem" --key "$C/cli.key" --dial-timeout 2s --command-timeout 3s "$@"
}
wait_for 20 ectl endpoint health >/dev/null 2>&1 || fail "etcd over TLS not healthy"
ectl user add root:rootpw >/dev/null && ectl user grant-role root root >/dev/null &&
	ectl user add marud:marudpw >/dev/null &&
	ectl role add marufs >/dev/null &&
	ectl role grant-permission marufs readwrite --prefix=true /marufs/ >/dev/null &&
	ectl user grant-role marud marufs >/dev/null && ectl auth enable >/dev/null ||
	fail "etcdctl: cannot set up users and auth"
log "etcd serves https with client certificates and auth on"

printf 'marudpw\n' >"$T/pw"
printf 'wrong\n' >"$T/badpw"
chmod 600 "$T/pw" "$T/badpw"
secure=(-D "cluster-etcd-ca=$C/ca.pem" -D "cluster-etcd-cert=$C/cli.pem"
	-D "cluster-etcd-key=$C/cli.key" -D cluster-etcd-user=marud -D cluster-ttl=3)

cl_pool_start p1 "${secure[@]}" -D "cluster-etcd-password-file=$T/pw"
wait_for 10 grep -q "joined as active" "$T/marud-p1.log" ||
	fail "p1 did not join over TLS with its user: $(grep cluster "$T/marud-p1.log" | tail -2)"
n=$(ectl --user root:rootpw get --prefix "/marufs/$CL_CLUSTER/pools/" --keys-only | grep -c .)
assert_eq "$n" 1 "records in etcd (read as root)"

out=$(CL_ETCD_CA=$C/ca.pem CL_ETCD_CERT=$C/cli.pem CL_ETCD_KEY=$C/cli.key \
	CL_ETCD_USER=marud CL_ETCD_PASSWORD=marudpw \
	mh_run e1 "$CL_TOOL" pools "maru+etcd://$a:2379/$CL_CLUSTER") ||
	fail "libmaru's cluster client over TLS with a user: $out"
grep -q "maru://${MH_ADDR[p1]}:$MH_PORT .* active" <<<"$out" ||
	fail "libmaru's cluster client does not list p1: $out"
if mh_run e1 "$CL_TOOL" pools "maru+etcd://$a:2379/$CL_CLUSTER" >"$T/noca.out" 2>&1; then
	fail "libmaru's cluster client read the membership without TLS: $(cat "$T/noca.out")"
fi

# the cluster mount: etcd's TLS and user in the URI's query
mh_host w1
q="etcd_ca=$C/ca.pem&etcd_cert=$C/cli.pem&etcd_key=$C/cli.key&etcd_user=marud"
q="$q&etcd_password_file=$T/pw"
saved=("${WRAP[@]}")
WRAP=(nsenter --net="/run/netns/$(mh_ns w1)" "${saved[@]}")
marufs_mount -u "maru+etcd://$a:2379/$CL_CLUSTER?$q" -o "data=tcp,key_file=$MH_KEY"
WRAP=("${saved[@]}")
grep -q "^pool .* maru://${MH_ADDR[p1]}:$MH_PORT active tcp" "$LAST_MNT/.maru/pool" ||
	fail "the cluster mount over etcd TLS does not list p1: $(cat "$LAST_MNT/.maru/pool")"
echo secure >"$LAST_MNT/f" && assert_eq "$(cat "$LAST_MNT/f")" secure "a file through it"
marufs_umount "$LAST_MNT"
mkdir -p "$T/noca"
if mh_run w1 timeout 30 "$MARUFS" -f -o "data=tcp,key_file=$MH_KEY" \
	"maru+etcd://$a:2379/$CL_CLUSTER" "$T/noca" >"$T/noca-mount.out" 2>&1; then
	fail "a cluster mount without etcd's CA mounted: $(cat "$T/noca-mount.out")"
fi
log "a cluster mount without etcd's CA: $(grep -i cannot "$T/noca-mount.out" | tail -1)"

cl_pool_start p2 "${secure[@]}" -D "cluster-etcd-password-file=$T/badpw"
wait_for 10 grep -q "cannot join: etcd refused the credentials" "$T/marud-p2.log" ||
	fail "p2 (wrong password) did not say etcd refused it: $(grep cluster "$T/marud-p2.log" | tail -2)"
test -S "$T/p2.sock" || fail "p2 stopped serving"

cl_pool_start p3 -D cluster-ttl=3
wait_for 10 grep -q "cannot join" "$T/marud-p3.log" ||
	fail "p3 (no CA) did not say it cannot join: $(grep cluster "$T/marud-p3.log" | tail -2)"
log "p3 without TLS: $(grep "cannot join" "$T/marud-p3.log" | tail -1)"
n=$(ectl --user root:rootpw get --prefix "/marufs/$CL_CLUSTER/pools/" --keys-only | grep -c .)
assert_eq "$n" 1 "records in etcd after the refused pools"

cl_pool_signal p1 TERM
cl_pool_wait_exit p1
n=$(ectl --user root:rootpw get --prefix "/marufs/$CL_CLUSTER/pools/" --keys-only | grep -c . || true)
assert_eq "$n" 0 "records after p1 left (revoked over TLS, as its user)"
echo "PASS: cl_etcd_secure"
