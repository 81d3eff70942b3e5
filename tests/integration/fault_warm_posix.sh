#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_warm_posix: symlinks, hard links and special files survive a marud
# crash (issue 14 with issue 13's entries; marud(8) "what survives a
# restart"). Through one mount: ln -s (a short and a 4095-byte target), ln
# into two directories, mkfifo, mknod c and b, a socket, an unlink of the
# primary name of a linked file; then SIGKILL marud and start it on the
# same pool: on both mounts, without remounting, readlink gives the
# targets, stat gives the same ino, nlink, mode, rdev and owner, the
# hard-linked names hold the same bytes (cmp). Then marud is SIGKILLed at
# the journal fail points of a link and a symlink
# (marud.journal.{link,symlink}.{before,torn,after}): a recorded change is
# there after the restart; one not recorded is not (unless the reconnected
# mount redid it: then it is whole); what was there before is untouched
# and the books balance.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

head -c $((3 << 20)) /dev/urandom >"$T/chunk"
long=/$(head -c 4094 /dev/zero | tr '\0' t)

# ino nlink mode(hex) rdev uid gid size of every entry, sorted by path
snapshot()
{
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | while read -r p; do
		printf '%s %s\n' "$p" "$(stat -c '%i %h %f %t:%T %u:%g %s' "$p")"
	done)
}

marud_start --size 64M
marufs_mount -o allow_other,default_permissions
A=$LAST_MNT
marufs_mount
B=$LAST_MNT
mkdir "$A/d" "$A/e" || fail "mkdir"
cp "$T/chunk" "$A/d/kv.bin" || fail "cp"
ln "$A/d/kv.bin" "$A/e/kv-link.bin" || fail "ln"
ln "$A/d/kv.bin" "$A/kv-top.bin" || fail "ln into the root"
cp "$T/chunk" "$A/d/p.bin" || fail "cp p.bin"
ln "$A/d/p.bin" "$A/e/p-link.bin" || fail "ln p.bin"
rm "$A/d/p.bin" || fail "rm of the primary name"
ln -s ../d/kv.bin "$A/e/sym" || fail "ln -s"
ln -s "$long" "$A/longsym" || fail "ln -s with a 4095-byte target"
mkfifo -m 0640 "$A/fifo" || fail "mkfifo"
mknod -m 0620 "$A/d/chr" c 1 3 || fail "mknod c"
mknod "$A/blk" b 8 1 || fail "mknod b"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$A/sock" ||
	fail "socket"
chown -h 1234:5678 "$A/e/sym" || fail "lchown"
chown 77:88 "$A/fifo" || fail "chown of a FIFO"
assert_eq "$(stat -c %h "$B/d/kv.bin")" 3 "nlink before the crash"
wait_for 10 eval "[ \"\$(snapshot '$B')\" = \"\$(snapshot '$A')\" ]" ||
	fail "the mounts disagree before the crash"
snapshot "$A" >"$T/before"
marud_restart kill
grep -q "recovery: " "$T/marud.log" || fail "marud said nothing of a recovery"
for m in "$A" "$B"; do
	wait_for 15 eval "snapshot '$m' >'$T/after' 2>/dev/null && cmp -s '$T/before' '$T/after'" ||
		fail "$m after the restart: $(diff "$T/before" "$T/after")"
	assert_eq "$(readlink "$m/e/sym")" ../d/kv.bin "readlink on $m"
	assert_eq "$(readlink "$m/longsym")" "$long" "the 4095-byte target on $m"
	assert_eq "$(stat -c %F:%t:%T "$m/d/chr")" "character special file:1:3" "char device on $m"
	assert_eq "$(stat -c %F:%t:%T "$m/blk")" "block special file:8:1" "block device on $m"
	assert_eq "$(stat -c %F:%a:%u:%g "$m/fifo")" "fifo:640:77:88" "FIFO on $m"
	assert_eq "$(stat -c %F "$m/sock")" socket "socket on $m"
	assert_eq "$(stat -c %h "$m/e/p-link.bin")" 1 "the name left after rm of the primary"
	for f in d/kv.bin e/kv-link.bin kv-top.bin e/p-link.bin; do
		cmp "$T/chunk" "$m/$f" || fail "$m/$f differs after the restart"
	done
