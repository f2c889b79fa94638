#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every source file carries the licence's SPDX line
# (tools/check-spdx.sh): the tree passes, and a copy with one file
# stripped of it fails, naming that file.
set -eu
: "${top_srcdir:?run this test from make check}"
check="$top_srcdir/tools/check-spdx.sh"

fail() { echo "spdx: FAIL: $*" >&2; exit 1; }

out=$(sh "$check" "$top_srcdir" 2>&1) || fail "the tree: $out"
echo "spdx: every source file has the line"

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
(cd "$top_srcdir" && tar cf - configure.ac Makefile.am quickstart.sh .ci \
	debian src loopback tools tests bench doc) | (cd "$t" && tar xf -)
for f in src/core/registry.c tools/rdmacheck.in tests/arch/spdx.sh; do
	cp "$t/$f" "$t/keep"
	grep -v 'SPDX-License-Identifier' "$t/keep" >"$t/$f"
	set +e
	got=$(sh "$check" "$t" 2>&1)
	rc=$?
	set -e
	cp "$t/keep" "$t/$f"
	[ "$rc" = 1 ] || fail "$f without the line: exit $rc, want 1"
	printf '%s\n' "$got" | grep -q "^$f: no " ||
		fail "$f without the line is not named: $got"
	echo "spdx: caught: $f"
done
echo "spdx: PASS"
