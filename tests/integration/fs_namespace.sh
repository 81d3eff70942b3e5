#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_namespace: directories and names on a marufs mount: concurrent mkdir -p,
# rmdir of empty and non-empty directories, rename over a file, across
# directories, of a directory, RENAME_NOREPLACE and RENAME_EXCHANGE (through
# tools/fs_renameat2), rename of a file still open for writing (the publish
# lands on the new name), unlink, and readdir with the right d_type.
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount
R=$TOOLS/fs_renameat2
[ -x "$R" ] || fail "missing $R"

# concurrent mkdir -p of overlapping paths
pids=()
for i in $(seq 1 12); do
	mkdir -p "$MNT/m/a/b/c$((i % 3))/d$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a concurrent mkdir -p failed"
done
for i in $(seq 1 12); do
	[ -d "$MNT/m/a/b/c$((i % 3))/d$i" ] || fail "mkdir -p lost d$i"
done
assert_eq "$(ls "$MNT/m/a/b" | sort | tr '\n' ' ')" "c0 c1 c2 " "shared parents created once"

# rmdir
echo x >"$MNT/m/a/b/c0/d3/f"
assert_fails_with "not empty" "rmdir of a non-empty dir" rmdir "$MNT/m/a/b/c0/d3"
rm "$MNT/m/a/b/c0/d3/f"
rmdir "$MNT/m/a/b/c0/d3" || fail "rmdir of an empty dir"
[ ! -e "$MNT/m/a/b/c0/d3" ] || fail "rmdir'ed dir still there"
assert_fails_with "No such file" "rmdir of a missing dir" rmdir "$MNT/m/nope"
assert_fails_with "Not a directory" "rmdir of a file" bash -c "echo y >'$MNT/file' && rmdir '$MNT/file'"

# rename over an existing file, across directories, of a directory
echo one >"$MNT/r1"
echo two >"$MNT/r2"
mv "$MNT/r1" "$MNT/r2"
assert_eq "$(cat "$MNT/r2")" one "rename over an existing file"
[ ! -e "$MNT/r1" ] || fail "source name survives rename"
mkdir "$MNT/dirA" "$MNT/dirB"
mv "$MNT/r2" "$MNT/dirA/r"
mv "$MNT/dirA/r" "$MNT/dirB/r"
assert_eq "$(cat "$MNT/dirB/r")" one "rename across directories"
mv "$MNT/dirB" "$MNT/dirA/sub"
assert_eq "$(cat "$MNT/dirA/sub/r")" one "rename of a directory keeps its content"
assert_fails "rename of a dir into itself" mv "$MNT/dirA" "$MNT/dirA/sub/x"

# renameat2 flags
echo a >"$MNT/n1"
echo b >"$MNT/n2"
assert_eq "$("$R" -n "$MNT/n1" "$MNT/n2")" "errno EEXIST" "RENAME_NOREPLACE over a file"
assert_eq "$(cat "$MNT/n2")" b "NOREPLACE left the target alone"
"$R" -n "$MNT/n1" "$MNT/n3" || fail "RENAME_NOREPLACE to a free name"
assert_eq "$(cat "$MNT/n3")" a "NOREPLACE rename content"
assert_eq "$("$R" -x "$MNT/n2" "$MNT/n3")" "errno EINVAL" "RENAME_EXCHANGE refused"
assert_eq "$("$R" "$MNT/missing" "$MNT/n4")" "errno ENOENT" "rename of a missing name"

# rename while open for write: the publish at close lands on the new name
python3 - "$MNT" <<'PY' || fail "rename before close"
import os, sys
m = sys.argv[1]
fd = os.open(f"{m}/w.tmp", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
os.write(fd, b"first half ")
os.rename(f"{m}/w.tmp", f"{m}/w.bin")
os.write(fd, b"second half")
os.close(fd)
assert not os.path.exists(f"{m}/w.tmp"), "temp name came back"
with open(f"{m}/w.bin", "rb") as f:
    assert f.read() == b"first half second half"
PY

# unlink and rename-over while a reader holds the file open
python3 - "$MNT" <<'PY' || fail "unlink/replace under an open reader"
import os, sys
m = sys.argv[1]
old = os.urandom(2 << 20)
with open(f"{m}/held", "wb") as f:
    f.write(old)
r = open(f"{m}/held", "rb")
head = r.read(4096)
os.unlink(f"{m}/held")
assert not os.path.exists(f"{m}/held")
assert head + r.read() == old, "reader lost bytes after unlink"
with open(f"{m}/held2", "wb") as f:
    f.write(old)
r2 = open(f"{m}/held2", "rb")
with open(f"{m}/other", "wb") as f:
    f.write(b"replacement")
os.rename(f"{m}/other", f"{m}/held2")
assert r2.read() == old, "reader of a renamed-over file saw the new bytes"
assert open(f"{m}/held2", "rb").read() == b"replacement"
assert os.fstat(r2.fileno()).st_size == len(old), "fstat of the orphaned file"
r.close(); r2.close()
PY

# unlink
rm "$MNT/n2" || fail "unlink"
assert_fails_with "No such file" "unlink twice" rm "$MNT/n2"

# readdir: every name, '.', '..', and d_type from the stored mode
mkdir "$MNT/ls"
for i in $(seq 1 300); do echo "$i" >"$MNT/ls/f$i"; done
mkdir "$MNT/ls/sub1" "$MNT/ls/sub2"
python3 - "$MNT/ls" <<'PY' || fail "readdir"
import os, sys
d = sys.argv[1]
ents = {e.name: e for e in os.scandir(d)}
want = {f"f{i}" for i in range(1, 301)} | {"sub1", "sub2"}
assert set(ents) == want, f"names differ: {sorted(set(ents) ^ want)[:5]}"
for n, e in ents.items():
    assert e.is_dir(follow_symlinks=False) == n.startswith("sub"), f"d_type of {n}"
    assert e.is_file(follow_symlinks=False) == n.startswith("f"), f"d_type of {n}"
    assert e.inode() == os.stat(os.path.join(d, n)).st_ino, f"d_ino of {n}"
PY
assert_eq "$(ls -a "$MNT/ls" | head -2 | tr '\n' ' ')" ". .. " "'.' and '..' listed"
assert_eq "$(find "$MNT/ls" -mindepth 1 -type d | wc -l)" 2 "find -type d"
assert_eq "$(find "$MNT/ls" -type f | wc -l)" 300 "find -type f"
assert_eq "$(ls -a "$MNT" | grep -c '^\.maru$')" 1 ".maru listed in the root"
assert_eq "$(ls -a "$MNT/ls" | grep -c '^\.maru$')" 0 ".maru only in the root"

marufs_umount
marud_stop
