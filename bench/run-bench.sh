#!/bin/sh
# run-bench.sh [SCALE]: run bench_shim without and with the shim (same
# build, same backend, alternating BENCH_RUNS times) and print
# per-operation times, the ratio and the nanoseconds rdmacheck adds.
# Run from the build tree:
#   make bench   (or: sh ../bench/run-bench.sh from ./build)
set -eu
top_builddir=${top_builddir:-.}
bin=$top_builddir/bench/bench_shim
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/src/loopback/.libs}
opts=${BENCH_OPTIONS:-stack_depth=16:leak_check=0}
export RDMACHECK_LOOPBACK_NS="rcbench-$$"
# BENCH_RUNS runs of each, alternating, and the fastest of each side per
# operation: on a shared machine the other load only ever adds.
runs=${BENCH_RUNS:-3}
plain= shimmed=
i=0
while [ "$i" -lt "$runs" ]; do
	plain="$plain
$(LD_LIBRARY_PATH=$lo "$bin" "${1:-1}")"
	shimmed="$shimmed
$(LD_LIBRARY_PATH=$lo LD_PRELOAD=$shim RDMACHECK_OPTIONS=$opts \
	"$bin" "${1:-1}")"
	i=$((i + 1))
done
fastest() {
	awk 'NF == 2 { if (!($1 in m) || $2 < m[$1]) m[$1] = $2
		       if (!($1 in o)) o[$1] = n++ }
	     END { for (k in m) print o[k], k, m[k] }' | sort -n |
		cut -d' ' -f2-
}
plain=$(echo "$plain" | fastest)
shimmed=$(echo "$shimmed" | fastest)
echo "rdmacheck overhead ($opts; ns per operation, median of 7 rounds," \
     "fastest of $runs runs)"
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
