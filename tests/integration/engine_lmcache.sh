#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# engine_lmcache: LMCache's `fs` connector (remote_url
# fs://localhost:0/<dir>, or remote_storage_plugins ["fs"] with base_path
# <dir>) on marufs, replayed by tools/engine_lmcache.c as
# the engine's own sources (read in late 2026) have it: puts through ONE shared `<name>.tmp`
# beside the target (O_WRONLY|O_CREAT|O_TRUNC, 28-byte header, payload,
# close, os.replace), gets by stat + one readinto, glob("*.data"), os.remove.
# On one mount, 8 writers race on each of 24 keys with the bytes an engine
# writes for a key, and a scripted interleaving shows the writers share one
# file: the result is what a local filesystem gives (renames succeed or get
# ENOENT, the key ends whole, no temp left). On two mounts, 4 writers each
# with different payloads while a third mount reads the key and the temp
# name: ENOENT or one writer's complete bytes, never a mix, and at the end
# the same whole bytes on all three mounts and no temp anywhere. The pool
# accounting must then be exact.
. "$(dirname "$0")/lib/common.sh"

tool=$ENGINE_TOOLS/engine_lmcache
[ -x "$tool" ] || fail "missing $tool"

marud_start --size 1G
marufs_mount
marufs_mount
marufs_mount

mkdir "$MNT/lmcache"
"$tool" one -r 24 "$MNT/lmcache" >"$T/one.out" 2>&1 ||
	fail "LMCache shared temp, one mount: $(cat "$T/one.out")"
cat "$T/one.out" >&2
"$tool" two -r 24 "$MNT/lmcache" "$MNT2/lmcache" "$MNT3/lmcache" >"$T/two.out" 2>&1 ||
	fail "LMCache shared temp, two mounts: $(cat "$T/two.out")"
cat "$T/two.out" >&2
for m in "$MNT" "$MNT2" "$MNT3"; do
	assert_eq "$(ls -A "$m/lmcache" | wc -l)" 0 "names left in $m/lmcache"
done
rmdir "$MNT/lmcache"
wait_accounting_ok
marufs_umount "$MNT3"
marufs_umount "$MNT2"
marufs_umount
marud_stop
