# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/pf.sh: what the tests know of perftest itself, written
# once: the failure of its own clock check, and one pair without rdma_cm.
# Sourced by perftest.sh, perftest-verbs.sh and track-wr.sh (after
# lib.sh), defaults.def and the kernel tier (tests/kernel/run-tests.sh).

# perftest measures the CPU clock before it reports and gives up when the
# samples are too noisy ("Correlation coefficient r^2: ... < 0.9", then
# "Can't produce a report": get_cpu_mhz in get_clock.c), on a loaded
# machine or under TCG now and then.  Such a run says nothing about the
# backend or the shim: the runners repeat it (LO_RETRY_ON, again=,
# P_RETRY_ON).  An ERE without spaces, so that it fits a defaults line.
PF_CLOCK_NOISE='^Correlation.coefficient.r\^2'

# pf_verbs_pair TEST LABEL: TEST ("ib_send_bw -e", say) as the pair LABEL,
# QPs set up with verbs alone (their numbers and keys over TCP), -n 200,
# with the outputs and findings it has.  The caller sets LO_TCP_PORT and
# LO_EXPECT_SERVER.
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
