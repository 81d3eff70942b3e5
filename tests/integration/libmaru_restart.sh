#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_restart: a libmaru client lives through marud restarts (clean and
# SIGKILL) on the same pool: it sees the new generation by itself, its old
# lease and pending handles fail with ESTALE instead of returning old bytes,
# its event stream starts over with a generation event, and new chunks work.
. "$(dirname "$0")/lib/common.sh"

run_once()
{
	local dp=$1 how=$2 pid
	rm -f "$T/ready" "$T/go"
	MARU_DATA=$dp "$TOOLS/maru_restart" "$MARU_URI" "$T/ready" "$T/go" \
		>"$T/restart-$dp-$how.out" 2>&1 &
	pid=$!
	wait_up "$pid" 30 test -e "$T/ready" ||
		fail "maru_restart (data=$dp) never got ready: $(cat "$T/restart-$dp-$how.out")"
	marud_restart $how
	touch "$T/go"
	wait_exit "$pid" 60 || fail "maru_restart (data=$dp) hangs"
	[ "$EXIT_RC" = 0 ] ||
		fail "maru_restart (data=$dp, $how): $(cat "$T/restart-$dp-$how.out")"
	accounting_check || fail "accounting off after restart (data=$dp)"
}

marud_start
run_once shm ""
run_once tcp kill
marud_stop
