#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/loopback-verbs/ibv-devinfo.sh: ibv_devices and ibv_devinfo -v
# (ibverbs-utils, linked against the real library) load the loopback
# libibverbs.so.1 with no loader complaint and see device rdmalo0.
dir=${RDMACHECK_LOOPBACK_DIR:-${top_builddir:-.}/loopback/.libs}
for p in ibv_devices ibv_devinfo; do
	if ! command -v $p >/dev/null 2>&1; then
		echo "ibv-devinfo: SKIP: $p not installed"
		exit 77
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-devinfo.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

check()
{
	name=$1
	shift
	if ! LD_LIBRARY_PATH=$dir timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
	then
		echo "ibv-devinfo: FAIL: $name exited non-zero"
		cat "$tmp/out" "$tmp/err"
		fail=1
	fi
	if [ -s "$tmp/err" ]; then
		echo "ibv-devinfo: FAIL: $name wrote to stderr:"
		cat "$tmp/err"
		fail=1
	fi
	if ! grep -q rdmalo0 "$tmp/out"; then
		echo "ibv-devinfo: FAIL: $name does not list rdmalo0"
		fail=1
	fi
}

check ibv_devices ibv_devices
check ibv_devinfo ibv_devinfo -v
for want in 'PORT_ACTIVE' 'active_mtu:.*4096' 'link_layer:.*Ethernet' \
	    'GID\[  0\]:.*::ffff:127.0.0.1'; do
	if ! grep -q "$want" "$tmp/out"; then
		echo "ibv-devinfo: FAIL: ibv_devinfo -v lacks '$want'"
		fail=1
	fi
done
[ $fail = 0 ] && echo "ibv-devinfo: PASS"
exit $fail
