#!/bin/sh
# tests/loopback-verbs/abi-exports.sh: the loopback libibverbs.so.1 exports
# every name@version that the real Debian 44.0 library exports as a default
# version (the hidden IBVERBS_1.0 compat aliases are not needed), nothing
# beyond it, has SONAME libibverbs.so.1 and is not linked -Bsymbolic.
real=${RDMACHECK_REAL_IBVERBS:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1}
dir=${RDMACHECK_LOOPBACK_DIR:-${top_builddir:-.}/src/loopback/.libs}
lo=$dir/libibverbs.so.1

if [ ! -e "$real" ]; then
	echo "abi-exports: SKIP: $real not installed"
	exit 77
fi
if [ ! -e "$lo" ]; then
	echo "abi-exports: FAIL: $lo not built"
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-vabi.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# Default versions only ("@@"): name@version, one per line.
exports()
{
	nm -D --defined-only --with-symbol-versions "$1" |
		awk '$3 ~ /@@/ && $3 !~ /@@IBVERBS_[0-9A-Z_.]*$/ { next }
		     $3 ~ /@@/ { sub(/@@/, "@", $3); print $3 }' |
		grep -v '^IBVERBS_[0-9A-Z_.]*@IBVERBS' | sort -u
}

exports "$real" >"$tmp/real"
exports "$lo" >"$tmp/lo"
if [ ! -s "$tmp/real" ]; then
	echo "abi-exports: FAIL: could not read the exports of $real"
	exit 1
fi
missing=$(comm -23 "$tmp/real" "$tmp/lo")
if [ -n "$missing" ]; then
	echo "abi-exports: FAIL: missing from the loopback library:"
	echo "$missing"
	fail=1
fi
extra=$(comm -13 "$tmp/real" "$tmp/lo")
if [ -n "$extra" ]; then
	echo "abi-exports: FAIL: exported but not by the real library:"
	echo "$extra"
	fail=1
fi
if ! readelf -d "$lo" | grep -q 'Library soname: \[libibverbs\.so\.1\]'; then
	echo "abi-exports: FAIL: SONAME is not libibverbs.so.1"
	fail=1
fi
if readelf -d "$lo" | grep -q 'SYMBOLIC'; then
	echo "abi-exports: FAIL: linked with -Bsymbolic"
	fail=1
fi
n=$(wc -l <"$tmp/real")
[ $fail = 0 ] && echo "abi-exports: PASS: $n name@version pairs match"
exit $fail
