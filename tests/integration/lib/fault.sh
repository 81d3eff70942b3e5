# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/integration/lib/fault.sh: what the fault_* cases share, sourced
# after common.sh: the fault_tool verdicts, marud's accounting as marud
# itself reports it (through the maru_stats tool, never a mount's cache),
# waiting for a fail point to stop marud, and the check every cell ends
# with: nothing pending, nothing orphaned, free+used+pending+orphaned ==
# capacity, and the free bytes back where the case says they must be.

FT=$TOOLS/fault_tool

skip_unless_failpoints()
{
	grep -q "HAVE_FAILPOINTS 1" "$TOOLS/../../../config.h" 2>/dev/null ||
		skip "built without fail points (-Dfailpoints=false)"
}

# mstat NAME: marud's metric NAME, asked over the socket.
mstat()
{
	local v
	v=$(stat_value "$1" /nonexistent) || exit 1
	echo "$v"
}

# verdict CMD...: the second and later words of fault_tool's one-line
# verdict ("ok SEED", "missing", "error EIO"); fails the case on "BAD"
# (a partial or mixed version was visible) or an unexpected exit status.
verdict()
{
	local out rc=0
	out=$("$@" 2>"$T/verdict.err") || rc=$?
	case "$out" in
	*" BAD "*) fail "partial version visible: $out" ;;
	esac
	[ "$rc" = 0 ] || [ "$rc" = 4 ] || fail "$*: exit $rc: $out $(cat "$T/verdict.err")"
	echo "${out#* }"
}

# expect_verdict EXPECTED MSG CMD...
expect_verdict()
{
	local want=$1 msg=$2 got
	shift 2
	got=$(verdict "$@") || exit 1
	assert_eq "$got" "$want" "$msg"
}

# settled: every handle is closed and the books balance.
settled()
{
	local s
	s=$(maru_stats /nonexistent 2>/dev/null) || return 1
	awk '$1 == "marud_pool_pending_bytes" && $2 != 0 { bad = 1 }
	     $1 == "marud_pool_orphaned_bytes" && $2 != 0 { bad = 1 }
	     $1 == "marud_accounting_ok" { ok = $2 }
	     END { exit !(ok == 1 && !bad) }' <<<"$s"
}

# wait_settled [SECONDS] [FREE]: until settled (and marud_pool_free_bytes ==
# FREE when given), or fail with the stats.
wait_settled()
{
	local secs=${1:-10} free=${2:-}
	if wait_for "$secs" settled; then
		[ -z "$free" ] && return 0
		wait_for "$secs" eval '[ "$(mstat marud_pool_free_bytes)" = "$free" ]' && return 0
		fail "free bytes $(mstat marud_pool_free_bytes), expected the baseline $free"
	fi
	maru_stats /nonexistent >&2 || true
	fail "accounting did not settle in ${secs}s (pending/orphaned left, or unbalanced)"
}

# marud_died [SECONDS]: wait until the marud a fail point stopped is gone.
marud_died()
{
	wait_for "${1:-10}" eval '! proc_alive "$MARUD_PID"' ||
		fail "marud did not stop at its fail point"
	wait "$MARUD_PID" 2>/dev/null || true
}

# bg_wait PID SECONDS: wait for a background job of this shell and set
# EXIT_RC (fails the case when it still runs).
bg_wait()
{
	wait_exit "$1" "$2" || fail "process $1 still runs after $2 s"
}
