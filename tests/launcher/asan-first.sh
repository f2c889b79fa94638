#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The launcher and AddressSanitizer: a program linked with libasan gets
# the ASan runtime first in LD_PRELOAD, then the shim (ASan refuses to
# start otherwise), and both work: the shim reports the leaked channel.
# A libasan the caller already preloads moves to the front.
# shellcheck disable=SC2015
set -eu
: "${top_srcdir:?run this test from make check}"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$top_srcdir/tests/launcher/lib.sh"

prog=$top_builddir/tests/launcher/asan_prog
if [ ! -x "$prog" ]; then
	echo "SKIP: no AddressSanitizer build (configure found no working -fsanitize=address)"
	exit 77
fi
command -v ldd >/dev/null 2>&1 || { echo "SKIP: no ldd"; exit 77; }
asan=$(ldd "$prog" | awk '$1 ~ /^libasan\.so/ { print $3; exit }')
[ -f "$asan" ] || { echo "SKIP: ldd names no libasan for $prog"; exit 77; }

# The order the shim alone would give: ASan refuses, as the test expects
# of a program it must help.
st=0
env LD_PRELOAD="$RDMACHECK_SHIM" "$prog" >"$t_dir/plain" 2>&1 || st=$?
grep -q 'ASan runtime does not come first' "$t_dir/plain" &&
	pass "the shim first: ASan refuses to start (exit $st)" ||
	fail "the shim first: $(cat "$t_dir/plain")"

# check NAME: $t_dir/NAME.out holds the run; libasan first, the shim next.
check() {
	pre=$(sed -n 's/^LD_PRELOAD=//p' "$t_dir/$1.out")
	first=${pre%%:*}
	second=${pre#*:}
	second=${second%%:*}
	[ "$(readlink -f "$first")" = "$(readlink -f "$asan")" ] &&
	    [ "$(readlink -f "$second")" = "$(readlink -f "$RDMACHECK_SHIM")" ] &&
		pass "$1: LD_PRELOAD is libasan, then the shim" ||
		fail "$1: LD_PRELOAD is '$pre'"
	[ "$rc" = 23 ] && grep -q 'LEAK: rdmacheck: .*\[leak-channel\]' \
	    "$t_dir/$1.out" &&
		pass "$1: runs under both, the shim reports the leak (exit 23)" ||
		{ fail "$1: exit $rc"; cat "$t_dir/$1.out"; }
}
rc=0
env ASAN_OPTIONS=detect_leaks=0 "$launcher" --loopback -- "$prog" \
	>"$t_dir/linked.out" 2>&1 || rc=$?
check linked
# Found in PATH, as the shell would.
rc=0
env ASAN_OPTIONS=detect_leaks=0 PATH="${prog%/*}:$PATH" \
	"$launcher" --loopback asan_prog >"$t_dir/path.out" 2>&1 || rc=$?
check path
# Already preloaded by the caller (first, as ASan wants of every process,
# the launcher's shell too): it stays first, the shim comes next.
rc=0
env ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD="$asan libm.so.6" \
	"$launcher" --loopback -- "$prog" >"$t_dir/preloaded.out" 2>&1 || rc=$?
check preloaded
case $(sed -n 's/^LD_PRELOAD=//p' "$t_dir/preloaded.out") in
*:libm.so.6) pass "preloaded: the caller's other entries stay, last" ;;
*) fail "preloaded: $(sed -n 's/^LD_PRELOAD=//p' "$t_dir/preloaded.out")" ;;
esac
# A program without ASan: LD_PRELOAD unchanged (the shim first).
out=$(LD_PRELOAD= "$launcher" -- sh -c 'printf %s "$LD_PRELOAD"')
[ "$(readlink -f "${out%%:*}")" = "$(readlink -f "$RDMACHECK_SHIM")" ] &&
	pass "no ASan: the shim first ($out)" || fail "no ASan: '$out'"
finish
