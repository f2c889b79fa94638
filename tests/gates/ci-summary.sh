#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/gates/ci-summary.sh: .ci/run's verdict, tests/lib/ci-summary.sh, on
# fixture logs: a green suite and tier exit 0 with their sum; a failed
# test, an unexplained tier difference, a tier without a summary, a
# failed command whose log shows no failure, a missing log, a log without
# counts all print "N failed" with N > 0 and exit 1.
. "${top_srcdir:-.}/tests/lib/check.sh"

sum=$top_srcdir/tests/lib/ci-summary.sh
d=$t_dir

# suite NAME PASS FAIL SKIP ERROR: an automake test-suite.log header.
suite()
{
	cat >"$d/$1" <<LOG
=======================================
   rdmacheck 0.1.0: ./test-suite.log
=======================================

# TOTAL: $(($2 + $3 + $4 + $5))
# PASS:  $2
# SKIP:  $4
# XFAIL: 0
# FAIL:  $3
# XPASS: 0
# ERROR: $5
LOG
}
suite green.log 245 0 0 0
suite red.log 244 1 0 0
suite error.log 244 0 0 1
suite skips.log 240 0 5 0
printf 'check-kernel: tier time 700 s\ncheck-kernel: 176 same, 31 known differences, 0 unexplained\n' \
	>"$d/tier-green.log"
printf 'check-kernel: 0 same, 0 known differences, 207 unexplained\n' \
	>"$d/tier-red.log"
printf 'check-kernel: FAIL: the guest did not finish its tests\n' \
	>"$d/tier-none.log"
printf 'no counts here\n' >"$d/nocounts.log"

# case NAME WANT-STATUS LINE ARGS...: ci-summary.sh ARGS prints LINE last.
case_()
{
	_n=$1 _want=$2 _line=$3
	shift 3
	sh "$sum" "$@" >"$d/$_n.out" 2>"$d/$_n.err"
	_st=$?
	_last=$(tail -n 1 "$d/$_n.out")
	if [ "$_st" != "$_want" ]; then
		fail "$_n: exit $_st, not $_want ($_last)"
	elif [ "$_last" != "$_line" ]; then
		fail "$_n: last line '$_last', not '$_line'"
	else
		pass "$_n: exit $_st: $_last"
	fi
}

case_ green 0 "452 passed, 0 failed, 0 skipped" \
	--suite "$d/green.log" 0 --kernel "$d/tier-green.log" 0
case_ suite-only 0 "245 passed, 0 failed, 0 skipped" --suite "$d/green.log" 0
case_ skips 0 "240 passed, 0 failed, 5 skipped" --suite "$d/skips.log" 0
case_ red 1 "244 passed, 1 failed, 0 skipped" --suite "$d/red.log" 2
case_ error 1 "244 passed, 1 failed, 0 skipped" --suite "$d/error.log" 2
# the issue's case: 245 passed, 207 failed must not exit 0
case_ tier-red 1 "245 passed, 207 failed, 0 skipped" \
	--suite "$d/green.log" 0 --kernel "$d/tier-red.log" 0
case_ tier-none 1 "245 passed, 1 failed, 0 skipped" \
	--suite "$d/green.log" 0 --kernel "$d/tier-none.log" 1
case_ tier-no-log 1 "245 passed, 1 failed, 0 skipped" \
	--suite "$d/green.log" 0 --kernel "$d/no-such.log" 2
case_ tier-status 1 "452 passed, 1 failed, 0 skipped" \
	--suite "$d/green.log" 0 --kernel "$d/tier-green.log" 1
case_ build-failed 1 "245 passed, 1 failed, 0 skipped" \
	--suite "$d/green.log" 2
case_ no-log 1 "0 passed, 1 failed, 0 skipped" --suite "$d/no-such.log" 2
case_ no-counts 1 "0 passed, 1 failed, 0 skipped" --suite "$d/nocounts.log" 0
grep -q 'no test counts' "$d/no-counts.err" || fail "no-counts: not said why"
sh "$sum" >/dev/null 2>&1
[ $? = 2 ] && pass "usage: exit 2" || fail "usage: not exit 2"
finish
