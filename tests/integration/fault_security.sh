#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fault_security: marufs-design(7) §8 on the wire (maru_raw speaks the protocol
# itself) and through libmaru.
#  validation: a session may not write, reserve, truncate, publish, abandon,
#    read or map another session's pending version, nor write, truncate or
#    publish through a lease (EPERM); sizes and offsets outside a version
#    are refused (EINVAL, EFBIG); each refusal leaves a marud log line; a
#    malformed request closes that connection only, marud serves on.
#  limits, each a clear error at once, never a hang: a frame over
#    --max-frame (EMSGSIZE, then the connection closes), a connection over
#    --max-conns (EUSERS: also what maru_client_new returns, at once),
#    --max-leases (EMFILE), --max-pending (EDQUOT), and READDIR batches
#    bounded by the frame whatever the client asks; libmaru keeps its tcp
#    frames under a small --max-frame by itself.
. "$(dirname "$0")/lib/common.sh"
. "$(dirname "$0")/lib/fault.sh"

RAW=$TOOLS/maru_raw

marud_start --size 64M --grace 1
"$RAW" "$MARU_URI" owner >"$T/raw.out" 2>&1 || fail "maru_raw owner: $(cat "$T/raw.out")"
log "$(wc -l <"$T/raw.out") ownership and range checks"
grep -q "WRITE of version [0-9]* refused: not this session's" "$T/marud.log" ||
	fail "no marud log line for a write to another session's version"
grep -q "PUBLISH of version [0-9]* refused: offset, length or size out of range" \
	"$T/marud.log" || fail "no marud log line for a publish over the reservation"
grep -q "READ: protocol violation: malformed payload; closing" "$T/marud.log" ||
	fail "no marud log line for a malformed request"
grep -q "further refusals not logged" "$T/marud.log" || fail "refusal log lines not bounded"
wait_settled 10
marud_stop

MAXF=65536
marud_start --size 64M --grace 1 --max-frame $MAXF --max-conns 3 --max-leases 5 --max-pending 1M
"$RAW" "$MARU_URI" frame $MAXF >"$T/raw.out" 2>&1 || fail "max-frame: $(cat "$T/raw.out")"
grep -q "WRITE: protocol violation: frame too large" "$T/marud.log" ||
	fail "no marud log line for an oversized frame"
"$RAW" "$MARU_URI" readdir $MAXF >"$T/raw.out" 2>&1 || fail "readdir: $(cat "$T/raw.out")"
log "$(tail -n 1 "$T/raw.out")"
"$RAW" "$MARU_URI" leases 5 >"$T/raw.out" 2>&1 || fail "max-leases: $(cat "$T/raw.out")"
"$RAW" "$MARU_URI" pending $((1 << 20)) >"$T/raw.out" 2>&1 || fail "max-pending: $(cat "$T/raw.out")"
sleep 0.3	# the checks' connections are gone
"$RAW" "$MARU_URI" conns 3 >"$T/raw.out" 2>&1 || fail "max-conns: $(cat "$T/raw.out")"
grep -q "refused a connection from unix uid [0-9]*: max-conns reached" "$T/marud.log" ||
	fail "no marud log line for a refused connection"

# libmaru under the same limits: chunks bigger than a frame, both paths
for dp in tcp shm; do
	MARU_DATA=$dp "$FT" put "$MARU_URI" "big-$dp.bin" $((3 << 18)) 7 >"$T/put.out" 2>&1 ||
		fail "put under max-frame $MAXF (data=$dp): $(cat "$T/put.out")"
	expect_verdict "ok 7" "read under max-frame (data=$dp)" \
		env MARU_DATA=$dp "$FT" verify "$MARU_URI" "big-$dp.bin"
done
# ... and maru_client_new when marud is at max-conns with clients past their
# HELLO: EUSERS, at once (idle connections that never said HELLO would be
# closed to make room instead: marud(8), HANDSHAKE LIMITS)
python3 - "$MARUD_SOCK" "$FT" "$MARU_URI" <<'PY' || fail "libmaru at max-conns"
import socket, struct, subprocess, sys, time
path, ft, uri = sys.argv[1:4]
held = []
for i in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    # HELLO (proto.h): header magic, version, op 2, len 64, status, reqid, generation
    s.sendall(struct.pack("<IHHIiQQ", 0x5552414D, 1, 2, 64, 0, 0, 0) +
              struct.pack("<II16sQ32s", 0, 1, bytes(16), 1, b"held"))
    h = s.recv(32, socket.MSG_WAITALL)
    assert struct.unpack("<IHHIiQQ", h)[4] == 0, "HELLO refused"
    held.append(s)
time.sleep(0.2)
t = time.monotonic()
p = subprocess.run([ft, "verify", uri, "x.bin"], capture_output=True, text=True)
took = time.monotonic() - t
assert p.returncode != 0, "a client got in beyond max-conns"
assert "Too many users" in p.stderr, p.stderr
assert took < 2, f"refusal took {took:.1f} s"
PY
wait_settled 10
marud_stop
