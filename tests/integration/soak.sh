#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# soak: the bounded soak (fs_soak). SOAK_PROCS processes (default 6) on two
# marufs mounts of one small pool do random writes, replaces by rename,
# reads, renames, unlinks, listings and long-held descriptors with
# self-checking contents, until SOAK_OPS operations (default 60000) or
# SOAK_SECONDS (default 40) seconds, whichever comes first; the writes far
# exceed the pool, so marud evicts all along. Zero mismatches and zero
# unexpected errors are allowed. Then both mounts must list the same names,
# every name must hold one whole chunk, and with everything removed and
# unmounted the pool must be all free with nothing pending or orphaned.
# For a long run: SOAK_SECONDS=3600 SOAK_OPS=100000000 meson test soak.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

PROCS=${SOAK_PROCS:-6}
SECS=${SOAK_SECONDS:-40}
OPS=${SOAK_OPS:-60000}
MAXSIZE=${SOAK_MAXSIZE:-$((1 << 20))}

marud_start --size 26M --grace 2
marufs_mount
M1=$LAST_MNT
marufs_mount
M2=$LAST_MNT
cap=$(mstat marud_pool_capacity_bytes)
ev0=$(mstat marud_evictions_total)

"$TOOLS/fs_soak" "$PROCS" "$SECS" "$OPS" "$MAXSIZE" "$M1" "$M2" >"$T/soak.out" 2>"$T/soak.err"
rc=$?
cat "$T/soak.out" >&2
if [ "$rc" != 0 ]; then
	head -n 40 "$T/soak.err" >&2
	fail "soak: mismatches or unexpected errors (see above)"
fi
grep -q "ops in" "$T/soak.out" || fail "fs_soak printed no totals"
log "evictions during the soak: $(($(mstat marud_evictions_total) - ev0))"
log "opens of a version replaced since its lookup (ESTALE, looked up again): $(stat_value marufs_stale_opens_total "$M2")"

# quiet now: both mounts agree, and every name holds a whole chunk
(cd "$M1" && find . -path ./.maru -prune -o -type f -print | sort) >"$T/l1"
(cd "$M2" && find . -path ./.maru -prune -o -type f -print | sort) >"$T/l2"
cmp -s "$T/l1" "$T/l2" || fail "the mounts list different names: $(diff "$T/l1" "$T/l2" | head)"
n=0
while read -r f; do
	for m in "$M1" "$M2"; do
		v=$(verdict "$FT" fverify "$m/$f")
		case "$v" in ok*) ;; *) fail "$m/$f after the soak: $v" ;; esac
	done
	n=$((n + 1))
done <"$T/l1"
log "$n names whole on both mounts"
rm -rf "${M1:?}"/d*
marufs_umount "$M2"
marufs_umount "$M1"
wait_settled 10 "$cap"
marud_stop
