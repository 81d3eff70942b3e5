#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_api: the whole libmaru API against a real marud (maru_api), once per
# data path (tcp, shm, auto, and shm with coherence=flush), each on a fresh
# pool; then the shipped example
# chunk_put_get stores and reads back files of several sizes.
. "$(dirname "$0")/lib/common.sh"

for dp in tcp shm auto; do
	marud_start
	MARU_DATA=$dp "$TOOLS/maru_api" "$MARU_URI" >"$T/api-$dp.out" 2>&1 ||
		fail "maru_api (data=$dp): $(cat "$T/api-$dp.out")"
	grep -q "maru_api: ok" "$T/api-$dp.out" || fail "maru_api (data=$dp) said no ok"
	accounting_check || fail "accounting off after maru_api (data=$dp)"
	marud_stop
done

# coherence=flush: cache lines written back before publish, dropped before reads
marud_start
MARU_DATA=shm MARU_COHERENCE=flush "$TOOLS/maru_api" "$MARU_URI" >"$T/api-flush.out" 2>&1 ||
	fail "maru_api (data=shm, coherence=flush): $(cat "$T/api-flush.out")"
marud_stop

marud_start
for size in 0 1 4096 1000003 $((9 << 20)); do
	head -c "$size" /dev/urandom >"$T/in-$size.bin"
	out=$("$EXAMPLES/chunk_put_get" "$MARU_URI" "$T/in-$size.bin" "chunk-$size.bin") ||
		fail "chunk_put_get $size bytes: $out"
	assert_eq "$out" "stored $size bytes as /chunk-$size.bin and read them back over shm" \
		"chunk_put_get output"
done
marud_stop
