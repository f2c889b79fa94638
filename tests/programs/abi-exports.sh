#!/bin/sh
# tests/programs/abi-exports.sh: the loopback librdmacm.so.1 exports every
# name@version the real Debian 44.0 library exports (the RDMACM_1.4
# additions may come on top), has SONAME librdmacm.so.1 and DT_NEEDED
# libibverbs.so.1, and calls its own exports through the PLT (JUMP_SLOT
# relocations) where the real library does, so an LD_PRELOAD shim sees the
# same internal calls.
real=${RDMACHECK_REAL_RDMACM:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}
lo=${RDMACHECK_LOOPBACK_DIR:-}/librdmacm.so.1

. "${top_srcdir:-.}/tests/lib/abi.sh"
abi_need "$real" "$lo"
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

# Own exports reached through the PLT: every one the real library calls
# internally, except those only rsockets call (rsockets are not emulated
# yet) and rdma_resolve_addr, which the real rdma_create_ep calls only when
# the kernel lacks AF_IB (the backend behaves like an AF_IB kernel).
plt()
{
	readelf -rW "$1" | awk '/JUMP_SLOT/ { sub(/@.*/, "", $5); print $5 }' |
		sort -u
}
plt "$real" | grep -E '^(rdma_|r[a-z]+$)' |
	grep -vxE 'rand_r|read|recv|recvfrom|rshutdown|riounmap' |
	grep -vxE 'rdma_(accept|connect|get_request|listen|reject)' |
	grep -vx 'rdma_resolve_addr' >"$tmp/real.plt"
plt "$lo" >"$tmp/lo.plt"
missing=$(comm -23 "$tmp/real.plt" "$tmp/lo.plt")
if [ -n "$missing" ]; then
	echo "abi-exports: FAIL: own exports not called through the PLT:"
	echo "$missing"
	abi_fail=1
fi

[ "$abi_fail" = 0 ] && echo "abi-exports: ok ($(wc -l <"$tmp/lo") exports," \
	"$(wc -l <"$tmp/real.plt") internal PLT calls)"
exit $abi_fail
