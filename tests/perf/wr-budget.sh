#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/perf/wr-budget.sh: the data path's cost (issue 27).  With
# track_wr=0 the context's post_send stays the provider's and the shim
# adds nothing to a post or a poll; with track_wr=1 it adds at most
# WR_POST_IR instructions (callgrind Ir) to a post of one WR with one SGE
# and WR_POLL_IR to a poll of one completion (tests/perf/cost.sh on
# tests/perf/wr_cost.c).  Skipped (77) without valgrind.
set -eu
srcdir=${top_srcdir:-$(dirname "$0")/../..}
builddir=${top_builddir:-.}
post_max=${WR_POST_IR:-300}
poll_max=${WR_POLL_IR:-150}
prog=$builddir/tests/perf/wr_cost
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rcwrbudget.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
st=0

# ops OPTIONS EXPECTED: whose data-path operations the program's context
# (post_send, post_recv, poll_cq) and a send_ops_flags QP (wr_send,
# wr_complete) have: all EXPECTED.
ops()
{
	_o=$(env RDMACHECK_LOOPBACK_NS="rcwrops-$$" \
		LD_LIBRARY_PATH="${RDMACHECK_LOOPBACK_DIR:-}" \
		LD_PRELOAD="${RDMACHECK_SHIM:-}" RDMACHECK_OPTIONS="$1" \
		"$prog" ops 2>&1) || true
	_want=$(for _f in post_send post_recv poll_cq wr_send wr_complete; do
		echo "$_f: $2"; done)
	if [ "$_o" = "$_want" ]; then
		echo "PASS: $1:" $_o
	else
		echo "FAIL: $1: '$_o', expected '$_want'"
		st=1
	fi
}
ops track_wr=0 "the provider's"
ops track_wr=1 "the shim's"

for opt in track_wr=0 track_wr=1; do
	r=0
	COST_PROGRAM=$prog COST_SOURCE=$srcdir/tests/perf/wr_cost.c \
		sh "$srcdir/tests/perf/cost.sh" "$opt" >"$tmp/$opt" \
		2>"$tmp/err" || r=$?
	if [ "$r" = 77 ]; then
		cat "$tmp/err"
		echo "wr-budget.sh: SKIP: valgrind is needed"
		exit 77
	elif [ "$r" != 0 ]; then
		cat "$tmp/err"
		echo "FAIL: cost.sh $opt (exit $r)"
		exit 1
	fi
	# CALL PLAIN SHIM ADDED ...
	while read -r call plain shim added _; do
		case $opt:$call in
		track_wr=0:*) max=5 ;;
		*:ibv_poll_cq) max=$poll_max ;;
		*) max=$post_max ;;
		esac
		if [ "$added" -le "$max" ]; then
			echo "PASS: $opt $call: $plain -> $shim Ir (+$added, at most $max)"
		else
			echo "FAIL: $opt $call: $plain -> $shim Ir (+$added, more than $max)"
			st=1
		fi
	done <"$tmp/$opt"
done
exit $st
