#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A crash is a failure: a program that dies of a fatal signal under the
# launcher exits as the signal has it (128 + N, as the shell sees it), the
# shim's log names the signal and the stack, the JSON report (status
# "crashed") holds the fatal-signal finding, and rdmacheck-report fails
# it (exit 3) in every format, merged or not, suppressed or baselined;
# so it does a report of a process killed by SIGTERM (status "killed").
# The clean twins (a program whose own SIGSEGV handler recovers, one that
# exits normally) stay at 0 in the launcher and in rdmacheck-report.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
[ -f "${RDMACHECK_SHIM:-}" ] || { echo "SKIP: no shim"; exit 77; }
JQ=${JQ:-jq}
if [ "$JQ" = no ] || ! command -v "$JQ" >/dev/null 2>&1; then
	echo "SKIP: jq missing"
	exit 77
fi
t_name=crash-gate
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"
launcher=$top_builddir/tools/rdmacheck
tool=$top_builddir/tools/rdmacheck-report
scn=$top_builddir/tests/scenarios
cd "$t_dir"

# launch NAME PROGRAM MODE: run it through the launcher on the loopback
# backend, its report in NAME.json (rc, out, err as run sets them).
launch() {
	name=$1
	shift
	run env RDMACHECK_LOOPBACK_NS="rcfatal-$$-$name" \
		"$launcher" --loopback --json="$t_dir/$name.json" -- \
		"$scn/$1" "$2"
}

# holds NAME JQ-FILTER WHAT: the filter is true of NAME.json.
holds() {
	if "$JQ" -e "$2" "$1.json" >/dev/null 2>&1; then
		pass "$3"
	else
		fail "$3: $(head -c 800 "$1.json" 2>/dev/null)"
	fi
}

# tool_rc WANT WHAT ARG...: rdmacheck-report ARG... exits with WANT.
tool_rc() {
	want=$1
	what=$2
	shift 2
	run "$tool" "$@"
	[ "$rc" = "$want" ] && pass "rdmacheck-report $what: exit $rc" ||
		fail "rdmacheck-report $what: exit $rc, expected $want: $err"
}

# every_format WANT NAME...: the same exit status in each format, with
# and without --merge.
every_format() {
	want=$1
	shift
	bad=
	for f in text json junit sarif github; do
		for m in "" --merge; do
			# shellcheck disable=SC2086
			run "$tool" $m --format=$f "$@"
			[ "$rc" = "$want" ] || bad="$bad $m --format=$f:$rc"
		done
	done
	run "$tool" --summary "$@"
	[ "$rc" = "$want" ] || bad="$bad --summary:$rc"
	[ -z "$bad" ] &&
		pass "rdmacheck-report exits $want in every format, merged or not: $*" ||
		fail "rdmacheck-report $*: not $want:$bad"
}

# --- A NULL dereference in crash_null(). -----------------------------------
launch null crash bad
[ "$rc" = 139 ] && pass "launcher: the shell sees 128 + SIGSEGV" ||
	fail "launcher: exit $rc, expected 139: $err"
printf '%s\n' "$err" | grep -Eq '^==[0-9]+== ERROR: rdmacheck: SIGSEGV \(SEGV_MAPERR\) at address 0x0 \[fatal-signal\]$' &&
	pass "the log names the signal, its si_code and the address" ||
	fail "no fatal-signal block on stderr: $err"
printf '%s\n' "$err" | grep -Eq '^    #0 0x[0-9a-f]+ \(/.*/crash\+0x[0-9a-f]+\)$' &&
	printf '%s\n' "$err" | grep -Eq '^    #1 0x[0-9a-f]+ \(/.*/crash\+0x[0-9a-f]+\)$' &&
	pass "the log shows the stack, module+offset" ||
	fail "no stack in the fatal-signal block: $err"
holds null '.status == "crashed" and .signal == 11 and
	.summary.errors == 1 and (.findings | length) == 1 and
	(.findings[0] | .rule == "fatal-signal" and .severity == "error" and
	 .message == "SIGSEGV (SEGV_MAPERR) at address 0x0" and
	 .thread != null and (.stack | length) >= 2)' \
	"the report: status crashed, signal 11, the fatal-signal finding"
# Named offline: the first frame is the instruction that faulted, in
# crash_null (at its first instruction: optimised, pc - 1 would be in
# the function before it), then main.
run "$tool" --format=json null.json
printf '%s\n' "$out" >named.json
[ "$rc" = 3 ] && "$JQ" -e '
	[.findings[0].stack[] as $i | .frames[$i].function] as $f |
	$f[0] == "crash_null" and ($f | index("main")) != null and
	.processes[0].status == "crashed" and .processes[0].signal == 11' \
	named.json >/dev/null &&
	pass "rdmacheck-report names the first frame crash_null, then main" ||
	fail "named stack: exit $rc: $(head -c 1500 named.json)"
run "$tool" null.json
[ "$rc" = 3 ] &&
	printf '%s\n' "$out" | grep -Eq '^    #0 0x[0-9a-f]+ in crash_null .*crash\.c:[0-9]+$' &&
	printf '%s\n' "$out" | grep -q 'rdmacheck: the process crashed: it died of signal 11 (SIGSEGV)' &&
	pass "text: the signal and the named stack" ||
	fail "text of the crash report: exit $rc: $out"
