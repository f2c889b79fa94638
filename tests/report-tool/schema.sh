#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/report-tool/schema.sh: every report the scenarios wrote (each
# scenario on each loopback build, copied into tests/scenarios/reports/ by
# run-scenario.sh) is valid against the published doc/report.schema.json,
# checked with python3-jsonschema in one run.  make check runs it after
# the scenarios; run alone, it checks what an earlier run left.
# pass never fails, so "A && pass || fail" is an if-then-else.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
: "${top_builddir:?run this test from make check}"

t_name=schema
py=${PYTHON3:-python3}
validate="$py $top_srcdir/tests/sarif/validate.py"
schema=$top_srcdir/doc/report.schema.json
dir=$top_builddir/tests/scenarios/reports
# shellcheck source=../lib/check.sh
. "$top_srcdir/tests/lib/check.sh"

if ! "$py" -c 'import jsonschema' 2>/dev/null; then
	echo "$t_name: python3-jsonschema is missing"
	exit 77
fi
set -- "$dir"/*.json
if [ ! -f "$1" ]; then
	echo "$t_name: no scenario report in $dir (run the scenarios first)"
	exit 77
fi
n=$#
run $validate "$schema" "$@"
[ "$rc" = 0 ] && pass "$n scenario reports valid against doc/report.schema.json" ||
	fail "$(printf '%s\n' "$out" | head -n 20) $err"

# The check can fail: a report without its "format" is refused.
${JQ:-jq} 'del(.format)' "$1" >"$t_dir/noformat.json"
run $validate "$schema" "$t_dir/noformat.json"
[ "$rc" = 1 ] && echo "$out" | grep -q "'format' is a required property" &&
	pass "a report without \"format\" is refused" ||
	fail "noformat.json: $rc $out $err"
exit "$t_fail"
