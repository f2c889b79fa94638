#!/bin/sh
# tests/programs/cmtime.sh: cmtime (CM only: 100 and 1000 connections
# through resolve, route, QP creation, connect, disconnect) on the loopback
# backend.  The 44.0 server never exits, so it is killed.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need cmtime

LO_PS=tcp LO_PORT=7471 LO_KILL_SERVER=1
LO_SERVER_EXPECT=
LO_CLIENT_EXPECT='^connect +: +[0-9.]+
^disconnect +: +[0-9.]+
^destroy +: +[0-9.]+'
LO_CLIENT_REJECT='error|failure'
# cmtime 44.0 destroys its event channel while its event thread is still
# blocked in rdma_get_cm_event on it: a warning, harmless at exit.
for c in 100 1000; do
	LO_SERVER="cmtime -p 7471"
	LO_CLIENT="cmtime -s $LO_ADDR -p 7471 -c $c"
	lo_pair "cmtime -c $c"
done
lo_done
