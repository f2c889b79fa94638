#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/track-wr.sh: real programs that move data, under the
# shim with the data-path checks on (track_wr=1, track_buffers=1): every
# work request they post and every completion they poll goes through
# wrap_wr.c, every free and munmap through wrap_buf.c, and none of them
# may bring a data-path finding (they have none), only the findings the
# same runs have without the checks (tests/programs/perftest-verbs.sh,
# pingpong.sh, rstream.sh say why each is the program's own).  The runs
# without the shim are those scripts'; only the shim runs here.
. "${top_srcdir:-.}/tests/programs/lib.sh"
. "${top_srcdir:-.}/tests/programs/pf.sh"
lo_need ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat \
	ib_write_lat ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong \
	ibv_xsrq_pingpong rstream
if [ -z "${RDMACHECK_SHIM:-}" ] || [ ! -e "$RDMACHECK_SHIM" ]; then
	echo "track-wr: the shim is not built"
	exit 77
fi

RDMACHECK_LOOPBACK_DIRS="plt=$RDMACHECK_LOOPBACK_DIR"
LO_SHIM_ONLY=1
LO_SHIM_OPTIONS="track_wr=1:track_buffers=1"
LO_TCP_PORT=$(( 20000 + $$ % 20000 ))
LO_RETRY_ON=$PF_CLOCK_NOISE

# track_on SIDE: the options took, in each of SIDE's reports of the
# last run (a misspelt or refused option would leave the checks off and
# this test green for nothing).
track_on()
{
	_tn=0
	for _r in "$lo_dir/$lo_seq-shim/$1".*.json; do
		[ -e "$_r" ] || continue
		_tn=$((_tn + 1))
		"$JQ" -e '.options.track_wr == true and
			  .options.track_buffers == true' "$_r" >/dev/null ||
			{ lo_log "FAIL: $_r: track_wr/track_buffers off"
			  lo_fail=1; }
	done
	[ "$_tn" -gt 0 ] || { lo_log "FAIL: no $1 report in run $lo_seq"
			       lo_fail=1; }
}

# perftest without rdma_cm, -n 200 (pf.sh, as perftest-verbs.sh)
LO_EXPECT_SERVER='leak-device-list -'
for t in "ib_send_bw" "ib_send_bw -e" "ib_write_bw" "ib_read_bw -e" \
	 "ib_atomic_bw" "ib_send_lat -e" "ib_write_lat"; do
	pf_verbs_pair "$t" "$t (track_wr)"
	track_on server
	track_on client
done
unset LO_EXPECT_SERVER LO_EXPECT_CLIENT LO_RETRY_ON

# srq_unpolled MODE DIR SERVER_STATUS CLIENT_STATUS: ibv_srq_pingpong's
# own bug.  Its loop posts a QP's next send while scnt < iters, counting
# completed sends only, so with 16 QPs up to 15 more sends than iters
# are in flight when scnt reaches iters; it leaves the loop and
# ibv_destroy_qp()s them with their completions unpolled (unfixed in
# rdma-core master 691953d8d).  How many, and on which side, is timing:
# each side exits 0 with a clean report, or 23 with that finding only.
srq_unpolled()
{
	[ "$1" = shim ] || return 1
	lo_expect_outputs "$2" || return 1
	for _sq in server:$3 client:$4; do
		case ${_sq#*:} in
		0) _sx= ;;
		23) _sx='destroy-qp-with-unpolled-completions ibv_destroy_qp' ;;
		*) return 1 ;;
		esac
		LO_EXPECT_SERVER=$_sx LO_EXPECT_CLIENT=$_sx
		lo_check_reports "$2" "${_sq%:*}" || _sx=bad
		unset LO_EXPECT_SERVER LO_EXPECT_CLIENT
		[ "$_sx" != bad ] || return 1
	done
}

# the pingpongs, RC (polling and events), UD, SRQ, XRC: pingpong.sh
LO_SERVER_EXPECT='^[0-9]+ iters in [0-9.]+ seconds|^success$'
LO_CLIENT_EXPECT=$LO_SERVER_EXPECT
for p in rc "rc -e" ud srq xsrq; do
	# shellcheck disable=SC2086
	set -- $p
	LO_KNOWN_BUG=
	[ "$1" = srq ] && LO_KNOWN_BUG=srq_unpolled
	LO_SERVER="ibv_$1_pingpong -g 0 -p $LO_TCP_PORT${2:+ $2}"
	LO_CLIENT="$LO_SERVER $LO_ADDR"
	lo_pair "ibv_$1_pingpong${2:+ $2} (track_wr)"
	track_on server
	track_on client
done

unset LO_KNOWN_BUG LO_TCP_PORT

# rsockets: rstream's data over RDMA WRITE with immediate, and its
# control messages: rstream.sh
LO_PS=tcp LO_PORT=7471
LO_EXPECT_SERVER='leak-rsocket -'
LO_SERVER_EXPECT='^custom +4k +1k +1 '
LO_CLIENT_EXPECT=$LO_SERVER_EXPECT
LO_SERVER="rstream -b $LO_ADDR -S 4096 -C 1000 -T v"
LO_CLIENT="rstream -s $LO_ADDR -S 4096 -C 1000 -T v"
lo_pair "rstream -S 4096 -C 1000 -T v (track_wr)"
track_on server
track_on client
lo_done
