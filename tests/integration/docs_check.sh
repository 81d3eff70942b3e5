#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# docs_check: the documentation matches the programs. The README's two set-up
# commands install the same packages and are found by .ci/run; every man page
# renders; examples/marud.conf passes marud -n; every long option marud's
# usage names is documented in marud(8) and marud.conf(5).
. "$(dirname "$0")/lib/common.sh"

readme=$SRCDIR/README.md

# The line after a marker comment, as .ci/run extracts it.
command_after()
{
	awk -v m="$1" 'index($0, m) == 1 { found = 1; next }
		found && /^(apt-get|DEBIAN_FRONTEND)/ { print; exit }' "$readme"
}

# Package names of an "apt-get install -y ..." line, sorted.
packages()
{
	sed -e 's/.*apt-get install -y //' -e 's/ &&.*//' <<<"$1" | tr ' ' '\n' | sort
}

main=$(command_after '<!-- main-command')
test_cmd=$(command_after '<!-- test-command')
[ -n "$main" ] || fail "README: no main command after '<!-- main-command'"
[ -n "$test_cmd" ] || fail "README: no test command after '<!-- test-command'"
case "$main" in
*"examples/quickstart.sh") ;;
*) fail "README main command does not end with examples/quickstart.sh" ;;
esac
case "$test_cmd" in
*"tests/run-all.sh") ;;
*) fail "README test command does not end with tests/run-all.sh" ;;
esac
assert_eq "$(packages "$main")" "$(packages "$test_cmd")" \
	"README main and test commands install different packages"
for p in libfuse3-dev libsodium-dev libcmocka-dev libxxhash-dev scdoc meson; do
	grep -qx "$p" <<<"$(packages "$main")" || fail "README commands do not install $p"
done
[ -x "$SRCDIR/.ci/run" ] || fail ".ci/run is not executable"
grep -q 'test-command' "$SRCDIR/.ci/run" || fail ".ci/run does not read the README test command"
[ -x "$SRCDIR/examples/quickstart.sh" ] || fail "examples/quickstart.sh is not executable"

# Every man page renders.
if command -v scdoc >/dev/null; then
	for page in "$SRCDIR"/man/*.scd; do
		scdoc <"$page" >/dev/null 2>"$T/scdoc.err" ||
			fail "$(basename "$page"): $(cat "$T/scdoc.err")"
	done
fi

# The example configuration is valid as shipped.
"$MARUD" -n -f "$SRCDIR/examples/marud.conf" >"$T/conf.out" 2>&1 ||
	fail "marud -n rejects examples/marud.conf: $(cat "$T/conf.out")"

# Every long option in marud's usage is documented.
"$MARUD" --help >"$T/usage" 2>&1 || true
opts=$(grep -o -- '--[a-z][a-z-]*' "$T/usage" | sort -u)
[ -n "$opts" ] || fail "marud --help printed no long options: $(cat "$T/usage")"
for o in $opts; do
	[ "$o" = --help ] && continue
	grep -q -- "\*$o\*" "$SRCDIR/man/marud.8.scd" || fail "marud.8 does not document $o"
	grep -q -- "^\*${o#--}\* = " "$SRCDIR/man/marud.conf.5.scd" ||
		fail "marud.conf.5 does not document key ${o#--}"
done
