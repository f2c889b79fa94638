#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Snapshots never replace the exit report: without %n in json= the N-th
# goes to PATH.snapshot.N, with %n that is N (0 for the exit report);
# their messages say the objects are alive now, the exit report's that
# they leaked; rdmacheck-report --merge shows the process once, as its
# exit report has it, whatever the order of its files.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
bin=$top_builddir/tests/scenarios/snapshot
report=$top_builddir/tools/rdmacheck-report
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"
work=$t_dir
# run OPTIONS SNAP_1 SNAP_2: two snapshots, awaited at those paths, then
# the exit (leaks: exit status 23).
run() {
	env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$RDMACHECK_SHIM" TAG=t \
		RDMACHECK_LOOPBACK_NS="rcsnapf-$$" \
		RDMACHECK_OPTIONS="snapshot_signal=12:$1" SNAP_1=$2 SNAP_2=$3 \
		"$bin" twice >"$work/out" 2>&1
	rc=$?
	[ "$rc" = 23 ] || { cat "$work/out"; fail "exit status $rc, not 23"; }
}
# check FILE STATUS IDS: FILE's status and its number of leaked cm ids.
check() {
	if "$JQ" -e --arg s "$2" --argjson n "$3" '
		.status == $s and
		([.findings[] | select(.rule == "leak-id") | .count] | add) == $n
		' "$1" >/dev/null; then
		pass "$(basename "$1"): $2, $3 cm ids"
	else
		fail "$(basename "$1") is not $2 with $3 cm ids"
		cat "$1"
	fi
}

run "json=$work/r.json:log_path=$work/log" \
	"$work/r.json.snapshot.1" "$work/r.json.snapshot.2"
check "$work/r.json.snapshot.1" snapshot 1
check "$work/r.json.snapshot.2" snapshot 2
check "$work/r.json" exited 2
n=$(ls "$work" | grep -c '^r\.json')
[ "$n" = 3 ] && pass "three reports" || fail "$n reports: $(ls "$work")"

# The words: "alive now" in a snapshot, "alive at exit" only at exit.
"$JQ" -e '[.findings[] | select(.rule == "leak-id") | .message]
	| all(test("still alive: cm id alive now$"))' \
	"$work/r.json.snapshot.2" >/dev/null &&
	pass "snapshot messages say alive now" ||
	fail "snapshot messages: $("$JQ" -c '[.findings[].message]' \
		"$work/r.json.snapshot.2")"
"$JQ" -e '[.findings[] | select(.rule == "leak-id") | .message]
	| all(test("leaked: cm id alive at exit$"))' "$work/r.json" \
	>/dev/null && pass "exit messages say leaked, alive at exit" ||
	fail "exit messages: $("$JQ" -c '[.findings[].message]' "$work/r.json")"
# The log: two snapshots' blocks, then the exit's, appended in order.
now=$(grep -c 'cm id alive now \[leak-id\]' "$work/log")
ex=$(grep -c 'cm id alive at exit \[leak-id\]' "$work/log")
[ "$now" = 3 ] && [ "$ex" = 2 ] && pass "log: 1 + 2 blocks alive now, 2 at exit" ||
	{ fail "log: $now alive now, $ex at exit"; cat "$work/log"; }

# %n: 0 for the exit report, N for the N-th snapshot.
run "json=$work/n.%q{TAG}.%n.json" "$work/n.t.1.json" "$work/n.t.2.json"
check "$work/n.t.1.json" snapshot 1
check "$work/n.t.2.json" snapshot 2
check "$work/n.t.0.json" exited 2

# Merged, one process: the exit report's, in any order of the files.
for order in "r.json.snapshot.1 r.json r.json.snapshot.2" \
	     "r.json r.json.snapshot.2 r.json.snapshot.1"; do
	set --
	for f in $order; do set -- "$@" "$work/$f"; done
	"$report" --merge --format=json "$@" >"$work/m.json"
	if "$JQ" -e '(.processes | length) == 1 and
		.processes[0].status == "exited" and
		([.findings[] | select(.rule == "leak-id") | .count] | add) == 2
		' "$work/m.json" >/dev/null; then
		pass "merged ($order): one process, its exit report"
	else
		fail "merged ($order):"
		cat "$work/m.json"
	fi
done
"$report" --merge "$work"/n.t.*.json >"$work/m.txt"
grep -q 'leaked: cm id alive at exit \[leak-id\]' "$work/m.txt" &&
	! grep -q 'still alive' "$work/m.txt" &&
	pass "merged text: the exit report's findings" ||
	{ fail "merged text:"; cat "$work/m.txt"; }
# Unmerged, each report is shown: three processes.
"$report" --summary "$work"/n.t.*.json >"$work/s.txt"
n=$(grep -c 'ERROR SUMMARY\|rdmacheck: [0-9]* errors' "$work/s.txt")
[ "$n" -ge 3 ] && pass "unmerged: each report's summary ($n)" ||
	{ fail "unmerged: $n summaries"; cat "$work/s.txt"; }
# The latest snapshot stands when there is no exit report.
"$report" --merge --format=json "$work/n.t.2.json" "$work/n.t.1.json" \
	>"$work/m2.json"
"$JQ" -e '(.processes | length) == 1 and .processes[0].status == "snapshot"
	and ([.findings[] | select(.rule == "leak-id") | .count] | add) == 2
	' "$work/m2.json" >/dev/null && pass "snapshots alone: the latest" ||
	{ fail "snapshots alone:"; cat "$work/m2.json"; }
finish
