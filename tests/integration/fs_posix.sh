#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_posix: the POSIX surface beyond plain files, on two marufs mounts of one
# pool: symlinks (readlink, targets up to PATH_MAX-1, seen on the other mount
# at once, lchown, utimensat with AT_SYMLINK_NOFOLLOW), hard links (nlink,
# unlink of one name, rename between two names of one version, an open file
# keeps its bytes when every name goes), FIFOs, sockets and device nodes
# (metadata only: no pool bytes), ENAMETOOLONG, chmod/chown/utimensat on
# every type, the kernel's permission checks on an allow_other +
# default_permissions mount (sticky and set-group-ID directories, chmod and
# chown by a non-owner, run through setpriv), and `cp -a`, `tar x` and
# `rsync -a` (when installed) of a tree holding a symlink, a hard link and a
# FIFO. It also pins the two write-once divergences marufs-design(7) lists
# (a reader keeps the old version until the writer's close; a file open for
# writing on one mount is invisible to the other until published) and that
# renaming a file still open for writing to a free name waits for no event
# (marufs_event_waits_total does not move).
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount -o allow_other,default_permissions
marufs_mount
A=$MNT
B=$MNT2

# ---- symlinks ----
echo data >"$A/target"
ln -s target "$A/sl"
assert_eq "$(readlink "$B/sl")" target "readlink on the other mount"
assert_eq "$(cat "$B/sl")" data "a symlink is followed on the other mount"
assert_eq "$(stat -c %F "$B/sl")" "symbolic link" "lstat type"
long=$(head -c 4095 /dev/zero | tr '\0' 'x')
ln -s "$long" "$A/longlink" || fail "symlink with a 4095-byte target"
assert_eq "$(readlink "$B/longlink")" "$long" "a PATH_MAX-1 target survives"
assert_fails "symlink over an existing name" ln -s x "$A/sl"
chown -h 1234:5678 "$A/sl"
assert_eq "$(stat -c %u:%g "$B/sl")" "1234:5678" "lchown"
assert_eq "$(stat -c %u "$B/target")" 0 "lchown left the target alone"
touch -h -d @1000000000 "$A/sl"
assert_eq "$(stat -c %Y "$B/sl")" 1000000000 "utimensat AT_SYMLINK_NOFOLLOW"
assert_ne "$(stat -c %Y "$B/target")" 1000000000 "the target's times unchanged"

# ---- hard links ----
echo linked >"$A/h1"
ln "$A/h1" "$A/h2"
mkdir "$A/hd"
ln "$A/h1" "$A/hd/h3"
assert_eq "$(stat -c %h "$B/h1")" 3 "nlink on the other mount"
assert_eq "$(stat -c %i "$B/h2")" "$(stat -c %i "$B/hd/h3")" "one inode behind every name"
assert_eq "$(cat "$B/hd/h3")" linked "a hard link reads the version"
# rename(2) itself (mv refuses two names of one file before calling it)
python3 -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$A/h1" "$A/h2"
[ -e "$A/h1" ] && [ -e "$A/h2" ] || fail "rename between two names of one version changed something"
rm "$A/h1"
assert_eq "$(cat "$B/h2")" linked "unlink of one name keeps the others"
assert_eq "$(stat -c %h "$B/h2")" 2 "nlink after an unlink"
exec 4<"$A/h2"
rm "$A/h2" "$A/hd/h3"
[ ! -e "$B/h2" ] || fail "last names gone"
assert_eq "$(cat <&4)" linked "an open file keeps its bytes when every name goes"
exec 4<&-
assert_fails "link of a directory" ln "$A/hd" "$A/hd2"
# write-once: writing one name of a hard-linked file rebinds that name only
echo before >"$A/w1"
ln "$A/w1" "$A/w2"
echo after >"$A/w1"
assert_eq "$(cat "$B/w1")" after "the written name has the new version"
assert_eq "$(cat "$B/w2")" before "the other name keeps the old version"
assert_eq "$(stat -c %h "$B/w2")" 1 "and is no longer linked"

