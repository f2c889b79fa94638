#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Over the real librdmacm on a machine without RDMA devices, the shim must
# change nothing: same return values and errno for every call, no finding,
# no crash.  Skipped where the machine has RDMA devices.
set -u
bin=$top_builddir/tests/scenarios/real_nodev
[ -f "$RDMACHECK_SHIM" ] || exit 77
[ -e /dev/infiniband/rdma_cm ] && { echo "SKIP: RDMA devices present"; exit 77; }
[ -f /usr/lib/x86_64-linux-gnu/librdmacm.so.1 ] || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" > "$work/plain" 2>&1 || { echo "FAIL: plain run"; exit 1; }
LD_PRELOAD=$RDMACHECK_SHIM RDMACHECK_OPTIONS="json=$work/r.json" \
	"$bin" > "$work/shim" 2>&1 || { echo "FAIL: run under the shim"; exit 1; }
diff -u "$work/plain" "$work/shim" || { echo "FAIL: results differ"; exit 1; }
cat "$work/shim"
n=$(${JQ:-jq} '.findings | length' "$work/r.json") || exit 1
[ "$n" = 0 ] || { echo "FAIL: $n findings"; cat "$work/r.json"; exit 1; }
