# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/lib/check.sh: the small test harness the shell tests share:
# a scratch directory kept when a check fails, pass/fail lines, running a
# command with its outputs captured, and the closing verdict.  Set t_name
# before sourcing (default: the script's name).
# shellcheck shell=sh disable=SC2034

t_name=${t_name:-${0##*/}}
t_name=${t_name%.sh}
t_fail=0
t_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-$t_name.XXXXXX") || exit 99
t_cleanup() {
	if [ "$t_fail" = 0 ]; then
		rm -rf "$t_dir"
	else
		echo "$t_name: outputs kept in $t_dir"
	fi
}
trap t_cleanup EXIT

fail() {
	echo "$t_name: FAIL: $*"
	t_fail=1
}

pass() {
	echo "$t_name: ok: $*"
}

# run ARG...: run the command; sets rc, and out and err to its outputs.
run() {
	# the status is the product: in rc, for expect_rc
	set +e
	"$@" >"$t_dir/out" 2>"$t_dir/err"
	rc=$?
	set -e
	out=$(cat "$t_dir/out")
	err=$(cat "$t_dir/err")
}

# expect_rc N WHAT: the last run exited with N.
expect_rc() {
	if [ "$rc" = "$1" ]; then
		pass "$2: exit $rc"
	else
		fail "$2: exit $rc, expected $1 (stderr: $err)"
	fi
}

# expect_err TEXT WHAT: the last run's stderr contains TEXT.
expect_err() {
	case $err in
	*"$1"*) pass "$2" ;;
	*) fail "$2: stderr lacks '$1': $err" ;;
	esac
}

# verdict NAME STATUS WANT ERE OUT: a case whose exit STATUS must be WANT
# and whose output file OUT must have a line matching the extended ERE.
verdict() {
	if [ "$2" != "$3" ]; then
		fail "$1: exit $2, not $3 (see $5)"
	elif ! grep -Eq -- "$4" "$5"; then
		fail "$1: no line matching /$4/ (see $5)"
	else
		pass "$1: exit $2"
	fi
}

finish() {
	if [ "$t_fail" = 0 ]; then
		echo "$t_name: all passed"
		exit 0
	fi
	exit 1
}
