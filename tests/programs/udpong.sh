#!/bin/sh
# tests/programs/udpong.sh: udpong, rdma-core's datagram rsocket
# ping-pong (SOCK_DGRAM rsockets over UD QPs), 100 echoed 100-byte
# messages blocking and with rpoll (-T a).  The server never exits:
# killed.  A datagram rsocket's UDP port is a real port of the host.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need udpong

LO_UDP_PORT=7176 LO_KILL_SERVER=1
LO_CLIENT_EXPECT='^custom +100 +100 '
LO_SERVER="udpong -b $LO_ADDR -p 7176"
for opt in "" "-T a"; do
	LO_CLIENT="udpong -s $LO_ADDR -p 7176 -C 100 -S 100 $opt"
	lo_pair "udpong -C 100 -S 100 $opt"
done
lo_done
