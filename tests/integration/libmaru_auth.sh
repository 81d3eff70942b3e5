#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmaru_auth: with a shared key on marud, a client with the same key (0600)
# works on every socket (the API walk opens several), a client without a key,
# with another key, or with a key file readable by others is refused with
# EACCES, and marud keeps serving.
. "$(dirname "$0")/lib/common.sh"

head -c 64 /dev/urandom >"$T/key"
chmod 600 "$T/key"
head -c 64 /dev/urandom >"$T/other"
chmod 600 "$T/other"
cp "$T/key" "$T/loose"
chmod 644 "$T/loose"

marud_start --key-file "$T/key"
MARU_KEY_FILE=$T/key "$TOOLS/maru_api" "$MARU_URI" >"$T/api.out" 2>&1 ||
	fail "maru_api with the right key: $(cat "$T/api.out")"
assert_fails_with "Authentication" "no key" "$TOOLS/maru_stats" "$MARU_URI"
MARU_KEY_FILE=$T/other assert_fails_with "Authentication" "wrong key" \
	"$TOOLS/maru_stats" "$MARU_URI"
MARU_KEY_FILE=$T/loose assert_fails_with "Authentication" "key file mode 0644" \
	"$TOOLS/maru_stats" "$MARU_URI"
grep -q "must be mode 0600" "$T/assert_fails.err" || fail "no log line about the key file mode"
MARU_KEY_FILE=$T/key "$TOOLS/maru_stats" "$MARU_URI" >/dev/null ||
	fail "marud stopped serving after refused clients"
marud_stop