# ---- FIFOs, sockets, devices: metadata only ----
free0=$(stat_value marud_pool_free_bytes)
mkfifo -m 0640 "$A/fifo"
mknod "$A/chr" c 1 3
mknod "$A/blk" b 7 0
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$A/sock"
assert_eq "$(stat -c %F "$B/fifo")" fifo "FIFO type on the other mount"
assert_eq "$(stat -c %a "$B/fifo")" 640 "FIFO mode"
assert_eq "$(stat -c %F "$B/chr")" "character special file" "char device type"
assert_eq "$(stat -c %t:%T "$B/chr")" 1:3 "char device rdev"
assert_eq "$(stat -c %t:%T "$B/blk")" 7:0 "block device rdev"
assert_eq "$(stat -c %F "$B/sock")" socket "socket type"
assert_eq "$(stat_value marud_pool_free_bytes)" "$free0" "special files take no pool bytes"
(echo through >"$A/fifo") &
wpid=$!
assert_eq "$(timeout 10 cat "$A/fifo")" through "a FIFO on the mount is a pipe"
wait "$wpid"

# ---- ENAMETOOLONG ----
n256=$(head -c 256 /dev/zero | tr '\0' 'n')
assert_fails_with "File name too long" "a 256-byte name" touch "$A/$n256"
assert_fails_with "File name too long" "mkdir with a 256-byte name" mkdir "$A/$n256"
touch "$A/${n256:1}" || fail "a 255-byte name"

# ---- chmod, chown, utimensat on every type ----
mkdir "$A/d"
for f in target d fifo chr blk sock; do
	chmod 0604 "$A/$f"
	chown 11:12 "$A/$f"
	touch -d @1111111111 "$A/$f"
	assert_eq "$(stat -c %a:%u:%g:%Y "$B/$f")" "604:11:12:1111111111" "chmod/chown/touch on $f"
done

# ---- permissions: kernel checks on the default_permissions mount ----
chmod 0755 "$T"	# let the other users reach the mount
U1=(setpriv --reuid=2001 --regid=2001 --clear-groups)
U2=(setpriv --reuid=2002 --regid=2002 --clear-groups)
mkdir -m 1777 "$A/sticky"
"${U1[@]}" touch "$A/sticky/mine" || fail "user 2001 creates in a sticky dir"
assert_eq "$(stat -c %u "$A/sticky/mine")" 2001 "owner of a new file"
assert_fails "another user removes from a sticky dir" "${U2[@]}" rm -f "$A/sticky/mine"
assert_fails "another user renames in a sticky dir" "${U2[@]}" mv "$A/sticky/mine" "$A/sticky/x"
"${U1[@]}" rm "$A/sticky/mine" || fail "the owner removes from a sticky dir"
mkdir "$A/sgid"
chgrp 3000 "$A/sgid"
chmod 2777 "$A/sgid"
"${U1[@]}" touch "$A/sgid/f"
"${U1[@]}" mkdir "$A/sgid/sub"
"${U1[@]}" ln -s f "$A/sgid/l"
assert_eq "$(stat -c %g "$A/sgid/f")" 3000 "a setgid dir's new file takes its group"
assert_eq "$(stat -c %g "$A/sgid/sub")" 3000 "a setgid dir's new dir takes its group"
assert_eq "$(stat -c %A "$A/sgid/sub" | cut -c7)" s "a setgid dir's new dir is setgid"
assert_eq "$(stat -c %g "$A/sgid/l")" 3000 "a setgid dir's new symlink takes its group"
"${U1[@]}" touch "$A/sticky/own"
assert_fails "chmod by a non-owner" "${U2[@]}" chmod 0777 "$A/sticky/own"
assert_fails "chown by a non-root owner" "${U1[@]}" chown 2002 "$A/sticky/own"
"${U1[@]}" chmod 0600 "$A/sticky/own" || fail "chmod by the owner"
assert_fails "read without permission" "${U2[@]}" cat "$A/sticky/own"
"${U1[@]}" touch -d @1222333444 "$A/sticky/own" || fail "utimensat by the owner"
assert_fails "utimensat to a time by a non-owner" "${U2[@]}" touch -d @1 "$A/sticky/own"

