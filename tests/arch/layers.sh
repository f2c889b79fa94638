#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The tree keeps its one-way rule (tools/check-layers.sh): it passes on
# the source tree, and fails, naming the edge, on copies with one back
# edge of each kind planted: core including report, a loopback file
# including the shim, a bare include of ours, a source of the report tool
# including the unwinder, and a tool including a .c file.
set -eu
: "${top_srcdir:?run this test from make check}"
check="$top_srcdir/tools/check-layers.sh"

fail() { echo "layers: FAIL: $*" >&2; exit 1; }

out=$(sh "$check" "$top_srcdir" 2>&1) || fail "the tree: $out"
echo "layers: the tree keeps the rule"

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# A copy of what the checker reads (src, loopback, tools).
mkdir "$t/tree"
(cd "$top_srcdir" && tar cf - src loopback tools) | (cd "$t/tree" && tar xf -)

# plant FILE LINE WANT: add LINE at the top of FILE in a fresh copy; the
# check must fail with a line naming FILE and WANT.
plant() {
	rm -rf "$t/c" && cp -r "$t/tree" "$t/c"
	printf '%s\n' "$2" | cat - "$t/c/$1" >"$t/new" && mv "$t/new" "$t/c/$1"
	set +e
	got=$(sh "$check" "$t/c" 2>&1)
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "$1 with '$2': exit $rc, want 1: $got"
	printf '%s\n' "$got" | grep -qF "$1:1: includes" ||
		fail "$1 with '$2': the edge is not named: $got"
	printf '%s\n' "$got" | grep -qF "$3" ||
		fail "$1 with '$2': no \"$3\": $got"
	echo "layers: caught: $1: $2"
}
plant src/core/registry.h '#include "report/report.h"' \
	'core may not depend on report'
plant src/unwind/stack.c '#include "symbolize/symbolize.h"' \
	'unwind may not depend on symbolize'
plant src/report/report.c '#include "shim/wrap.h"' \
	'report may not depend on shim'
plant loopback/cm/id.c '#include "shim/wrap.h"' \
	'the loopback includes nothing of src/'
plant src/shim/wrap_id.c '#include "registry.h"' \
	'names its folder'
plant src/report/suppress.c '#include "unwind/stack.h"' \
	'compiled into rdmacheck-report'
plant tools/rdmacheck-probe.c '#include "shim/interpose.h"' \
	'tools use core, symbolize and report only'
plant tools/report/main.c '#include "formats.c"' \
	'a .c file is compiled, not included'

# An unreadable tree is an error, not a pass.
set +e
sh "$check" "$t/none" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "a missing tree: exit $rc, want 2"
echo "layers: PASS"
