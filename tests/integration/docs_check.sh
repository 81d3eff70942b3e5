#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# docs_check: the documentation matches the programs. The README's two set-up
# commands install the same packages and are found by .ci/run; every man page
# renders, and every page source in man/ is built (and installed) by
# man/meson.build, marufs-design(7) among them; examples/marud.conf passes
# marud -n; every long option marud's usage names is documented in marud(8)
# and marud.conf(5). The repository stands alone: no tracked file
# refers to a shared/ directory beside the clone, and the design is cited as marufs-design(7), never by the
# name of the out-of-tree document. The README stays a front page: under
# 12 KiB, every relative link in it resolves, and the benchmarks it no
# longer carries are in tests/bench/README.md, which it links.
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
for p in libfuse3-dev libsodium-dev libcmocka-dev libxxhash-dev scdoc meson fio; do
	grep -qx "$p" <<<"$(packages "$main")" || fail "README commands do not install $p"
done
[ -x "$SRCDIR/.ci/run" ] || fail ".ci/run is not executable"
grep -q 'test-command' "$SRCDIR/.ci/run" || fail ".ci/run does not read the README test command"
[ -x "$SRCDIR/examples/quickstart.sh" ] || fail "examples/quickstart.sh is not executable"

# The README is a front page; the details live where it links.
size=$(wc -c <"$readme")
[ "$size" -lt 12288 ] || fail "README.md is $size bytes: keep it a front page under 12 KiB"
grep -q '](tests/bench/README.md)' "$readme" || fail "README does not link tests/bench/README.md"
[ -s "$SRCDIR/tests/bench/README.md" ] || fail "tests/bench/README.md is missing"
for doc in "$readme" "$SRCDIR/tests/bench/README.md"; do
	dir=$(dirname "$doc")
	for link in $(grep -o '](\([^)#:]*\))' "$doc" | sed 's/^](//; s/)$//' | sort -u); do
		[ -e "$dir/$link" ] || fail "$(basename "$doc"): link to $link, which does not exist"
	done
done

# Every man page renders.
if command -v scdoc >/dev/null; then
	for page in "$SRCDIR"/man/*.scd; do
		scdoc <"$page" >/dev/null 2>"$T/scdoc.err" ||
			fail "$(basename "$page"): $(cat "$T/scdoc.err")"
	done
fi

# Every page source is in man/meson.build's list, and every listed page has a
# source (meson skips a missing one silently). When the build made the
# pages, each is there.
listed=$(sed -n '/foreach page *: *\[/,/\]/p' "$SRCDIR/man/meson.build" |
	grep -o "'[^']*'" | tr -d "'" | sort)
[ -n "$listed" ] || fail "man/meson.build: no page list found"
grep -qx 'marufs-design.7' <<<"$listed" || fail "man/meson.build does not build marufs-design.7"
for page in "$SRCDIR"/man/*.scd; do
	name=$(basename "$page" .scd)
	grep -qx -- "$name" <<<"$listed" || fail "man/meson.build does not build $name"
done
for name in $listed; do
	[ -f "$SRCDIR/man/$name.scd" ] || fail "man/meson.build lists $name, man/$name.scd is missing"
done
mandir=${EXAMPLES:+$(dirname "$EXAMPLES")/man}
if [ -n "$mandir" ] && [ -d "$mandir" ]; then
	for name in $listed; do
		[ -s "$mandir/$name" ] || fail "the build did not make man/$name"
	done
fi

# Nothing refers outside the repository. The patterns are spelled so that
# this file does not match them itself: a parent-directory shared/, and the
# out-of-tree design document (cite marufs-design(7) sections instead).
tracked_files()
{
	if git -C "$SRCDIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$SRCDIR" ls-files -z
	else
		log "not a git checkout: scanning the source directories instead"
		(cd "$SRCDIR" && find .ci README.md meson.build meson_options.txt daemon lib \
			fs include examples man tests -type f -print0 2>/dev/null)
	fi
}
outside='\.\./shared|DESIGN[[:space:]]*§|DESIGN\.md'
(cd "$SRCDIR" && tracked_files | xargs -0 grep -InE -- "$outside" || true) >"$T/outside"
[ ! -s "$T/outside" ] ||
	fail "files refer outside the repository (use marufs-design(7) §N): $(cat "$T/outside")"

# The example configurations are valid as shipped (the cluster one with
# its key file at a path of ours: /etc/marud.key is not on a CI machine).
"$MARUD" -n -f "$SRCDIR/examples/marud.conf" >"$T/conf.out" 2>&1 ||
	fail "marud -n rejects examples/marud.conf: $(cat "$T/conf.out")"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/key")
sed "s|^key-file = .*|key-file = $T/key|" "$SRCDIR/examples/cluster/marud.conf" >"$T/cl.conf"
grep -q "^cluster = etcd://" "$T/cl.conf" || fail "examples/cluster/marud.conf joins no cluster"
"$MARUD" -n -f "$T/cl.conf" >"$T/conf.out" 2>&1 ||
	fail "marud -n rejects examples/cluster/marud.conf: $(cat "$T/conf.out")"

# Every long option in marud's usage is documented.
"$MARUD" --help >"$T/usage" 2>&1 || true
opts=$(grep -o -- '--[a-z][a-z-]*' "$T/usage" | sort -u)
[ -n "$opts" ] || fail "marud --help printed no long options: $(cat "$T/usage")"
for o in $opts; do
	[ "$o" = --help ] && continue
	grep -q -- "\*$o\*" "$SRCDIR/man/marud.8.scd" || fail "marud.8 does not document $o"
	key=${o#--}
	key=${key#no-}	# --no-journal is the key journal = no
	grep -q -- "^\*$key\* = " "$SRCDIR/man/marud.conf.5.scd" ||
		fail "marud.conf.5 does not document key $key"
done
