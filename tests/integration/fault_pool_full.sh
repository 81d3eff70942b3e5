#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_pool_full: the pool fills up while readers hold leases (marufs-design(7) §2,
# §7). Through libmaru (fault_pool, precise): with LRU eviction writes
# succeed by evicting unleased chunks, leased ones stay whole, a chunk
# larger than any free run still fits, and ENOSPC comes at write time only
# when everything is pinned; with --eviction none, ENOSPC as soon as free
# bytes run out, nothing lost, and an unlinked chunk frees its bytes only
# with its last lease. Through two marufs mounts: a file held open on one
# mount keeps its bytes while the other fills the pool (eviction on), and
# with --eviction none a write that does not fit fails with ENOSPC while
# every stored file stays whole. Each run ends with the books balanced.
# Last, --prealloc refuses at start a pool its filesystem cannot hold.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

for mode in lru none; do
	marud_start --size 34M --eviction $mode
	cap=$(mstat marud_pool_capacity_bytes)
	for dp in shm tcp; do
		MARU_DATA=$dp "$TOOLS/fault_pool" "$MARU_URI" $mode >"$T/pool.out" 2>&1 ||
			fail "fault_pool $mode (data=$dp): $(cat "$T/pool.out")"
		log "$(cat "$T/pool.out") (data=$dp)"
		wait_settled 10
		# empty the pool for the next run: every name unlinked, all free
		marufs_mount
		rm -f "$LAST_MNT"/*.bin
		marufs_umount "$LAST_MNT"
		wait_settled 10 "$cap"
	done
	marud_stop
done

# ---- the same through marufs ----
CH=$((4 << 20))
marud_start --size 34M
marufs_mount
M1=$LAST_MNT
marufs_mount
M2=$LAST_MNT
"$FT" fwrite "$M1/held.bin" $CH 1 >/dev/null || fail "held.bin"
rm -f "$T/ready" "$T/go"
"$FT" fhold "$M1/held.bin" "$T/ready" "$T/go" >"$T/hold.out" 2>&1 &
reader=$!
wait_up "$reader" 20 test -e "$T/ready" || fail "reader: $(cat "$T/hold.out")"
for i in $(seq 2 20); do
	"$FT" fwrite "$M2/f$i.bin" $CH $i >"$T/w.out" 2>&1 ||
		fail "write $i with eviction on: $(cat "$T/w.out")"
done
[ "$(mstat marud_evictions_total)" -gt 0 ] || fail "nothing evicted after 80 MiB into 32 MiB"
expect_verdict "ok 20" "newest file" "$FT" fverify "$M1/f20.bin"
touch "$T/go"
bg_wait "$reader" 20
assert_eq "$(tail -n 1 "$T/hold.out" | cut -d' ' -f2-)" "ok 1" "held file after the pool filled"
for i in $(seq 2 20); do
	v=$(verdict "$FT" fverify "$M1/f$i.bin")
	case "$v" in "ok $i" | missing) ;; *) fail "f$i.bin: $v" ;; esac
done
marufs_umount "$M2"
marufs_umount "$M1"
wait_settled 10
marud_stop

marud_start --size 34M --eviction none
marufs_mount
M1=$LAST_MNT
marufs_mount
M2=$LAST_MNT
n=0
for i in $(seq 1 20); do
	out=$("$FT" fwrite "$M1/g$i.bin" $CH $i 2>&1) && n=$i && continue
	assert_eq "${out#* }" "error ENOSPC" "write that does not fit"
	break
done
[ "$n" -ge 6 ] && [ "$n" -lt 20 ] || fail "ENOSPC after $n files of 4 MiB in 32 MiB"
expect_verdict "missing" "the file that did not fit, other mount" "$FT" fverify "$M2/g$((n + 1)).bin"
for i in $(seq 1 "$n"); do
	expect_verdict "ok $i" "stored before ENOSPC" "$FT" fverify "$M2/g$i.bin"
done
wait_settled 10
marufs_umount "$M2"
marufs_umount "$M1"
marud_stop

# --prealloc: a pool its filesystem has no room for is refused at start
# (ENOSPC, said in the log, nothing left behind), not found out later as a
# SIGBUS in a writer storing into a page the filesystem cannot give; one
# that fits has every page allocated before marud serves.
SMALL=$T/small
mkdir -p "$SMALL"
mount -t tmpfs -o size=32M tmpfs "$SMALL" || fail "cannot mount a tmpfs for the prealloc case"
on_exit "umount -l '$SMALL' 2>/dev/null || true"
if timeout 20 "$MARUD" -d --pool "file:$SMALL/pool" --size 64M --prealloc \
	--listen "unix:$T/prealloc.sock" >"$T/prealloc.log" 2>&1; then
	fail "a 64 MiB pool was preallocated in a 32 MiB tmpfs"
fi
grep -q "cannot reserve its 64 MiB (prealloc): No space left on device" "$T/prealloc.log" ||
	fail "no reason logged: $(cat "$T/prealloc.log")"
[ ! -e "$SMALL/pool" ] || fail "the refused pool file was left behind"
marud_start --pool "file:$SMALL/pool" --size 16M --prealloc
assert_eq "$(( $(stat -c %b "$SMALL/pool") * $(stat -c %B "$SMALL/pool") ))" $((16 << 20)) \
	"bytes allocated to a preallocated 16 MiB pool"
grep -q "16 MiB reserved in" "$T/marud.log" || fail "the reservation was not logged"
marud_stop
