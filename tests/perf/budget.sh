#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/perf/budget.sh: the deterministic cost budget.  Measures with
# tests/perf/cost.sh (callgrind: instructions and lock round trips the
# shim adds per intercepted call, default options, a deep stack) and
# tests/perf/conn.sh (instructions the shim adds per connection of the
# cmtime client), and fails when a row's Ir grows more than 10 % over
# the figure recorded in tests/perf/budgets (or $BUDGETS), or a call's
# locks exceed its row's, or a call has no row, or a row has no
# measurement.  Before that it checks itself: the same measurements
# against figures that put each just over 10 % must fail for every row.
# Skipped (77) without valgrind; without cmtime, the connection row is
# left out (said so).  Timings stay out of the suite: see `make bench`.
set -eu
srcdir=${top_srcdir:-$(dirname "$0")/../..}
budgets=${BUDGETS:-$srcdir/tests/perf/budgets}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rcbudget.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

st=0
sh "$srcdir/tests/perf/cost.sh" >"$tmp/cost" 2>"$tmp/err" || st=$?
if [ "$st" = 77 ]; then
	cat "$tmp/err" >&2
	echo "budget.sh: SKIP: valgrind is needed for the cost budget" \
	     "(apt-get install valgrind)"
	exit 77
elif [ "$st" != 0 ]; then
	cat "$tmp/err" >&2
	echo "budget.sh: FAIL: cost.sh failed (exit $st)"
	exit 1
fi

# Per connection: "cmtime_connection PLAIN SHIM ADDED", as a row of the
# same shape as cost.sh's (no locks counted: 0).
conn=ok
st=0
sh "$srcdir/tests/perf/conn.sh" >"$tmp/conn" 2>"$tmp/err" || st=$?
if [ "$st" = 77 ]; then
	cat "$tmp/err"
	echo "budget.sh: the per-connection row is not measured (no cmtime)"
	conn=none
elif [ "$st" != 0 ]; then
	cat "$tmp/err" >&2
	echo "budget.sh: FAIL: conn.sh failed (exit $st)"
	exit 1
else
	awk '{ print $1, $2, $3, $4, 0, 0, 0 }' "$tmp/conn" >>"$tmp/cost"
fi
st=0

# The stacks measured are full: a capture keeps stack_depth=16 frames
# (symbolizer=builtin: one frame per pc, no inline levels from libdw).
if [ -n "${JQ:-}" ] && [ "$JQ" != no ]; then
	one_frame=symbolizer=builtin
	env RDMACHECK_LOOPBACK_NS="rcbudget-$$" \
		LD_LIBRARY_PATH="${RDMACHECK_LOOPBACK_DIR:-}" \
		LD_PRELOAD="${RDMACHECK_SHIM:-}" \
		RDMACHECK_OPTIONS="json=$tmp/leak.json:exitcode=0:$one_frame" \
		"${top_builddir:-.}/tests/perf/cost" leak 2>"$tmp/leak.err" ||
		{ cat "$tmp/leak.err"; echo "budget.sh: FAIL: cost leak"; exit 1; }
	frames=$("$JQ" '[.findings[] | select(.rule == "leak-mr")
		| .stack | length] | max' "$tmp/leak.json")
	if [ "$frames" != 16 ]; then
		echo "budget.sh: FAIL: the leaked MR's stack has $frames" \
		     "frames, not 16 (the default stack_depth, under a" \
		     "deeper stack): the budgets were set for 16"
		st=1
	fi
else
	echo "budget.sh: jq not found: stack depth not checked"
fi

# check BUDGETS COST: compare; a line per call, FAIL lines when over:
# Ir above the recorded figure + 10 % (rounded down), locks above the
# row's.  A row not measured fails, but the connection's without cmtime.
check()
{
	awk -v conn="$conn" '
	NR == FNR {
		sub(/#.*/, "")
		if (NF >= 3 && !(conn == "none" &&
				 $1 == "cmtime_connection")) {
			rec[$1] = $2; lk[$1] = $3; order[n++] = $1
			ir[$1] = int($2 * 1.10)
		}
		next
	}
	{ seen[$1] = 1
	  if (!($1 in ir)) {
		printf "FAIL %s: no budget in the table (measured %d Ir," \
		    " %.2f locks): add a row\n", $1, $4, $7
		bad = 1; next
	  }
	  v = ""
	  if ($4 > ir[$1])
		v = sprintf(" Ir %d > budget %d (recorded %d + 10 %%;" \
		    " +%.1f %%)", $4, ir[$1], rec[$1],
		    ($4 - rec[$1]) * 100 / rec[$1])
	  if ($7 > lk[$1] + 0.005)
		v = v sprintf(" locks %.2f > budget %s", $7, lk[$1])
	  if (v != "") {
		printf "FAIL %s:%s\n", $1, v; bad = 1
	  } else {
		printf "ok   %-18s %5d Ir (recorded %5d, budget %5d)" \
		    "  %5.2f locks (budget %s)\n", $1, $4, rec[$1], ir[$1],
		    $7, lk[$1]
	  }
	}
	END {
		for (i = 0; i < n; i++)
			if (!(order[i] in seen)) {
				printf "FAIL %s: in the table, not measured\n",
				    order[i]
				bad = 1
			}
		exit bad
	}' "$1" "$2"
}

# The check itself must be able to fail: every row just over 10 % above
# its recorded figure (and its locks over its row's).
awk '{ print $1, int(($4 - 1) / 1.10), $7 - 1 }' "$tmp/cost" >"$tmp/low"
if check "$tmp/low" "$tmp/cost" >"$tmp/self"; then
	echo "budget.sh: FAIL: budgets below the measurements passed"
	exit 1
fi
if [ "$(grep -c '^FAIL' "$tmp/self")" != "$(wc -l <"$tmp/cost")" ]; then
	echo "budget.sh: FAIL: not every call failed a lower budget:"
	cat "$tmp/self"
	exit 1
fi

echo "budget.sh: added per call (callgrind, calling thread), budgets" \
     "from $budgets"
if ! check "$budgets" "$tmp/cost"; then
	echo "budget.sh: FAIL: over budget (more than 10 % over the" \
	     "recorded figure).  A change that adds cost must say why and" \
	     "raise the row (tests/perf/budgets); one that lowers it," \
	     "lower the row."
	exit 1
fi
exit "$st"
