#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mh_basic: marud in host "pool", two marufs mounts (data=tcp, key file) in
# hosts "w1" and "w2", joined through a bridge. A file written on w1 reads
# byte-exact on w2, and the other way round; a 2 MiB chunk crosses too. Real:
# TCP over veth, marud, both mounts. Nothing is emulated here.
. "$(dirname "$0")/lib.sh"
mh_init
mh_host pool
mh_host w1
mh_host w2
mh_marud_start pool
mh_mount w1
A=$LAST_MNT
mh_mount w2
B=$LAST_MNT

# the mounts reach marud only through their namespaces' links
mh_run w1 ping -c1 -W2 "${MH_ADDR[pool]}" >/dev/null || fail "w1 cannot reach pool"

head -c $((2 << 20)) /dev/urandom >"$T/chunk"
cp "$T/chunk" "$A/chunk"
cmp "$T/chunk" "$B/chunk" || fail "2 MiB chunk written on w1 differs on w2"
echo "from w2" >"$B/small"
assert_eq "$(cat "$A/small")" "from w2" "small file written on w2, read on w1"
mkdir "$A/dir"
head -c 300000 /dev/urandom >"$T/odd"
cp "$T/odd" "$A/dir/odd"
cmp "$T/odd" "$B/dir/odd" || fail "odd-sized file differs across hosts"
assert_eq "$(ls "$B/dir")" odd "listing on w2"

# the mounts really use tcp to the pool host's address
grep -q "${MH_ADDR[pool]}" <(mh_run w1 ss -tn) || fail "no TCP connection from w1 to the pool host"

marufs_umount "$A"
marufs_umount "$B"
marud_stop
