#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/lib/ci-summary.sh: .ci/run's verdict.  Counts the main suite's
# results (automake's test-suite.log) and the real-kernel tier's (its
# summary line), prints the one line "N passed, N failed, N skipped" and
# exits 1 when N failed is not 0, else 0.
#
#   ci-summary.sh --suite LOG STATUS [--kernel LOG STATUS]
#
# STATUS is the exit status of the command that wrote LOG
# (`./quickstart.sh check`, `make check-kernel`).  What counts as failed,
# besides the failed tests themselves: a missing or unreadable log; a log
# without counts; a command that failed while its log shows no failed
# test (a build error, a harness error, a guest that did not finish); a
# tier that ran but printed no summary.  Each is said on stderr.
set -u
pass=0 fail=0 skip=0

# failure TEXT: one more failure, and why.
failure()
{
	echo "ci-summary: counted as failed: $*" >&2
	fail=$((fail + 1))
}

# count KEY LOG: automake's "# KEY: N" line of LOG, or nothing.
count()
{
	sed -n "s/^# $1: *\([0-9][0-9]*\)\$/\1/p" "$2" | head -n 1
}

suite()
{
	_log=$1 _st=$2
	if [ ! -r "$_log" ]; then
		failure "no suite log $_log (quickstart.sh check exited $_st)"
		return
	fi
	_p=$(count PASS "$_log") _x=$(count XFAIL "$_log")
	_f=$(count FAIL "$_log") _e=$(count ERROR "$_log")
	_xp=$(count XPASS "$_log") _s=$(count SKIP "$_log")
	if [ -z "$_p$_f$_e" ]; then
		failure "no test counts in $_log"
		return
	fi
	pass=$((pass + ${_p:-0} + ${_x:-0}))
	_bad=$((${_f:-0} + ${_e:-0} + ${_xp:-0}))
	fail=$((fail + _bad))
	skip=$((skip + ${_s:-0}))
	if [ "$_st" != 0 ] && [ "$_bad" = 0 ]; then
		failure "quickstart.sh check exited $_st with no failed test in $_log"
	fi
}

kernel()
{
	_log=$1 _st=$2
	_k=
	[ -r "$_log" ] && _k=$(sed -n 's/^check-kernel: \([0-9][0-9]*\) same, \([0-9][0-9]*\) known differences, \([0-9][0-9]*\) unexplained$/\1 \2 \3/p' "$_log" | tail -n 1)
	if [ -z "$_k" ]; then
		failure "the kernel tier printed no summary (make check-kernel exited $_st)"
		return
	fi
	# shellcheck disable=SC2086
	set -- $_k
	pass=$((pass + $1 + $2))
	fail=$((fail + $3))
	if [ "$_st" != 0 ] && [ "$3" = 0 ]; then
		failure "make check-kernel exited $_st with no unexplained difference"
	fi
}

usage() { echo "usage: $0 --suite LOG STATUS [--kernel LOG STATUS]" >&2; exit 2; }
[ "${1:-}" = --suite ] && [ $# -ge 3 ] || usage
suite "$2" "$3"
shift 3
if [ $# -gt 0 ]; then
	[ "$1" = --kernel ] && [ $# = 3 ] || usage
	kernel "$2" "$3"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
