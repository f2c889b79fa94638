#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/pingpong.sh: the ibverbs-utils pingpong pairs, which set
# their QPs up with verbs alone and swap QP numbers over a TCP socket:
# ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong (UD with a GRH),
# ibv_srq_pingpong (16 RC QPs on one SRQ) and ibv_xsrq_pingpong (XRC),
# each busy-polling and with completion events (-e); rc also with small
# messages.  -g 0: on a RoCE port a QP's address vector needs a GRH;
# without it (ibv_rc_pingpong's and ibv_ud_pingpong's defaults) both
# sides fail as on soft-RoCE, and the loopback says why, once.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong \
	ibv_xsrq_pingpong

# librdmacm is not involved: the -Bsymbolic-functions build would only
# run the same libibverbs.so.1 again.
RDMACHECK_LOOPBACK_DIRS="plt=$RDMACHECK_LOOPBACK_DIR"
# The out-of-band TCP port is machine-wide, unlike the loopback's names:
# one of its own for each test run.
LO_TCP_PORT=$(( 20000 + $$ % 20000 ))
# xsrq prints "success" where the others print a timing line
LO_SERVER_EXPECT='^[0-9]+ iters in [0-9.]+ seconds|^success$'
LO_CLIENT_EXPECT=$LO_SERVER_EXPECT
for p in rc uc ud srq xsrq; do
	for o in "" "-e"; do
		LO_SERVER="ibv_${p}_pingpong -g 0 -p $LO_TCP_PORT $o"
		LO_CLIENT="$LO_SERVER $LO_ADDR"
		lo_pair "ibv_${p}_pingpong${o:+ $o}"
	done
done
LO_SERVER="ibv_rc_pingpong -g 0 -p $LO_TCP_PORT -s 64 -n 2000"
LO_CLIENT="$LO_SERVER $LO_ADDR"
lo_pair "ibv_rc_pingpong -s 64 -n 2000"
# no_grh P CALL: ibv_P_pingpong without -g: the server's ibv_modify_qp
# (rc) or ibv_create_ah (ud) fails as on the real stack, both sides exit
# 1, and the server's stderr has the loopback's hint once, naming CALL.
no_grh()
{
	_d="$lo_dir/no-grh-$1"
	mkdir -p "$_d"
	_ns="rdmacheck-test-$$-$lo_name-nogrh-$1"
	timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$_ns" \
		LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		"ibv_$1_pingpong" -p "$LO_TCP_PORT" >"$_d/server.out" \
		2>"$_d/server.err" &
	lo_spid=$!
	if ! lo_wait_ready "$_ns" "$lo_spid"; then
		lo_log "FAIL ibv_$1_pingpong without -g: server never got ready"
		lo_fail=1
		return
	fi
	timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$_ns" \
		LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" \
		"ibv_$1_pingpong" -p "$LO_TCP_PORT" "$LO_ADDR" \
		>"$_d/client.out" 2>"$_d/client.err"
	_crc=$?
	wait "$lo_spid"
	_src=$?
	lo_spid=
	_n=$(grep -c "^libibverbs (rdmacheck loopback): $2: the address vector has no GRH .*-g 0" \
		"$_d/server.err")
	if [ "$_src" = 1 ] && [ "$_crc" = 1 ] && [ "$_n" = 1 ]; then
		lo_log "ok ibv_$1_pingpong without -g: fails, hint once"
	else
		lo_log "FAIL ibv_$1_pingpong without -g: server $_src," \
		       "client $_crc, $_n hints naming $2"
		lo_show "$_d/server.err" "$_d/client.err"
		lo_fail=1
	fi
}
no_grh rc ibv_modify_qp
no_grh ud ibv_create_ah
lo_done
