#!/bin/sh
# run-bench.sh [SCALE]: run bench_shim without and with the shim (same
# build, same backend, one after the other) and print per-operation times,
# the ratio and the nanoseconds rdmacheck adds.  Run from the build tree:
#   make bench   (or: sh ../bench/run-bench.sh from ./build)
set -eu
top_builddir=${top_builddir:-.}
bin=$top_builddir/bench/bench_shim
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/src/loopback/.libs}
opts=${BENCH_OPTIONS:-stack_depth=16:leak_check=0}
export RDMACHECK_LOOPBACK_NS="rcbench-$$"
plain=$(LD_LIBRARY_PATH=$lo "$bin" "${1:-1}")
shimmed=$(LD_LIBRARY_PATH=$lo LD_PRELOAD=$shim RDMACHECK_OPTIONS=$opts \
	"$bin" "${1:-1}")
echo "rdmacheck overhead ($opts; ns per operation, median of 7 rounds)"
printf '%-12s %12s %12s %8s %10s %s\n' operation plain shim ratio added \
	"added per call"
echo "$plain" | while read -r name p; do
	s=$(echo "$shimmed" | awk -v n="$name" '$1 == n { print $2 }')
	case $name in
	*_pair) calls=2 ;;
	*) calls=1 ;;
	esac
	awk -v n="$name" -v p="$p" -v s="$s" -v c="$calls" 'BEGIN {
		printf "%-12s %12.2f %12.2f %8.2f %10.2f %.2f\n",
			n, p, s, s / p, s - p, (s - p) / c }'
done
