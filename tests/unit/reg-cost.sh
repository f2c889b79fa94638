#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# reg-cost.sh: what the shim adds per pair of calls (tests/unit/reg_pairs:
# id create/destroy, event get/ack after a resolve_addr, cq create/destroy,
# mr reg/dereg), measured with callgrind by differencing N=200 and N=1200
# runs without and with the shim: instructions, and pthread_mutex_lock
# calls made from librdmacheck.so (registry shard locks and any other of
# the shim's).  Deterministic, so unaffected by other load.  Run from the
# build tree after `make tests/unit/reg_pairs`:
#   sh ../tests/unit/reg-cost.sh
set -eu
b=${top_builddir:-.}
lo=$b/loopback/.libs
shim=$b/src/.libs/librdmacheck.so
export RDMACHECK_LOOPBACK_NS="regcost-$$"
export RDMACHECK_OPTIONS="${RDMACHECK_OPTIONS:-stack_depth=16:leak_check=0}"
out=$(mktemp "${TMPDIR:-/tmp}/regcost.XXXXXX")
trap 'rm -f "$out" "$out".*' EXIT
run() { # preload kind n -> "Ir locks"
	LD_LIBRARY_PATH=$lo LD_PRELOAD="$1" valgrind --tool=callgrind \
		--callgrind-out-file="$out.cg" "$b/tests/unit/reg_pairs" \
		"$2" "$3" >/dev/null 2>&1
	ir=$(sed -n 's/^summary: *//p' "$out.cg")
	# caller lines (<) come before the function's own (*) line
	locks=$(callgrind_annotate --tree=caller "$out.cg" 2>/dev/null |
		awk '/^$/ { buf = 0; next }
		     /< / && /librdmacheck/ {
			s = $0; sub(/.*\(/, "", s); sub(/x\).*/, "", s)
			gsub(/,/, "", s); buf += s; next }
		     /\* .*:pthread_mutex_lock/ { n += buf }
		     { if (!/< /) buf = 0 }
		     END { print n + 0 }')
	echo "$ir $locks"
}
printf '%-6s %12s %12s %12s\n' pair plain_Ir added_Ir shim_locks
for k in id event cq mr; do
	set -- $(run "" $k 200) $(run "" $k 1200) \
	       $(run "$shim" $k 200) $(run "$shim" $k 1200)
	awk -v k=$k -v p1=$1 -v p2=$3 -v s1=$5 -v s2=$7 -v l1=$6 -v l2=$8 \
	    'BEGIN { printf "%-6s %12.0f %12.0f %12.2f\n", k, (p2 - p1) / 1000,
		     ((s2 - s1) - (p2 - p1)) / 1000, (l2 - l1) / 1000 }'
done
