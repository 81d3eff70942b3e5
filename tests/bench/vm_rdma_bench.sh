#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/vm_rdma_bench.sh BUILD_DIR [--quick]: marufs over the real
# rdma stack against its peers, in one run on one link. Two guests of
# Debian's kernel (tests/vm/lib.sh, qemu TCG, -smp 1 each) linked by a
# virtio-net socket link, Soft-RoCE (rdma_rxe) on each. On B, 32 MiB files:
#   put: dd into a marufs mount (the close publishes), get: O_DIRECT dd out
#   of it; over data=rdma and over data=tcp (the same link, marud copies);
#   against perftest's ib_write_bw and ib_read_bw (32 x 1 MiB messages, the
#   RoCE v2 GID index given with -x) between the same two rxe devices.
# Under TCG every byte is moved by an emulated CPU and rxe is software on
# both ends: the MB/s measure function and relative cost on this link, not
# a NIC. Prints key/value lines and the table rows (lines starting with "|").
set -euo pipefail
B=$(cd "${1:?usage: vm_rdma_bench.sh BUILD_DIR [--quick]}" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export SRCDIR=$SRC MARUD=$B/daemon/marud MARUFS=$B/fs/marufs
export TOOLS=$B/tests/integration/tools EXAMPLES=$B/examples LD_LIBRARY_PATH=$B/lib
export MARU_VM_CACHE=$B/tests/vm/cache
. "$SRC/tests/vm/lib.sh"
ROUNDS=3
[ "$QUICK" = --quick ] && ROUNDS=1
for c in ib_write_bw ib_read_bw; do
	command -v "$c" >/dev/null || vm_skip "no $c (package perftest)"
done
vm_init
head -c 64 /dev/urandom >"$RUN/key"
chmod 600 "$RUN/key"
port=$(vm_port)

vm_cmd A <<'EOF'
. "$SRCDIR/tests/integration/lib/common.sh"
. "$VM/guest_lib.sh"
ifc=$(vm_net 10.9.0.1/24)
gid=$(vm_rxe "$ifc")
export MARU_RDMA_KEY_FILE=/vmout/key
marud_start --listen "unix:$MARUD_SOCK" --listen tcp://10.9.0.1:7450 \
	--listen rdma://10.9.0.1:18515 --key-file /vmout/key --size 256M
vm_signal A.up
# perftest servers, one per client run of B (each serves one test)
for t in ib_write_bw ib_read_bw; do
	wait_for 300 eval "[ -e /vmout/B.want-$t.sig ] || [ -e /vmout/B.rc ]" || fail "B never asked for $t"
	while [ ! -e /vmout/B.rc ]; do
		timeout 90 "$t" -d rxe0 -x "$gid" -F -s 1048576 -n 32 >/vmout/A.$t.out 2>&1 || true
		wait_for 3 test -e "/vmout/B.$t.sig" && break
	done
done
wait_for 600 test -e /vmout/B.rc || fail "B did not end"
marud_stop
EOF

vm_cmd B <<EOF
ROUNDS=$ROUNDS
. "\$SRCDIR/tests/integration/lib/common.sh"
. "\$VM/guest_lib.sh"
ifc=\$(vm_net 10.9.0.2/24)
gid=\$(vm_rxe "\$ifc")
export MARU_RDMA_KEY_FILE=/vmout/key
wait_for 120 test -e /vmout/A.up.sig || fail "A never came up"
# perftest: the client retries until A's server listens
for t in ib_write_bw ib_read_bw; do
	vm_signal "B.want-\$t"
	ok=0
	for _ in \$(seq 30); do
		if timeout 60 "\$t" -d rxe0 -x "\$gid" -F -s 1048576 -n 32 10.9.0.1 >"\$T/\$t.out" 2>&1; then
			ok=1
			break
		fi
		sleep 1
	done
	[ "\$ok" = 1 ] || { cat "\$T/\$t.out"; fail "\$t never ran"; }
	vm_signal "B.\$t"
	# the last row of its table: bytes iterations peak avg(MB/s) msg-rate
	echo "\$t \$(awk '\$1 == 1048576 { v = \$4 } END { print v }' "\$T/\$t.out")"
done
head -c \$((32 << 20)) /dev/urandom >"\$T/ref"
# mbs T0 T1 (ns): MB/s for 32 MiB
mbs() { python3 -c "import sys; print(round(32 * 1.048576e9 / (int(sys.argv[2]) - int(sys.argv[1])), 1))" "\$1" "\$2"; }
# max A B
max() { python3 -c "import sys; print(max(float(sys.argv[1]), float(sys.argv[2])))" "\$1" "\$2"; }
for dp in rdma tcp; do
	marufs_mount -u maru://10.9.0.1:7450 -o data=\$dp
	grep -qx "data_path \$dp" "\$LAST_MNT/.maru/pool" || fail "not on \$dp"
	best_put=0 best_get=0
	for r in \$(seq \$ROUNDS); do
		t0=\$(date +%s%N)
		dd if="\$T/ref" of="\$LAST_MNT/f\$r" bs=4M status=none
		t1=\$(date +%s%N)
		dd if="\$LAST_MNT/f\$r" of="\$T/back" bs=4M iflag=direct status=none
		t2=\$(date +%s%N)
		cmp "\$T/ref" "\$T/back" || fail "\$dp: bytes differ"
		best_put=\$(max "\$best_put" "\$(mbs "\$t0" "\$t1")")
		best_get=\$(max "\$best_get" "\$(mbs "\$t1" "\$t2")")
	done
	echo "marufs_\${dp}_put \$best_put"
	echo "marufs_\${dp}_get \$best_get"
	marufs_umount "\$LAST_MNT"
done
EOF

vm_start A 1G 600 -netdev "socket,id=n0,listen=127.0.0.1:$port" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:09:00:01
vm_wait_listen A "$port"
vm_start B 1G 600 -netdev "socket,id=n0,connect=127.0.0.1:$port" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:09:00:02
rc=0
vm_wait B || rc=1
vm_wait A || rc=1
[ "$rc" = 0 ] || vm_fail "a guest of the bench failed"

# key value lines from B's output
val() { awk -v k="$1" '$1 == k { print $2 }' "$RUN/B.log" | tail -n 1; }
wbw=$(val ib_write_bw)
rbw=$(val ib_read_bw)
for k in ib_write_bw ib_read_bw marufs_rdma_put marufs_rdma_get marufs_tcp_put marufs_tcp_get; do
	v=$(val "$k")
	[ -n "$v" ] || vm_fail "no $k figure: $(tail -n 20 "$RUN/B.log")"
	echo "$k $v"
done
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else '-')" "$1" "$2"; }
echo "kernel $(cut -d' ' -f2 "$MARU_VM_CACHE/ready") under qemu TCG (not a NIC: function and relative cost)"
echo "| 32 MiB over rdma_rxe, two TCG guests | MB/s | vs perftest | vs data=tcp |"
echo "|---|---|---|---|"
echo "| ib_write_bw (1 MiB x 32) | $wbw | 1.00 | - |"
echo "| ib_read_bw (1 MiB x 32) | $rbw | 1.00 | - |"
echo "| marufs put, data=rdma | $(val marufs_rdma_put) | $(ratio "$(val marufs_rdma_put)" "$wbw") | $(ratio "$(val marufs_rdma_put)" "$(val marufs_tcp_put)") |"
echo "| marufs get, data=rdma | $(val marufs_rdma_get) | $(ratio "$(val marufs_rdma_get)" "$rbw") | $(ratio "$(val marufs_rdma_get)" "$(val marufs_tcp_get)") |"
echo "| marufs put, data=tcp | $(val marufs_tcp_put) | $(ratio "$(val marufs_tcp_put)" "$wbw") | 1.00 |"
echo "| marufs get, data=tcp | $(val marufs_tcp_get) | $(ratio "$(val marufs_tcp_get)" "$rbw") | 1.00 |"
vm_pass
