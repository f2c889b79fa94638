#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/cmtime.sh: cmtime (CM only: 100, 1000 and 10000
# connections through resolve, route, QP creation, connect, disconnect) on
# the loopback backend.  The 44.0 server never exits, so it is killed.
# ulimit -n and -H are in dash, bash and busybox sh, if not in POSIX:
# shellcheck disable=SC3045
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need cmtime

LO_PS=tcp LO_PORT=7471 LO_KILL_SERVER=1
LO_SERVER_EXPECT=
LO_CLIENT_EXPECT='^connect +: +[0-9.]+
^disconnect +: +[0-9.]+
^destroy +: +[0-9.]+'
LO_CLIENT_REJECT='error|failure'
# Every connection end holds one descriptor on the loopback (its id's CM
# socket; cmtime's QPs all share the first id's CQs, as rdma_create_qp
# writes them back into its attributes), none on the real stack: 10000
# connections need a limit above 10000 in each process.
lo_fd_need=10100
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$lo_fd_need" ]
then
	ulimit -n "$lo_fd_need" 2>/dev/null ||
		ulimit -n "$(ulimit -Hn)" 2>/dev/null
fi
# cmtime 44.0 destroys its event channel while its event thread is still
# blocked in rdma_get_cm_event on it: a warning, harmless at exit.
for c in 100 1000 10000; do
	if [ "$c" = 10000 ] && [ "$(ulimit -n)" != unlimited ] &&
	   [ "$(ulimit -n)" -lt "$lo_fd_need" ]; then
		lo_log "not run: cmtime -c $c needs ulimit -n $lo_fd_need" \
		       "(the hard limit is $(ulimit -Hn))"
		continue
	fi
	LO_SERVER="cmtime -p 7471"
	LO_CLIENT="cmtime -s $LO_ADDR -p 7471 -c $c"
	lo_pair "cmtime -c $c"
done
lo_done
