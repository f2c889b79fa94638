#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# run-lat.sh: the round trips of `make bench` (after run-bench.sh): small
# messages between two processes on the loopback backend, no shim, each
# the best (lowest) of BENCH_RUNS runs (default 3), against riostream
# -T a (whose sender waits in rpoll):
#   riostream -S 64 -I 10000 -C 1 [-T a]  rsockets' riowrite: each side
#                 spins on the last byte of its riomap()ed buffer
#   ib_write_lat  perftest's RC RDMA WRITE ping-pong (2 bytes, 1000
#                 iterations, QPs connected over TCP): spins on memory
# Programs that spin on memory get their bytes without a CPU for the
# target's progress thread only because the requester places them itself
# (doc/loopback.md, "Data placement").  BENCH_LAT_DMA=0 measures the
# stream path instead (RDMACHECK_LOOPBACK_DMA=0).
# Then the default invocations of ib_send_bw, ib_write_lat and rstream,
# plain and under the shim (RDMACHECK_SHIM, exitcode=0: perftest's own
# leaks are not the point here), as shim/plain ratios, which stay
# meaningful on a noisy machine.  A pair that fails fails the bench.  Run
# from the build tree.
set -eu
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$top_builddir/..}
lo=${RDMACHECK_LOOPBACK_DIR:-$top_builddir/loopback/.libs}
runs=${BENCH_RUNS:-3}
dma=${BENCH_LAT_DMA:-1}
shim=${RDMACHECK_SHIM:-$top_builddir/src/.libs/librdmacheck.so}
preload=

# lo_poll, lo_listening, lo_tcp_listening
. "$top_srcdir/tests/programs/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/rclat.XXXXXX")
trap 'rm -rf "$work"; lo_cleanup' EXIT
seq=0

# pair READY CMD ARGS...: CMD ARGS as the server and CMD ARGS as the
# client (with -s 127.0.0.1 for r[io]stream, the address last for
# perftest), in a namespace of their own; the client's output in
# $work/out.  READY: "cm PORT" or "tcp PORT", what says the server is up.
pair()
{
	seq=$((seq + 1))
	_ns="rclat-$$-$seq"
	_ready=$1
	_port=$2
	shift 2
	env RDMACHECK_LOOPBACK_NS="$_ns" RDMACHECK_LOOPBACK_DMA="$dma" \
		LD_LIBRARY_PATH="$lo" LD_PRELOAD="$preload" \
		RDMACHECK_OPTIONS=exitcode=0 "$@" >/dev/null 2>&1 &
	_spid=$!
	if [ "$_ready" = cm ]; then
		lo_poll "$_spid" lo_listening "$_ns" tcp "$_port" || _spid=
	else
		lo_poll "$_spid" lo_tcp_listening "$_port" || _spid=
	fi
	if [ -z "$_spid" ]; then
		echo "run-lat.sh: $1 never got ready" >&2
		echo "$1" >>"$work/failed"
		: >"$work/out"
		return 0
	fi
	if [ "$1" = riostream ] || [ "$1" = rstream ]; then
		_cli="$* -s 127.0.0.1"
	else
		_cli="$* 127.0.0.1"
	fi
	# shellcheck disable=SC2086
	if ! timeout 120 env RDMACHECK_LOOPBACK_NS="$_ns" \
		RDMACHECK_LOOPBACK_DMA="$dma" LD_LIBRARY_PATH="$lo" \
		LD_PRELOAD="$preload" RDMACHECK_OPTIONS=exitcode=0 $_cli \
		>"$work/out" 2>&1; then
		echo "run-lat.sh: $_cli failed${preload:+ (under the shim)}:" >&2
		tail -n 5 "$work/out" >&2
		echo "$1" >>"$work/failed"
	fi
	{ kill "$_spid"; wait "$_spid"; } 2>/dev/null || true
}

# best NAME US: keep the lowest round trip of NAME
best()
{
	[ -n "$2" ] || return 0
	echo "$1 $2" >>"$work/raw"
}

