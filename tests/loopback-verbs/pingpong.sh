#!/bin/sh
# tests/loopback-verbs/pingpong.sh: the ibverbs-utils pingpong pairs
# (out-of-band QPN exchange over TCP) run to completion over the loopback
# libibverbs.so.1: ibv_rc_pingpong (busy-polling, with completion events,
# small messages), ibv_srq_pingpong (16 RC QPs on one SRQ),
# ibv_ud_pingpong (UD with GRH) and ibv_xsrq_pingpong (XRC).
dir=${RDMACHECK_LOOPBACK_DIR:-${top_builddir:-.}/src/loopback/.libs}
for p in ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong \
	 ibv_xsrq_pingpong; do
	if ! command -v $p >/dev/null 2>&1; then
		echo "pingpong: SKIP: $p not installed"
		exit 77
	fi
done
RDMACHECK_LOOPBACK_NS=rdmacheck-test-pp-$$
export RDMACHECK_LOOPBACK_NS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-pp.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# A free TCP port for the out-of-band exchange.
port=$(( 20000 + $$ % 20000 ))

# wait_tcp_listen PORT PID: poll /proc/net/tcp{,6} until PORT listens.
wait_tcp_listen()
{
	hex=$(printf '%04X' "$1")
	i=0
	while [ $i -lt 1000 ]; do
		if cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		   awk -v p=":$hex" '$4 == "0A" &&
			substr($2, length($2) - 4) == p { f = 1 }
			END { exit !f }'; then
			return 0
		fi
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
		i=$((i + 1))
	done
	return 1
}

run()
{
	prog=$1
	label="$1 $2"
	shift 2
	LD_LIBRARY_PATH=$dir timeout 60 $prog -g 0 -p $port "$@" \
		>"$tmp/srv" 2>&1 &
	spid=$!
	# Readiness: the server's TCP port is listening (bounded poll).
	if ! wait_tcp_listen $port $spid; then
		echo "pingpong: FAIL ($label): server did not listen"
		cat "$tmp/srv"
		kill $spid 2>/dev/null
		fail=1
		return
	fi
	LD_LIBRARY_PATH=$dir timeout 60 $prog -g 0 -p $port "$@" \
		127.0.0.1 >"$tmp/cli" 2>&1
	crc=$?
	wait $spid
	src=$?
	# xsrq prints "success" where the others print a timing line.
	if [ $crc != 0 ] || [ $src != 0 ] ||
	   ! grep -Eq 'iters in|^success' "$tmp/cli" ||
	   ! grep -Eq 'iters in|^success' "$tmp/srv"
	then
		echo "pingpong: FAIL ($label): client $crc, server $src"
		cat "$tmp/srv" "$tmp/cli"
		fail=1
	else
		echo "pingpong: $label: $(grep -E 'iters in|^success' \
			"$tmp/cli")"
	fi
	port=$((port + 1))
}

run ibv_rc_pingpong polling
run ibv_rc_pingpong events -e
run ibv_rc_pingpong small -s 64 -n 2000
run ibv_srq_pingpong polling
run ibv_srq_pingpong events -e
run ibv_ud_pingpong polling
run ibv_ud_pingpong events -e
run ibv_xsrq_pingpong polling
run ibv_xsrq_pingpong events -e
[ $fail = 0 ] && echo "pingpong: PASS"
exit $fail
