#!/bin/sh
# tests/report-tool/bench-report.sh (make bench-report, part of make bench):
# rdmacheck-report at full size, on reports gen-reports.py writes into the
# build tree (about 520 MB, removed afterwards):
#   --merge of 80,000 distinct findings in 8 reports: under 2 s;
#   a 200 MB report: peak RSS at most twice its size.
# Prints the measurements; exits 1 when a bound is missed.  Compare
# builds with RDMACHECK_REPORT=/path/to/rdmacheck-report make bench-report.
set -eu
: "${top_srcdir:?run this from make bench-report}"
: "${top_builddir:?run this from make bench-report}"
py=${PYTHON3:-python3}
# RDMACHECK_REPORT: another build of the tool, to compare.
tool=${RDMACHECK_REPORT:-$top_builddir/tools/rdmacheck-report}
gen="$py $top_srcdir/tests/report-tool/gen-reports.py"
measure="$py $top_srcdir/tests/report-tool/measure.py"
dir=$top_builddir/tests/report-tool/bench
status=0

rm -rf "$dir"
trap 'rm -rf "$dir"' EXIT
$gen --reports 8 --findings 10000 "$dir/merge" >/dev/null
$gen --mb 209.7 "$dir/load" >/dev/null
big=$dir/load/big.1000.json
size=$(wc -c <"$big")

mb=$(du -sm "$dir/merge" | cut -f1)
set -- $($measure "$tool" --merge "$dir/merge")
echo "bench-report: --merge, 80000 distinct findings in 8 reports ($mb MB): $1 s ($2 s CPU), peak RSS $3 KiB, exit $4"
awk "BEGIN { exit !($1 < 2) }" || { echo "bench-report: FAIL: --merge took $1 s, over 2 s"; status=1; }

for mode in --summary "" --json; do
	# shellcheck disable=SC2086
	set -- $($measure "$tool" $mode "$big")
	echo "bench-report: ${mode:-text} of one $size-byte report: $1 s ($2 s CPU), peak RSS $3 KiB ($(awk "BEGIN { printf \"%.2f\", $3 * 1024 / $size }") x its size), exit $4"
	awk "BEGIN { exit !($3 * 1024 <= 2 * $size) }" || { echo "bench-report: FAIL: peak RSS over twice the report's size"; status=1; }
done
exit $status
