#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/formats.sh: what rdmacheck-report gives CI systems,
# read back with real parsers: fingerprints in the shim's JSON (stable
# across runs and rebuilds, the same when the tool computes them),
# --merge by fingerprint, --baseline, and the SARIF 2.1.0 (validated
# against the official schema with python3-jsonschema), JUnit (xmllint
# and Python's XML parser) and GitHub annotation formats, over real
# reports of the scenario programs on the loopback backend.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"
: "${RDMACHECK_SHIM:?run this test from make check}"
: "${RDMACHECK_LOOPBACK_DIR:?run this test from make check}"

t_name=formats
tool=$top_builddir/tools/rdmacheck-report
scn=$top_builddir/tests/scenarios
py=${PYTHON3:-python3}
jq=${JQ:-jq}
jqlib=$top_srcdir/tests/lib	# report.jq: frames_inlined
schema=$top_srcdir/tests/sarif/sarif-schema-2.1.0.json
validate="$py $top_srcdir/tests/sarif/validate.py"

for f in "$tool" "$RDMACHECK_SHIM" "$scn/leaks" "$scn/double_destroy"; do
	if [ ! -e "$f" ]; then
		echo "$t_name: $f is missing"
		exit 77
	fi
done
# The readers: quickstart.sh installs them, so CI always has them.
for t in "$py" "$jq" xmllint; do
	if [ "$t" = no ] || ! command -v "$t" >/dev/null 2>&1; then
		echo "$t_name: $t not found (./quickstart.sh installs it): skipped"
		exit 77
	fi
done
if ! "$py" -c 'import jsonschema' 2>/dev/null; then
	echo "$t_name: python3-jsonschema not found (./quickstart.sh installs it): skipped"
	exit 77
fi

# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

ns=rf$$
# report NAME PROG ARG...: run a scenario under the shim; json is the
# path of its one report.
report() {
	name=$1
	prog=$2
	shift 2
	set +e
	LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS=$ns.$name \
		RDMACHECK_OPTIONS="json=$t_dir/$name.%p.json" \
		"$scn/$prog" "$@" >/dev/null 2>"$t_dir/$name.log"
	set -e
	json=$(ls "$t_dir/$name".*.json)
}

# jqt WHAT FILTER FILE: the jq filter is true of FILE.
jqt() {
	if "$jq" -e "$2" "$3" >/dev/null; then
		pass "$1"
	else
		fail "$1: $(head -c 600 "$3")"
	fi
}

cd "$t_dir"
report leaks1 leaks bad
leaks1=$json
report leaks2 leaks bad
leaks2=$json
report dd double_destroy bad
dd=$json
report clean leaks clean
clean=$json
# A crash report is written from the signal handler: its build ids too.
report crash crash 2>/dev/null
crash=$json

# --- Every report valid against the published schema.
run $validate "$top_srcdir/doc/report.schema.json" "$leaks1" "$leaks2" \
	"$dd" "$clean" "$crash"
[ "$rc" = 0 ] && pass "reports valid against doc/report.schema.json" ||
	fail "report schema: $out $err"
"$jq" '.findings[0].severity = "fatal"' "$dd" >badsev.json
run $validate "$top_srcdir/doc/report.schema.json" badsev.json
[ "$rc" = 1 ] && pass "report schema rejects a bad severity" ||
	fail "report schema accepted badsev.json: $rc $out"

# --- Where and when: host, start and end time, each module's build id.
"$jq" -e --arg host "$(uname -n)" '
	def t: .[0:19] + "Z" | fromdate;
	.host == $host and
	([.start_time, .end_time] |
	 map(test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}Z$")) |
	 all) and
	(.start_time | t) <= (.end_time | t) and
	((.end_time | t) - (.start_time | t)) < 600 and
	((now - (.end_time | t)) | fabs) < 600' "$leaks1" >/dev/null &&
	pass "host, start_time, end_time" ||
	fail "host/times: $(jq -c '[.host, .start_time, .end_time]' "$leaks1")"
