# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/pf-verbs.sh: one perftest pair without rdma_cm (QPs set
# up with verbs alone, their numbers and keys over TCP), -n 200, with the
# outputs and findings it has; sourced after lib.sh by perftest-verbs.sh
# and track-wr.sh.  The caller sets LO_TCP_PORT and LO_EXPECT_SERVER.

# pf_verbs_pair TEST LABEL: TEST ("ib_send_bw -e", say) as the pair LABEL.
pf_verbs_pair()
{
	LO_SERVER="$1 -x 0 -p $LO_TCP_PORT -n 200"
	LO_CLIENT="$LO_SERVER $LO_ADDR"
	# the results: ib_read_lat's server prints none
	LO_SERVER_EXPECT='^ Data ex\. method : Ethernet$'
	LO_CLIENT_EXPECT="$LO_SERVER_EXPECT
^ +[0-9]+ +200 +[0-9]+\.[0-9]+ "
	if [ "$1" = ib_send_bw ]; then
		LO_EXPECT_CLIENT="$LO_EXPECT_SERVER
close-device-with-resources ibv_close_device
leak-cq -"
	else
		LO_EXPECT_CLIENT=$LO_EXPECT_SERVER
	fi
	lo_pair "$2"
}
