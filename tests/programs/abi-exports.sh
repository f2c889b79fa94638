#!/bin/sh
# tests/programs/abi-exports.sh: the builds of the loopback librdmacm.so.1
# against the real Debian 44.0 library.
#
# The default build (RDMACHECK_LOOPBACK_DIR) exports every name@version
# the real library exports (the RDMACM_1.4 additions may come on top), has
# SONAME librdmacm.so.1 and DT_NEEDED libibverbs.so.1, and calls its own
# exports through the PLT (JUMP_SLOT relocations) exactly where the real
# library does, so an LD_PRELOAD shim sees the same internal calls.
#
# The -Bsymbolic-functions build (RDMACHECK_LOOPBACK_SYMBOLIC_DIR) exports
# the same, with the same dynamic section, and has no JUMP_SLOT for any of
# its own exports: its internal calls are invisible to a shim, as in
# Ubuntu's librdmacm.
real=${RDMACHECK_REAL_RDMACM:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
lo=${RDMACHECK_LOOPBACK_DIR:-}/librdmacm.so.1
sym=${RDMACHECK_LOOPBACK_SYMBOLIC_DIR:-}/librdmacm.so.1

. "${top_srcdir:-.}/tests/lib/abi.sh"
abi_need "$real" "$lo"
abi_need "$real" "$sym"
tmp=$abi_tmp

exports()
{
	nm -D --defined-only --with-symbol-versions "$1" |
		awk '$2 ~ /^[TtWi]$/ { sub(/@@?/, "@", $3); print $3 }' |
		sort -u
}

abi_exports "$real" "$lo" exports '@RDMACM_1\.4$'
for s in rdma_resolve_addrinfo rdma_query_addrinfo rdma_write_cm_event; do
	grep -qx "$s@RDMACM_1.4" "$tmp/lo" || {
		echo "abi-exports: FAIL: $s@RDMACM_1.4 not exported"
		abi_fail=1
	}
done
abi_dynamic "$lo" librdmacm.so.1 libibverbs.so.1

# own FILE: the library's own exports it calls through its PLT.
own()
{
	exports "$1" | sed 's/@.*//' | sort -u >"$tmp/names"
	readelf -rW "$1" | awk '/JUMP_SLOT/ { sub(/@.*/, "", $5); print $5 }' |
		sort -u | comm -12 - "$tmp/names"
}

# Where the real library calls its own exports, but for those only
# rsockets call (rsockets are not emulated yet) and rdma_resolve_addr,
# which the real rdma_create_ep calls only when the kernel lacks AF_IB
# (the backend behaves like an AF_IB kernel).
own "$real" >"$tmp/real.own"
grep -vxE 'rdma_(accept|connect|get_request|listen|reject)' \
	"$tmp/real.own" | grep -vxE 'rshutdown|riounmap' |
	grep -vx 'rdma_resolve_addr' >"$tmp/real.plt"
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

n_rdma()
{
	grep -c '^rdma_' "$1"
}
[ "$abi_fail" = 0 ] && echo "abi-exports: ok ($(wc -l <"$tmp/lo") exports;" \
	"own rdma_* exports called through the PLT: real" \
	"$(n_rdma "$tmp/real.own"), default $(n_rdma "$tmp/lo.plt")," \
	"symbolic $(n_rdma "$tmp/sym.plt"))"
exit $abi_fail
