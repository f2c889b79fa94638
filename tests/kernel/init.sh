#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/kernel/init.sh: /init of the real-kernel tier's initramfs (runs as
# pid 1 in the qemu guest, busybox only).  Loads the virtio, 9p and
# overlay modules the initramfs carries, and makes the guest's root an
# overlay: the host's root file system (9p tag "hostroot", read-only)
# under a tmpfs.  So every host path, /tmp, /var/tmp and /run included,
# reads as on the host (a checkout or a build tree anywhere is there,
# through any symlink), and the guest may still write anywhere; what it
# writes stays in its memory.  Only the results folder (tag "results",
# read-write) is mounted over it, at its host path.  Then /dev, /proc,
# /sys, and tests/kernel/guest.sh chrooted into it; then power off.
#
# The kernel command line gives rdmacheck.mode=run|shell|exec|probe; the
# paths come from guest.conf in the results share (check-kernel.sh
# writes it), so that a path may hold any character.
PATH=/bin
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /newroot /host /scratch /results
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "rdmacheck-guest: $*" >/dev/console; }
off() {
	sync
	poweroff -f
	sleep 1000000	# poweroff -f does not return
}

mode=run
for arg in $(cat /proc/cmdline); do
	case $arg in
	rdmacheck.mode=*) mode=${arg#*=} ;;
	esac
done
say "initramfs up ($(cut -d' ' -f1 /proc/uptime) s)"
[ "$mode" = probe ] && off

# The modules, in dependency order (written by check-kernel.sh).
while read -r m; do
	insmod "/modules/$m" || say "insmod $m failed"
done </modules/order

opts=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$opts,rw" results /results ||
	{ say "FATAL: cannot mount the results folder"; off; }
. /results/guest.conf ||
	{ say "FATAL: no guest.conf in the results folder"; off; }
src=$RDMACHECK_GUEST_SRC build=$RDMACHECK_GUEST_BUILD
results=$RDMACHECK_GUEST_RESULTS
mount -t 9p -o "$opts,ro,cache=loose" hostroot /host ||
	{ say "FATAL: cannot mount the host root"; off; }
mount -t tmpfs -o mode=755 tmpfs /scratch &&
	mkdir -p /scratch/upper /scratch/work &&
	mount -t overlay -o lowerdir=/host,upperdir=/scratch/upper,workdir=/scratch/work \
		overlay /newroot ||
	{ say "FATAL: cannot mount the overlay of the host root"; off; }
mkdir -p "/newroot$results" && mount -o bind /results "/newroot$results" ||
	{ say "FATAL: cannot mount the results folder at $results"; off; }
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/shm /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts

say "host root mounted ($(cut -d' ' -f1 /proc/uptime) s)"
chroot /newroot /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp TERM="${TERM:-linux}" \
	/bin/sh "$src/tests/kernel/guest.sh" "$mode" "$src" "$build" \
	"$results" </dev/console >/dev/console 2>&1
say "guest.sh exited $? ($(cut -d' ' -f1 /proc/uptime) s), powering off"
umount "/newroot$results"
umount /results
off