: >"$work/raw"
port=$((20000 + $$ % 10000))
echo "round trips on the loopback: $runs runs each (BENCH_RUNS)," \
     "direct placement $( [ "$dma" = 0 ] && echo off || echo on)"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	# usec/xfer is half a round trip
	pair cm 7471 riostream -p 7471 -S 64 -I 10000 -C 1 -T a
	best rio_a "$(awk '$1 == "custom" { print 2 * $8 }' "$work/out")"
	pair cm 7471 riostream -p 7471 -S 64 -I 10000 -C 1
	best rio "$(awk '$1 == "custom" { print 2 * $8 }' "$work/out")"
	# t_typical is half a round trip too
	pair tcp "$port" ib_write_lat -p "$port"
	best wlat "$(awk '$1 == 2 && $2 == 1000 { print 2 * $5 }' \
		"$work/out")"
	# the defaults, plain (p) and under the shim (s)
	for m in p s; do
		preload=
		[ "$m" = p ] || preload=$shim
		pair tcp "$port" ib_send_bw -p "$port"
		best "sbw_$m" "$(awk '$1 == 65536 && $2 == 1000 { print $4 }' \
			"$work/out")"
		pair tcp "$port" ib_write_lat -p "$port"
		best "dlat_$m" "$(awk '$1 == 2 && $2 == 1000 { print 2 * $5 }' \
			"$work/out")"
		pair cm 7471 rstream -p 7471
		best "rslat_$m" "$(awk '$1 == "64_lat" { print 2 * $8 }' \
			"$work/out")"
		best "rsbw_$m" "$(awk '$1 == "1m_bw" { print $7 }' "$work/out")"
	done
	preload=
done
awk '
{ if (!($1 in b) || $2 + 0 < b[$1]) b[$1] = $2 + 0 }
function row(m, k) {
	if (!(k in b))
		printf "| %-44s | %12s | %16s |\n", m, "n/a", "n/a"
	else if (!("rio_a" in b) || !b["rio_a"])
		printf "| %-44s | %12.2f | %16s |\n", m, b[k], "n/a"
	else
		printf "| %-44s | %12.2f | %16.3f |\n", m, b[k],
		    b[k] / b["rio_a"]
}
END {
	printf "| %-44s | %12s | %16s |\n", "round trip, no shim", "us",
	    "x riostream -T a"
	printf "|%s|%s|%s|\n", "----------------------------------------------",
	    "--------------", "------------------"
	row("riostream -S 64 -I 10000 -C 1 -T a (rpoll)", "rio_a")
	row("riostream -S 64 -I 10000 -C 1 (spins)", "rio")
	row("ib_write_lat (2 B, spins)", "wlat")
}' "$work/raw"
[ -f "$shim" ] || echo "(no shim built: no shim/plain column)"
# throughput rows keep the highest of the runs, latency rows the lowest
awk '
{ hi = $1 ~ /^(sbw|rsbw)_/
  if (!($1 in b) || (hi ? $2 + 0 > b[$1] : $2 + 0 < b[$1])) b[$1] = $2 + 0 }
function row(m, k, u) {
	p = (k "_p" in b) ? sprintf("%.2f", b[k "_p"]) : "n/a"
	s = (k "_s" in b) ? sprintf("%.2f", b[k "_s"]) : "n/a"
	r = (k "_p" in b) && (k "_s" in b) && b[k "_p"] ? \
	    sprintf("%.3f", b[k "_s"] / b[k "_p"]) : "n/a"
	printf "| %-36s | %-8s | %9s | %9s | %11s |\n", m, u, p, s, r
}
END {
	printf "\n| %-36s | %-8s | %9s | %9s | %11s |\n", "defaults", "unit",
	    "plain", "shim", "shim/plain"
	printf "|%s|%s|%s|%s|%s|\n", "--------------------------------------",
	    "----------", "-----------", "-----------", "-------------"
	row("ib_send_bw (64 KiB, BW average)", "sbw", "MB/s")
	row("ib_write_lat (2 B, round trip)", "dlat", "us")
	row("rstream 64_lat (round trip)", "rslat", "us")
	row("rstream 1m_bw", "rsbw", "Gb/s")
}' "$work/raw"
if [ -s "$work/failed" ]; then
	echo "run-lat.sh: FAIL: $(sort -u "$work/failed" | tr '\n' ' ')" >&2
	exit 1
fi
