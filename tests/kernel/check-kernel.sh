#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/kernel/check-kernel.sh: the real-kernel tier (make check-kernel).
# Owns the host side: installing what the tier needs, fetching and
# unpacking a Debian kernel into the build tree (never installing it),
# the initramfs, choosing the accelerator, booting the qemu guest, the
# same tests on the loopback backend on the host, and the fidelity table.
#
#   check-kernel.sh [run]   everything; exit 0 only when the guest ran
#                           every test to its end and every difference
#                           between the backends is a documented one
#   check-kernel.sh setup   only install, fetch and build the initramfs
#   check-kernel.sh probe   exit 0 when this machine can boot the guest
#                           (prints which accelerator, or why not), 1
#                           when it cannot, 2 when it could but the
#                           tier's setup failed
#   check-kernel.sh shell   boot the guest with a shell on this terminal
#   check-kernel.sh exec CMD   boot the guest, run the shell command CMD
#                           there (in the build tree), print its output
#   check-kernel.sh table   print the table of the last run again (its
#                           exit status is the table's verdict)
#
# Every verdict is an exit status: 0 pass, 1 a failure (an unexplained
# difference, a test with no result, a guest that did not finish), 2 the
# tier could not run (bad usage, a missing tool).
# Environment: top_srcdir, top_builddir (from make), and optionally
#   RDMACHECK_KERNEL_ACCEL    auto (default) | kvm | tcg
#   RDMACHECK_KERNEL_TESTS    only the tests whose names match this
#                             extended regex (see run-tests.sh list)
#   RDMACHECK_KERNEL_TIMEOUT  seconds for the whole guest (default 1800)
#   RDMACHECK_KERNEL_TEST_TIMEOUT  seconds per test (default 150)
#   RDMACHECK_KERNEL_NOINSTALL=1  do not apt-get install anything
#   RDMACHECK_KERNEL_QEMU_CPU  the TCG guest's -cpu (default max)
#   RDMACHECK_KERNEL_WORK     the tier's folder: kernel, initramfs, results
#                             (default BUILDDIR/tests/kernel)
#   RDMACHECK_KERNEL_PREPARED=1  use the kernel and initramfs already in
#                             the tier's folder: install and fetch nothing
#                             (offline runs, and the self-tests' stub qemu)
set -u
cmd=${1:-run}
src=$(cd "${top_srcdir:-.}" && pwd) || exit 2
build=$(cd "${top_builddir:-.}" && pwd) || exit 2
here=${RDMACHECK_KERNEL_WORK:-$build/tests/kernel}
mkdir -p "$here" && here=$(cd "$here" && pwd) || exit 2
cache=$here/cache
kdir=$here/kernel
results=$here/results
guest_timeout=${RDMACHECK_KERNEL_TIMEOUT:-1800}

say() { echo "check-kernel: $*"; }
die() { echo "check-kernel: FAIL: $*" >&2; exit 2; }
now() { date +%s; }

# --- what the host needs -------------------------------------------------
pkgs="qemu-system-x86 busybox-static cpio kmod iproute2 ibverbs-providers
rdmacm-utils jq"
install_packages()
{
	missing=
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ] || [ -n "${RDMACHECK_KERNEL_NOINSTALL:-}" ]
	then
		die "missing Debian packages:$missing"
	fi
	say "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
		die "apt-get install$missing"
}

