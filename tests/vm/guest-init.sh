#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/guest-init.sh: process 1 of a guest once tests/vm/init has
# switch_root'ed into the overlay of the host's root. It names the guest
# (kernel argument maru.name=NAME), brings lo up, loads fuse, runs the
# command the host wrote to /vmout/NAME.cmd (bash, from /tmp, stdin
# /dev/null) with its output in /vmout/NAME.log, leaves its exit status in
# /vmout/NAME.rc and the kernel log in /vmout/NAME.dmesg, and powers the
# guest off, whatever happened.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
name=guest
for a in $(cat /proc/cmdline); do
	case "$a" in
	maru.name=*) name=${a#maru.name=} ;;
	esac
done
hostname "$name"
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
ip link set lo up
modprobe fuse
echo 1 >/proc/sys/kernel/panic_on_oops
rc=99
if [ -r "/vmout/$name.cmd" ]; then
	(cd /tmp && exec bash "/vmout/$name.cmd") </dev/null >"/vmout/$name.log" 2>&1
	rc=$?
else
	echo "guest-init: no /vmout/$name.cmd" >"/vmout/$name.log"
fi
dmesg >"/vmout/$name.dmesg" 2>&1
echo "$rc" >"/vmout/$name.rc.tmp"
mv "/vmout/$name.rc.tmp" "/vmout/$name.rc"
sync
echo o >/proc/sysrq-trigger
sleep 5
echo b >/proc/sysrq-trigger
