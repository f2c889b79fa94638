#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/ucmatose.sh: ucmatose with its default 10 messages of 100
# bytes each way (RC SEND/RECV over the loopback verbs), also with 4
# connections and with rdma_migrate_id.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need ucmatose

LO_PS=tcp LO_PORT=7471
LO_SERVER_EXPECT='^initiating data transfers$
^completing sends$
^receiving data transfers$
^data transfers complete$
^return status 0$'
LO_CLIENT_EXPECT='^receiving data transfers$
^sending replies$
^data transfers complete$
^return status 0$'
for opt in "" "-c 4" "-m"; do
	LO_SERVER="ucmatose -p 7471 $opt"
	LO_CLIENT="ucmatose -s $LO_ADDR -p 7471 $opt"
	lo_pair "ucmatose ${opt:-(default)}"
done
lo_done