every_format 3 null.json
echo 'fatal-signal:crash_null' >supp
tool_rc 3 "with the crash suppressed" -s supp null.json
printf '%s\n' "$out" | grep -q 'SIGSEGV.*\[fatal-signal\]' &&
	fail "the suppressed finding is shown: $out" || true
tool_rc 3 "with the crash in the baseline" --baseline=null.json null.json

# --- A signal sent (raise), and abort(). ------------------------------------
launch raise crash raise
[ "$rc" = 139 ] && printf '%s\n' "$err" | grep -Eq '^==[0-9]+== ERROR: rdmacheck: SIGSEGV \(SI_TKILL\) sent by the process itself \[fatal-signal\]$' &&
	pass "raise(SIGSEGV): who sent it" ||
	fail "raise: exit $rc: $err"
launch abort crash abort
[ "$rc" = 134 ] && pass "abort(): the shell sees 128 + SIGABRT" ||
	fail "abort: exit $rc, expected 134: $err"
holds abort '.status == "crashed" and .signal == 6 and
	.findings[0].message == "SIGABRT (SI_TKILL) sent by the process itself"' \
	"abort(): the report says SIGABRT"
run "$tool" --format=json abort.json
[ "$rc" = 3 ] && printf '%s\n' "$out" | "$JQ" -e '
	[.findings[0].stack[] as $i | .frames[$i].function] |
	index("crash_abort") != null' >/dev/null &&
	pass "abort(): the stack leads through crash_abort" ||
	fail "abort stack: exit $rc: $out"

# --- The program's handler puts the default action back and returns: the
# fault is retried into it, so the report is not withdrawn.
launch reset crash reset
[ "$rc" = 139 ] &&
	printf '%s\n' "$out" | grep -q '^own SIGSEGV handler: default action back$' &&
	printf '%s\n' "$err" | grep -q '\[fatal-signal\]$' &&
	! printf '%s\n' "$err" | grep -q 'handler returned' &&
	pass "a handler that gives the fault back to the default action" ||
	fail "reset: exit $rc: $out $err"
holds reset '.status == "crashed" and .findings[0].rule == "fatal-signal"' \
	"reset: the crash report stands"

# --- No JSON report asked for: the log still says it. ----------------------
run env RDMACHECK_LOOPBACK_NS="rcfatal-$$-nojson" "$launcher" --loopback -- \
	"$scn/crash" bad
[ "$rc" = 139 ] && printf '%s\n' "$err" | grep -q '\[fatal-signal\]$' &&
	pass "without json=: exit 139 and the block" ||
	fail "without json=: exit $rc: $err"

# --- Killed by SIGTERM with the default action. -----------------------------
launch killed exit_main sigterm
[ "$rc" = 143 ] && pass "killed: the shell sees 128 + SIGTERM" ||
	fail "killed: exit $rc, expected 143: $err"
holds killed '.status == "killed" and .signal == 15' \
	"killed: status killed, signal 15"
run "$tool" killed.json
[ "$rc" = 3 ] && printf '%s\n' "$out" | grep -q 'rdmacheck: the process was killed by signal 15 (SIGTERM)$' &&
	pass "killed: text says so, exit 3" || fail "killed: exit $rc: $out"
every_format 3 killed.json
# Its leaks aside: a kill alone fails the gate.
"$JQ" '.findings = [] | .summary = {"errors": 0, "warnings": 0,
	"leaks": 0, "suppressed": 0}' killed.json >killed-only.json
every_format 3 killed-only.json
run "$tool" --format=sarif killed.json
printf '%s\n' "$out" | "$JQ" -e '.runs[0].invocations[0] |
	.executionSuccessful == false and .exitSignalNumber == 15 and
	.exitSignalName == "SIGTERM"' >/dev/null &&
	pass "killed: SARIF says the execution failed, by SIGTERM" ||
	fail "killed: SARIF invocation: $out"
run "$tool" --merge --format=junit killed.json
printf '%s\n' "$out" | grep -q '<failure type="rdmacheck" message="the process was killed by signal 15 (SIGTERM)"/>' &&
	pass "killed: a failing JUnit testcase of its own (--merge)" ||
	fail "killed: JUnit: $out"
run "$tool" --format=github killed.json
printf '%s\n' "$out" | grep -q '^::error title=rdmacheck killed::==[0-9]*== rdmacheck: the process was killed by signal 15 (SIGTERM)$' &&
	pass "killed: a GitHub error annotation" ||
	fail "killed: GitHub: $out"

# --- The clean twins. -------------------------------------------------------
launch recover crash recover
[ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^recover: exited normally$' &&
	pass "recovered by the program's own handler: exit 0" ||
	fail "recover: exit $rc: $out $err"
printf '%s\n' "$err" | grep -q "rdmacheck: the program's SIGSEGV handler returned: the process goes on" &&
	pass "recover: the block is withdrawn on the log" ||
	fail "recover: no withdrawal on stderr: $err"
holds recover '.status == "exited" and (.findings | length) == 0 and
	.summary.errors == 0' "recover: the exit report replaced the crash report"
launch clean crash clean
[ "$rc" = 0 ] && [ -z "$err" ] && pass "no crash: exit 0, a quiet log" ||
	fail "clean: exit $rc: $err"
every_format 0 recover.json clean.json
# One crash among clean reports fails them all.
tool_rc 3 "a crash among clean reports" --merge recover.json clean.json \
	null.json
finish
