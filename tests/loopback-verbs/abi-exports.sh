#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/loopback-verbs/abi-exports.sh: the loopback libibverbs.so.1 exports
# every name@version that the real Debian 44.0 library exports as a default
# version (the hidden IBVERBS_1.0 compat aliases are not needed), nothing
# beyond it, has SONAME libibverbs.so.1 and is not linked -Bsymbolic.
real=${RDMACHECK_REAL_IBVERBS:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1}
dir=${RDMACHECK_LOOPBACK_DIR:-${top_builddir:-.}/loopback/.libs}
lo=$dir/libibverbs.so.1
. "${top_srcdir:-.}/tests/lib/abi.sh"
abi_need "$real" "$lo"

# Default versions only ("@@"): name@version, one per line.
exports()
{
	nm -D --defined-only --with-symbol-versions "$1" |
		awk '$3 ~ /@@/ && $3 !~ /@@IBVERBS_[0-9A-Z_.]*$/ { next }
		     $3 ~ /@@/ { sub(/@@/, "@", $3); print $3 }' |
		grep -v '^IBVERBS_[0-9A-Z_.]*@IBVERBS' | sort -u
}

abi_exports "$real" "$lo" exports
abi_dynamic "$lo" libibverbs.so.1
[ $abi_fail = 0 ] &&
	echo "abi-exports: PASS: $(wc -l <"$abi_tmp/real") name@version pairs match"
exit $abi_fail
