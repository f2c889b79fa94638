#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The shim tells which kind of librdmacm it runs on: one that calls its own
# exports through the PLT (the wrappers see the library's internal calls)
# or one linked with -Bsymbolic-functions (they never reach the shim).  It
# says so at verbosity=1 and in the JSON report ("librdmacm").  The
# loopback's default build makes as many such calls as the real 44.0
# library (its 25 rdma_* self-calls, the rsockets' among them), when that
# is installed to compare with.
set -u
real=${RDMACHECK_REAL_RDMACM:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
# own_rdma LIB: the relocations through which LIB calls its own rdma_*
# exports (what the shim counts; LIB calls no other library's rdma_*)
own_rdma() {
	readelf -rW "$1" 2>/dev/null |
		awk '$3 ~ /JUMP_SLOT|GLOB_DAT/ && $5 ~ /^rdma_/' | wc -l
}
want_plt=
if [ -f "$real" ] && command -v readelf >/dev/null 2>&1; then
	want_plt=$(own_rdma "$real")
fi
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
bin=$top_builddir/tests/scenarios/errno_keep
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {	# NAME DIR WANT: WANT is "plt" or "symbolic"
	LD_LIBRARY_PATH=$2 LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS="rckind-$$-$1" \
		RDMACHECK_OPTIONS="json=$work/$1.json:verbosity=1" \
		"$bin" clean > "$work/$1.out" 2>&1 ||
		{ echo "FAIL [$1]: run"; cat "$work/$1.out"; fail=1; return; }
	n=$("$JQ" '.librdmacm.plt_self_calls' "$work/$1.json")
	case $3 in
	plt)	re='calls [1-9][0-9]* of its own exports through the PLT'
		ok=$([ "$n" -gt 0 ] 2>/dev/null && echo 1)
		if [ -n "$want_plt" ] && [ "$n" != "$want_plt" ]; then
			echo "FAIL [$1]: $n self-calls, the real library" \
			     "($real) has $want_plt"
			ok=
		fi ;;
	*)	re='calls none .*-Bsymbolic-functions'
		ok=$([ "$n" = 0 ] && echo 1) ;;
	esac
	[ -n "$ok" ] || { echo "FAIL [$1]: plt_self_calls $n"; fail=1; }
	grep -q "rdmacheck: librdmacm $2/librdmacm.so.1 $re" "$work/$1.out" ||
		{ echo "FAIL [$1]: no note /$re/"; cat "$work/$1.out"; fail=1; }
	[ "$fail" = 1 ] || echo "ok [$1]: $n internal calls through the PLT"
}
check plt "$RDMACHECK_LOOPBACK_DIR" plt
check symbolic "$RDMACHECK_LOOPBACK_SYMBOLIC_DIR" symbolic
exit $fail
