#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tenant_ro: a read-only key reads its tree and every change is refused
# with EROFS, call by call (libmaru, tenant_probe) and through a mount;
# a scoped key asking for data=shm is refused with EPERM, and both sides
# log why.
. "$(dirname "$0")/../integration/lib/common.sh"
. "$(dirname "$0")/lib/tenants.sh"
skip_unless_fuse

keys_write "reader /models/m1 ro" "writer /models/m2 rw"
marud_start --key-file "$T/keys"
marufs_mount -o "key_file=$(key_client admin),data=tcp"
ADM=$MNT
echo weights >"$ADM/models/m1/w.bin"

# libmaru, one call at a time
"$TOOLS/tenant_probe" "$MARU_URI" "$(key_client reader /models/m1 ro)" ro w.bin >"$T/ro.out" 2>&1 ||
	fail "tenant_probe ro: $(cat "$T/ro.out")"
cat "$T/ro.out"

# through a mount: reads work, each change fails with EROFS
marufs_mount -o "key_file=$(key_client reader /models/m1 ro),data=tcp"
R=$LAST_MNT
assert_eq "$(cat "$R/w.bin")" weights "ro mount reads"
for cmd in "echo x >'$R/new'" "echo x >>'$R/w.bin'" "mkdir '$R/d'" "rm '$R/w.bin'" \
	"mv '$R/w.bin' '$R/w2'" "chmod 600 '$R/w.bin'" "ln -s w.bin '$R/s'" \
	"setfattr -n user.test -v 1 '$R/w.bin'" "truncate -s 0 '$R/w.bin'"; do
	if out=$(sh -c "$cmd" 2>&1); then
		fail "ro mount allowed: $cmd"
	fi
	case "$out" in
	*"Read-only file system"*) log "EROFS: $cmd" ;;
	*"Operation not supported"*) log "ENOTSUP: $cmd (not a marud change)" ;;
	*) fail "ro mount: $cmd: expected EROFS, got: $out" ;;
	esac
done
assert_eq "$(cat "$ADM/models/m1/w.bin")" weights "the file is untouched"

# data=shm with a scoped key: refused at once, with a reason on both sides
"$TOOLS/tenant_probe" "$MARU_URI" "$(key_client writer /models/m2 rw)" shm >"$T/shm.out" 2>&1 ||
	fail "tenant_probe shm: $(cat "$T/shm.out")"
grep -q "refused data=shm" "$T/shm.out" || fail "the client did not say why: $(cat "$T/shm.out")"
grep -q "key 'writer' asked for data=shm: refused" "$T/marud.log" || fail "marud did not log the refusal"
n=$MARUFS_SEQ
mkdir -p "$T/shm-mnt"
if timeout 20 "$MARUFS" -f -o "key_file=$(key_client writer /models/m2 rw),data=shm" "$MARU_URI" "$T/shm-mnt" \
	>"$T/marufs-shm.log" 2>&1; then
	fail "marufs mounted data=shm with a scoped key"
fi
grep -q "refused data=shm" "$T/marufs-shm.log" || fail "marufs did not say why: $(cat "$T/marufs-shm.log")"
[ "$MARUFS_SEQ" = "$n" ]
# the same key over tcp mounts, and an admin key may still map the pool
marufs_mount -o "key_file=$(key_client writer /models/m2 rw),data=tcp"
echo ok >"$LAST_MNT/f"
assert_eq "$(cat "$ADM/models/m2/f")" ok "writer writes over tcp"
marufs_umount "$LAST_MNT"
marufs_umount "$R"
marufs_umount "$ADM"
marud_stop
