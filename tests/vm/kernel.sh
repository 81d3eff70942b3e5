#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/vm/kernel.sh CACHE: make the guest kernel, its modules and a tiny
# initramfs ready in CACHE (a folder of the build) and print three lines:
#
#	kernel=CACHE/vmlinux		(uncompressed: qemu boots it by its PVH note)
#	initrd=CACHE/initrd.img
#	modules=CACHE/root/lib/modules	(the tree the guest binds on /lib/modules)
#
# The Debian kernel package (linux-image-<abi>-amd64, the one the metapackage
# linux-image-amd64 depends on, or MARU_VM_KERNEL_PKG) is fetched with
# `apt-get download` and unpacked with dpkg-deb -x into CACHE/root: nothing is
# installed on the host. The work is done once; later runs find CACHE/ready.
# Exits 77 with the reason when the package cannot be had (no network, no apt).
set -euo pipefail

cache=${1:?usage: kernel.sh CACHE}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
exec 9>"$cache/lock"
flock -w 600 9 || { echo "kernel.sh: $cache/lock held for 10 min" >&2; exit 1; }

say()
{
	echo "kernel=$cache/vmlinux"
	echo "initrd=$cache/initrd.img"
	echo "modules=$cache/root/lib/modules"
}

# The initramfs: busybox, the modules that reach the host's root over 9p
# (with their dependencies, in load order), and tests/vm/init.
make_initrd()
{
	local ir=$cache/initrd

	mkdir -p "$ir/bin" "$ir/mod" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/lower" "$ir/rw" "$ir/newroot" "$ir/out"
	cp "$(command -v busybox)" "$ir/bin/busybox"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$cache/root" -S "$ver" --show-depends "$m" | sed -n 's/^insmod \([^ ]*\).*/\1/p'
	done | awk '!seen[$0]++' | while read -r ko; do
		cp "$ko" "$ir/mod/"
		basename "$ko" >>"$ir/mod/order"
	done
	cp "$(dirname "$0")/init" "$ir/init"
	chmod 755 "$ir/init"
	(cd "$ir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$cache/initrd.img"
	rm -rf "$ir"
}

if [ -e "$cache/ready" ]; then
	# a changed tests/vm/init makes a new initramfs, not a new download
	if [ "$(dirname "$0")/init" -nt "$cache/initrd.img" ]; then
		ver=$(ls "$cache/root/lib/modules")
		make_initrd
	fi
	say
	exit 0
fi

skip()
{
	echo "SKIP: $*" >&2
	exit 77
}

for c in apt-get dpkg-deb depmod modprobe cpio xz busybox; do
	command -v "$c" >/dev/null || skip "no $c on the host (packages: apt, kmod, cpio, xz-utils, busybox-static)"
done

pkg=${MARU_VM_KERNEL_PKG:-}
if [ -z "$pkg" ]; then
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
	[ -n "$pkg" ] || skip "apt-cache does not know linux-image-amd64 (set MARU_VM_KERNEL_PKG)"
fi

rm -rf "$cache/dl" "$cache/root" "$cache/initrd"
mkdir -p "$cache/dl"
deb=$(ls /var/cache/apt/archives/"$pkg"_*_amd64.deb 2>/dev/null | tail -n 1 || true)
if [ -z "$deb" ]; then
	(cd "$cache/dl" && apt-get download "$pkg" >"$cache/dl/apt.log" 2>&1) ||
		skip "apt-get download $pkg failed: $(tail -n 2 "$cache/dl/apt.log")"
	deb=$(ls "$cache/dl"/"$pkg"_*.deb)
fi
dpkg-deb -x "$deb" "$cache/root"
rm -rf "$cache/dl"
ver=$(ls "$cache/root/lib/modules")
[ "$(echo "$ver" | wc -l)" = 1 ] || { echo "kernel.sh: not one module tree: $ver" >&2; exit 1; }
depmod -b "$cache/root" "$ver"

# The uncompressed kernel: the xz stream inside the bzImage (Debian builds
# with CONFIG_KERNEL_XZ). Booting it by its PVH entry saves the decompressor
# (about 5 s under TCG).
z=$cache/root/boot/vmlinuz-$ver
off=$(LC_ALL=C grep -obaP '\xfd7zXZ\x00' "$z" | head -n 1 | cut -d: -f1)
[ -n "$off" ] || { echo "kernel.sh: no xz stream in $z" >&2; exit 1; }
tail -c +"$((off + 1))" "$z" | xz -dc >"$cache/vmlinux.tmp" 2>/dev/null || true
head -c 4 "$cache/vmlinux.tmp" | grep -q ELF || { echo "kernel.sh: $z did not unpack to an ELF" >&2; exit 1; }
mv "$cache/vmlinux.tmp" "$cache/vmlinux"

make_initrd
echo "$pkg $ver" >"$cache/ready"
say
