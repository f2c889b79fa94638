#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/abi-exports.sh: the builds of the loopback librdmacm.so.1
# against the real Debian 44.0 library.
#
# The default build (RDMACHECK_LOOPBACK_DIR) exports exactly the
# name@version list of the real library, has SONAME librdmacm.so.1 and
# DT_NEEDED libibverbs.so.1, and calls its own exports through the PLT
# (JUMP_SLOT relocations) exactly where the real library does, so an
# LD_PRELOAD shim sees the same internal calls.
#
# The -Bsymbolic-functions build (RDMACHECK_LOOPBACK_SYMBOLIC_DIR) exports
# the same, with the same dynamic section, and has no JUMP_SLOT for any of
# its own exports: its internal calls are invisible to a shim, as in
# Ubuntu's librdmacm.
#
# The rdmacm14 build (RDMACHECK_LOOPBACK_RDMACM14_DIR) exports the same
# plus the RDMACM_1.4 node of rdma-core 60+, and calls its own exports
# through the PLT where the default build does.
real=${RDMACHECK_REAL_RDMACM:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
lo=${RDMACHECK_LOOPBACK_DIR:-}/librdmacm.so.1
sym=${RDMACHECK_LOOPBACK_SYMBOLIC_DIR:-}/librdmacm.so.1
v14=${RDMACHECK_LOOPBACK_RDMACM14_DIR:-}/librdmacm.so.1

. "${top_srcdir:-.}/tests/lib/abi.sh"
abi_need "$real" "$lo"
abi_need "$real" "$sym"
abi_need "$real" "$v14"
tmp=$abi_tmp

# exports FILE: name@version of every function, and each version node.
exports()
{
	nm -D --defined-only --with-symbol-versions "$1" |
		awk '$2 ~ /^[TtWiA]$/ { sub(/@@?/, "@", $3); print $3 }' |
		sort -u
}

abi_exports "$real" "$lo" exports
abi_dynamic "$lo" librdmacm.so.1 libibverbs.so.1

# own FILE: the library's own exports it calls through its PLT.
own()
{
	exports "$1" | sed 's/@.*//' | sort -u >"$tmp/names"
	readelf -rW "$1" | awk '/JUMP_SLOT/ { sub(/@.*/, "", $5); print $5 }' |
		sort -u | comm -12 - "$tmp/names"
}

# Exactly where the real library calls its own exports: all of them,
# rsockets' included (rdma_accept, rdma_connect, rdma_get_request,
# rdma_listen, rdma_reject, rdma_resolve_addr, rshutdown, riounmap, ...).
own "$real" >"$tmp/real.own"
cp "$tmp/real.own" "$tmp/real.plt"
own "$lo" >"$tmp/lo.plt"
missing=$(comm -23 "$tmp/real.plt" "$tmp/lo.plt")
if [ -n "$missing" ]; then
	echo "abi-exports: FAIL: own exports not called through the PLT:"
	echo "$missing"
	abi_fail=1
fi
extra=$(comm -13 "$tmp/real.plt" "$tmp/lo.plt")
if [ -n "$extra" ]; then
	echo "abi-exports: FAIL: own exports called through the PLT, unlike" \
	     "the real library:"
	echo "$extra"
	abi_fail=1
fi

# The symbolic build: same exports and dynamic section, no own PLT calls.
exports "$sym" >"$tmp/sym"
if ! cmp -s "$tmp/lo" "$tmp/sym"; then
	echo "abi-exports: FAIL: the symbolic build exports differ:"
	diff "$tmp/lo" "$tmp/sym"
	abi_fail=1
fi
abi_dynamic "$sym" librdmacm.so.1 libibverbs.so.1
own "$sym" >"$tmp/sym.plt"
if [ -s "$tmp/sym.plt" ]; then
	echo "abi-exports: FAIL: the symbolic build calls own exports through" \
	     "the PLT:"
	cat "$tmp/sym.plt"
	abi_fail=1
fi

# The rdmacm14 build: the default's exports and the RDMACM_1.4 node.
exports "$v14" >"$tmp/v14"
for f in rdma_query_addrinfo rdma_resolve_addrinfo rdma_write_cm_event; do
	echo "$f@RDMACM_1.4"
done | cat - "$tmp/lo" | { cat; echo RDMACM_1.4; } | sort >"$tmp/v14.want"
if ! cmp -s "$tmp/v14.want" "$tmp/v14"; then
	echo "abi-exports: FAIL: the rdmacm14 build exports differ from" \
	     "the default's plus RDMACM_1.4:"
	diff "$tmp/v14.want" "$tmp/v14"
	abi_fail=1
fi
abi_dynamic "$v14" librdmacm.so.1 libibverbs.so.1
own "$v14" >"$tmp/v14.plt"
if ! cmp -s "$tmp/lo.plt" "$tmp/v14.plt"; then
	echo "abi-exports: FAIL: the rdmacm14 build calls its own exports" \
	     "through the PLT unlike the default build:"
	diff "$tmp/lo.plt" "$tmp/v14.plt"
	abi_fail=1
fi

n_rdma()
{
	grep -c '^rdma_' "$1"
}
[ "$abi_fail" = 0 ] && echo "abi-exports: ok ($(grep -c @ "$tmp/lo") exports;" \
	"own rdma_* exports called through the PLT: real" \
	"$(n_rdma "$tmp/real.own"), default $(n_rdma "$tmp/lo.plt")," \
	"symbolic $(n_rdma "$tmp/sym.plt"), rdmacm14" \
	"$(n_rdma "$tmp/v14.plt"))"
exit $abi_fail
