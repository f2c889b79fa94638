#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/mckey.sh: mckey: a receiver and a sender join 239.0.0.1
# (MULTICAST_JOIN with param.ud, QP attached to the group), the sender
# posts 10 unsignaled UD SEND_WITH_IMM to QPN 0xffffff, the receiver polls
# 10 receive completions, both leave.  Also with -l (QP made with
# rdma_create_qp_ex and IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) and with a
# send-only join of the sender (-o).  The sender is started once the
# receiver's QP is a member of the group (the verbs layer's membership
# file); mckey itself then sleeps 3 s before sending, as it does in 44.0.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need mckey

# MGID of 239.0.0.1: ::ffff:239.0.0.1 (the RoCE v2 mapping, as rxe's)
LO_MGID=00000000000000000000ffffef000001
LO_SERVER_EXPECT='^mckey: starting server$
^mckey: joined dgid: ::ffff:239.0.0.1 mlid 0x0 sl 0$
^receiving data transfers$
^data transfers complete$
^return status 0$'
LO_CLIENT_EXPECT='^mckey: starting client$
^mckey: joined dgid: ::ffff:239.0.0.1 mlid 0x0 sl 0$
^initiating data transfers$
^data transfers complete$
^return status 0$'
LO_CLIENT_REJECT='event:|failure'
# mckey 44.0 destroys the event channel while its cma_thread is still
# blocked in rdma_get_cm_event on it (the thread is never stopped or
# joined): a warning, harmless at exit.
for opt in "" "-l"; do
	LO_SERVER="mckey -m 239.0.0.1 -b $LO_ADDR $opt"
	LO_CLIENT="mckey -m 239.0.0.1 -b $LO_ADDR -s $opt"
	lo_pair "mckey ${opt:-(default)}"
done
LO_SERVER="mckey -m 239.0.0.1 -b $LO_ADDR"
LO_CLIENT="mckey -m 239.0.0.1 -b $LO_ADDR -s -o"
lo_pair "mckey -s -o (send-only sender)"
lo_done