# --- the kernel: the package linux-image-amd64 depends on, unpacked -----
fetch_kernel()
{
	mkdir -p "$cache"
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2;
			exit }')
	if [ -z "$pkg" ]; then
		# apt lists not there yet on a fresh machine
		apt-get update -qq >/dev/null 2>&1
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {
				print $2; exit }')
	fi
	if [ -z "$pkg" ]; then
		# offline: keep whatever was unpacked before
		[ -f "$kdir/package" ] || die "no linux-image-amd64 in apt"
		pkg=$(cat "$kdir/package")
	fi
	if [ "$(cat "$kdir/package" 2>/dev/null)" = "$pkg" ] &&
	   [ -n "$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null)" ]; then
		return 0
	fi
	say "fetching $pkg (apt-get download; not installed on the host)"
	rm -f "$cache"/linux-image-*.deb
	(cd "$cache" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed') ||
		die "apt-get download $pkg"
	rm -rf "$kdir.new"
	dpkg-deb -x "$cache/$pkg"_*.deb "$kdir.new" || die "dpkg-deb -x"
	ver=$(ls "$kdir.new/lib/modules")
	depmod -b "$kdir.new" "$ver" || die "depmod"
	echo "$pkg" >"$kdir.new/package"
	rm -rf "$kdir"
	mv "$kdir.new" "$kdir"
}

kernel_version() { ls "$kdir/lib/modules"; }

# --- the initramfs: busybox, init.sh, the virtio, 9p, overlay modules ----
make_initramfs()
{
	ver=$(kernel_version)
	out=$cache/initramfs-$ver.cpio.gz
	if [ -f "$out" ] && [ "$out" -nt "$src/tests/kernel/init.sh" ] &&
	   [ "$out" -nt "$src/tests/kernel/check-kernel.sh" ] &&
	   [ "$out" -nt /bin/busybox ]; then
		return 0
	fi
	t=$cache/initramfs.d
	rm -rf "$t"
	mkdir -p "$t/bin" "$t/modules"
	cp /bin/busybox "$t/bin/busybox" || die "no /bin/busybox"
	cp "$src/tests/kernel/init.sh" "$t/init"
	chmod 755 "$t/init"
	: >"$t/modules/order"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$kdir" -S "$ver" --show-depends "$m" ||
			die "modprobe --show-depends $m"
	done | awk '$1 == "insmod" { print $2 }' | while read -r ko; do
		b=$(basename "$ko")
		grep -qx "$b" "$t/modules/order" && continue
		cp "$ko" "$t/modules/$b"
		echo "$b" >>"$t/modules/order"
	done
	(cd "$t" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp" ||
		die "cpio"
	mv "$out.tmp" "$out"
	rm -rf "$t"
}

# --- qemu ----------------------------------------------------------------
# q9 PATH: PATH as a value inside a qemu -virtfs option (commas doubled).
q9() { printf '%s' "$1" | sed 's/,/,,/g'; }

# qemu ACCEL MODE SECONDS QEMU-ARGS...: run the guest (under a timeout of
# SECONDS, 0 for none) with the tier's machine and shares, and its
# kernel's command line.  Every path is one argument: any character a
# file name may have is safe.  The guest learns the paths from
# guest.conf in the results share, not from the command line.
qemu()
{
	_accel=$1 _mode=$2 _secs=$3
	shift 3
	ver=$(kernel_version)
	_fs=local,security_model=none,multidevs=remap
	set -- -smp "${RDMACHECK_KERNEL_CPUS:-2}" -m 1024 \
		-nodefaults -nic none -display none -no-reboot \
		-kernel "$kdir/boot/vmlinuz-$ver" \
		-initrd "$cache/initramfs-$ver.cpio.gz" \
		-virtfs "$_fs,path=/,mount_tag=hostroot,readonly=on" \
		-virtfs "$_fs,path=$(q9 "$results"),mount_tag=results" \
		-append "console=ttyS0 panic=-1 quiet loglevel=4 rdmacheck.mode=$_mode" \
		"$@"
	if [ "$_accel" = kvm ]; then
		set -- -accel kvm -cpu host "$@"
	else
		set -- -accel tcg,thread=multi \
			-cpu "${RDMACHECK_KERNEL_QEMU_CPU:-max}" "$@"
	fi
	timeout --foreground -k 10 "$_secs" qemu-system-x86_64 "$@"
}

# probe_boot ACCEL SECONDS: does this accelerator reach the initramfs?
probe_boot()
{
	_log=$here/probe-$1.log
	write_guest_conf
	qemu "$1" probe "$2" -serial stdio </dev/null >"$_log" 2>&1
	grep -q 'rdmacheck-guest: initramfs up' "$_log" 2>/dev/null
}

# choose_accel: sets accel and accel_why.
choose_accel()
{
	want=${RDMACHECK_KERNEL_ACCEL:-auto}
	case $want in
	tcg) accel=tcg accel_why="RDMACHECK_KERNEL_ACCEL=tcg"; return ;;
	kvm) accel=kvm accel_why="RDMACHECK_KERNEL_ACCEL=kvm"; return ;;
	esac
	accel=tcg
	if [ ! -w /dev/kvm ]; then
		accel_why="no usable /dev/kvm"
	elif ! grep -Eqw 'vmx|svm' /proc/cpuinfo; then
		accel_why="/dev/kvm present but the CPU has no vmx/svm (a paravirtual KVM a stock kernel does not boot under)"
	elif probe_boot kvm 20; then
		accel=kvm accel_why="a KVM probe boot reached the initramfs"
	else
		accel_why="a KVM probe boot did not reach the initramfs in 20 s"
	fi
}

