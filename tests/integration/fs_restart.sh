#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_restart: marud restarts under a marufs mount (a new pool generation).
# Descriptors opened before fail with EIO (never stale bytes), a file being
# written is not published, cached names are dropped, and new opens, creates
# and listings work without remounting.
. "$(dirname "$0")/lib/common.sh"

marud_start
marufs_mount

head -c 300000 /dev/urandom >"$MNT/old"
gen0=$(awk '$1 == "generation" { print $2 }' "$MNT/.maru/pool")
mkfifo "$T/ready" "$T/go"
python3 - "$MNT" "$T/ready" "$T/go" >"$T/py.out" 2>&1 <<'PY' &
import errno, os, sys
m, ready, go = sys.argv[1:4]
r = os.open(f"{m}/old", os.O_RDONLY)
assert len(os.read(r, 1000)) == 1000
w = os.open(f"{m}/inflight", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
os.write(w, b"a" * 5000)
open(ready, "w").write("ready\n")
open(go).read()
def expect_eio(what, fn):
    try:
        fn()
    except OSError as e:
        assert e.errno == errno.EIO, f"{what}: {e!r}"
        return
    raise SystemExit(f"{what} succeeded on a descriptor of the old generation")
expect_eio("pread", lambda: os.pread(r, 4096, 100000))
expect_eio("write", lambda: os.write(w, b"b" * 10))
try:
    os.close(w)
except OSError as e:
    assert e.errno == errno.EIO, e
os.close(r)
assert not os.path.exists(f"{m}/inflight"), "a write of the old generation was published"
print("ok")
PY
py=$!
read -r _ <"$T/ready"
marud_restart
# the client reconnects by itself; wait until the new generation is in use
wait_for 15 bash -c "[ \"\$(awk '\$1 == \"generation\" { print \$2 }' '$MNT/.maru/pool')\" != '$gen0' ]" ||
	fail "marufs never saw the new generation"
echo go >"$T/go"
wait "$py" || fail "old descriptors: $(cat "$T/py.out")"
grep -q '^ok$' "$T/py.out" || fail "old descriptors: $(cat "$T/py.out")"

# new opens work without remounting, and nothing stale is served
echo fresh >"$MNT/fresh" || fail "create after restart"
assert_eq "$(cat "$MNT/fresh")" fresh "read after restart"
mkdir -p "$MNT/d/e" || fail "mkdir after restart"
ls "$MNT" >/dev/null || fail "readdir after restart"
if [ -e "$MNT/old" ]; then
	# a pool that kept its names must serve their real bytes
	[ "$(stat -c %s "$MNT/old")" = 300000 ] || fail "old file has a wrong size after restart"
fi
assert_eq "$(getfattr --absolute-names --only-values -n user.maru.generation "$MNT/fresh")" \
	"$(awk '$1 == "generation" { print $2 }' "$MNT/.maru/pool")" "xattr generation follows"
[ "$(stat_value marufs_generation_changes_total)" -ge 1 ] || fail "generation change not counted"
marufs_umount
marud_stop
