#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# run-scenario.sh FILE.scenario: run one scenario program under rdmacheck
# on the loopback backend (or the real librdmacm) and check its JSON
# report.  A .scenario file sets shell variables:
#   program          scenario binary in tests/scenarios/
#   mode             bad | clean (argument to the program)
#   expect_rule      rule id that must be reported (empty: no finding at all)
#   expect_call      the intercepted function of that finding ("" for leaks)
#   expect_function  function of the scenario that frame #0 must name
#   expect_kind      an object of this kind ("cq", "pd", ...) the finding
#                    must name
#   expect_severity  severity of that finding (default: the rule's own)
#   expect_root      a function the stack must lead back to (default main;
#                    start_thread for a finding in another thread)
#   expect_also      more rule ids that must be reported (any call)
#   expect_output    newline-separated regexes the program's output must
#                    match (one line each)
#   expect_jq        a jq expression that must hold on the JSON report
#   wrapper          a command that runs the program as its child, under
#                    the shim too, and exits after it (e.g. "timeout 60")
#   expect_exit      exit status (default 23 with a finding, 0 without)
#   options          extra RDMACHECK_OPTIONS
#   timeout          seconds (default 30)
#   expect_status    the report's "status" (default exited)
#   symbolize        1: the report comes from a signal handler, its frames
#                    without names: its findings are checked as
#                    rdmacheck-report --format=json names them (and
#                    expect_jq sees them so, with the report's other fields)
#   report_suffix    check the report json=PATH leaves at PATH+this (a
#                    snapshot's: ".snapshot.1")
#   backend          loopback (default: every loopback build) | rdmacm14
#                    (the loopback build with RDMACM_1.4) | real
#   launcher         1: run through the rdmacheck launcher instead of
#                    setting LD_PRELOAD
#   compare_plain    1: also run the program without the shim (same
#                    backend); its output lines must be the same as under
#                    the shim (the shim's own "==PID==" lines aside)
# With SCN_KEEP=DIR in the environment (the real-kernel tier sets it), the
# program's output, exit status and JSON report (of the last build run)
# are also left in DIR.  Every report is also copied into
# tests/scenarios/reports/NAME.BUILD.json, which
# tests/report-tool/schema.sh validates against doc/report.schema.json.
set -u
spec=$1
program= mode=bad expect_rule= expect_call= expect_function= expect_exit=
expect_severity= expect_also= expect_output= wrapper= launcher= expect_kind=
compare_plain= report_suffix= expect_jq= symbolize=
expect_root=main
options= timeout=30 backend=loopback expect_status=exited
# shellcheck disable=SC1090
. "$spec"

fail() {
	echo "FAIL: $(basename "$spec")${build:+ [$build]}: $*"
	[ -f "$json" ] && cat "$json"
	exit 1
}

[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
[ "$JQ" != no ] || { echo "SKIP: jq missing"; exit 77; }
# frames_inlined: stacks as frame objects, whatever the report's format
jqlib=${top_srcdir:?}/tests/lib
bin=$top_builddir/tests/scenarios/$program
work=$(mktemp -d)
status= json=
keep() {
	mkdir -p "$top_builddir/tests/scenarios/reports"
	for r in "$work"/*.json; do
		[ -f "$r" ] && cp "$r" \
			"$top_builddir/tests/scenarios/reports/$name.${r##*/}"
	done
	if [ -n "${SCN_KEEP:-}" ]; then
		cp "$work/out" "$SCN_KEEP/out" 2>/dev/null
		cp "$json" "$SCN_KEEP/report.json" 2>/dev/null
		echo "${status:--}" > "$SCN_KEEP/status"
	fi
	rm -rf "$work"
}
name=$(basename "$spec" .scenario)
rm -f "$top_builddir/tests/scenarios/reports/$name".*.json
trap keep EXIT

if [ -z "$expect_exit" ]; then
	if [ -n "$expect_rule" ] && [ "$expect_severity" != warning ]; then
		expect_exit=23
	else
		expect_exit=0
	fi
fi

# run_one LIBPATH: run the scenario once with LD_LIBRARY_PATH=LIBPATH and
# check its report; exits on the first failure.
run_one() {
	json=$work/$build.json
	set -- "$bin" "$mode"
	preload=$RDMACHECK_SHIM
	if [ "$launcher" = 1 ]; then
		set -- "$top_builddir/tools/rdmacheck" -- "$@"
		preload=
	fi
	# shellcheck disable=SC2086
	[ -n "$wrapper" ] && set -- $wrapper "$@"
	status=0
	# Only the scenario runs under the shim, not timeout(1).  A scenario
	# stopped by its TERM still writes its exit report: under a guest's
	# emulation that can take seconds, so the KILL comes late.
	timeout -k 30 "$timeout" env LD_LIBRARY_PATH="$libpath" \
		SCN_DIR="$top_builddir/tests/scenarios" \
		LD_PRELOAD="$preload" \
		RDMACHECK_LOOPBACK_NS="rcscn-$$-$build-$name" \
		RDMACHECK_OPTIONS="json=$json${options:+:$options}" \
		"$@" > "$work/out" 2>&1 || status=$?
	json=$json$report_suffix
	echo "---- $build"
	cat "$work/out"
	check_one
	[ "$compare_plain" = 1 ] && compare_one
	return 0
}

