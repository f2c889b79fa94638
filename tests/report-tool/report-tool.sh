#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/report-tool.sh: rdmacheck-report over real reports of
# the scenario programs run under the shim on the loopback backend: text
# rendering (identical to the shim's blocks), offline symbolization of
# crash-style frames, --merge, --json, --suppressions, --summary, exit
# statuses, strict rejection of malformed input, and a truncation and
# mutation loop that must never crash the tool.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015,SC2317
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
: "${RDMACHECK_SHIM:?run this test from make check}"
: "${RDMACHECK_LOOPBACK_DIR:?run this test from make check}"

t_name=report-tool
t_fail=0
tool=$top_builddir/tools/rdmacheck-report
scn=$top_builddir/tests/scenarios

for f in "$tool" "$RDMACHECK_SHIM" "$RDMACHECK_LOOPBACK_DIR/librdmacm.so.1" \
	"$scn/leaks" "$scn/double_destroy" "$scn/crash" "$scn/waiting"; do
	if [ ! -e "$f" ]; then
		echo "$t_name: $f is missing"
		exit 77
	fi
done

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

# report goes to reports/NAME.PID.json, its text report to NAME.log.
ns=rr$$
report() {
	name=$1
	prog=$2
	shift 2
	set +e
	LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS=$ns.$name \
		RDMACHECK_OPTIONS="json=$t_dir/reports/$name.%p.json" \
		"$scn/$prog" "$@" >/dev/null 2>"$t_dir/$name.log"
	rc=$?
	set -e
	# The one report of that run.
	json=$(ls "$t_dir/reports/$name".*.json 2>/dev/null || true)
	if [ -z "$json" ] || [ "$(echo "$json" | wc -l)" != 1 ]; then
		fail "$name: expected one report, got '$json' (exit $rc)"
		json=/nonexistent
	fi
}

# show: the start of the last run's outputs, for failure messages.
show() {
	printf '(exit %s) ' "$rc"
	head -n 12 "$t_dir/out"
	head -n 5 "$t_dir/err"
}

# count PATTERN TEXT: number of lines of TEXT matching PATTERN.
count() {
	printf '%s\n' "$2" | grep -c -e "$1" || true
}

