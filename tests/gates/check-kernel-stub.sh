#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/gates/check-kernel-stub.sh: `check-kernel.sh run`'s exit status with
# a stub qemu-system-x86_64 on PATH in place of the guest (seconds, no
# kernel).  The stub plays a guest that runs the tests as the loopback did
# (the tier must pass), and guests that fail in each way the tier must
# catch: never writing `done`, writing `fatal`, qemu exiting non-zero, a
# guest that hangs past RDMACHECK_KERNEL_TIMEOUT, a result that differs,
# a test with no result.  The tier's folder has a space and a comma in
# its path: every path reaches qemu as one argument.
. "${top_srcdir:-.}/tests/lib/check.sh"

[ "$(uname -m)" = x86_64 ] && [ -r /etc/debian_version ] || {
	echo "SKIP: the tier runs on Debian x86_64 hosts only"; exit 77; }

work="$t_dir/tier work,1"
ver=0.0-stub
mkdir -p "$work/kernel/boot" "$work/kernel/lib/modules/$ver" "$work/cache" \
	"$t_dir/bin"
: >"$work/kernel/boot/vmlinuz-$ver"
: >"$work/cache/initramfs-$ver.cpio.gz"

cat >"$t_dir/bin/qemu-system-x86_64" <<'STUB'
#!/bin/sh
# the stub guest: STUB_GUEST says how it ends
r=
for a; do
	case $a in
	*,mount_tag=results)
		r=${a#*,path=}
		r=$(printf '%s' "${r%,mount_tag=results}" | sed 's/,,/,/g') ;;
	esac
done
[ -d "$r" ] || { echo "stub qemu: no results share in: $*" >&2; exit 1; }
[ -f "$r/guest.conf" ] || { echo "stub qemu: no guest.conf" >&2; exit 1; }
# the tests as the loopback ran them, then the guest's end
real()
{
	cp -R "$r/loopback" "$r/real" && echo 0 >"$r/real/done"
	echo "run-tests: real: test 1/1 stub 0.1 s done"
}
case $STUB_GUEST in
ok) real ;;
nodone) ;;
fatal)
	mkdir -p "$r/real"
	echo "FATAL: modprobe rdma_rxe" >"$r/real/fatal"
	echo "0" >"$r/real/done" ;;
died) real; exit 1 ;;
hang) exec sleep 600 ;;
diff)
	real
	f=$(find "$r/real" -name facts | head -n 1)
	sed 's/^shim\.rc	.*/shim.rc	0/' "$f" >"$f.new" && mv "$f.new" "$f" ;;
missing)
	real
	rm -r "$(dirname "$(find "$r/real" -name facts | head -n 1)")" ;;
esac
exit 0
STUB
chmod +x "$t_dir/bin/qemu-system-x86_64"

# guest WANT-STATUS MESSAGE-ERE: check-kernel.sh run with the stub guest.
guest()
{
	STUB_GUEST=$1 PATH="$t_dir/bin:$PATH" RDMACHECK_KERNEL_WORK=$work \
		RDMACHECK_KERNEL_PREPARED=1 RDMACHECK_KERNEL_ACCEL=tcg \
		RDMACHECK_KERNEL_TIMEOUT=3 \
		RDMACHECK_KERNEL_TESTS='^scn/channel-destroy-with-ids$' \
		top_srcdir=$top_srcdir top_builddir=$top_builddir \
		sh "$top_srcdir/tests/kernel/check-kernel.sh" run \
		>"$t_dir/$1.out" 2>&1
	verdict "$1" $? "$2" "$3" "$t_dir/$1.out"
}

guest ok 0 '^check-kernel: 1 same, 0 known differences, 0 unexplained$'
grep -q '^run-tests: loopback: test 1/1 scn/channel-destroy-with-ids ' \
	"$t_dir/ok.out" || fail "ok: no progress line for the loopback"
guest nodone 1 'FAIL: the guest did not finish its tests'
guest fatal 1 'FAIL: the guest stopped: FATAL: modprobe rdma_rxe'
guest died 1 'FAIL: qemu exited 1'
guest hang 1 'FAIL: guest killed after 3 s'
guest diff 1 '^check-kernel: 0 same, 0 known differences, 1 unexplained$'
guest missing 1 'check: real \[not run\]  => NOT A KNOWN DIFFERENCE'
finish
