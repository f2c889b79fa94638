#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every wrapper given garbage pointers (tests/scenarios/garbage.c): with
# protect=1 no crash may be the shim's, nor the library's where the shim
# checks the pointer.  With protect=0 the same sweep must fail: what the
# shim refuses then reaches the library, which crashes (the sweep can
# tell).  One loopback build is enough: what a wrapper reads of its
# arguments does not depend on how the library calls itself.
set -u
[ -f "$RDMACHECK_SHIM" ] || { echo "SKIP: no shim"; exit 77; }
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-garbage.XXXXXX") || exit 99
trap 'rm -rf "$out"' EXIT
sweep()
{
	env LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		LD_PRELOAD="$RDMACHECK_SHIM" RDMACHECK_LOOPBACK_NS="rcgarbage-$$" \
		RDMACHECK_OPTIONS="$1" \
		"$top_builddir/tests/scenarios/garbage" >"$out/$1.out" 2>/dev/null
}
sweep protect=1
rc1=$?
sweep protect=0
rc0=$?
fail=0
if [ "$rc1" != 0 ]; then
	echo "FAIL: protect=1: the sweep exited $rc1:"
	grep -v 'returned$' "$out/protect=1.out"
	fail=1
else
	echo "ok protect=1: $(tail -n 1 "$out/protect=1.out")"
fi
if [ "$rc0" != 1 ] || ! grep -q 'not an unchecked pointer' "$out/protect=0.out"
then
	echo "FAIL: protect=0: the sweep exited $rc0 and found no crash" \
	     "where the shim checks: it cannot fail"
	fail=1
else
	echo "ok protect=0 fails: $(grep -c 'not an unchecked pointer' \
		"$out/protect=0.out") crashes the shim would have refused"
fi
exit $fail
