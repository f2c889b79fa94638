#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A process that inherits LD_PRELOAD but never calls librdmacm is left
# alone: no thread, no signal handler, no report, its exit status kept;
# unshare -U (which a multithreaded process cannot do) still works.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
opts="json=$work/r.json:snapshot_signal=12:watchdog_ms=100"
shim() {
	LD_PRELOAD=$RDMACHECK_SHIM RDMACHECK_OPTIONS=$opts "$@"
}

st=$(shim cat /proc/self/status)
threads=$(printf '%s\n' "$st" | awk '$1 == "Threads:" { print $2 }')
caught=$(printf '%s\n' "$st" | awk '$1 == "SigCgt:" { print $2 }')
if [ "$threads" = 1 ] && [ "$caught" = 0000000000000000 ]; then
	echo "ok: no thread and no handler (Threads: $threads, SigCgt: $caught)"
else
	echo "FAIL: Threads: $threads, SigCgt: $caught"
	fail=1
fi
shim sh -c 'exit 7'
rc=$?
if [ "$rc" = 7 ] && [ ! -e "$work/r.json" ]; then
	echo "ok: exit status 7 kept, no report"
else
	echo "FAIL: exit $rc; report: $(ls "$work")"
	fail=1
fi
if command -v unshare >/dev/null 2>&1 && unshare -U true 2>/dev/null; then
	if shim unshare -U true; then
		echo "ok: unshare -U works"
	else
		echo "FAIL: unshare -U fails under the shim"
		fail=1
	fi
else
	echo "unshare -U unavailable here: not checked"
fi
exit $fail
