#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# mh_timeouts: timeouts an operator can reason about (issue 22). Hosts: pool
# (marud) and w1 (mount A, timeout_ms=2000). With w1's link cut:
# - 9 uncached lookups at once (stat of names A never saw) all return within
#   timeout_ms + MH_SLACK_MS (1000: process start and a loaded machine), with
#   ETIMEDOUT or EIO (the issue saw 5, 5, ..., 10, 15, 15 s for 5 s);
# - a caller blocked in an uncached call and signalled after 0.5 s returns at
#   once (FUSE INTERRUPT), well before timeout_ms (the first call after a cut,
#   then a heal, and a new cut for the rest);
# - ls, stat and df of entries A has cached answer (within a second), and
#   so does an uncached stat, failing, once the pool is known away;
# and after the heal A reconnects by itself and sees what mount B (on the
# pool host) changed meanwhile: no answer kept from before the cut.
# Real: TCP between namespaces, marud, the mount, the signal. Emulated: the
# cut (every frame to and from w1 dropped on the bridge).
. "$(dirname "$0")/lib.sh"
TMO=2000
: "${MH_SLACK_MS:=1000}"
mh_init
mh_host pool
mh_host w1
mh_marud_start pool
mh_mount w1 -o timeout_ms=$TMO
A=$LAST_MNT
mh_mount pool
B=$LAST_MNT
mkdir "$A/dir"
echo cached >"$A/dir/f"
ls "$A/dir" >/dev/null
stat "$A/dir/f" >/dev/null

# a caller signalled while it waits: the first call after the cut, which
# would otherwise wait out timeout_ms
mh_cut w1
res=$(mh_tool interrupt "$A" nosuch-int 0.5)
log "interrupted stat: $res (ms errno)"
read -r ms err <<<"$res"
[ "$ms" -le $((500 + 400)) ] ||
	fail "a signalled caller returned after $ms ms (signal at 500 ms, timeout_ms $TMO)"
[ "$err" = EINTR ] || [ "$ms" -lt 500 ] ||
	fail "a signalled caller got $err after $ms ms, not EINTR"
mh_heal w1
wait_for 20 mkdir "$A/back" 2>/dev/null || fail "A did not reconnect 20 s after a first heal"
ls "$A/dir" >/dev/null	# cache them again: the mount drops its caches on a reconnect
stat "$A/dir/f" >/dev/null
df "$A" >/dev/null

# nine calls at once, the first ones after a new cut
mh_cut w1
names=()
for i in $(seq 9); do
	names+=("nosuch$i")
done
mh_tool stat "$A" "${names[@]}" >"$T/stat9.out"
cat "$T/stat9.out" >&2
while read -r n ms err; do
	[ "$ms" -le $((TMO + MH_SLACK_MS)) ] ||
		fail "uncached stat of $n took $ms ms with $TMO ms timeout_ms (9 at once)"
	case "$err" in
	ETIMEDOUT | EIO) ;;
	*) fail "uncached stat of $n during the cut: $err, expected ETIMEDOUT or EIO" ;;
	esac
done <"$T/stat9.out"
[ "$(wc -l <"$T/stat9.out")" = 9 ] || fail "not 9 answers: $(cat "$T/stat9.out")"

t0=$(mh_now_ms)
assert_eq "$(ls "$A/dir" 2>"$T/ls.err")" f "ls of a cached directory during the cut ($(cat "$T/ls.err"))"
stat "$A/dir/f" >/dev/null 2>"$T/stat.err" || fail "stat of a cached file during the cut: $(cat "$T/stat.err")"
df "$A" >/dev/null 2>"$T/df.err" || fail "df during the cut: $(cat "$T/df.err")"
t=$(($(mh_now_ms) - t0))
log "cached ls, stat and df during the cut: $t ms"
[ "$t" -le 1000 ] || fail "cached ls, stat and df took $t ms during the cut"
# the pool is known away: an uncached stat fails at once (or, when it is
# the probe, within the bound)
mh_tool stat "$A" nosuch-late >"$T/late.out"
read -r n ms err <"$T/late.out"
log "uncached stat once the pool is known away: $ms ms $err"
[ "$ms" -le $((TMO + MH_SLACK_MS)) ] || fail "uncached stat took $ms ms once known away"
[ "$err" = ETIMEDOUT ] || fail "uncached stat once known away: $err, expected ETIMEDOUT"

# B changes what A kept while A cannot hear of it
rm "$B/dir/f"
echo new >"$B/dir/g"

mh_heal w1
wait_for 20 mkdir "$A/after" 2>/dev/null || fail "A did not reconnect 20 s after the heal"
assert_eq "$(ls "$A/dir")" g "ls of A after the heal (B removed f and made g meanwhile)"
[ ! -e "$A/dir/f" ] || fail "A still finds f after the heal: an answer kept from before the cut"
echo back >"$A/after/f"
assert_eq "$(cat "$A/after/f")" back "A writes after the heal"

marufs_umount "$A"
marufs_umount "$B"
marud_stop
