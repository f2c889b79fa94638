#!/bin/sh
# run-bench.sh [SCALE]: run bench_shim without and with the shim (same
# build, same backend), alternately BENCH_RUNS times (default 3), and
# print per operation the fastest run of each (the median of its rounds:
# other load only ever adds time), the ratio and the nanoseconds rdmacheck
# adds, per operation and per call.  Run from the build tree:
#   make bench   (or: sh ../bench/run-bench.sh from ./build)
set -eu
top_builddir=${top_builddir:-.}
bin=$top_builddir/bench/bench_shim
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/src/loopback/.libs}
opts=${BENCH_OPTIONS:-stack_depth=16:leak_check=0}
runs=${BENCH_RUNS:-3}
export RDMACHECK_LOOPBACK_NS="rcbench-$$"
out=$(mktemp "${TMPDIR:-/tmp}/rcbench.XXXXXX")
trap 'rm -f "$out"' EXIT
i=0
while [ "$i" -lt "$runs" ]; do
	LD_LIBRARY_PATH=$lo "$bin" "${1:-1}" | sed 's/^/plain /' >> "$out"
	LD_LIBRARY_PATH=$lo LD_PRELOAD=$shim RDMACHECK_OPTIONS=$opts \
		"$bin" "${1:-1}" | sed 's/^/shim /' >> "$out"
	i=$((i + 1))
done
echo "rdmacheck overhead ($opts; ns per operation, fastest of $runs runs" \
     "of the median of 7 rounds)"
printf '%-14s %10s %10s %7s %9s %s\n' operation plain shim ratio added \
	"added per call"
awk '
	{ k = $1 " " $2
	  if (!(k in best) || $3 < best[k]) best[k] = $3
	  if ($1 == "plain" && !($2 in seen)) { seen[$2]; order[n++] = $2 } }
	END {
		for (i = 0; i < n; i++) {
			op = order[i]; p = best["plain " op]; s = best["shim " op]
			# a *_pair operation is two intercepted calls
			c = op ~ /_pair$/ ? 2 : 1
			printf "%-14s %10.2f %10.2f %7.2f %9.2f %.2f\n", op, p, s,
			    s / p, s - p, (s - p) / c
		}
	}' "$out"
