#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_mount_opts: the marufs command line. --help and --version, usage errors,
# a pool that cannot be reached fails the mount command itself, marufs's own
# -o options (cache timeouts, data path, polling for marud's replies: off
# unless asked, counted in .maru/stats, refused past 10 ms), and the fstab path: mount.fuse3
# starting a daemonized marufs for type fuse.marufs with fstab-only options,
# which exits once unmounted.
. "$(dirname "$0")/lib/common.sh"
skip_unless_fuse

"$MARUFS" --help >"$T/help" 2>&1 || fail "--help exit status"
for want in 'POOL MOUNTPOINT' 'data=auto|shm|tcp|rdma' 'negative_timeout=' 'key_file=' 'spin_us=' 'stream_bytes=' \
	'-f  ' 'allow_other'; do
	grep -q -- "$want" "$T/help" || fail "--help lacks '$want'"
done
"$MARUFS" --version >"$T/version" 2>&1 || fail "--version exit status"
grep -q '^marufs [0-9]' "$T/version" || fail "--version: $(cat "$T/version")"

mkdir "$T/m"
assert_fails "no arguments" "$MARUFS"
assert_fails "no mountpoint" "$MARUFS" maru+unix:///nonexistent.sock
assert_fails "unreachable pool" timeout 20 "$MARUFS" -f -o timeout_ms=500 \
	maru+unix:///nonexistent/marud.sock "$T/m"
assert_fails "bad URI" timeout 20 "$MARUFS" -f bogus://x "$T/m"
mountpoint -q "$T/m" && fail "a failed start left a mount"

marud_start
assert_fails "bad data path" timeout 20 "$MARUFS" -f -o data=carrier-pigeon "$MARU_URI" "$T/m"
mountpoint -q "$T/m" && fail "a bad option left a mount"
timeout 20 "$MARUFS" -f -o spin_us=20000 "$MARU_URI" "$T/m" >"$T/spin.log" 2>&1 &&
	fail "spin_us=20000 mounted"
grep -q 'spin_us=20000: expected 0 to 10000 microseconds' "$T/spin.log" ||
	fail "spin_us=20000 refused without saying why: $(cat "$T/spin.log")"
mountpoint -q "$T/m" && fail "a bad spin_us left a mount"

# marufs's options: data path and cache timeouts reach the mount
marufs_mount -o data=tcp,entry_timeout=0.5,attr_timeout=0.5,negative_timeout=0.2,max_conns=2 \
	-o stream_bytes=3145728
assert_eq "$(awk '$1 == "data_path" { print $2 }' "$MNT/.maru/pool")" tcp "data=tcp honoured"
assert_eq "$(awk '$1 == "maru_client_tcp_stream_limit_bytes" { print $2 }' "$MNT/.maru/stats")" \
	3145728 "stream_bytes= honoured"
head -c $((3 << 20)) /dev/urandom >"$T/blob"
cp "$T/blob" "$MNT/blob"
cmp "$T/blob" "$MNT/blob" || fail "data over tcp differs"
marufs_umount

# polling for replies: off by default, counted when asked for
spin_total() { awk '$1 == "maru_client_spin_replies_total" || $1 == "maru_client_spin_misses_total" { n += $2 } END { print n + 0 }' "$1/.maru/stats"; }
marufs_mount
for i in $(seq 20); do echo "$i" >"$LAST_MNT/spin$i"; done
assert_eq "$(spin_total "$LAST_MNT")" 0 "no reply polled for by default"
marufs_umount "$LAST_MNT"
marufs_mount -o spin_us=5000
for i in $(seq 20); do echo "$i" >"$LAST_MNT/spinon$i"; cat "$LAST_MNT/spin$i" >/dev/null; done
[ "$(spin_total "$LAST_MNT")" -gt 0 ] ||
	fail "spin_us=5000: no reply polled for: $(grep spin "$LAST_MNT/.maru/stats")"
marufs_umount "$LAST_MNT"

# fstab: "POOL /mnt fuse.marufs defaults,_netdev 0 0" runs mount.fuse3, which
# starts "marufs POOL MOUNTPOINT -o ..." without -f
skip_unless_cmd mount.fuse3
mkdir "$T/fstab"
on_exit "fusermount3 -uz '$T/fstab'"
PATH="$(dirname "$MARUFS"):$PATH" mount.fuse3 "$MARU_URI" "$T/fstab" -t fuse.marufs \
	-o defaults,_netdev,nofail,negative_timeout=1 || fail "mount.fuse3"
grep -q "^$MARU_URI $T/fstab fuse.marufs " /proc/mounts ||
	fail "fstab mount: $(grep " $T/fstab " /proc/mounts)"
echo via-fstab >"$T/fstab/f"
assert_eq "$(cat "$T/fstab/f")" via-fstab "I/O on the fstab mount"
pid=
for p in $(pgrep -x marufs); do
	tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF " $T/fstab " && pid=$p
done
[ -n "$pid" ] || fail "no daemonized marufs found"
umount "$T/fstab" || fail "umount of the fstab mount"
wait_for 10 eval '! proc_alive '"$pid" || fail "daemonized marufs still runs after umount"
marud_stop