# compare_one: the program without the shim says the same.
compare_one() {
	pstatus=0
	timeout -k 5 "$timeout" env LD_LIBRARY_PATH="$libpath" \
		SCN_DIR="$top_builddir/tests/scenarios" \
		RDMACHECK_LOOPBACK_NS="rcscn-$$-$build-$name-plain" \
		"$bin" "$mode" > "$work/plain" 2>&1 || pstatus=$?
	[ "$pstatus" = 0 ] || fail "without the shim: exit status $pstatus"
	grep -v '^==[0-9]*== ' "$work/out" > "$work/shim"
	[ -s "$work/plain" ] || fail "no output without the shim"
	diff -u "$work/plain" "$work/shim" ||
		fail "the output under the shim differs from the plain run's"
}

check_one() {
	# 77: the program found the device cannot do what the scenario needs
	if [ "$status" = 77 ] && [ "$expect_exit" != 77 ]; then
		echo "SKIP: $(basename "$spec")${build:+ [$build]}:" \
		     "$(tail -n 1 "$work/out")"
		exit 77
	fi
	[ "$status" = "$expect_exit" ] ||
		fail "exit status $status, expected $expect_exit"
	old_ifs=$IFS
	IFS='
'
	for re in $expect_output; do
		grep -Eq -- "$re" "$work/out" || fail "no output line matches /$re/"
	done
	IFS=$old_ifs
	[ "$expect_exit" = 124 ] && return 0	# a hang was the point: no report

	[ -f "$json" ] || fail "no JSON report"
	"$JQ" -e . "$json" > /dev/null || fail "the JSON report does not parse"
	"$JQ" -e --arg s "$expect_status" '.status == $s' "$json" > /dev/null ||
		fail "report status is not $expect_status"
	# rep: the report the findings are checked in (not *.json: keep()
	# copies those for schema.sh)
	rep=$json
	if [ "$symbolize" = 1 ]; then
		rep=$work/named.report
		"$top_builddir/tools/rdmacheck-report" --format=json "$json" \
			> "$work/tool.out" 2> "$work/tool.err"
		trc=$?
		[ "$trc" = 0 ] || [ "$trc" = 1 ] || [ "$trc" = 3 ] ||
			fail "rdmacheck-report: exit $trc: $(cat "$work/tool.err")"
		"$JQ" -s '.[0] + {frames: .[1].frames, findings: .[1].findings}' \
			"$json" "$work/tool.out" > "$rep" ||
			fail "rdmacheck-report --format=json wrote no JSON"
	fi

	if [ -z "$expect_rule" ]; then
		n=$("$JQ" '.findings | length' "$rep")
		[ "$n" = 0 ] || fail "$n findings in a clean run"
		return 0
	fi

	# The expected finding, with its call and a stack that starts in (or
	# within two helper frames of) the scenario's own function and leads back
	# to main (or expect_root).
	"$JQ" -e -L "$jqlib" --arg r "$expect_rule" --arg c "$expect_call" \
		--arg f "$expect_function" --arg s "$expect_severity" \
		--arg root "$expect_root" --arg k "$expect_kind" '
		include "report"; frames_inlined
		| [.findings[] | select(.rule == $r)
		 | select(($c == "" and .call == null) or .call == $c)
		 | select($s == "" or .severity == $s)
		 | select($k == "" or ([.objects[].kind] | index($k) != null))
		 | select(.stack[0:3] | map(.function) | index($f) != null)
		 | select([.stack[].function] | index($root) != null)
		 | select(.suppressed == false)]
		| length >= 1' "$rep" > /dev/null ||
		fail "no ${expect_severity:+$expect_severity }$expect_rule finding" \
		     "from $expect_call in $expect_function${expect_kind:+ naming a $expect_kind}"
	for r in $expect_also; do
		"$JQ" -e --arg r "$r" '[.findings[] | select(.rule == $r)
			| select(.suppressed == false)] | length >= 1' "$rep" \
			> /dev/null || fail "no $r finding"
	done
	if [ -n "$expect_jq" ]; then
		"$JQ" -e "$expect_jq" "$rep" > /dev/null ||
			fail "does not hold: $expect_jq"
	fi
	# Nothing else: every other rule reported is a false alarm.
	extra=$("$JQ" -r --arg r "$expect_rule" --arg a "$expect_also" '
		($a | split(" ")) as $also
		| [.findings[] | select(.suppressed == false) | .rule
		   | select(. != $r and (. as $x | $also | index($x) | not))]
		| unique | join(" ")' "$rep")
	[ -z "$extra" ] || fail "unexpected findings: $extra"
	# Every object a finding names carries its creation stack (or, with
	# "stack_ref": "finding", the finding's).
	"$JQ" -e -L "$jqlib" 'include "report"; frames_inlined
		| [.findings[] | .stack as $s | .objects[]
		| select((if .created.stack_ref == "finding" then $s
			  else .created.stack end | length) == 0)]
		| length == 0' "$rep" > /dev/null ||
		fail "an object without a creation stack"
	return 0
}

# The loopback backend is run in every build the tests name: one whose
# internal calls go through the PLT as the real library's, and one linked
# with -Bsymbolic-functions, as Ubuntu links librdmacm.  The findings must
# be the same on both.
if [ "$backend" = loopback ]; then
	builds=${RDMACHECK_LOOPBACK_DIRS:-plt=$RDMACHECK_LOOPBACK_DIR}
	for b in $builds; do
		build=${b%%=*}
		libpath=${b#*=}
		[ -f "$libpath/librdmacm.so.1" ] ||
			{ echo "SKIP: no loopback backend in $libpath"; exit 77; }
		run_one
	done
elif [ "$backend" = rdmacm14 ]; then
	build=rdmacm14 libpath=$RDMACHECK_LOOPBACK_RDMACM14_DIR
	[ -f "$libpath/librdmacm.so.1" ] ||
		{ echo "SKIP: no RDMACM_1.4 loopback build"; exit 77; }
	run_one
else
	build=real libpath=
	run_one
fi
exit 0