# can_boot: can this host boot the guest at all (before installing)?
can_boot()
{
	[ "$(uname -m)" = x86_64 ] || { why="not an x86_64 host"; return 1; }
	[ -r /etc/debian_version ] || { why="not a Debian host"; return 1; }
	return 0
}

setup()
{
	install_packages
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
		die "qemu-system-x86_64 not installed"
	fetch_kernel
	make_initramfs
	mkdir -p "$results"
}

# prepared: the kernel and initramfs a run needs, without setup().
prepared()
{
	ver=$(kernel_version 2>/dev/null)
	[ -n "$ver" ] && [ -f "$kdir/boot/vmlinuz-$ver" ] &&
		[ -f "$cache/initramfs-$ver.cpio.gz" ] ||
		die "RDMACHECK_KERNEL_PREPARED=1, but no kernel and initramfs in $here"
	mkdir -p "$results"
}

# prepare: setup(), or only its check when RDMACHECK_KERNEL_PREPARED=1.
prepare()
{
	if [ "${RDMACHECK_KERNEL_PREPARED:-}" = 1 ]; then
		prepared
	else
		setup
	fi
}

# shq STRING: STRING quoted for sh.
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# guest.conf, in the results share: what init.sh and guest.sh read (the
# paths, so that no path goes through the kernel's command line).
write_guest_conf()
{
	mkdir -p "$results"
	{
		echo "RDMACHECK_GUEST_SRC=$(shq "$src")"
		echo "RDMACHECK_GUEST_BUILD=$(shq "$build")"
		# init.sh mounts it before the chroot, where an absolute
		# symlink on the way would lead out of the guest's root: the
		# physical path (the logical one then leads there too)
		echo "RDMACHECK_GUEST_RESULTS=$(shq "$(cd "$results" && pwd -P)")"
		echo "RDMACHECK_GUEST_KDIR=$(shq "$kdir")"
		echo "RDMACHECK_KERNEL_TESTS=$(shq "${RDMACHECK_KERNEL_TESTS:-}")"
		echo "RDMACHECK_KERNEL_TEST_TIMEOUT=$(shq "${RDMACHECK_KERNEL_TEST_TIMEOUT:-}")"
		echo "RDMACHECK_KERNEL_EXEC=$(shq "${exec_cmd:-}")"
	} >"$results/guest.conf"
}

