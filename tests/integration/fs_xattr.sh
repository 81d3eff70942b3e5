#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_xattr: the user.maru.* extended attributes (marufs-xattr(7)) through
# getfattr/setfattr and Python's os.*xattr: the read-only facts of a version,
# the writable hint and size, directory counters, and the errors (ENODATA,
# EINVAL, EPERM, ENOTSUP, ERANGE).
. "$(dirname "$0")/lib/common.sh"
skip_unless_cmd getfattr setfattr

marud_start
marufs_mount

xa() # xa NAME FILE: the value, or nothing
{
	getfattr --only-values -n "$1" "$2" 2>/dev/null
}

head -c 100000 /dev/urandom >"$MNT/f"
assert_eq "$(xa user.maru.version "$MNT/f")" "$(stat -c %i "$MNT/f")" "version is the inode number"
assert_eq "$(xa user.maru.state "$MNT/f")" published "state"
assert_eq "$(xa user.maru.leases "$MNT/f")" 0 "no leases"
[[ "$(xa user.maru.xxh3 "$MNT/f")" =~ ^[0-9a-f]{16}$ ]] || fail "xxh3 is not 16 hex digits: $(xa user.maru.xxh3 "$MNT/f")"
[[ "$(xa user.maru.extent "$MNT/f")" =~ ^[0-9]+\+[0-9]+(,[0-9]+\+[0-9]+)*$ ]] ||
	fail "extent format: $(xa user.maru.extent "$MNT/f")"
total=$(xa user.maru.extent "$MNT/f" | tr ',' '\n' | awk -F+ '{ s += $2 } END { print s }')
[ "$total" -ge 100000 ] || fail "extents cover $total bytes of 100000"
[[ "$(xa user.maru.generation "$MNT/f")" =~ ^[0-9]+$ ]] || fail "generation"
assert_eq "$(xa user.maru.generation "$MNT")" "$(awk '$1 == "generation" { print $2 }' "$MNT/.maru/pool")" \
	"generation matches .maru/pool"
head -c 100000 /dev/urandom >"$MNT/g"
assert_ne "$(xa user.maru.xxh3 "$MNT/f")" "$(xa user.maru.xxh3 "$MNT/g")" "different content, different xxh3"
cp "$MNT/f" "$MNT/f2"
assert_eq "$(xa user.maru.xxh3 "$MNT/f2")" "$(xa user.maru.xxh3 "$MNT/f")" "same content, same xxh3"

# leases: an open reader holds one
exec 5<"$MNT/f"
assert_eq "$(xa user.maru.leases "$MNT/f")" 1 "an open reader holds a lease"
exec 5<&-
wait_for 5 test "$(xa user.maru.leases "$MNT/f")" = 0 || fail "lease not released after close"

# listxattr: what applies to a published file, a directory
assert_eq "$(getfattr --absolute-names -d -m - "$MNT/f" | grep -c '^user\.maru\.')" 7 "seven attributes on a file"
mkdir "$MNT/d"
echo 12345 >"$MNT/d/a"
echo 123 >"$MNT/d/b"
mkdir "$MNT/d/sub"
assert_eq "$(getfattr --absolute-names -d -m - "$MNT/d" | grep -c '^user\.maru\.')" 3 "three attributes on a dir"
assert_eq "$(xa user.maru.ns.names "$MNT/d")" 2 "ns.names counts files"
assert_eq "$(xa user.maru.ns.bytes "$MNT/d")" 10 "ns.bytes sums sizes"

# hints
setfattr -n user.maru.hint -v read "$MNT/f" || fail "hint read"
assert_eq "$(xa user.maru.hint "$MNT/f")" read "hint read back"
for h in read_end promote write; do
	setfattr -n user.maru.hint -v "$h" "$MNT/f" || fail "hint $h"
done
assert_fails_with "Invalid argument" "bad hint" setfattr -n user.maru.hint -v soon "$MNT/f"
[ "$(stat_value marufs_hints_total)" -ge 1 ] || fail "hints not counted"

# errors
assert_fails_with "Operation not permitted" "set a read-only attribute" \
	setfattr -n user.maru.version -v 7 "$MNT/f"
assert_fails_with "Invalid argument" "set an unknown user.maru name" \
	setfattr -n user.maru.bogus -v 1 "$MNT/f"
assert_fails_with "No such attribute" "get an unknown user.maru name" \
	getfattr -n user.maru.bogus "$MNT/f"
assert_fails_with "not supported" "set outside user.maru" setfattr -n user.other -v 1 "$MNT/f"
assert_fails_with "No such attribute" "get outside user.maru" getfattr -n user.other "$MNT/f"
assert_fails_with "No such attribute" "file attribute on a dir" getfattr -n user.maru.xxh3 "$MNT/d"
assert_fails_with "Operation not permitted" "size on a published file" \
	setfattr -n user.maru.size -v 1M "$MNT/f"

# pending files: state, size reservation, ERANGE
python3 - "$MNT" <<'PY' || fail "xattrs of a pending file"
import errno, os, sys
m = sys.argv[1]
fd = os.open(f"{m}/p", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
assert os.getxattr(f"{m}/p", "user.maru.state") == b"pending"
os.setxattr(f"{m}/p", "user.maru.size", b"4M")
assert int(os.getxattr(f"{m}/p", "user.maru.size")) >= 4 << 20, "size hint not reserved"
try:
    os.setxattr(f"{m}/p", "user.maru.size", b"lots")
    raise SystemExit("garbage size accepted")
except OSError as e:
    assert e.errno == errno.EINVAL, e
os.write(fd, b"z" * 5000)
os.close(fd)
assert os.getxattr(f"{m}/p", "user.maru.state") == b"published"
assert os.path.getsize(f"{m}/p") == 5000
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(1)
n = libc.getxattr(f"{m}/p".encode(), b"user.maru.state", buf, 1)
assert n == -1 and ctypes.get_errno() == errno.ERANGE, "short buffer must give ERANGE"
PY
marufs_umount
marud_stop