exe_id=$(readelf -n "$scn/leaks" | sed -n 's/^ *Build ID: *//p')
[ -n "$exe_id" ] || fail "readelf found no build id in $scn/leaks"
for r in "$leaks1" "$crash"; do
	"$jq" -e -L "$jqlib" --arg id "$exe_id" '
		include "report"; frames_inlined |
		([.modules[].path] | unique) as $m |
		([.findings[] | .stack[], .objects[].created.stack[]? |
		  .module | select(. != null)] | unique) as $f |
		($f - $m) == [] and
		([.modules[] | select(.path | test("/(leaks|crash)$"))][0] |
		 .build_id) as $b |
		($b | test("^[0-9a-f]{40}$")) and
		(if $r == "leaks" then $b == $id else true end)' \
		--arg r "$(basename "$r" | cut -d. -f1 | sed 's/1$//')" "$r" \
		>/dev/null &&
		pass "modules: every frame's, with build ids ($(basename "$r"))" ||
		fail "modules of $r: $(jq -c .modules "$r")"
done

# Symbolizing offline against a file rebuilt since the report would name
# the wrong functions: refused, with a note, when the build ids differ.
mkdir same rebuilt
cp "$scn/leaks" same/leaks
cp "$scn/double_destroy" rebuilt/leaks
for d in same rebuilt; do
	"$jq" --arg exe "$scn/leaks" --arg to "$t_dir/$d/leaks" '
		.symbolized = false |
		walk(if type == "object" and (.module? // .path?) == $exe
		     then (if has("module") then .module = $to | .function = null |
			   .file = null | .line = 0 else .path = $to end)
		     else . end)' "$leaks1" >"$d.json"
done
run "$tool" same.json
echo "$out" | grep -q ' in make_qp .*leaks\.c:31$' && [ -z "$err" ] &&
	pass "same build id: symbolized offline" ||
	fail "same build id: $out $err"
run "$tool" rebuilt.json
echo "$err" | grep -q "rebuilt/leaks has build id [0-9a-f]*, not the report's $exe_id: its frames are not symbolized" &&
	! echo "$out" | grep -q ' in make_qp ' &&
	echo "$out" | grep -q "(.*/rebuilt/leaks+0x[0-9a-f]*)$" &&
	pass "rebuilt module: refused with a note, module+offset kept" ||
	fail "rebuilt module: $out $err"

# Many hosts: equal pids stay apart, named host:pid.
"$jq" '.host = "other-host"' "$leaks2" >host2.json
run "$tool" --merge "$leaks1" host2.json
echo "$out" | grep -q "in 2 processes (pids $(uname -n):[0-9]*, other-host:[0-9]*)$" &&
	pass "--merge: processes of two hosts named host:pid" ||
	fail "two hosts: $out"
run "$tool" --format=json "$leaks1" host2.json
printf '%s\n' "$out" | "$jq" -e '[.processes[].host] | .[1] == "other-host" and
	(.[0] | length > 0)' >/dev/null &&
	printf '%s\n' "$out" | "$jq" -e '.processes[0].start_time | test("Z$")' >/dev/null &&
	pass "--format=json: host and times of each process" ||
	fail "json hosts: $out"

# --- Leak blocks in a stable order: by count (biggest first), then in the
# order of rules.def.
order=$(cut -f 3 "$top_builddir/tools/rules.tab" | tr '\n' ' ')
"$jq" -e --arg order "$order" '
	($order | split(" ")) as $o |
	[.findings[] | select(.severity == "leak") |
	 . as $f | [-$f.count, ($o | index([$f.rule]) // 999)]] as $k |
	$k == ($k | sort) and ($k | length) == 5' "$leaks1" >/dev/null &&
	pass "leak findings by count, then rule" ||
	fail "leak order: $("$jq" -c '[.findings[] | [.rule, .count]]' "$leaks1")"

# --- Fingerprints: in every finding, 16 hex digits, the same in two runs.
# leaks.c creates two cm ids on one line: 5 findings, 4 fingerprints.
jqt "report format 2: each frame once, stacks of indices" '
	.frames as $f | .format == 2 and ($f | length) > 0 and
	($f | unique | length) == ($f | length) and
	([.findings[] | .stack[], .objects[].created.stack[]?] |
	 map(type == "number" and . < ($f | length)) | all)' "$leaks1"
jqt "every finding has a fingerprint" \
	'[.findings[].fingerprint | test("^[0-9a-f]{16}$")] | all and length == 5' \
	"$leaks1"
"$jq" -c '[.findings[].fingerprint] | unique' "$leaks1" >fp1
"$jq" -c '[.findings[].fingerprint] | unique' "$leaks2" >fp2
cmp -s fp1 fp2 && pass "two runs: the same fingerprints" ||
	fail "fingerprints differ between runs: $(cat fp1 fp2)"
[ "$("$jq" '[.findings[].fingerprint] | unique | length' "$leaks1")" = 4 ] &&
	pass "distinct findings: distinct fingerprints" ||
	fail "fingerprints collide: $(cat fp1)"

# The tool computes the same ones for a report without them (as from a
# crash handler, names gone: symbolized offline first).
"$jq" 'del(.findings[].fingerprint) | .symbolized = false |
	.frames[] |= (.function = null | .file = null | .line = 0)' \
	"$leaks1" >nofp.json
run "$tool" --format=json nofp.json
printf '%s\n' "$out" | "$jq" -c '[.findings[].fingerprint] | unique' >fp3
cmp -s fp1 fp3 && pass "offline fingerprints equal the shim's" ||
	fail "offline fingerprints differ: $(cat fp1 fp3)"

# A rebuild moves code and lines: every offset, pc and line shifted.
"$jq" 'del(.findings[].fingerprint) |
	def shift: if type == "object" and has("offset") then
		.offset += "1" | .pc += "0" | .line += 7 else . end;
	walk(shift)' "$leaks2" >rebuilt.json
[ "$("$jq" -L "$jqlib" 'include "report"; frames_inlined |
	[.findings[].stack[].line] | min' rebuilt.json)" = 7 ] ||
	fail "rebuilt.json: lines not shifted"
run "$tool" --merge --summary "$leaks1" rebuilt.json
echo "$out" | grep -q ' in 2 processes, 4 unique findings$' &&
	pass "--merge: a rebuild's identical findings merge" ||
	fail "--merge of a rebuild: $out"
# A different function is a different finding.
sed 's/"function": "make_qp"/"function": "make_qp2"/' "$leaks2" |
	"$jq" 'del(.findings[].fingerprint)' >other.json
run "$tool" --merge --summary "$leaks1" other.json
echo "$out" | grep -q ' in 2 processes, 5 unique findings$' &&
	pass "--merge: another function stays apart" ||
	fail "--merge with another function: $out"

# --- Baselines.
run "$tool" --baseline="$leaks1" rebuilt.json
[ "$rc" = 0 ] && ! echo "$out" | grep -q 'LEAK:' &&
	echo "$out" | grep -q '(0 suppressed, 5 in the baseline) in 1 process$' &&
	pass "--baseline: known findings do not fail" ||
	fail "--baseline known: exit $rc: $out"
run "$tool" --baseline="$leaks1" "$dd" rebuilt.json
[ "$rc" = 1 ] && [ "$(echo "$out" | grep -c 'ERROR: .*\[double-destroy\]$')" = 1 ] &&
	! echo "$out" | grep -q 'LEAK:' &&
	pass "--baseline: a new finding fails and is the only one shown" ||
	fail "--baseline new: exit $rc: $out"
"$tool" --format=json "$leaks1" "$clean" >base.json || true
run "$tool" --baseline=base.json --summary "$leaks2"
[ "$rc" = 0 ] && pass "--baseline: rdmacheck-report's own JSON" ||
	fail "--baseline base.json: exit $rc: $out $err"
mkdir basedir
cp "$leaks1" "$dd" basedir/
run "$tool" --baseline=basedir --summary "$leaks2" "$dd"
[ "$rc" = 0 ] && pass "--baseline: a directory of reports" ||
	fail "--baseline dir: exit $rc: $out $err"
run "$tool" --baseline=nothing.json "$leaks2"
[ "$rc" = 2 ] && echo "$err" | grep -q 'nothing.json: cannot open' &&
	pass "--baseline: missing file is exit 2" ||
	fail "--baseline missing: exit $rc: $err"

# --- SARIF: every document valid against the official 2.1.0 schema.
n=0
for args in "$leaks1" "$dd" "$clean" "--merge $leaks1 $leaks2 $dd" \
	"--baseline=$leaks1 $dd $leaks2" "--strip-path-prefix=$top_srcdir/ $dd"
do
	n=$((n + 1))
	# shellcheck disable=SC2086
	"$tool" --format=sarif $args >"s$n.sarif" || true
done
run $validate "$schema" s*.sarif
[ "$rc" = 0 ] && pass "SARIF: $n documents valid against the 2.1.0 schema" ||
	fail "SARIF schema: $out $err"
# The validator sees a broken document.
"$jq" '.runs[0].results[0].level = "fatal"' s2.sarif >broken.json
run $validate "$schema" broken.json
[ "$rc" = 1 ] && pass "SARIF: the validator rejects a bad level" ||
	fail "validator accepted a bad document: $rc $out"
nrules=$(wc -l <"$top_builddir/tools/rules.tab")
jqt "SARIF: every rule, with help" \
	"(.runs[0].tool.driver.rules | length) == $nrules and
	 ([.runs[0].tool.driver.rules[] | .help.text | length > 0] | all)" s2.sarif
jqt "SARIF: double-destroy result" '
	.runs[0].results[0] as $r | .runs[0].tool.driver.rules as $rules |
	$r.ruleId == "double-destroy" and $r.level == "error" and
	$rules[$r.ruleIndex].id == "double-destroy" and
	($r.locations[0].physicalLocation.artifactLocation.uri |
	 test("^file:///.*/double_destroy\\.c$")) and
	$r.locations[0].physicalLocation.region.startLine == 9 and
	$r.locations[0].logicalLocations[0].name == "drop_id" and
	($r.stacks[0].frames | length) >= 2 and
	($r.relatedLocations | map(.message.text) |
	 any(test("was created here")) and any(test("was destroyed here"))) and
	($r.partialFingerprints["rdmacheck/v1"] | test("^[0-9a-f]{16}$"))' s2.sarif
jqt "SARIF: merged, one result per fingerprint" '
	(.runs[0].results | length) == 5 and
	(.runs[0].invocations | length) == 3 and
	([.runs[0].results[] | select(.ruleId == "leak-qp")][0] |
	 .occurrenceCount == 2)' s4.sarif
jqt "SARIF: baselineState" '
	[.runs[0].results[] | .baselineState] | sort ==
	["new", "unchanged", "unchanged", "unchanged", "unchanged"]' s5.sarif
jqt "SARIF: --strip-path-prefix makes URIs relative to SRCROOT" '
	.runs[0].results[0].locations[0].physicalLocation.artifactLocation |
	.uri == "tests/scenarios/double_destroy.c" and .uriBaseId == "SRCROOT"' \
	s6.sarif
jqt "SARIF: clean report, no results" '.runs[0].results == []' s3.sarif

# --- JUnit: well-formed, and the counts and texts a CI server reads.
"$tool" --format=junit "$leaks1" "$dd" "$clean" >j1.xml || true
"$tool" --format=junit --merge "$leaks1" "$leaks2" >j2.xml || true
"$tool" --format=junit --merge "$clean" >j3.xml || true
run xmllint --noout j1.xml j2.xml j3.xml
[ "$rc" = 0 ] && pass "JUnit: well-formed (xmllint)" || fail "xmllint: $err"
cat >junit.py <<'EOF'
import sys
import xml.etree.ElementTree as ET

def suite(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites", root.tag
    (s,) = root.findall("testsuite")
    cases = s.findall("testcase")
    assert int(s.get("tests")) == len(cases), path
    fails = [c for c in cases if c.find("failure") is not None]
    assert int(s.get("failures")) == len(fails), path
    return cases, fails

cases, fails = suite("j1.xml")
assert len(cases) == 3 and len(fails) == 2, (len(cases), len(fails))
text = "".join(f.find("failure").text for f in fails)
assert "[double-destroy]" in text and "[leak-qp]" in text, text
assert all(c.get("classname") == "rdmacheck.leaks" for c in cases
           if "leaks" in c.get("name"))
cases, fails = suite("j2.xml")
assert len(cases) == 4 and len(fails) == 4, (len(cases), len(fails))
assert any("in 2 processes" in f.find("failure").text for f in fails)
cases, fails = suite("j3.xml")
assert len(cases) == 1 and not fails
print("ok")
EOF
run "$py" junit.py
[ "$rc" = 0 ] && pass "JUnit: testcases, failures and texts" ||
	fail "JUnit contents: $out $err"
# Bytes of invalid UTF-8 and control characters keep it well-formed.
sed 's/"message": "/"message": "\\u00ff\\u0001<\&>/' "$dd" >bytes.json
"$tool" --format=junit bytes.json >j4.xml || true
run xmllint --noout j4.xml
[ "$rc" = 0 ] && pass "JUnit: raw bytes in a report stay well-formed" ||
	fail "xmllint j4.xml: $err"

# --- GitHub annotations: one workflow command per finding.
run "$tool" --format=github "$dd" "$leaks1"
[ "$rc" = 1 ] && pass "github: exit 1" || fail "github: exit $rc"
printf '%s\n' "$out" >gh.txt
[ "$(grep -c '^::' gh.txt)" = 6 ] &&
	grep -q '^::error file=[^,]*/double_destroy\.c,line=9,title=rdmacheck double-destroy::==[0-9]*== ERROR: ' gh.txt &&
	grep -q '^::error file=[^,]*/leaks\.c,line=[0-9]*,title=rdmacheck leak-qp::' gh.txt &&
	! grep '^::' gh.txt | grep -v '%0A    #0 0x' | grep -q . &&
	tail -n 1 gh.txt | grep -q '^==total== rdmacheck: 1 errors' &&
	pass "github: annotations with file, line, title and the stack" ||
	fail "github: $(head -c 800 gh.txt)"
run "$tool" --format=github --strip-path-prefix="$top_srcdir/" "$dd"
echo "$out" | grep -q '^::error file=tests/scenarios/double_destroy\.c,line=9,' &&
	pass "github: --strip-path-prefix" || fail "github strip: $out"

# --- Generated suppressions.  The shim's gen_suppressions=1 prints an
# entry under each block; used as a file, they silence every finding, and
# the entries used are listed at exit at the default verbosity.
shim_run() {
	set +e
	LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR LD_PRELOAD=$RDMACHECK_SHIM \
		RDMACHECK_LOOPBACK_NS=$ns.gen RDMACHECK_OPTIONS="$1" \
		"$scn/$2" bad >/dev/null 2>"$3"
	rc=$?
	set -e
}
shim_run gen_suppressions=1 leaks gen.log
grep -A1 '^  Suppression:$' gen.log | grep '^    ' | sed 's/^    //' >gen.supp
[ "$(grep -c '\[leak-' gen.log)" = 5 ] && [ "$(wc -l <gen.supp)" = 5 ] &&
	grep -qx 'leak-qp:make_qp' gen.supp &&
	grep -qx 'leak-id:scn_id' gen.supp &&
	pass "gen_suppressions=1: an entry under each block" ||
	fail "gen_suppressions: $(cat gen.log)"
shim_run "suppressions=$t_dir/gen.supp" leaks supp.log
[ "$rc" = 0 ] && ! grep -q 'LEAK:' supp.log &&
	grep -q 'rdmacheck: Suppressions used:$' supp.log &&
	grep -Eq 'rdmacheck: +2 leak-id:scn_id$' supp.log &&
	pass "generated entries silence the run; used entries listed" ||
	fail "suppressions from gen_suppressions: exit $rc: $(cat supp.log)"
shim_run "" leaks plain.log
! grep -q 'Suppression' plain.log &&
	pass "no suppression text without the options" ||
	fail "plain run: $(cat plain.log)"

# rdmacheck-report --gen-suppressions: a file for many reports.
run "$tool" --gen-suppressions "$leaks1" "$leaks2" "$dd"
printf '%s\n' "$out" >tool.supp
[ "$rc" = 1 ] && [ "$(grep -vc '^#' tool.supp)" = 5 ] &&
	grep -qx 'double-destroy:drop_id' tool.supp &&
	grep -q '^# .* (and [0-9]* more)$' tool.supp &&
	pass "--gen-suppressions: one entry per distinct pattern" ||
	fail "--gen-suppressions: exit $rc: $out $err"
run "$tool" --suppressions=tool.supp "$leaks1" "$leaks2" "$dd"
[ "$rc" = 0 ] && echo "$out" | grep -q '(11 suppressed) in 3 processes$' &&
	pass "--gen-suppressions: its file silences them all" ||
	fail "generated file: exit $rc: $out $err"

run "$tool" --format=yaml "$dd"
[ "$rc" = 2 ] && echo "$err" | grep -q "unknown format 'yaml'" &&
	pass "unknown format: exit 2" || fail "--format=yaml: exit $rc $err"

finish
