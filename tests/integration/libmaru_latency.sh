#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_latency: control calls do not queue behind bulk transfers: lookups
# stay under 50 ms while another thread of the same client reads a 32 MiB
# chunk over tcp in a loop.
. "$(dirname "$0")/lib/common.sh"

marud_start
"$TOOLS/maru_latency" "$MARU_URI" 3 50 >"$T/latency.out" 2>&1 ||
	fail "maru_latency: $(cat "$T/latency.out")"
log "$(cat "$T/latency.out")"
marud_stop
