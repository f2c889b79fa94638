#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# peers.sh: the shim beside the tools people would otherwise reach for,
# in the same run (part of `make bench`, after run-bench.sh): the client
# of cmtime -c 1000 on the loopback backend, its server plain, run
#   plain, under the shim (its defaults, stack_depth=16), under valgrind
#   --tool=none (the instrumentation alone), memcheck, and ltrace -f
# where installed, alternately PEERS_RUNS times (default 1: memcheck
# takes a while), keeping each side's best (lowest) wall time: other load
# only ever adds time.  Prints each side's time and its ratio to plain,
# side by side; ratios stay meaningful on a noisy machine, times do not.
# A tool that is not installed is a row saying so.
#
# Exit status: 1 when a run failed (its row would be a number about
# nothing), after the table; 0 otherwise.  Run from the build tree.
set -eu
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$top_builddir/..}
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/loopback/.libs}
runs=${PEERS_RUNS:-1}
conns=${PEERS_CONNECTIONS:-1000}
per_run=${PEERS_TIMEOUT:-900}	# seconds: an upper bound, not a wait

# lo_poll, lo_listening (the cmtime server's readiness)
. "$top_srcdir/tests/programs/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/rcpeers.XXXXXX")
trap 'rm -rf "$work"; lo_cleanup' EXIT
seq=0
failed=0
sides="plain shim none memcheck ltrace"

now_ns() { date +%s%N; }

# have SIDE: the tool of SIDE is installed.
have()
{
	case $1 in
	none|memcheck) command -v valgrind >/dev/null 2>&1 ;;
	ltrace) command -v ltrace >/dev/null 2>&1 ;;
	*) true ;;
	esac
}

# client SIDE: how the client runs on SIDE (words of a command line).
client()
{
	case $1 in
	plain) ;;
	shim) echo "env LD_PRELOAD=$shim" \
		"RDMACHECK_OPTIONS=stack_depth=16:exitcode=0:log_path=$work/shim.%p.log" ;;
	none) echo "valgrind -q --tool=none" ;;
	memcheck) echo "valgrind -q --tool=memcheck --log-file=$work/mc.%p.log" ;;
	ltrace) echo "ltrace -f -o $work/ltrace.out" ;;
	esac
}

# one SIDE: one client run, its wall time in ms appended to $work/SIDE.
one()
{
	seq=$((seq + 1))
	_ns="rcpeers-$$-$seq"
	env RDMACHECK_LOOPBACK_NS="$_ns" LD_LIBRARY_PATH="$lo" \
		cmtime -p 7471 >/dev/null 2>&1 &
	_spid=$!
	if ! lo_poll "$_spid" lo_listening "$_ns" tcp 7471; then
		echo "peers.sh: FAIL: the cmtime server never got ready" >&2
		kill "$_spid" 2>/dev/null || true
		failed=$((failed + 1))
		return
	fi
	_s=$(now_ns)
	# shellcheck disable=SC2046
	if ! env RDMACHECK_LOOPBACK_NS="$_ns" LD_LIBRARY_PATH="$lo" \
		timeout "$per_run" $(client "$1") \
		cmtime -s 127.0.0.1 -p 7471 -c "$conns" \
		>"$work/out" 2>"$work/err"; then
		echo "peers.sh: FAIL: cmtime client failed ($1):" >&2
		tail -n 5 "$work/err" >&2
		failed=$((failed + 1))
		_e=
	else
		_e=$(now_ns)
	fi
	# the server never exits: its status is the kill's
	{ kill "$_spid"; wait "$_spid"; } 2>/dev/null || true
	[ -n "$_e" ] && echo $(( (_e - _s) / 1000000 )) >>"$work/$1"
	return 0
}

i=0
while [ "$i" -lt "$runs" ]; do
	for side in $sides; do
		have "$side" && one "$side"
	done
	i=$((i + 1))
done

best() { [ -s "$work/$1" ] && sort -n "$work/$1" | head -n 1; }

plain=$(best plain || true)
echo
echo "peers: cmtime -c $conns client on the loopback, server plain" \
	"(best of $runs; ratio to plain)"
for side in $sides; do
	case $side in
	plain) what="plain" ;;
	shim) what="rdmacheck (LD_PRELOAD)" ;;
	none) what="valgrind --tool=none" ;;
	memcheck) what="valgrind memcheck" ;;
	ltrace) what="ltrace -f" ;;
	esac
	if ! have "$side"; then
		printf '  %-24s not installed\n' "$what"
		continue
	fi
	t=$(best "$side" || true)
	if [ -z "$t" ]; then
		printf '  %-24s failed\n' "$what"
	elif [ -n "$plain" ] && [ "$plain" -gt 0 ]; then
		printf '  %-24s %8d ms  x%.2f\n' "$what" "$t" \
			"$(echo "$t $plain" | awk '{ print $1 / $2 }')"
	else
		printf '  %-24s %8d ms\n' "$what" "$t"
	fi
done
[ "$failed" = 0 ] || exit 1
