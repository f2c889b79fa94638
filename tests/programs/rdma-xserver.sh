#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/rdma-xserver.sh: rdma_xserver/rdma_xclient in their default
# RC mode (-c r): inline send, private data in the accept.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need rdma_xserver rdma_xclient

LO_PS=tcp LO_PORT=7471
LO_SERVER="rdma_xserver -p 7471"
LO_CLIENT="rdma_xclient -s $LO_ADDR -p 7471"
LO_SERVER_EXPECT='^rdma_xserver: end 0$'
LO_CLIENT_EXPECT='^rdma_xclient: end 0$'
lo_pair "rdma_xserver/rdma_xclient -c r"
lo_done