cd "$t_dir"
mkdir reports
report leaks1 leaks bad
[ "$rc" = 23 ] || fail "leaks: exit $rc, expected 23"
leaks1=$json
report leaks2 leaks bad
leaks2=$json
report dd double_destroy bad
[ "$rc" = 23 ] || fail "double_destroy: exit $rc, expected 23"
dd=$json
# (2>/dev/null: the shell's "Segmentation fault" note.)
report crash crash 2>/dev/null
[ "$rc" -ge 128 ] || fail "crash: exit $rc, expected a signal"
crash=$json
mkdir clean
report clean leaks clean
[ "$rc" = 0 ] || fail "leaks clean: exit $rc"
mv "$json" clean/
clean=clean/${json##*/}
[ "$t_fail" = 0 ] || exit 1

# --- Text: the same blocks as the shim printed, then the summary lines.
pid=$(basename "$dd" | cut -d. -f2)
run "$tool" "$dd"
[ "$rc" = 1 ] && pass "double_destroy: exit 1" ||
	fail "double_destroy: exit $rc: $err"
grep -v ' rdmacheck: [0-9]* errors' "$t_dir/out" >text.mine
grep -v ' rdmacheck: [0-9]* errors' "$t_dir/dd.log" >text.shim
cmp -s text.mine text.shim && pass "text blocks identical to the shim's" ||
	fail "text blocks differ from the shim's: $(diff text.shim text.mine)"
[ "$(count "^==$pid== ERROR: rdmacheck: .*\[double-destroy\]$" "$out")" = 1 ] &&
	pass "rule and pid prefix" || fail "no [double-destroy] block: $(show)"
[ "$(count ' in drop_id .*double_destroy.c:9$' "$out")" = 2 ] &&
	pass "scenario functions named" || fail "drop_id frames missing: $(show)"
sum="1 errors, 0 warnings, 0 leaked objects (0 suppressed)"
echo "$out" | grep -qx "==$pid== rdmacheck: $sum" &&
	pass "summary line" || fail "summary line: $(show)"
echo "$out" | grep -qx "==total== rdmacheck: $sum in 1 process" &&
	pass "total line" || fail "total line: $(show)"

# Leak groups write their creation stack once ("stack_ref": "finding"):
# the tool takes the finding's stack and prints what the shim printed
# (and its --json writes the whole stack again, below).
grep -q '"stack_ref":"finding"' "$leaks1" &&
	pass "leak objects refer to the finding's stack" ||
	fail "no stack_ref in $leaks1"
run "$tool" "$leaks1"
grep -v ' rdmacheck: [0-9]* errors' "$t_dir/out" >text.mine
grep -v ' rdmacheck: [0-9]* errors' "$t_dir/leaks1.log" >text.shim
cmp -s text.mine text.shim && grep -q 'at the stack above$' text.mine &&
	pass "leak blocks identical to the shim's" ||
	fail "leak blocks differ from the shim's: $(diff text.shim text.mine)"

run "$tool" --summary - <"$dd"
[ "$rc" = 1 ] && echo "$out" | grep -qx "==$pid== rdmacheck: $sum" &&
	pass "report on standard input" || fail "stdin: $(show)"

# --- Crash reports: the real one has status crashed and the fatal-signal
# finding, whose first frame (the faulting instruction) is named offline;
# a crash fails the gate (exit 3).  A crash-style copy of a real report
# (function/file null, as the signal handler writes them) must come out
# symbolized offline.
run "$tool" "$crash"
[ "$rc" = 3 ] &&
	echo "$out" | grep -q 'rdmacheck: the process crashed: it died of signal 11 (SIGSEGV)' &&
	echo "$out" | grep -q 'ERROR: rdmacheck: SIGSEGV (SEGV_MAPERR) at address 0x0 \[fatal-signal\]$' &&
	echo "$out" | grep -q '^    #0 0x[0-9a-f]* in crash_null ' &&
	pass "crash report read" || fail "crash report: exit $rc: $(show)"
sed -e 's/"function": "[^"]*"/"function": null/g' \
	-e 's/"file": "[^"]*"/"file": null/g' -e 's/"line": [0-9]*/"line": 0/g' \
	-e 's/"status": "exited"/"status": "crashed"/' \
	-e 's/"symbolized": true/"symbolized": false/' "$leaks1" >unsym.json
grep -q '"function": "' unsym.json && fail "sed left a function name"
run "$tool" unsym.json
unsym_out=$out
echo "$out" | grep -q ' in make_qp .*leaks.c:31$' &&
	echo "$out" | grep -q ' in fetch_event .*leaks.c:20$' &&
	pass "crash-style frames symbolized offline" ||
	fail "crash-style frames not symbolized: $(show)"
run "$tool" "$leaks1"
printf '%s\n' "$unsym_out" | grep -v 'the process crashed' >a.txt
printf '%s\n' "$out" >b.txt
cmp -s a.txt b.txt && pass "offline symbolization matches the shim's" ||
	fail "offline symbolization differs: $(diff b.txt a.txt)"
# A thread's stack ends in libc's start code: named, never with a
# file:line, by the shim and offline (by libdw, when the tool has it),
# whether or not libc6-dbg is installed.
report late waiting returns-after-destroy
mkdir thread
mv "$json" thread/
json=thread/${json##*/}
start='"function": "start_thread", "file": null, "line": 0'
grep -q "$start" "$json" && ! grep -q '"function": "start_thread", "file": "' \
	"$json" && pass "start_thread named without a line by the shim" ||
	fail "start_thread frames in $json: $(grep -o '"function": "start_thread"[^}]*' "$json" | head -n 2)"
sed -e 's/"function": "[^"]*"/"function": null/g' \
	-e 's/"file": "[^"]*"/"file": null/g' -e 's/"line": [0-9]*/"line": 0/g' \
	-e 's/"status": "exited"/"status": "crashed"/' \
	-e 's/"symbolized": true/"symbolized": false/' "$json" >late.json
run "$tool" late.json
echo "$out" | grep -q ' in waiter .*waiting\.c:[0-9]*$' &&
	echo "$out" | grep -q ' in start_thread (/[^ ]*/libc\.so\.6+0x[0-9a-f]*)$' &&
	! echo "$out" | grep -q ' in start_thread [^(]' &&
	pass "start_thread named without a line offline" ||
	fail "start_thread offline: $(echo "$out" | grep -m 3 'waiter\|start_thread')"
# A module that is gone leaves module+offset.
sed 's|"module": "[^"]*/leaks"|"module": "/nonexistent/leaks"|g' unsym.json \
	>gone.json
run "$tool" gone.json
# 3: the sed above made it a crash report
[ "$rc" = 3 ] && echo "$out" | grep -q '(/nonexistent/leaks+0x[0-9a-f]*)$' &&
	pass "missing module: module+offset kept" ||
	fail "missing module: exit $rc: $(show)"

# DWARF 5 names the compilation directory as directory 0; a file in it
# is there once, also when the directory is relative (-ffile-prefix-map).
# tests/fuzz/symbolize/dwarf5: built in tests/fuzz, mapped to tests/fuzz.
elf=$top_srcdir/tests/fuzz/symbolize/dwarf5
cat >dwarf5.json <<EOF
{"tool": "rdmacheck", "pid": 7, "status": "crashed", "findings": [
 {"rule": "leak-id", "severity": "leak", "call": null, "count": 1,
  "message": "cm id 0x1 leaked", "stack": [{"pc": "0x40012a",
  "module": "$elf", "offset": "0x40012a", "function": null, "file": null,
  "line": 0}]}],
 "summary": {"errors": 0, "warnings": 0, "leaks": 1, "suppressed": 0}}
EOF
run "$tool" dwarf5.json
echo "$out" | grep -qx '    #0 0x40012a in _start tests/fuzz/elf_seed.c:21' &&
	pass "DWARF 5, relative compilation directory: named once" ||
	fail "DWARF 5 file path: $(show)"

# --- Merge: the two runs of leaks collapse; leaks are summed.  Findings
# merge by fingerprint (no line numbers, no addresses), so the two cm ids
# that leaks.c creates on one line are one finding too.
run "$tool" "$leaks1" "$leaks2"
n_unmerged=$(count '\[leak-qp\]$' "$out")
run "$tool" --merge "$leaks1" "$leaks2"
[ "$n_unmerged" = 2 ] && [ "$(count '\[leak-qp\]$' "$out")" = 1 ] &&
	[ "$(count '^==merged== LEAK: ' "$out")" = 4 ] &&
	pass "merge collapses identical findings" ||
	fail "merge: $n_unmerged unmerged leak-qp; $(show)"
sum="0 errors, 0 warnings, 10 leaked objects (0 suppressed)"
echo "$out" |
	grep -q '^  2 leaked objects in total in 2 processes (pids [0-9]*, [0-9]*)$' &&
	echo "$out" |
	grep -qx "==total== rdmacheck: $sum in 2 processes, 4 unique findings" &&
	pass "merge sums leaks" || fail "merge counts: $(show)"
# A directory argument is every *.json in it.
run "$tool" --merge reports
[ "$rc" = 3 ] && echo "$out" | grep -q 'in 4 processes, 6 unique findings$' &&
	pass "directory argument" || fail "directory: exit $rc: $(show)"

# --- JSON.
jqlib=$top_srcdir/tests/lib	# report.jq: frames_inlined
if [ -n "${JQ:-}" ] && command -v "$JQ" >/dev/null 2>&1; then
	run "$tool" --json reports "$clean"
	printf '%s\n' "$out" >merged.json
	[ "$rc" = 3 ] && "$JQ" -e -L "$jqlib" 'include "report";
		frames_inlined |
		(.processes | length) == 5 and
		.summary == {"errors": 2, "warnings": 0, "leaks": 10,
			     "suppressed": 0} and
		([.processes[] | select(.status == "crashed")] | length) == 1 and
		([.processes[] | select(.status == "crashed")][0].signal == 11) and
		(.findings | length) == 6 and
		([.findings[] | select(.rule == "fatal-signal")][0] |
		 .severity == "error" and .call == null and
		 .stack[0].function == "crash_null") and
		([.findings[] | select(.rule == "leak-qp")][0] |
		 .count == 2 and .occurrences == 2 and
		 (.processes | length) == 2) and
		([.findings[] | select(.rule == "double-destroy")][0] |
		 .count == 1 and .severity == "error" and
		 .call == "rdma_destroy_id" and
		 .stack[0].function == "drop_id" and
		 .objects[0].destroyed.stack[0].function == "drop_id")
		' merged.json >/dev/null &&
		pass "--json: merged document" ||
		fail "--json: $(show)"
	run "$tool" --json "$leaks1"
	printf '%s\n' "$out" | "$JQ" -e -L "$jqlib" 'include "report";
		frames_inlined | ([.findings[] | .stack as $s
		| .objects[] | select(.created != null)
		| select(.created.stack != $s)] | length == 0) and
		([.findings[].objects[] | select(.created != null)] | length
		 > 0)' >/dev/null &&
		pass "--json: each leaked object with its creation stack" ||
		fail "--json: an object's stack not resolved: $(show)"
	run "$tool" --json unsym.json
	printf '%s\n' "$out" | "$JQ" -e -L "$jqlib" 'include "report";
		frames_inlined | [.findings[].stack[] |
		select(.function == null and .module != null and
		       (.module | test("/leaks$")))] | length == 0' \
		>/dev/null && pass "--json: frames symbolized" ||
		fail "--json: unsymbolized frames left: $(show)"
else
	echo "$t_name: jq not found: JSON checks skipped"
fi

# --- Suppressions and the exit status.
cat >supp <<'EOF'
# every leak of the scenario program, by module basename
leak-*:leaks
EOF
run "$tool" --suppressions=supp "$leaks1" "$dd"
[ "$rc" = 1 ] && [ "$(count '^==[0-9]*== LEAK' "$out")" = 0 ] &&
	echo "$out" | grep -q ' 0 leaked objects (5 suppressed)$' &&
	pass "suppressions: leaks suppressed, error remains" ||
	fail "suppressions: exit $rc: $(show)"
echo 'double-destroy:drop_id' >>supp
run "$tool" --summary --suppressions=supp "$leaks1" "$dd"
sum="0 errors, 0 warnings, 0 leaked objects (6 suppressed)"
[ "$rc" = 0 ] && [ "$(echo "$out" | wc -l)" = 3 ] &&
	echo "$out" | grep -qx "==total== rdmacheck: $sum in 2 processes" &&
	pass "suppressions: all suppressed, --summary, exit 0" ||
	fail "suppressions/summary: exit $rc: $(show)"
# By function name, which only offline symbolization provides here.
echo 'leak-qp:make_qp' >supp2
run "$tool" --summary -s supp2 unsym.json
echo "$out" | grep -q ' 4 leaked objects (1 suppressed)$' &&
	pass "suppression by offline-symbolized function" ||
	fail "suppression of unsymbolized report: $(show)"
echo 'no-such-rule:x' >supp3
run "$tool" -s supp3 "$clean"
[ "$rc" = 0 ] && echo "$err" | grep -q "supp3:1: unknown rule" &&
	pass "bad suppression line reported" || fail "supp3: $rc $err"

# A summary that says less than the findings cannot pass the gate.
sed 's/"summary": {"errors": 1,/"summary": {"errors": 0,/' "$dd" >under.json
run "$tool" --summary under.json
[ "$rc" = 1 ] && echo "$out" | grep -q ' 1 errors, ' &&
	pass "understated summary: exit 1" || fail "under.json: $(show)"

run "$tool" "$clean"
[ "$rc" = 0 ] && pass "clean report: exit 0" || fail "clean: exit $rc $err"
run "$tool" "$crash" "$clean"
[ "$rc" = 3 ] && pass "a crash among clean reports: exit 3" ||
	fail "crash+clean: exit $rc"

# --- Usage and input errors: exit 2 with a message.
expect2() {
	what=$1
	pattern=$2
	shift 2
	run "$tool" "$@"
	if [ "$rc" = 2 ] && [ -z "$out" ] && echo "$err" | grep -q -e "$pattern"
	then
		pass "$what: exit 2"
	else
		fail "$what: exit $rc, stdout '$out', stderr '$err'"
	fi
}
mkdir empty
expect2 "no argument" 'no report given'
expect2 "unknown option" 'Usage' --bogus "$clean"
expect2 "missing file" 'nothing.json: cannot open' nothing.json
expect2 "empty directory" 'empty: no \*.json report' empty
expect2 "unreadable suppressions" 'suppressions' -s nothing.supp "$clean"

# Malformed JSON: FILE:LINE:COLUMN and jansson's message, the line and
# column counted from the start of the file (columns in characters); at
# the end of the file, the column of its last character.
head -c 1000 "$leaks1" >trunc.json
line=$(($(wc -l <trunc.json) + 1))
col=$(tail -n 1 trunc.json | wc -m)
expect2 "truncated" \
	"^rdmacheck-report: trunc.json:$line:$col: malformed JSON: .*end of \(input\|file\)" \
	trunc.json
printf '{"tool": "rdmacheck",\n  "pid"' >trunc2.json
expect2 "truncated after a key" \
	"^rdmacheck-report: trunc2.json:2:7: malformed JSON: ':' expected near end of file" \
	trunc2.json
: >zero.json
expect2 "empty file" \
	"^rdmacheck-report: zero.json:1:1: malformed JSON: '{' expected near end of file" \
	zero.json
printf '\377\376\001garbage' >garbage.json
expect2 "garbage bytes" \
	'garbage.json:1:1: malformed JSON: unable to decode byte 0xff' \
	garbage.json
sed 's/"exe": "/"exe": "\o001/' "$clean" >ctl.json
line=$(grep -n '"exe": ' ctl.json | head -n 1 | cut -d: -f1)
expect2 "control byte in a string" \
	"ctl.json:$line:[0-9]*: malformed JSON: control character 0x1" \
	ctl.json
# A bad escape in a finding, past the first line: its own line and the
# column of the character after the backslash.
sed '0,/"message": "/s//"message": "\\q/' "$leaks1" >esc.json
line=$(grep -n '"message": "\\q' esc.json | cut -d: -f1)
col=$(($(grep '"message": "\\q' esc.json | awk '{ print index($0, "\\q") }') + 1))
expect2 "bad escape" \
	"^rdmacheck-report: esc.json:$line:$col: malformed JSON: invalid escape" \
	esc.json
printf '{"tool": "rdmacheck"} x' >trail.json
expect2 "trailing data" \
	'trail.json:1:23: malformed JSON: end of file expected' trail.json
printf '{"tool": "rdmacheck",\n "findings": [{}, {} {}]}' >comma.json
expect2 "missing comma between findings" \
	"comma.json:2:22: malformed JSON: ',' or ']' expected" comma.json
printf '{"tool": "rdmacheck"\n  "pid": 1}' >comma2.json
expect2 "missing comma between members" \
	"comma2.json:2:3: malformed JSON: ',' or '}' expected" comma2.json
# \u0080..\u00ff stand for raw bytes (doc/reports.md): they come back as
# written, while a raw UTF-8 character and an escaped backslash stay.
sed '0,/"message": "/s//"message": "\\u00ff\\u00e9 \xc3\xa9 \\\\u00e9 /' \
	"$leaks1" >bytes.json
run "$tool" --json bytes.json
echo "$out" | grep -q '"message": "\\u00ff\\u00e9 '"$(printf '\303\251')"' \\\\u00e9 ' &&
	echo "$out" | jq -e . >/dev/null &&
	pass "\\u00XX bytes read back as bytes" ||
	fail "bytes.json: $(echo "$out" | grep -m 1 '"message"')"
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "["; }' >deep.json
expect2 "deep nesting" 'deep.json:1:[0-9]*: malformed JSON: maximum parsing depth' \
	deep.json
sed 's/"pid": \([0-9]*\)/"pid": "\1"/' "$dd" >type1.json
expect2 "pid as a string" \
	'type1.json: pid: expected a number, got a string' \
	type1.json
sed 's/"count": 1,/"count": "1",/' "$dd" >type2.json
expect2 "count as a string" \
	'type2.json: findings\[0\].count: expected a number' \
	type2.json
# A bad finding's message is whole, however long the file's name.
long=$(printf '%0200d' 0)/$(printf '%0200d' 1)/$(printf '%0200d' 2)
mkdir -p "$long"
cp type2.json "$long/type2.json"
expect2 "count as a string, a long path" \
	"$long/type2.json: findings\\[0\\].count: expected a number" \
	"$long/type2.json"
# Format 2 (the shim's): frames are in "frames", stacks index them.
sed 's/"offset": "0x[0-9a-f]*"/"offset": 42/' "$dd" >type3.json
expect2 "offset as a number" \
	'type3.json: frames\[0\].offset: expected a string' \
	type3.json
sed 's/"pc": "0x/"pc": "0xzz/' "$dd" >type4.json
expect2 "bad hex" \
	'type4.json: frames\[0\].pc: expected a "0x..." hex string' \
	type4.json
sed 's/^\( *"stack": \[\)0/\1999/' "$dd" >index1.json
expect2 "frame index out of range" \
	'index1.json: findings\[0\].stack\[0\]: frame index out of range' \
	index1.json
sed 's/^  "frames": /  "frames_gone": /' "$dd" >index2.json
expect2 "frame indices without frames" \
	'index2.json: findings\[0\].stack\[0\]: a frame index without "frames"' \
	index2.json
sed 's/"format": 2,/"format": 3,/' "$dd" >format3.json
expect2 "a newer format" 'format3.json: format: newer than' format3.json
# Format 1: a stack holds the frame objects.
f1=$top_srcdir/tests/fuzz/report/double-destroy.json
sed 's/"offset": "0x[0-9a-f]*"/"offset": 42/' "$f1" >type3f1.json
expect2 "format 1: offset as a number" \
	'type3f1.json: findings\[0\].stack\[0\].offset: expected a string' \
	type3f1.json
sed 's/"pc": "0x/"pc": "0xzz/' "$f1" >type4f1.json
expect2 "format 1: bad hex" \
	'type4f1.json: findings\[0\].stack\[0\].pc: expected a "0x..." hex string' \
	type4f1.json
sed 's/"severity": "error"/"severity": "fatal"/' "$dd" >type5.json
expect2 "unknown severity" 'type5.json: findings\[0\].severity' type5.json
sed 's/"findings": \[/"findings": 3, "x": [/' "$dd" >type6.json
expect2 "findings as a number" \
	'type6.json: findings: expected an array, got a number' \
	type6.json
printf '[1, 2]' >type7.json
expect2 "not an object" 'type7.json: not a JSON object' type7.json
sed 's/"tool": "rdmacheck"/"tool": "other"/' "$dd" >type8.json
expect2 "another tool" 'type8.json: tool: not an rdmacheck report' type8.json
sed 's/"summary": {"errors": 1,/"summary": {"errors": -1,/' "$dd" >type9.json
expect2 "negative count" \
	'type9.json: summary.errors: integer out of range' \
	type9.json
# A bad report among good ones is still an error.
expect2 "one bad among good" 'type1.json' "$clean" type1.json "$dd"

# --- Never a crash: every truncation (in steps) and byte mutations of a
# real report end in a clean exit 2, or success for the whole file.
size=$(wc -c <"$dd")
# Without its final newline the document is still whole: only shorter
# truncations must be refused.
whole=$(($(printf '%s' "$(cat "$dd")" | wc -c)))
step=$((size / 300 + 1))
crashes=0
n=0
i=0
while [ "$i" -le "$size" ]; do
	head -c "$i" "$dd" >fuzz.json
	set +e
	"$tool" fuzz.json >/dev/null 2>fuzz.err
	rc=$?
	set -e
	n=$((n + 1))
	if [ "$i" -lt "$whole" ] && [ "$rc" != 2 ]; then
		crashes=$((crashes + 1))
		cp fuzz.json "fuzz-trunc-$i.json"
	fi
	i=$((i + step))
done
# shellcheck disable=SC1003
for c in '"' '\\' '{' ']' ',' '0' 'x' '\377' '\000'; do
	i=7
	while [ "$i" -lt "$size" ]; do
		{
			head -c "$i" "$dd"
			# shellcheck disable=SC2059
			printf "$c"
			tail -c +$((i + 2)) "$dd"
		} >fuzz.json
		set +e
		"$tool" fuzz.json >/dev/null 2>fuzz.err
		rc=$?
		set -e
		n=$((n + 1))
		if [ "$rc" -gt 2 ]; then
			crashes=$((crashes + 1))
			cp fuzz.json "fuzz-mut-$i.json"
		fi
		i=$((i + step * 7))
	done
done
[ "$crashes" = 0 ] && pass "fuzz: $n inputs, no crash" ||
	fail "fuzz: $crashes of $n inputs crashed or were accepted"

# --- The manual page formats cleanly.
if command -v groff >/dev/null 2>&1; then
	run groff -man -ww -z "$top_srcdir/doc/rdmacheck-report.1"
	[ "$rc" = 0 ] && [ -z "$err" ] && pass "man page: no groff warning" ||
		fail "man page: $err"
fi

exit "$t_fail"
