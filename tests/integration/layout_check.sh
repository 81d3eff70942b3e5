#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# layout_check: one room per concern, kept. Every C file of daemon/, lib/ and
# fs/ opens with its SPDX line and a comment naming itself and what it owns, is
# at most 700 lines, has no function over 80 lines, and no file calls, through
# any number of other files, a file that calls it back (read from the built
# objects with nm), and has a unit test of its own at the mirrored path
# (tests/unit/<its path>_test.c; a program's main.c excepted). tools/layout_check.py does the work and names each
# violation: a cycle with its files and the symbol of each call in it
# (tools/layout_check_test.py, suite unit, shows it finds a three-file one).
. "$(dirname "$0")/lib/common.sh"

command -v nm >/dev/null || fail "nm (binutils) is needed"
build=$(cd "$(dirname "$MARUD")/.." && pwd)
python3 "$SRCDIR/tests/integration/tools/layout_check.py" "$SRCDIR" "$build" ||
	fail "the layout rules are broken (lines above)"
log "layout rules hold"