# boot_guest MODE: boot and wait (bounded) for the guest to power off;
# the console goes to console.log, the tests' progress lines to stdout.
# Returns 0 only when qemu exited 0 and the guest wrote real/done and no
# real/fatal: the guest ran its tests to their end.
boot_guest()
{
	choose_accel
	say "accelerator: $accel ($accel_why)"
	write_guest_conf
	if [ "$1" = shell ]; then
		qemu "$accel" shell 0 -serial mon:stdio
		return
	fi
	if [ "$1" = exec ]; then
		# The command's output is the product; its status is printed
		# by the guest ("command exited N").
		qemu "$accel" exec "$guest_timeout" -serial stdio </dev/null |
			sed -u 's/\r$//' | grep -v '^\[ *[0-9.]*\] '
		return 0
	fi
	rm -rf "$results/real" "$here/qemu.rc"
	_t0=$(now)
	# The pipeline only shows the console; qemu's status goes through
	# qemu.rc, and the verdict comes from it and the guest's files.
	{
		qemu "$accel" run "$guest_timeout" -serial stdio \
			</dev/null 2>"$here/qemu.log"
		echo $? >"$here/qemu.rc"
	} | sed -u 's/\r$//' | tee "$here/console.log" |
		grep --line-buffered -E '^(run-tests|rdmacheck-guest): '
	_rc=$(cat "$here/qemu.rc" 2>/dev/null) || _rc="none (no qemu.rc)"
	say "guest ran $(( $(now) - _t0 )) s (qemu exit $_rc)"
	_ok=0
	if [ "$_rc" = 124 ] || [ "$_rc" = 137 ]; then
		say "FAIL: guest killed after $guest_timeout s"
		_ok=1
	elif [ "$_rc" != 0 ]; then
		say "FAIL: qemu exited $_rc:"
		tail -n 5 "$here/qemu.log"
		_ok=1
	fi
	if [ -f "$results/real/fatal" ]; then
		say "FAIL: the guest stopped: $(cat "$results/real/fatal")"
		_ok=1
	fi
	if [ ! -f "$results/real/done" ]; then
		say "FAIL: the guest did not finish its tests; console:"
		tail -n 30 "$here/console.log"
		_ok=1
	fi
	return $_ok
}

run_loopback()
{
	rm -rf "$results/loopback"
	say "the same tests on the loopback backend, on the host"
	top_srcdir=$src top_builddir=$build \
		sh "$src/tests/kernel/run-tests.sh" loopback "$results/loopback"
}

# table: the fidelity table of the results; its status is the verdict
# (written to a file first, so that no pipeline decides it).
table()
{
	top_srcdir=$src top_builddir=$build sh "$src/tests/kernel/table.sh" \
		"$results/real" "$results/loopback" \
		"$src/tests/kernel/known-differences" \
		"${RDMACHECK_KERNEL_TESTS:-.}" >"$here/table.out"
	_st=$?
	cat "$here/table.out"
	cp "$here/table.out" "$results/table.txt" 2>/dev/null
	return $_st
}

case $cmd in
setup)
	setup
	;;
probe)
	can_boot || { say "cannot boot a guest: $why"; exit 1; }
	prepare
	choose_accel
	t0=$(now)
	if probe_boot "$accel" 60; then
		say "boots with $accel ($accel_why) in $(( $(now) - t0 )) s"
	else
		say "cannot boot a guest: $accel did not reach the initramfs"
		exit 1
	fi
	;;
shell)
	can_boot || die "cannot boot a guest: $why"
	prepare
	boot_guest shell
	;;
run)
	can_boot || die "cannot boot a guest: $why"
	t0=$(now)
	prepare
	run_loopback
	boot_guest run
	guest=$?
	table
	status=$?
	say "tier time $(( $(now) - t0 )) s (accelerator $accel)"
	if [ "$guest" != 0 ]; then
		say "FAIL: the guest did not run the tier to its end (above)"
		exit 1
	fi
	[ "$status" = 0 ] || say "FAIL: the table's verdict (exit $status)"
	exit $status
	;;
table)
	table
	exit
	;;
exec)
	can_boot || die "cannot boot a guest: $why"
	exec_cmd=${2:?usage: $0 exec COMMAND}
	prepare
	boot_guest exec
	;;
*)
	echo "usage: $0 [run|setup|probe|shell|table|exec CMD]" >&2
	exit 2
	;;
esac
