#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fs_vllm_replay: vLLM's file-system KV offloading tier, replayed call for
# call (O_DIRECT, O_EXCL temp file + os.replace, hash-prefixed directories,
# 16 writer and 16 reader threads, a forked reader process, racing writers of
# one block, unlink while open) by ../shared/replays/vllm_fs_tier_replay.py,
# on a marufs mount; once with O_DIRECT and once through the page cache, then
# the pool accounting must be exact.
#
# The replay script is not part of this repository: it lives in a shared/
# directory some checkouts have beside the clone. Without that directory the
# case skips (77) and says so; engine-pattern cases kept in the tree are to
# replace it. With the directory, a missing script is a failure.
. "$(dirname "$0")/lib/common.sh"

REPLAYS=$SRCDIR/../shared/replays
REPLAY=$REPLAYS/vllm_fs_tier_replay.py
[ -d "$REPLAYS" ] ||
	skip "$REPLAYS is absent (the replay script is kept outside this repository)"
[ -f "$REPLAY" ] || fail "missing $REPLAY ($REPLAYS exists but lacks the script)"
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