# ---- cp -a, tar x, rsync -a round trips ----
src=$T/tree
mkdir -p "$src/sub"
echo one >"$src/sub/file"
ln "$src/sub/file" "$src/hard"
ln -s sub/file "$src/link"
mkfifo "$src/pipe"
chmod 0751 "$src/sub"
touch -h -d @1300000000 "$src/link"
listing()
{
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %n %l\n' | sort)
}
want=$(listing "$src")
cp -a "$src" "$A/cp"
assert_eq "$(listing "$B/cp")" "$want" "cp -a into the mount"
assert_eq "$(stat -c %i "$B/cp/hard")" "$(stat -c %i "$B/cp/sub/file")" "cp -a kept the hard link"
cp -a "$B/cp" "$T/back"
assert_eq "$(listing "$T/back")" "$want" "cp -a out of the mount"
mkdir "$A/tar"
tar -C "$src" -cf - . | tar -C "$A/tar" -xf -
assert_eq "$(listing "$B/tar")" "$want" "tar x into the mount"
assert_eq "$(stat -c %Y "$B/tar/link")" 1300000000 "tar x set the symlink's time"
if command -v rsync >/dev/null; then
	rsync -aH "$src/" "$A/rsync/"
	assert_eq "$(listing "$B/rsync")" "$want" "rsync -aH into the mount"
	rsync -aH "$B/rsync/" "$T/rback/"
	assert_eq "$(listing "$T/rback")" "$want" "rsync -aH out of the mount"
else
	log "rsync not installed: its round trip is not run (README lists it)"
fi

# A writer in its own process (a descriptor this shell holds would be
# flushed, and so published, by every command it forks): hold_open PATH
# opens PATH read-write (creating it), writes "new", and keeps it open
# until release_hold.
mkfifo "$T/ctl"
hold_open()
{
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"new\n")
print("ready", flush=True)
open(sys.argv[2]).read()
os.close(fd)' "$1" "$T/ctl" >"$T/ready" &
	HOLD_PID=$!
	wait_for 10 grep -q ready "$T/ready" || fail "writer of $1 did not start"
}
release_hold()
{
	echo go >"$T/ctl"
	wait "$HOLD_PID" || fail "writer failed"
	rm -f "$T/ready"
}

# ---- write-once divergences (marufs-design(7)) ----
echo old >"$A/wo"
hold_open "$A/wo"
assert_eq "$(cat "$B/wo")" old "a reader keeps the old version until the writer's close"
release_hold
assert_eq "$(cat "$B/wo")" new "the writer's close publishes"
hold_open "$A/unpub"
[ ! -e "$B/unpub" ] || fail "a file open for writing is invisible to other mounts"
release_hold
[ -e "$B/unpub" ] || fail "published at close"

# ---- a rename that makes no event waits for none ----
waits0=$(stat_value marufs_event_waits_total "$A")
timeouts0=$(stat_value marufs_event_wait_timeouts_total "$A")
hold_open "$A/key.tmp"
ms=$(python3 -c '
import os, sys, time
t = time.monotonic()
os.rename(sys.argv[1], sys.argv[2])
print(int((time.monotonic() - t) * 1000))' "$A/key.tmp" "$A/key")
assert_eq "$(stat_value marufs_event_waits_total "$A")" "$waits0" \
	"renaming a pending file to a free name waited for no event"
release_hold
assert_eq "$(stat_value marufs_event_wait_timeouts_total "$A")" "$timeouts0" "no wait timed out"
log "rename of a pending file: $ms ms"
[ "$ms" -lt 500 ] || fail "pending rename took $ms ms"
assert_eq "$(cat "$B/key")" new "the publish landed on the new name"
# A published file's rename does wait for its event.
waits0=$(stat_value marufs_event_waits_total "$A")
mv "$A/key" "$A/key2"
v=$(stat_value marufs_event_waits_total "$A")
[ "$v" -gt "$waits0" ] || fail "a published rename did not wait for its event"
assert_eq "$(cat "$B/key2")" new "rename seen on the other mount"

accounting_ok
marufs_umount "$B"
marufs_umount "$A"
marud_stop
