#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/kernel/guest.sh MODE SRCDIR BUILDDIR RESULTS: the guest side of the
# real-kernel tier, run by init.sh chrooted into an overlay of the host's
# root file system.  Loads the RDMA modules from the kernel tree unpacked
# in the tier's folder (guest.conf's RDMACHECK_GUEST_KDIR), puts a soft-RoCE device (rxe0) on a dummy network
# device with a guest-only address, waits until its port is ACTIVE, then
#   run:    runs the test list (tests/kernel/run-tests.sh real) into
#           RESULTS/real and writes RESULTS/real/done
#   shell:  starts an interactive shell on the console, environment set
#           up as the tests have it (see doc/testing.md)
#   exec:   runs the command RDMACHECK_KERNEL_EXEC of guest.conf
mode=$1 src=$2 build=$3 results=$4
addr=${RDMACHECK_KERNEL_ADDR:-192.0.2.1}

say() { echo "rdmacheck-guest: $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
fatal() {
	say "FATAL: $*"
	[ "$mode" = run ] && echo "FATAL: $*" >"$results/real/fatal"
	exit 1
}
[ "$mode" = run ] && mkdir -p "$results/real"
. "$results/guest.conf" 2>/dev/null || fatal "no $results/guest.conf"

kver=$(uname -r)
kdir=${RDMACHECK_GUEST_KDIR:-$build/tests/kernel/kernel}
for m in crc32_generic dummy rdma_rxe ib_uverbs rdma_ucm; do
	modprobe -d "$kdir" "$m" || fatal "modprobe $m"
done
ip link set lo up
ip link add dummy0 type dummy || fatal "ip link add dummy0"
ip addr add "$addr/24" dev dummy0 || fatal "ip addr add $addr"
ip link set dummy0 up
# multicast groups (mckey, the mcast scenarios) are routed to dummy0 too
ip route add 224.0.0.0/4 dev dummy0
rdma link add rxe0 type rxe netdev dummy0 || fatal "rdma link add rxe0"
i=0
until rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE'; do
	i=$((i + 1))
	[ "$i" -le 300 ] || fatal "rxe0 never became ACTIVE"
	sleep 0.1
done
say "rxe0 on dummy0 ($addr) ACTIVE at $(uptime_s) s, kernel $kver"
rdma link show rxe0/1

export RDMACHECK_TEST_ADDR="$addr" RDMACHECK_KERNEL_NETDEV=dummy0 TMPDIR=/tmp
export top_srcdir="$src" top_builddir="$build" RDMACHECK_KERNEL_TESTS \
	RDMACHECK_KERNEL_TEST_TIMEOUT
case $mode in
run)
	sh "$src/tests/kernel/run-tests.sh" real "$results/real"
	echo "$?" >"$results/real/done"
	;;
exec)
	cd "$build" || exit 1
	sh -c "$RDMACHECK_KERNEL_EXEC"
	say "command exited $?"
	;;
shell)
	cd "$build" || exit 1
	say "interactive shell; RDMACHECK_TEST_ADDR=$addr."
	say "try: rping -s -a $addr -v & rping -c -a $addr -C 3 -v"
	say "leave with 'exit' (powers the guest off)"
	sh -i
	;;
esac
