#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/bench-report.sh (make bench-report, part of make bench):
# rdmacheck-report at full size, on reports gen-reports.py writes into the
# build tree (about 520 MB, removed afterwards):
#   --merge of 80,000 distinct findings in 8 reports: under 2 s;
#   a 200 MB report: peak RSS at most twice its size, in each output mode.
# Prints the measurements; exits 1 when a bound is missed or when
# rdmacheck-report itself failed (exit 2 or more: a run that proves nothing).  Compare
# builds with RDMACHECK_REPORT=/path/to/rdmacheck-report make bench-report.
# measure.py's fields are split on purpose:
# shellcheck disable=SC2046,SC2086
set -eu
: "${top_srcdir:?run this from make bench-report}"
: "${top_builddir:?run this from make bench-report}"
py=${PYTHON3:-python3}
tool=${RDMACHECK_REPORT:-$top_builddir/tools/rdmacheck-report}
gen="$py $top_srcdir/tests/report-tool/gen-reports.py"
measure="$py $top_srcdir/tests/report-tool/measure.py $tool"
dir=$top_builddir/tests/report-tool/bench
status=0

# check CONDITION MESSAGE: an awk condition on the numbers.
check() {
	awk "BEGIN { exit !($1) }" && return
	echo "bench-report: FAIL: $2"
	status=1
}

rm -rf "$dir"
trap 'rm -rf "$dir"' EXIT
$gen --reports 8 --findings 10000 "$dir/merge" >/dev/null
$gen --mb 209.7 "$dir/load" >/dev/null
big=$dir/load/big.1000.json
size=$(wc -c <"$big")

set -- $($measure --merge "$dir/merge")
echo "bench-report: --merge of 80000 distinct findings in 8 reports" \
	"($(du -sm "$dir/merge" | cut -f1) MB): $1 s ($2 s CPU)," \
	"peak RSS $3 KiB, exit $4"
check "$1 < 2" "--merge took $1 s, over 2 s"
# a tool that failed (2: bad input; a signal: negative) proves nothing
check "$4 >= 0 && $4 <= 1" "--merge exited $4"

for mode in --summary "" --json; do
	set -- $($measure $mode "$big")
	echo "bench-report: ${mode:-text} of a $size-byte report: $1 s" \
		"($2 s CPU), peak RSS $3 KiB" \
		"($(awk "BEGIN { printf \"%.2f\", $3 * 1024 / $size }")" \
		"times its size), exit $4"
	check "$3 * 1024 <= 2 * $size" "peak RSS over twice the size"
	check "$4 >= 0 && $4 <= 1" "${mode:-text} exited $4"
done
exit $status
