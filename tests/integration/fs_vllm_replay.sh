#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_vllm_replay: vLLM's file-system KV offloading tier, replayed call for
# call (O_DIRECT, O_EXCL temp file + os.replace, hash-prefixed directories,
# 16 writer and 16 reader threads, a forked reader process, racing writers of
# one block, unlink while open) by ../shared/replays/vllm_fs_tier_replay.py,
# on a marufs mount; once with O_DIRECT and once through the page cache, then
# the pool accounting must be exact.
. "$(dirname "$0")/lib/common.sh"

REPLAY=$SRCDIR/../shared/replays/vllm_fs_tier_replay.py
[ -f "$REPLAY" ] || fail "missing $REPLAY (CI copies shared/ beside the clone)"
skip_unless_cmd python3

marud_start
marufs_mount
python3 "$REPLAY" "$MNT" >"$T/replay-odirect.out" 2>&1 ||
	fail "vLLM replay (O_DIRECT): $(grep -v '^PASS' "$T/replay-odirect.out")"
grep -q '^OK: 0 failure' "$T/replay-odirect.out" || fail "replay did not report OK"
python3 "$REPLAY" "$MNT" --no-odirect --blocks 64 >"$T/replay-cached.out" 2>&1 ||
	fail "vLLM replay (page cache): $(grep -v '^PASS' "$T/replay-cached.out")"
# the replay removes its tree: nothing may be left pending or leased
assert_eq "$(ls -A "$MNT" | grep -v '^\.maru$' | wc -l)" 0 "replay left names behind"
wait_accounting_ok
marufs_umount
marud_stop
