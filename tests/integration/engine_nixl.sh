#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# engine_nixl: SGLang's `nixl` HiCache backend
# (SGLANG_HICACHE_NIXL_BACKEND_STORAGE_DIR on marufs) through NIXL's POSIX
# plugin with synchronous pwrite/pread, replayed by tools/engine_nixl.c as
# the engine's own sources (read in late 2026) have it: 64 files opened O_RDWR|O_CREAT|O_DIRECT
# for puts and gets, written in place (no temp, no rename) in 256 KiB
# requests at offsets, interleaved across the open files; every byte read
# back here and through a second mount; an in-place rewrite of a published
# file (write-once, documented in marufs-design(7) §2 and §4.1: it starts from a copy,
# the other mount sees it at close, an earlier reader keeps the old bytes);
# two mounts putting one file in place at once, requests interleaved (one
# writer's whole bytes win, the last close, never a mix); the cleaner deleting the oldest files (then ENOENT). engine_nixl_uring is
# the same through io_uring. The pool accounting must be exact afterwards.
. "$(dirname "$0")/lib/common.sh"

tool=$ENGINE_TOOLS/engine_nixl
[ -x "$tool" ] || fail "missing $tool"
mode=${ENGINE_NIXL_MODE:-}	# -u from engine_nixl_uring

marud_start --size 512M
marufs_mount
marufs_mount

mkdir "$MNT/hicache_storage"
rc=0
"$tool" $mode "$MNT/hicache_storage" "$MNT2/hicache_storage" >"$T/nixl.out" 2>&1 || rc=$?
[ "$rc" -ne 77 ] || skip "$(cat "$T/nixl.out")"
[ "$rc" -eq 0 ] || fail "NIXL-style in-place I/O ${mode:-pwrite}: $(cat "$T/nixl.out")"
cat "$T/nixl.out" >&2
assert_eq "$(ls -A "$MNT/hicache_storage" | wc -l)" 0 "the cleaner left files"
rmdir "$MNT/hicache_storage"
wait_accounting_ok
marufs_umount "$MNT2"
marufs_umount
marud_stop
