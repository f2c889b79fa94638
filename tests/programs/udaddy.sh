#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/udaddy.sh: udaddy (RDMA_PS_UDP): SIDR connect/accept over
# the loopback CM, then 10 unsignaled UD SEND_WITH_IMM of 100 bytes from
# the client and 10 signaled replies through an AH made with
# ibv_create_ah_from_wc; also with 3 connections.  udaddy 44.0 always
# uses port 7174 (-p means port space).
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need udaddy

LO_PS=udp LO_PORT=7174
LO_SERVER_EXPECT='^udaddy: starting server$
^receiving data transfers$
^sending replies$
^data transfers complete$
^test complete$
^return status 0$'
LO_CLIENT_EXPECT='^udaddy: starting client$
^initiating data transfers$
^receiving data transfers$
^data transfers complete$
^test complete$
^return status 0$'
LO_CLIENT_REJECT='event:|failure|failed'
for opt in "" "-c 3"; do
	LO_SERVER="udaddy $opt"
	LO_CLIENT="udaddy -s $LO_ADDR $opt"
	lo_pair "udaddy ${opt:-(default)}"
done
lo_done
