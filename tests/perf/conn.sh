#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/perf/conn.sh [N]: what the shim adds per connection of the
# cmtime client (rdma-core's), in instructions (callgrind, deterministic):
# the client's count with -c N minus that with -c 1, over N - 1, plain
# and under the shim (stack_depth=16), its server plain, each pair in a
# loopback namespace of its own.  Prints one line, as cost.sh does:
#   cmtime_connection PLAIN_IR SHIM_IR ADDED_IR
# Each of the four counts is the least of CONN_RUNS runs (default 3):
# the loopback waits by spinning in places (its DMA fence, sched_yield
# loops), so a run slowed by a loaded machine counts more instructions,
# never fewer (one run of conn.sh on a busy machine read 8.7 k to 23.9 k
# added; the least of three is what the code costs).
# Exit 77 without valgrind or cmtime.  Used by tests/perf/budget.sh.
set -eu
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(dirname "$0")/../..}
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/loopback/.libs}
VALGRIND=${VALGRIND:-valgrind}
CMTIME=${CMTIME:-cmtime}
n=${1:-21}
runs=${CONN_RUNS:-3}

for t in "$VALGRIND" "$CMTIME"; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "conn.sh: SKIP: $t is not installed" \
		     "(Debian: valgrind, rdmacm-utils)" >&2
		exit 77
	fi
done
# lo_poll, lo_listening (the server's readiness)
. "$top_srcdir/tests/programs/lib.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/rcconn.XXXXXX")
spid=
trap '[ -z "$spid" ] || kill "$spid" 2>/dev/null; rm -rf "$dir"' EXIT
seq=0

# ir SIDE COUNT: the client's instructions for -c COUNT.
ir()
{
	seq=$((seq + 1))
	_ns="rcconn-$$-$seq"
	_pre=
	[ "$1" = shim ] && _pre=$shim
	env RDMACHECK_LOOPBACK_NS="$_ns" LD_LIBRARY_PATH="$lo" \
		"$CMTIME" -p 7471 >/dev/null 2>&1 &
	spid=$!
	if ! lo_poll "$spid" lo_listening "$_ns" tcp 7471; then
		echo "conn.sh: the cmtime server never got ready" >&2
		exit 1
	fi
	if ! env RDMACHECK_LOOPBACK_NS="$_ns" LD_LIBRARY_PATH="$lo" \
		LD_PRELOAD="$_pre" \
		RDMACHECK_OPTIONS="stack_depth=16:exitcode=0:log_path=/dev/null" \
		"$VALGRIND" --tool=callgrind --callgrind-out-file="$dir/cg" \
		"$CMTIME" -s 127.0.0.1 -p 7471 -c "$2" >"$dir/out" 2>&1; then
		echo "conn.sh: cmtime -c $2 failed ($1):" >&2
		tail -n 20 "$dir/out" >&2
		exit 1
	fi
	# the server never exits: its status is the kill's
	{ kill "$spid"; wait "$spid"; } 2>/dev/null || true
	spid=
	sed -n 's/^summary: *//p' "$dir/cg"
}
# least SIDE COUNT: the least of $runs counts.
least()
{
	_k=0
	_min=
	while [ "$_k" -lt "$runs" ]; do
		_k=$((_k + 1))
		_v=$(ir "$1" "$2")
		if [ -z "$_min" ] || [ "$_v" -lt "$_min" ]; then
			_min=$_v
		fi
	done
	echo "$_min"
}
p1=$(least plain 1)
pn=$(least plain "$n")
s1=$(least shim 1)
sn=$(least shim "$n")
awk -v n="$n" -v p1="$p1" -v pn="$pn" -v s1="$s1" -v sn="$sn" 'BEGIN {
	p = (pn - p1) / (n - 1); s = (sn - s1) / (n - 1)
	printf "cmtime_connection %.0f %.0f %.0f\n", p, s, s - p }'
