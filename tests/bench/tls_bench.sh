#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/bench/tls_bench.sh BUILD_DIR [--quick]: libmaru data=tcp puts and gets
# of 32 MiB over TLS 1.3 against plain TCP, in one run (issue 26). Two marud
# on loopback, alike (shm pools of 1 GiB) but for --tls-cert on the first;
# tls_bench.c alternates one put+get on each per iteration and checks every
# byte. Both sides ask GnuTLS for kernel TLS (GNUTLS_SYSTEM_PRIORITY_FILE with
# "ktls = true"), so the table's last row says whether it ran, and why not:
# the kernel's tcp_available_ulp must list "tls" and the library must have
# been built with it. Each figure is the median of the iterations (9; 2 with
# --quick) and of $ROUNDS rounds (3; 1 with --quick).
# Never fails on speed; fails on wrong bytes.
set -euo pipefail
B=$(cd "${1:?usage: tls_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export MARUD=${MARUD:-$B/daemon/marud} MARUFS=${MARUFS:-$B/fs/marufs} SRCDIR=$SRC
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$SRC/tests/integration/lib/common.sh"
. "$SRC/tests/security/tls_lib.sh"

if [ "$QUICK" = --quick ]; then ITERS=2 ROUNDS=1; else ITERS=9 ROUNDS=3; fi
tls_certs "$T/pki"
printf '[global]\nktls = true\n' >"$T/gnutls.cfg"
export GNUTLS_SYSTEM_PRIORITY_FILE=$T/gnutls.cfg

TPORT=$(pick_port)
PPORT=$(pick_port)
marud_start --size 1G --listen "unix:$MARUD_SOCK" --listen "tcp://127.0.0.1:$TPORT" \
	--tls-cert "$T/pki/srv.pem" --tls-key "$T/pki/srv.key"
# the plain peer: a second marud, its own pool and socket
"$MARUD" -d --pool "shm:maru-tlsbench-$$" --size 1G --listen "unix:$T/plain.sock" \
	--listen "tcp://127.0.0.1:$PPORT" >>"$T/marud-plain.log" 2>&1 &
PLAIN_PID=$!
on_exit "kill -TERM $PLAIN_PID 2>/dev/null; wait $PLAIN_PID 2>/dev/null; rm -f /dev/shm/maru-tlsbench-$$"
wait_up "$PLAIN_PID" 10 test -S "$T/plain.sock" || fail "the plain marud did not start"

for r in $(seq "$ROUNDS"); do
	"$B/tests/bench/tls_bench" "maru://127.0.0.1:$TPORT" "$T/pki/ca.pem" \
		"maru://127.0.0.1:$PPORT" 32 "$ITERS" >"$T/round$r"
done

val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
rval() { local r vs=(); for r in $(seq "$ROUNDS"); do vs+=("$(val "$1" "$T/round$r")"); done; med "${vs[@]}"; }
rratio() {
	local r vs=()
	for r in $(seq "$ROUNDS"); do
		vs+=("$(awk -v a="$(val "$1" "$T/round$r")" -v b="$(val "$2" "$T/round$r")" \
			'BEGIN { printf "%.2f", a / b }')")
	done
	med "${vs[@]}"
}
gb() { awk -v v="$1" 'BEGIN { printf "%.2f GB/s", v / 1e9 }'; }

ulp=$(cat /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null || echo "?")
ktls=$(val ktls "$T/round1")
echo "| 32 MiB, libmaru data=tcp, loopback | TLS 1.3 | plain TCP | TLS/plain |"
echo "|---|---|---|---|"
echo "| put | $(gb "$(rval tls_put_Bps)") | $(gb "$(rval plain_put_Bps)") | $(rratio tls_put_Bps plain_put_Bps) |"
echo "| get | $(gb "$(rval tls_get_Bps)") | $(gb "$(rval plain_get_Bps)") | $(rratio tls_get_Bps plain_get_Bps) |"
echo "| session | $(sed -n 's/^tls_session //p' "$T/round1") | | |"
echo "| kernel TLS | $([ "$ktls" = 1 ] && echo ran || echo "did not run") | tcp_available_ulp: $ulp | |"
marud_stop
