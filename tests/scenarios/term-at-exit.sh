#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A SIGTERM while the reports at exit are being written (crash.c
# term-at-exit sends it when the summary line shows) must not cost the
# report: in 20 runs each leaves one complete JSON report, status
# "exited", no temporary file, and the process ends with the shim's exit
# status or of the signal.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
bin=$top_builddir/tests/scenarios/crash
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
i=0
while [ "$i" -lt 20 ]; do
	i=$((i + 1))
	rm -f "$work"/*
	env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$RDMACHECK_SHIM" RDMACHECK_LOOPBACK_NS="rcterm-$$" \
		RDMACHECK_OPTIONS="json=$work/r.json" \
		"$bin" term-at-exit >"$work/out" 2>&1
	rc=$?
	st=$("${JQ:-jq}" -r .status "$work/r.json" 2>/dev/null)
	left=$(ls "$work" | grep -c '\.tmp\.')
	if [ "$st" != exited ] || [ "$left" != 0 ] ||
	   { [ "$rc" != 23 ] && [ "$rc" != 143 ]; }; then
		echo "FAIL: run $i: exit $rc, report status '${st:-none}'," \
		     "$left temporary file(s)"
		head -n 5 "$work/out"
		fail=1
	fi
done
[ "$fail" = 0 ] && echo "ok: 20 runs, 20 complete reports"
exit "$fail"
