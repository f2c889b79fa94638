#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/rping.sh: rping with 10 verified pings (SEND, RDMA READ
# and WRITE, completion channels, flush on disconnect), with library-made
# and with application-made QPs (-q: rdma_init_qp_attr + rdma_establish).
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need rping

LO_PS=tcp LO_PORT=7174
LO_SERVER_EXPECT='^server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ
^server ping data: rdma-ping-9: JKLMNOPQRSTUVWXYZ'
LO_CLIENT_EXPECT='^ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ
^ping data: rdma-ping-9: JKLMNOPQRSTUVWXYZ'
# Under the shim rping 44.0 runs clean but for two warnings: the server
# destroys the child id before it frees the QP (on its own PD and CQ, with
# ibv_destroy_qp: nothing leaks, only rdma_destroy_id(3)'s order is
# broken), and main destroys the event channel while its cm thread is
# still blocked in rdma_get_cm_event on it (harmless at exit; rdma-core
# f3ae6534a stops the thread first).  Its cm thread may still hold the
# DISCONNECTED event when main destroys the id: librdmacm waits for that
# ack by design, no finding.
# Under the shim each runs 20 times: the cm thread's timing against main
# varies, and not one run may bring a finding worse than those warnings,
# but for rping's own race below.
LO_REPEAT=20

# rping 44.0's cm thread loops on rdma_get_cm_event with no way out, on
# both sides.  When main destroys the event channel after the thread acked
# the last event but before its next rdma_get_cm_event reaches the
# library, that call works on the destroyed channel and fails, and rping
# exits 255 (perror, exit(ret)), with or without the shim: rdma-core
# f3ae6534a ("rping: terminate CM event thread before exiting") fixes it.
# Under the shim the call is the program's use-after-destroy of the
# channel: refused (EINVAL) when the destroy came first, or, when the call
# came first and the destroy overtook it on its way into the library,
# forwarded and failing there (EBADF: the real library reads the freed
# channel).  Its exit comes while main's exit writes the reports, and
# waits for them; which exit ends the process (255, or main's 0 or 23)
# is rping's race, and so is whether the report main wrote has the
# error.  rping_cm_race asserts a run that ends so on one side or both,
# and is otherwise good: the other side passed, and so did the pings.

# rping_raced MODE DIR SIDE STATUS: SIDE's run is that race, in every
# detail: its last line rping's perror, its status, the shim's finding
# and a whole report whose only error is that one (or none).
rping_raced()
{
	_e="$2/$3.err"
	if [ "$1" = plain ]; then
		[ "$4" = 255 ] &&
			tail -n 1 "$_e" | grep -q '^rdma_get_cm_event: '
		return
	fi
	case $4 in 0|23|255) ;; *) return 1 ;; esac
	_uad='^==[0-9]+== ERROR: rdmacheck: rdma_get_cm_event\(0x[0-9a-f]+\): '
	if tail -n 1 "$_e" |
	   grep -q '^rdma_get_cm_event: Invalid argument$'; then
		grep -Eq "${_uad}event channel used after it was destroyed; the use was not forwarded \\[use-after-destroy\\]\$" \
			"$_e" || return 1
	elif tail -n 1 "$_e" |
	     grep -q '^rdma_get_cm_event: Bad file descriptor$'; then
		grep -Eq "${_uad}failed \\(errno 9\\) after the channel was destroyed while this thread was blocked in it \\[use-after-destroy\\]\$" \
			"$_e" || return 1
	else
		return 1
	fi
	set -- "$2/$3".*.json
	[ $# = 1 ] && [ -f "$1" ] && "$JQ" -e '
		[.findings[] | select(.severity != "warning")
		 | "\(.rule) \(.call)"] | unique
		| . == [] or . == ["use-after-destroy rdma_get_cm_event"]' \
		"$1" >/dev/null
}

rping_cm_race()
{
	_m=$1
	_dir=$2
	_raced=0
	lo_expect_outputs "$_dir" || return 1
	for _side in server client; do
		if [ "$_side" = server ]; then _st=$3; else _st=$4; fi
		if tail -n 1 "$_dir/$_side.err" 2>/dev/null |
		   grep -q '^rdma_get_cm_event: '; then
			rping_raced "$_m" "$_dir" "$_side" "$_st" || return 1
			_raced=1
		else
			[ "$_st" = 0 ] || return 1
			if [ "$_m" = shim ]; then
				lo_check_reports "$_dir" "$_side" || return 1
			fi
		fi
	done
	[ "$_raced" = 1 ]
}

LO_KNOWN_BUG=rping_cm_race
for opt in "" "-q"; do
	LO_SERVER="rping -s -a $LO_ADDR -p 7174 -v $opt"
	LO_CLIENT="rping -c -a $LO_ADDR -p 7174 -C 10 -v $opt"
	lo_pair "rping -C 10 -v $opt"
done
lo_done
