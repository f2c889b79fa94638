#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/rdma-server.sh: rdma_server/rdma_client (synchronous
# endpoints, rdma_get_request, library-made CQs, default PDs).
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need rdma_server rdma_client

LO_PS=tcp LO_PORT=7471
LO_SERVER="rdma_server -p 7471"
LO_CLIENT="rdma_client -s $LO_ADDR -p 7471"
LO_SERVER_EXPECT='^rdma_server: end 0$'
LO_CLIENT_EXPECT='^rdma_client: end 0$'
lo_pair "rdma_server/rdma_client"
lo_done
