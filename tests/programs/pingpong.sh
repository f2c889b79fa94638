#!/bin/sh
# tests/programs/pingpong.sh: the ibverbs-utils pingpong pairs, which set
# their QPs up with verbs alone and swap QP numbers over a TCP socket:
# ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong (UD with a GRH),
# ibv_srq_pingpong (16 RC QPs on one SRQ) and ibv_xsrq_pingpong (XRC),
# each busy-polling and with completion events (-e); rc also with small
# messages.  -g 0: on a RoCE port a QP's address vector needs a GRH.
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
lo_done
