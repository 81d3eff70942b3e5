#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# engine_vllm: vLLM's OffloadingConnector with TieringOffloadingSpec and a
# secondary tier of type `fs` (`fs_python` in older releases) whose root_dir
# is on marufs, replayed call for call by tools/engine_vllm.c as
# the engine's own sources (read in late 2026) have it: the O_DIRECT probe
# (.o_direct_probe_*.tmp, written and removed; it must work on marufs),
# config.json, hash-fanned block names, 32 I/O threads each storing through
# its own `<final>_<random>.tmp` (O_CREAT|O_EXCL|O_WRONLY|O_TRUNC|O_DIRECT,
# one write of a 2 MiB block, close, rename), access(F_OK) lookups, loads of
# one readv each with every byte checked, here and through a second mount,
# 32 threads storing one block at once (renames over an existing file),
# EEXIST on a taken temp name, a store skipped when the block exists, an
# open reader surviving the unlink of its block, and a short read deleting
# the file. Then the same buffered with 4 MiB blocks. No temp file may be
# left, and after removing the tree the pool accounting must be exact.
. "$(dirname "$0")/lib/common.sh"

tool=$ENGINE_TOOLS/engine_vllm
[ -x "$tool" ] || fail "missing $tool"

marud_start --size 1G
marufs_mount
marufs_mount

mkdir "$MNT/vllm"
"$tool" "$MNT/vllm" "$MNT2/vllm" >"$T/odirect.out" 2>&1 ||
	fail "vLLM fs tier, O_DIRECT: $(cat "$T/odirect.out")"
cat "$T/odirect.out" >&2
grep -qx 'O_DIRECT probe: works' "$T/odirect.out" || fail "the O_DIRECT probe failed on marufs"
rm -rf "$MNT/vllm"

mkdir "$MNT/vllm"
"$tool" -B -s $((4 << 20)) -b 64 "$MNT/vllm" "$MNT2/vllm" >"$T/buffered.out" 2>&1 ||
	fail "vLLM fs tier, buffered: $(cat "$T/buffered.out")"
cat "$T/buffered.out" >&2
rm -rf "$MNT/vllm"

assert_eq "$(ls -A "$MNT" | grep -v '^\.maru$' | wc -l)" 0 "names left behind"
wait_accounting_ok
marufs_umount "$MNT2"
marufs_umount
marud_stop
