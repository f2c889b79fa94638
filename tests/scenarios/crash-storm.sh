#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Crash reports are never lost: 200 processes, each crashing in two threads
# at once while a third keeps the service thread writing snapshots, must
# each leave one; and with AddressSanitizer's handler installed first, the
# shim reports and then hands the crash on to it.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
bin=$top_builddir/tests/scenarios/crash
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" LD_PRELOAD="$RDMACHECK_SHIM" \
	RDMACHECK_LOOPBACK_NS="rcstorm-$$" CRASH_STORM_DIR="$work" \
	RDMACHECK_OPTIONS="json=$work/r.%p.json:snapshot_signal=12" \
	"$bin" storm 2>"$work/err" || fail=1
grep -v '^==' "$work/err" | head -n 5
[ "$fail" = 0 ] || echo "FAIL: crash reports lost"

# AddressSanitizer first in LD_PRELOAD, as it requires; its SIGSEGV
# handler is chained after the shim's report.
asan=${RDMACHECK_ASAN_RUNTIME:-}
if [ -n "$asan" ] && [ -f "$asan" ]; then
	rm -f "$work"/r.*.json
	env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$asan $RDMACHECK_SHIM" ASAN_OPTIONS=detect_leaks=0 \
		RDMACHECK_LOOPBACK_NS="rcstorm-asan-$$" \
		RDMACHECK_OPTIONS="json=$work/r.%p.json" \
		"$bin" bad >"$work/asan.out" 2>&1
	rc=$?
	if grep -q 'AddressSanitizer: SEGV' "$work/asan.out" &&
	   grep -qs '"status": "crashed"' "$work"/r.*.json; then
		echo "ok: crash report, then AddressSanitizer's (exit $rc)"
	else
		echo "FAIL: with AddressSanitizer (exit $rc):"
		head -n 20 "$work/asan.out"
		fail=1
	fi
else
	echo "no AddressSanitizer runtime (configure found none): its chaining is not checked"
fi
exit $fail
