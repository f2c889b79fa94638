#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/scale.sh: rdmacheck-report at scale, scaled down for
# make check (full size: make bench-report), on reports gen-reports.py
# writes into the build tree:
# * merging 10,000 distinct findings must cost little more than reading
#   them: --merge --summary may take twice the CPU time of --summary,
#   plus 0.1 s (comparing every pair of findings costs ten times more);
# * a 20 MB report is read in at most twice its size (peak RSS), in each
#   output mode;
# * the merged counts: one unique finding per distinct finding.
# CPU times are the best of three runs.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"

t_name=scale
tool=$top_builddir/tools/rdmacheck-report
py=${PYTHON3:-python3}
if [ "$py" = no ] || ! command -v "$py" >/dev/null 2>&1; then
	echo "$t_name: python3 not found: skipped"
	exit 77
fi
# make check builds it: missing is a failure, not a skip
[ -x "$tool" ] || { echo "$t_name: FAIL: $tool is missing"; exit 1; }

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

data=$top_builddir/tests/report-tool/scale.data
gen="$py $top_srcdir/tests/report-tool/gen-reports.py"
rm -rf "$data"

measure="$py $top_srcdir/tests/report-tool/measure.py $tool"

# best_cpu ARG...: the least CPU time of three runs of the tool.
best_cpu() {
	best=
	for _ in 1 2 3; do
		cpu=$($measure "$@" | cut -d' ' -f2)
		best=$(awk -v a="${best:-$cpu}" -v b="$cpu" \
			'BEGIN { print (b < a ? b : a) }')
	done
	echo "$best"
}

# --- Merging costs about as much as reading.
$gen --reports 4 --findings 2500 --depth 4 "$data/distinct" >/dev/null
load=$(best_cpu --summary "$data/distinct")
merge=$(best_cpu --summary --merge "$data/distinct")
if awk -v l="$load" -v m="$merge" 'BEGIN { exit !(m <= 2 * l + 0.1) }'; then
	pass "merge of 10000 distinct findings: $merge s CPU, reading them $load s"
else
	fail "merge of 10000 distinct findings: $merge s CPU, over twice the $load s of reading them"
fi
run "$tool" --summary --merge "$data/distinct"
echo "$out" | grep -q ' in 4 processes, 10000 unique findings$' &&
	pass "10000 distinct findings stay apart" || fail "distinct: $out"

$gen --reports 4 --findings 2500 --distinct 3000 --depth 4 \
	"$data/dup" >/dev/null
run "$tool" --summary --merge "$data/dup"
echo "$out" | grep -q ' in 4 processes, 3000 unique findings$' &&
	pass "10000 findings of 3000 kinds merge to 3000" ||
	fail "merge of duplicates: $out"

# --- A report is read in at most twice its size.
$gen --mb 20 "$data/big" >/dev/null
big=$data/big/big.1000.json
size=$(wc -c <"$big")
for mode in --summary --merge --json; do
	# shellcheck disable=SC2046
	set -- $($measure $mode "$big")
	rss=$3
	# the tool's own status: 0 or 1 (findings); 2 or a signal (negative)
	# would make any peak meaningless
	if [ "$4" != 0 ] && [ "$4" != 1 ]; then
		fail "$mode of a $size-byte report: rdmacheck-report exited $4"
	elif awk -v r="$rss" -v s="$size" 'BEGIN { exit !(r * 1024 <= 2 * s) }'
	then
		pass "$mode of a $size-byte report: peak RSS $rss KiB"
	else
		fail "$mode of a $size-byte report: peak RSS $rss KiB, over twice its size"
	fi
done

[ "$t_fail" = 0 ] && rm -rf "$data"
finish
