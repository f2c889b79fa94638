#!/bin/busybox sh
# tests/kernel/init.sh: /init of the real-kernel tier's initramfs (runs as
# pid 1 in the qemu guest, busybox only).  Loads the virtio and 9p modules
# the initramfs carries, mounts the host's root file system read-only
# (9p tag "hostroot") with the build tree (tag "build", read-only) and the
# results folder (tag "results", read-write) at their host paths, gives
# the tree writable /tmp, /run, /dev, /proc, /sys, then runs
# tests/kernel/guest.sh chrooted into it, and powers off.
#
# Parameters come from the kernel command line:
#   rdmacheck.src=DIR rdmacheck.build=DIR rdmacheck.results=DIR
#   rdmacheck.mode=run|shell|probe
PATH=/bin
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "rdmacheck-guest: $*" >/dev/console; }
off() {
	sync
	poweroff -f
	sleep 1000000	# poweroff -f does not return
}

src= build= results= mode=run
for arg in $(cat /proc/cmdline); do
	case $arg in
	rdmacheck.src=*) src=${arg#*=} ;;
	rdmacheck.build=*) build=${arg#*=} ;;
	rdmacheck.results=*) results=${arg#*=} ;;
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
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot ||
	{ say "FATAL: cannot mount the host root"; off; }
mount -t 9p -o "$opts,ro,cache=loose" build "/newroot$build" ||
	{ say "FATAL: cannot mount the build tree $build"; off; }
mount -t 9p -o "$opts,rw" results "/newroot$results" ||
	{ say "FATAL: cannot mount the results folder $results"; off; }
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/shm /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mount -t tmpfs tmpfs /newroot/run

say "host root mounted ($(cut -d' ' -f1 /proc/uptime) s)"
chroot /newroot /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp TERM="${TERM:-linux}" \
	/bin/sh "$src/tests/kernel/guest.sh" "$mode" "$src" "$build" \
	"$results" </dev/console >/dev/console 2>&1
say "guest.sh exited $? ($(cut -d' ' -f1 /proc/uptime) s), powering off"
umount "/newroot$results"
off
