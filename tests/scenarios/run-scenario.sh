#!/bin/sh
# run-scenario.sh FILE.scenario: run one scenario program under rdmacheck
# on the loopback backend (or the real librdmacm) and check its JSON
# report.  A .scenario file sets shell variables:
#   program          scenario binary in tests/scenarios/
#   mode             bad | clean (argument to the program)
#   expect_rule      rule id that must be reported (empty: no finding at all)
#   expect_call      the intercepted function of that finding ("" for leaks)
#   expect_function  function of the scenario that frame #0 must name
#   expect_exit      exit status (default 23 with a finding, 0 without)
#   options          extra RDMACHECK_OPTIONS
#   timeout          seconds (default 30)
#   expect_status    the report's "status" (default exited)
#   backend          loopback (default) | real
# With SCN_KEEP=DIR in the environment (the real-kernel tier sets it), the
# program's output, exit status and JSON report are also left in DIR.
set -u
spec=$1
program= mode=bad expect_rule= expect_call= expect_function= expect_exit=
options= timeout=30 backend=loopback expect_status=exited
# shellcheck disable=SC1090
. "$spec"

fail() {
	echo "FAIL: $(basename "$spec"): $*"
	[ -f "$json" ] && cat "$json"
	exit 1
}

[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
bin=$top_builddir/tests/scenarios/$program
work=$(mktemp -d)
status=
keep() {
	if [ -n "${SCN_KEEP:-}" ]; then
		cp "$work/out" "$SCN_KEEP/out" 2>/dev/null
		cp "$json" "$SCN_KEEP/report.json" 2>/dev/null
		echo "${status:--}" > "$SCN_KEEP/status"
	fi
	rm -rf "$work"
}
trap keep EXIT
json=$work/report.json

if [ "$backend" = loopback ]; then
	[ -f "$RDMACHECK_LOOPBACK_DIR/librdmacm.so.1" ] ||
		{ echo "SKIP: no loopback backend"; exit 77; }
	libpath=$RDMACHECK_LOOPBACK_DIR
else
	libpath=
fi
if [ -z "$expect_exit" ]; then
	if [ -n "$expect_rule" ]; then expect_exit=23; else expect_exit=0; fi
fi

status=0
# Only the scenario runs under the shim, not timeout(1).
timeout -k 5 "$timeout" env LD_LIBRARY_PATH="$libpath" \
	SCN_DIR="$top_builddir/tests/scenarios" \
	LD_PRELOAD="$RDMACHECK_SHIM" \
	RDMACHECK_LOOPBACK_NS="rcscn-$$-$(basename "$spec" .scenario)" \
	RDMACHECK_OPTIONS="json=$json${options:+:$options}" \
	"$bin" "$mode" > "$work/out" 2>&1 || status=$?
cat "$work/out"
[ "$status" = "$expect_exit" ] ||
	fail "exit status $status, expected $expect_exit"
[ "$expect_exit" = 124 ] && exit 0	# a hang was the point: no report

[ -f "$json" ] || fail "no JSON report"
"$JQ" -e . "$json" > /dev/null || fail "the JSON report does not parse"
"$JQ" -e --arg s "$expect_status" '.status == $s' "$json" > /dev/null ||
	fail "report status is not $expect_status"

if [ -z "$expect_rule" ]; then
	n=$("$JQ" '.findings | length' "$json")
	[ "$n" = 0 ] || fail "$n findings in a clean run"
	exit 0
fi

# The expected finding, with its call and a stack that starts in (or
# within two helper frames of) the scenario's own function and leads back
# to main.
"$JQ" -e --arg r "$expect_rule" --arg c "$expect_call" \
	--arg f "$expect_function" '
	[.findings[] | select(.rule == $r)
	 | select(($c == "" and .call == null) or .call == $c)
	 | select(.stack[0:3] | map(.function) | index($f) != null)
	 | select([.stack[].function] | index("main") != null)
	 | select(.suppressed == false)]
	| length >= 1' "$json" > /dev/null ||
	fail "no $expect_rule finding from $expect_call in $expect_function"
# Every object a finding names carries its creation stack.
"$JQ" -e '[.findings[].objects[] | select((.created.stack | length) == 0)]
	| length == 0' "$json" > /dev/null ||
	fail "an object without a creation stack"
exit 0
