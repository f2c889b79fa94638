#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/gates/fuzz-replay.sh: the fuzz corpus replays of make check
# (tests/fuzz/replay-NAME) fail when they must.  Each replay's canary
# (REPLAY_CANARY=1: one byte read past a buffer) is stopped by the
# sanitizers with a non-zero status and an AddressSanitizer report, and
# a replay that is given no input fails (99) instead of passing empty.
. "${top_srcdir:-.}/tests/lib/check.sh"

if [ "${RDMACHECK_FUZZ_SANITIZERS:-}" != yes ]; then
	echo "SKIP: the replays are built without ASan and UBSan (configure)"
	exit 77
fi
for name in options suppress symbolize report; do
	r=$top_builddir/tests/fuzz/replay-$name
	REPLAY_CANARY=1 ASAN_OPTIONS=detect_leaks=0 "$r" \
		>"$t_dir/$name.out" 2>"$t_dir/$name.err"
	rc=$?
	if [ "$rc" != 0 ] &&
	   grep -q 'AddressSanitizer: heap-buffer-overflow' "$t_dir/$name.err"
	then
		pass "replay-$name: the canary's overflow stops it (exit $rc)"
	else
		fail "replay-$name: canary: exit $rc, $(head -c 300 "$t_dir/$name.out" "$t_dir/$name.err")"
	fi
	mkdir -p "$t_dir/empty"
	"$r" "$t_dir/empty" >/dev/null 2>&1
	rc=$?
	[ "$rc" = 99 ] && pass "replay-$name: no input is exit 99" ||
		fail "replay-$name: no input: exit $rc"
done
finish
