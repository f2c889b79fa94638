#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/tsan/tsan.sh: the shim's thread tests under ThreadSanitizer (the
# build of src/tsan, with configure --enable-tsan): the stress test (2 to
# 16 threads churning events and ids with injected bugs), the threads and
# waiting scenarios (cancelled waiters, the watchdog reporting a blocked
# destroy, snapshots), the verbs event counts from several threads and
# three rsocket scenarios must run with no ThreadSanitizer report.  A
# canary with a deliberate race first proves that a report would be seen.
shim=${top_builddir:-.}/src/tsan/.libs/librdmacheck.so
rt=${RDMACHECK_TSAN_RUNTIME:-}
if [ -z "$rt" ]; then
	echo "tsan: SKIP: configured without --enable-tsan"
	exit 77
fi
[ -f "$shim" ] || { echo "tsan: FAIL: $shim not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-tsan.XXXXXX") || exit 99
fail=0
trap 'if [ $fail = 0 ]; then rm -rf "$tmp"; else
	echo "tsan: outputs kept in $tmp"; fi' EXIT
TSAN_OPTIONS="log_path=$tmp/tsan:report_signal_unsafe=0"
export TSAN_OPTIONS
bin=${top_builddir:-.}/tests/scenarios

# run NAME RC PROGRAM ARGS...: under the shim's TSan build; RC is the exit
# status the run must have.
run() {
	name=$1
	want=$2
	shift 2
	env LD_LIBRARY_PATH="${lo:-$RDMACHECK_LOOPBACK_DIR}" \
		LD_PRELOAD="$rt $shim" RDMACHECK_LOOPBACK_NS="rctsan-$$-$name" \
		RDMACHECK_OPTIONS="json=$tmp/$name.json$log:$opts" \
		SCN_DIR="$bin" "$@" >"$tmp/$name.out" 2>&1
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "tsan: FAIL: $name: exit $rc, expected $want"
		fail=1
	else
		echo "tsan: ok: $name"
	fi
}
# The canary, as the tests run: its race reported in its own log (and
# TSan's exit status 66), or no report below could be trusted.
mkdir "$tmp/canary"
TSAN_OPTIONS="log_path=$tmp/canary/tsan:report_signal_unsafe=0" \
	LD_PRELOAD="$rt $shim" "${top_builddir:-.}/tests/tsan/canary" \
	>"$tmp/canary.out" 2>&1
rc=$?
if [ "$rc" != 66 ] ||
   ! grep -qs 'WARNING: ThreadSanitizer: data race' "$tmp/canary"/tsan.*
then
	echo "tsan: FAIL: the canary's race was not reported (exit $rc)"
	cat "$tmp/canary.out" "$tmp/canary"/tsan.* 2>/dev/null | head -n 20
	fail=1
else
	echo "tsan: ok: the canary's race is reported"
fi
log=":log_path=$tmp/log"
opts=snapshot_signal=12
run stress-2 23 "$bin/stress" 2 5000 2
run stress-16 23 "$bin/stress" 16 1000 2
run threads 0 "$bin/threads" clean
run cancelled 0 "$bin/waiting" cancelled
# It watches its own stderr for the watchdog's report.
log= opts=watchdog_ms=100
run blocked-call 0 "$bin/waiting" blocked-call
log=":log_path=$tmp/log" opts=snapshot_signal=12
run snapshot 0 "$bin/snapshot" bad
# libibverbs: CQ events counted without a lock, from four threads while
# CQs come and go; an event acked by another thread than the destroyer's.
opts=
run verbs-cq-events 0 "$bin/verbs" cq-events-threads:clean
run verbs-other-thread 0 "$bin/verbs" \
	cq-destroy-with-unacked-events-other-thread
# The runtime's close() interceptor sits between the libraries and ours:
# their closes of the channels they destroy are still theirs, also when a
# -Bsymbolic-functions librdmacm destroys private channels unseen.
if [ -n "${RDMACHECK_LOOPBACK_SYMBOLIC_DIR:-}" ]; then
	lo=$RDMACHECK_LOOPBACK_SYMBOLIC_DIR
	run symbolic-sync-endpoint 0 "$bin/sync_endpoint" clean
	run symbolic-tier2 0 "$bin/tier2" clean
	run symbolic-verbs 0 "$bin/verbs" clean
	lo=
fi
# rsockets: the socket table is read by every r* call and written by
# rsocket, raccept and rclose, while librdmacm's listen and connect
# threads make their own calls through the shim.
log= opts=
run rsockets-leak 23 "$bin/rsockets" leak-rsocket
run rsockets-riomap 0 "$bin/rsockets" riomap-leak
run rsockets-poll 0 "$bin/rsockets" rsocket-use-after-close.rpoll.clean
n=$(cat "$tmp"/tsan.* 2>/dev/null | grep -c 'WARNING: ThreadSanitizer')
if [ "$n" != 0 ]; then
	echo "tsan: FAIL: $n ThreadSanitizer reports:"
	cat "$tmp"/tsan.* | head -n 60
	fail=1
fi
exit $fail
