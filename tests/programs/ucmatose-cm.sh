#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/ucmatose-cm.sh: ucmatose without messages (-C 0): pure CM
# connect/disconnect, with several connections and with rdma_migrate_id.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need ucmatose

LO_PS=tcp LO_PORT=7471
LO_SERVER_EXPECT='^test complete$
^return status 0$'
LO_CLIENT_EXPECT='^test complete$
^return status 0$'
for opt in "-C 0" "-C 0 -c 4" "-C 0 -m"; do
	LO_SERVER="ucmatose -p 7471 $opt"
	LO_CLIENT="ucmatose -s $LO_ADDR -p 7471 $opt"
	lo_pair "ucmatose $opt"
done
lo_done