done
assert_eq "$(stat -c %i "$A/d/kv.bin")" "$(stat -c %i "$B/e/kv-link.bin")" "one inode, two mounts"
# links still behave: one more name, and unlinking one keeps the rest
ln "$B/e/kv-link.bin" "$B/e/kv-4.bin" || fail "ln after the restart"
rm "$A/d/kv.bin" || fail "rm after the restart"
assert_eq "$(stat -c %h "$A/kv-top.bin")" 3 "nlink after ln + rm"
cmp "$T/chunk" "$B/e/kv-4.bin" || fail "the new name's bytes"
wait_settled 10
accounting_check || fail "accounting after the restart"
marufs_umount "$B"
marufs_umount "$A"
marud_stop
log "SIGKILL restart: symlinks, hard links and special files came back on two mounts: ok"

# ---- SIGKILL at the journal fail points of link and symlink ----
kill_phase()
{
	local op=$1 ph=$2 pid m nth=1
	# symlink: old-sym is the first hit, recorded; new.bin the second
	[ "$op" = symlink ] && nth=2
	MARU_FAILPOINT="marud.journal.$op.$ph=$nth*abort" marud_start --size 64M --grace 1
	marufs_mount
	m=$LAST_MNT
	cp "$T/chunk" "$m/keep.bin" || fail "$op.$ph: cp"
	ln -s keep.bin "$m/old-sym" || fail "$op.$ph: ln -s"
	if [ "$op" = link ]; then
		(ln "$m/keep.bin" "$m/new.bin" 2>/dev/null) &
	else
		(ln -s keep.bin "$m/new.bin" 2>/dev/null) &
	fi
	pid=$!
	marud_died
	tail -n 3 "$T/marud.log" | grep -q "failpoint marud.journal.$op.$ph: killing" ||
		fail "marud died, but not at marud.journal.$op.$ph"
	marud_restart kill
	wait "$pid" 2>/dev/null || true
	wait_for 15 test -e "$m/keep.bin" || fail "$op.$ph: keep.bin is gone"
	cmp "$T/chunk" "$m/keep.bin" || fail "$op.$ph: keep.bin differs"
	if [ "$ph" = after ]; then
		[ -L "$m/new.bin" ] || [ -f "$m/new.bin" ] || fail "$op.$ph: the recorded new.bin is gone"
	fi
	# recorded or redone: whole; else absent, and keep.bin's nlink says which
	if [ "$op" = link ]; then
		if [ -e "$m/new.bin" ]; then
			assert_eq "$(stat -c %i:%h "$m/new.bin")" "$(stat -c %i "$m/keep.bin"):2" \
				"$op.$ph: new.bin is keep.bin's second name"
			cmp "$T/chunk" "$m/new.bin" || fail "$op.$ph: new.bin differs"
		else
			assert_eq "$(stat -c %h "$m/keep.bin")" 1 "$op.$ph: nlink without the link"
		fi
	else
		if [ -L "$m/new.bin" ]; then
			assert_eq "$(readlink "$m/new.bin")" keep.bin "$op.$ph: the new symlink's target"
		else
			[ ! -e "$m/new.bin" ] || fail "$op.$ph: new.bin is not a symlink"
		fi
	fi
	assert_eq "$(readlink "$m/old-sym")" keep.bin "$op.$ph: old-sym"
	wait_settled 10
	accounting_check || fail "$op.$ph: accounting after the restart"
	marufs_umount "$m"
	marud_stop
	log "SIGKILL at marud.journal.$op.$ph: ok"
}

skip_unless_failpoints
for ph in before torn after; do
	kill_phase link "$ph"
	kill_phase symlink "$ph"
done
