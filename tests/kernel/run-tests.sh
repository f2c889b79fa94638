#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/kernel/run-tests.sh: the real-kernel tier's test list and the one
# runner both backends use, so that what the fidelity table compares was
# made the same way.  Owns the program pairs' definitions (command lines
# and expected output lines as in tests/programs/*.sh), readiness checks
# for each backend, and the "facts" file each test leaves.
#
#   run-tests.sh list                    the test names
#   run-tests.sh real|loopback OUTDIR    run every test (those matching the
#                                        extended regex RDMACHECK_KERNEL_TESTS)
#   run-tests.sh one BACKEND OUTDIR NAME one test (what the loop runs under
#                                        the per-test timeout)
#   run-tests.sh timed BACKEND OUTDIR TOTAL I NAME
#                                        one test under that timeout, timed
#                                        (what the loop runs, in parallel
#                                        for scenarios)
#
# "real" runs on the real rdma-core over the kernel's rdma_cm (in the
# guest, rxe0); "loopback" runs on the project's loopback backend.  Each
# test leaves OUTDIR/NAME/facts: "KEY<tab>VALUE" lines (see doc/testing.md)
# that tests/kernel/table.sh compares between the backends, plus the
# programs' outputs, JSON reports and verbosity=2 call logs.
#
# Environment: top_srcdir, top_builddir; RDMACHECK_TEST_ADDR (the address
# servers bind to; on the real stack the rxe netdev's own address);
# RDMACHECK_KERNEL_NETDEV (real: the rxe netdev, for multicast readiness);
# RDMACHECK_KERNEL_TEST_TIMEOUT (seconds per test, default 150);
# RDMACHECK_KERNEL_JOBS (scenarios run at a time, default the CPUs).
set -u
src=$(cd "${top_srcdir:?}" && pwd)
build=$(cd "${top_builddir:?}" && pwd)
shim=$build/src/.libs/librdmacheck.so
lodir=$build/loopback/.libs
JQ=${JQ:-jq}
A=${RDMACHECK_TEST_ADDR:-127.0.0.1}
netdev=${RDMACHECK_KERNEL_NETDEV:-dummy0}
test_timeout=${RDMACHECK_KERNEL_TEST_TIMEOUT:-150}
proc_timeout=40		# one scenario program run plainly
tab=$(printf '\t')
# dm_parse: the defaults matrix's line reader (def/ tests)
# shellcheck disable=SC1091
. "$src/tests/programs/defaults-line.sh"
# PF_CLOCK_NOISE: perftest's own clock failure (def/ib_*, prog/pf-)
# shellcheck disable=SC1091
. "$src/tests/programs/pf.sh"

programs="cmtime-100 cmtime-1000 ucmatose ucmatose-c4 ucmatose-m
ucmatose-C0 ucmatose-C0-c4 ucmatose-C0-m rping rping-q rdma_server
rdma_xserver udaddy udaddy-c3 mckey mckey-l mckey-o rstream riostream
rcopy rspreload pp-rc pp-rc-e pp-uc pp-uc-e pp-ud pp-ud-e pp-srq pp-srq-e
pf-send_bw pf-send_bw-e pf-read_bw-e pf-atomic_bw pf-write_lat"

list()
{
	for p in $programs; do
		echo "prog/$p"
	done
	def_list
	for f in "$src"/tests/scenarios/*.scenario; do
		echo "scn/$(basename "$f" .scenario)"
	done
}

now_ms()
{
	# wall clock in ms (date +%s%N: GNU date, on both sides)
	echo $(( $(date +%s%N) / 1000000 ))
}

# fact KEY VALUE: one line of the current test's facts.
fact()
{
	printf '%s\t%s\n' "$1" "$2" >>"$t_dir/facts"
}

# --- program pairs -----------------------------------------------------
# def_prog NAME: the pair's definition (from tests/programs/*.sh):
#   P_SERVER, P_CLIENT   command lines (word-split)
#   P_READY              "listen PS PORT" | "mcast GROUP" | "tcp PORT":
#                        when the server is ready for the client
#   P_PRELOAD            preloaded into both programs (after the shim)
#   P_KILL=1             the server never exits: killed after the client
#   P_ONCE=1             too long to run twice: only under the shim
#   P_TIMEOUT            seconds for one program (default 40)
#   P_SERVER_EXPECT, P_CLIENT_EXPECT  newline-separated regexes that must
#                        match a line of the output
#   P_CLIENT_REJECT      a regex no client output line may match
#   P_RETRY_ON           a regex of the program's own failure (its output):
#                        the run is repeated, 3 times at most
def_prog()
{
	P_KILL=0 P_ONCE=0 P_PRELOAD= P_RETRY_ON=
	P_SERVER_EXPECT= P_CLIENT_EXPECT= P_CLIENT_REJECT=
	P_TIMEOUT=40
	case $1 in
	cmtime-*)
		P_READY="listen tcp 7471" P_KILL=1
		P_SERVER="cmtime -p 7471"
		P_CLIENT="cmtime -s $A -p 7471 -c ${1#cmtime-}"
		P_CLIENT_EXPECT='^connect +: +[0-9.]+
^disconnect +: +[0-9.]+
^destroy +: +[0-9.]+'
		P_CLIENT_REJECT='error|failure'
		if [ "$1" = cmtime-1000 ]; then P_ONCE=1 P_TIMEOUT=300; fi
		;;
	ucmatose*)
		case $1 in
		ucmatose) o= ;;
		ucmatose-c4) o="-c 4" ;;
		ucmatose-m) o="-m" ;;
		ucmatose-C0) o="-C 0" ;;
		ucmatose-C0-c4) o="-C 0 -c 4" ;;
		ucmatose-C0-m) o="-C 0 -m" ;;
		esac
		P_READY="listen tcp 7471"
		P_SERVER="ucmatose -p 7471 $o"
		P_CLIENT="ucmatose -s $A -p 7471 $o"
		case $1 in
		ucmatose-C0*)
			P_SERVER_EXPECT='^test complete$
^return status 0$'
			P_CLIENT_EXPECT=$P_SERVER_EXPECT
			;;
		*)
			P_SERVER_EXPECT='^initiating data transfers$
^completing sends$
^receiving data transfers$
^data transfers complete$
^return status 0$'
			P_CLIENT_EXPECT='^receiving data transfers$
^sending replies$
^data transfers complete$
^return status 0$'
			;;
		esac
		;;
	rping|rping-q)
		o=; [ "$1" = rping-q ] && o=-q
		P_READY="listen tcp 7174"
		P_SERVER="rping -s -a $A -p 7174 -v $o"
		P_CLIENT="rping -c -a $A -p 7174 -C 10 -v $o"
		P_SERVER_EXPECT='^server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ
^server ping data: rdma-ping-9: JKLMNOPQRSTUVWXYZ'
		P_CLIENT_EXPECT='^ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ
^ping data: rdma-ping-9: JKLMNOPQRSTUVWXYZ'
		;;
	rdma_server)
		P_READY="listen tcp 7471"
		P_SERVER="rdma_server -p 7471"
		P_CLIENT="rdma_client -s $A -p 7471"
		P_SERVER_EXPECT='^rdma_server: end 0$'
		P_CLIENT_EXPECT='^rdma_client: end 0$'
		;;
	rdma_xserver)
		P_READY="listen tcp 7471"
		P_SERVER="rdma_xserver -p 7471"
		P_CLIENT="rdma_xclient -s $A -p 7471"
		P_SERVER_EXPECT='^rdma_xserver: end 0$'
		P_CLIENT_EXPECT='^rdma_xclient: end 0$'
		;;
	udaddy|udaddy-c3)
		o=; [ "$1" = udaddy-c3 ] && o="-c 3"
		P_READY="listen udp 7174"
		P_SERVER="udaddy $o"
		P_CLIENT="udaddy -s $A $o"
		P_SERVER_EXPECT='^udaddy: starting server$
^receiving data transfers$
^sending replies$
^data transfers complete$
^test complete$
^return status 0$'
		P_CLIENT_EXPECT='^udaddy: starting client$
^initiating data transfers$
^receiving data transfers$
^data transfers complete$
^test complete$
^return status 0$'
		P_CLIENT_REJECT='event:|failure|failed'
		;;
	mckey*)
		P_READY="mcast 239.0.0.1"
		P_SERVER="mckey -m 239.0.0.1 -b $A"
		P_CLIENT="mckey -m 239.0.0.1 -b $A -s"
		case $1 in
		mckey-l) P_SERVER="$P_SERVER -l" P_CLIENT="$P_CLIENT -l" ;;
		mckey-o) P_CLIENT="$P_CLIENT -o" ;;
		esac
		P_SERVER_EXPECT='^mckey: starting server$
^mckey: joined dgid: ::ffff:239\.0\.0\.1 mlid 0x0 sl 0$
^receiving data transfers$
^data transfers complete$
^return status 0$'
		P_CLIENT_EXPECT='^mckey: starting client$
^mckey: joined dgid: ::ffff:239\.0\.0\.1 mlid 0x0 sl 0$
^initiating data transfers$
^data transfers complete$
^return status 0$'
		P_CLIENT_REJECT='event:|failure'
		;;
	rstream|riostream)
		# one 4 KiB x 100 verified transfer test instead of the
		# whole benchmark (minutes under TCG)
		P_READY="listen tcp 7471"
		P_SERVER="$1 -b $A -S 4096 -C 100 -T v"
		P_CLIENT="$1 -s $A -S 4096 -C 100 -T v"
		P_SERVER_EXPECT='^custom +4k +100 +1 '
		P_CLIENT_EXPECT=$P_SERVER_EXPECT
		;;
	rspreload)
		# a plain TCP echo pair made rsockets by librdmacm1's preload
		# library (tests/programs/rspreload.sh)
		P_READY="listen tcp 7472"
		P_PRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so.1
		e=$build/tests/programs/sock_echo
		P_SERVER="$e -s -b $A -p 7472"
		P_CLIENT="$e -c $A -p 7472 -n 100 -S 1000"
		P_SERVER_EXPECT='^server: echoed 100000 bytes$'
		P_CLIENT_EXPECT='^client: 100 x 1000 bytes echoed$'
		;;
	pp-*)
		# ibverbs-utils, QP numbers over TCP; rxe has no XRC, so no
		# ibv_xsrq_pingpong (tests/programs/pingpong.sh runs it)
		o=${1#pp-}
		case $o in *-e) o="${o%-e} -e" ;; esac
		P_READY="tcp 18516"
		P_SERVER="ibv_${o% -e}_pingpong -g $(gid_index) -p 18516"
		case $o in *-e) P_SERVER="$P_SERVER -e" ;; esac
		P_CLIENT="$P_SERVER $A"
		P_SERVER_EXPECT='^[0-9]+ iters in [0-9.]+ seconds'
		P_CLIENT_EXPECT=$P_SERVER_EXPECT
		;;
	pf-*)
		# perftest without rdma_cm: QPs set up with verbs alone, their
		# numbers and keys over TCP (tests/programs/perftest-verbs.sh);
		# one test per operation (SEND, READ, atomic, WRITE) and SEND
		# with events: 20-40 s each under TCG
		o=${1#pf-}
		P_READY="tcp 18515"
		P_SERVER="ib_${o%-e} -x $(gid_index) -p 18515 -n 200"
		case $o in *-e) P_SERVER="$P_SERVER -e" ;; esac
		P_CLIENT="$P_SERVER $A"
		P_SERVER_EXPECT='^ Data ex\. method : Ethernet$'
		P_CLIENT_EXPECT="$P_SERVER_EXPECT
^ +[0-9]+ +200 +[0-9]+\.[0-9]+ "
		# perftest's own clock check (pf.sh says why)
		P_RETRY_ON=$PF_CLOCK_NOISE
		;;
	rcopy)
		P_READY="listen tcp 7427" P_KILL=1
		P_SERVER="rcopy"
		# rcopy mmaps the files: keep them off 9p
		P_CLIENT="rcopy $t_tmp/rcopy.in $A:$t_tmp/rcopy.out"
		P_CLIENT_EXPECT='bytes in [0-9.]+ seconds'
		;;
	*)
		return 1
		;;
	esac
	return 0
}

# --- the defaults matrix (tests/programs/defaults.def) ------------------
# def/NAME: a line of the matrix, run as its make-check twin runs it
# (tests/programs/defaults.sh) but with this tier's runner and facts.  The
# tier takes the lines a prog/ test does not run already (ucmatose,
# udaddy, mckey, cmtime, rdma_server, rdma_xserver and rcopy are the same
# command lines there) and that fit its time under TCG: rping, the
# ibverbs-utils lines, each perftest test's default invocation and -e
# (10-35 s a pair) and perftest's refused combinations.  perftest's -R,
# -q 4 and -a data runs would add about 8 minutes; rstream's and riostream's
# defaults do not end within the per-run timeout (their first test alone,
# 100k ping-pongs, takes longer over rxe under TCG): they run on the
# loopback only (doc/testing.md).
def_in_tier()
{
	case $1 in
	cm/rping|ib/*) return 0 ;;
	# not -R (perftest's reject race, bug=pf_reject_retry, is make
	# check's) nor -q 4's data runs (35-100 s a pair under TCG)
	pf/*-R|pf/*_bw-q4) return 1 ;;
	pf/*) return 0 ;;
	*) return 1 ;;
	esac
}

def_list()
{
	dm() { if def_in_tier "$1" "$2"; then echo "def/${1#*/}"; fi; }
	set -f
	# shellcheck disable=SC1091
	. "$src/tests/programs/defaults.def"
	set +f
}

# def_line NAME: P_* of the matrix line NAME (see def_prog for prog/),
# read by the matrix's own reader (tests/programs/defaults-line.sh).
def_line()
{
	_want=$1
	P_FOUND=0
	dm()
	{
		def_in_tier "$1" "$2" && [ "${1#*/}" = "$_want" ] || return 0
		dm_parse "$@" || { P_FOUND=bad; return 0; }
		P_FOUND=1
		P_KILL=0 P_ONCE=0 P_PRELOAD= P_RUN=0 P_CLIENT_REJECT=
		case $DM_READY in
		cm\ *) P_READY="listen ${DM_READY#cm }" ;;
		*) P_READY=$DM_READY ;;
		esac
		P_SERVER=$(echo "$DM_SERVER" | sed "s|@A|$A|g")
		P_CLIENT=$(echo "$DM_CLIENT" | sed "s|@A|$A|g")
		[ "$DM_SERVER_RC" = kill ] && P_KILL=1
		[ "$DM_CLIENT_RC" = run ] && P_RUN=1
		P_SERVER_EXPECT=$DM_SO P_CLIENT_EXPECT=$DM_CO
		P_SERVER_ERR_EXPECT=$DM_SE P_CLIENT_ERR_EXPECT=$DM_CE
		P_GRACE=$DM_GRACE P_TIMEOUT=${DM_T:-40} P_RETRY_ON=$DM_AGAIN
	}
	set -f
	# shellcheck disable=SC1091
	. "$src/tests/programs/defaults.def"
	set +f
	[ "$P_FOUND" = 1 ]
}

# gid_index: the GID table index of $A (RoCE v2) on the real device, 0 on
# the loopback (one GID).  A RoCE QP needs a GRH: pingpong's -g.
gid_index()
{
	[ "$backend" = real ] || { echo 0; return; }
	_want=$(echo "$A" | awk -F. '{ printf \
		"0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", \
		$1, $2, $3, $4 }')
	for _g in /sys/class/infiniband/*/ports/1/gids/*; do
		_n=${_g##*/}
		[ "$(cat "$_g" 2>/dev/null)" = "$_want" ] || continue
		_t=${_g%/gids/*}/gid_attrs/types/$_n
		[ "$(cat "$_t" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "$_n"
		return
	done
	echo 0
}

# tcp_listening PORT: a TCP socket listens on PORT.
tcp_listening()
{
	_hex=$(printf ':%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p="$_hex" \
		'$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
		 END { exit !f }'
}

# backend_env NS: the environment words (for env(1)) of the backend.
backend_env()
{
	if [ "$backend" = loopback ]; then
		echo "LD_LIBRARY_PATH=$lodir RDMACHECK_LOOPBACK_NS=$1"
	fi
}

# real_listening PS PORT: a cm id listens on PORT (kernel's view).
real_listening()
{
	_ps=$(echo "$1" | tr '[:lower:]' '[:upper:]')
	rdma res show cm_id 2>/dev/null | grep -q \
		"state LISTEN ps $_ps .*src-addr [0-9.]*:$2 "
}

# ready NS PID: has the server of the pair become ready?
ready()
{
	set -- "$1" "$2" $P_READY
	case $3 in
	exits)
		# the server ends on its own first
		! kill -0 "$2" 2>/dev/null
		;;
	listen)
		if [ "$backend" = loopback ]; then
			awk -v n="@$1/cm/$4/$5" \
			    '$4 == "00010000" && $8 == n { f = 1 }
			     END { exit !f }' /proc/net/unix
		else
			real_listening "$4" "$5"
		fi
		;;
	tcp)
		tcp_listening "$4"
		;;
	mcast)
		if [ "$backend" = loopback ]; then
			# the verbs layer's membership files (doc/loopback.md)
			for _m in /dev/shm/"$1"-mcast/*/*; do
				[ -e "$_m" ] && return 0
			done
			return 1
		else
			# rdma_join_multicast joins the IP group on the netdev
			ip maddr show dev "$netdev" | grep -Eq "inet +$4\$"
		fi
		;;
	esac
}

# idle: nothing of an earlier pair still holds the port or group (real).
idle()
{
	set -- $P_READY
	case $1 in exits|none) return 0 ;; esac
	# TCP ports are the host's on both sides
	[ "$1" = tcp ] && { ! tcp_listening "$2"; return; }
	[ "$backend" = real ] || return 0
	case $1 in
	listen) ! real_listening "$2" "$3" ;;
	mcast) ! ip maddr show dev "$netdev" | grep -Eq "inet +$2\$" ;;
	esac
}

# poll TRIES CMD...: run CMD every 0.1 s until it succeeds (bounded).
poll()
{
	_n=$1
	shift
	while ! "$@"; do
		_n=$((_n - 1))
		[ "$_n" -gt 0 ] || return 1
		sleep 0.1
	done
}

server_alive_and_ready()
{
	ready "$1" "$2" && return 0
	kill -0 "$2" 2>/dev/null || return 0	# died: stop polling
	return 1
}

# expect FILE REGEX-LINES: prints what is missing (one awk, no grep per
# line: every process costs ~0.1 s under TCG).
expect()
{
	[ -n "$2" ] || return 0
	# the regexes through the environment: awk -v would eat backslashes
	RE="$2" awk -v f="${1##*/}" '
		BEGIN { n = split(ENVIRON["RE"], re, "\n") }
		{ for (i = 1; i <= n; i++) if ($0 ~ re[i]) hit[i] = 1 }
		END { for (i = 1; i <= n; i++) if (!hit[i])
			printf "missing /%s/ in %s; ", re[i], f }' "$1" 2>/dev/null ||
		printf 'no %s; ' "${1##*/}"
}

# pair_run MODE: pair_run_once, again (3 times at most) while its outputs
# show P_RETRY_ON, the program's own failure: that run's facts dropped.
pair_run()
{
	_tries=1
	while :; do
		_nf=0
		[ -e "$t_dir/facts" ] && _nf=$(wc -l <"$t_dir/facts")
		pair_run_once "$1"
		[ -n "${P_RETRY_ON:-}" ] && [ "$_tries" -lt 3 ] &&
			cat "$t_dir/$1"/*.out "$t_dir/$1"/*.err 2>/dev/null |
			grep -Eq -- "$P_RETRY_ON" || return 0
		echo "run-tests: $backend: $t_name [$1]: again (/$P_RETRY_ON/)" >&2
		head -n "$_nf" "$t_dir/facts" >"$t_dir/facts.new" &&
			mv "$t_dir/facts.new" "$t_dir/facts"
		rm -f "$t_dir/$1"/*
		_tries=$((_tries + 1))
	done
}

# pair_run_once MODE: one run of the pair, plain or under the shim; facts
# MODE.server.rc, MODE.client.rc, MODE.out, and for the shim
# shim.SIDE.findings and calls.SIDE.*.
pair_run_once()
{
	_mode=$1
	_d=$t_dir/$_mode
	_ns="rdmacheck-kt-$$-$t_name-$_mode"
	_env=$(backend_env "$_ns")
	if [ "$_mode" = shim ]; then
		_opt_s="verbosity=2:log_path=$_d/server.%p.log:json=$_d/server.%p.json"
		_opt_c="verbosity=2:log_path=$_d/client.%p.log:json=$_d/client.%p.json"
		_pre="LD_PRELOAD=$shim${P_PRELOAD:+:$P_PRELOAD}"
	else
		_opt_s= _opt_c= _pre=${P_PRELOAD:+LD_PRELOAD=$P_PRELOAD}
	fi
	if ! poll 300 idle; then
		fact "$_mode.server.rc" "busy"
		fact "$_mode.client.rc" "-"
		fact "$_mode.out" "port or group still in use by an earlier test"
		return
	fi
	# --foreground: the programs stay in the test's process group, so the
	# per-test timeout kills them too
	if [ "$P_READY" = none ]; then
		# one program on its own: the client
		sleep 0 &
		: >"$_d/server.out"
		: >"$_d/server.err"
	else
		# shellcheck disable=SC2086
		timeout --foreground -k 5 "$P_TIMEOUT" env $_env $_pre \
			RDMACHECK_OPTIONS="$_opt_s" \
			$P_SERVER >"$_d/server.out" 2>"$_d/server.err" \
			</dev/null &
	fi
	_spid=$!
	poll 300 server_alive_and_ready "$_ns" "$_spid"
	_crc=-
	if [ "$P_READY" != exits ] && [ "$P_READY" != none ] &&
	   ! kill -0 "$_spid" 2>/dev/null; then
		: # the server died before it was ready
	elif ! ready "$_ns" "$_spid" && [ "$P_READY" != none ]; then
		_crc="server-not-ready"
	elif [ "${P_RUN:-0}" = 1 ]; then
		client_run
	else
		# shellcheck disable=SC2086
		timeout --foreground -k 5 "$P_TIMEOUT" env $_env $_pre \
			RDMACHECK_OPTIONS="$_opt_c" \
			$P_CLIENT >"$_d/client.out" 2>"$_d/client.err" \
			</dev/null
		_crc=$?
	fi
	if [ "$P_READY" = none ]; then
		wait "$_spid"
		_src=-
	elif [ "$P_KILL" = 1 ] && kill -0 "$_spid" 2>/dev/null; then
		kill "$_spid"
		wait "$_spid" 2>/dev/null
		_src=killed
	else
		[ "$_crc" = server-not-ready ] && kill "$_spid"
		wait "$_spid" 2>/dev/null
		_src=$?
	fi
	fact "$_mode.server.rc" "$_src$(why "$_src" "$_d/server.err")"
	fact "$_mode.client.rc" "$_crc$(why "$_crc" "$_d/client.err")"

	_out="$(expect "$_d/server.out" "$P_SERVER_EXPECT")"
	_out="$_out$(expect "$_d/client.out" "$P_CLIENT_EXPECT")"
	_out="$_out$(expect "$_d/server.err" "${P_SERVER_ERR_EXPECT:-}")"
	_out="$_out$(expect "$_d/client.err" "${P_CLIENT_ERR_EXPECT:-}")"
	if [ -n "$P_CLIENT_REJECT" ] && [ -f "$_d/client.out" ] &&
	   grep -Eq -- "$P_CLIENT_REJECT" "$_d/client.out"; then
		_out="${_out}client.out matches /$P_CLIENT_REJECT/; "
	fi
	fact "$_mode.out" "${_out:-ok}"

	[ "$_mode" = shim ] || return 0
	for _side in server client; do
		fact "shim.$_side.findings" "$(findings "$_d"/$_side.*.json)"
		# a killed server's calls depend on when it was killed
		[ "$_side" = server ] && [ "$_src" = killed ] && continue
		calls "$_side" "$_d"/$_side.*.log >>"$t_dir/facts"
	done
}

# client_run: a client that runs until stopped (a def/ line's rc=S:run):
# it must print its lines (and, with P_GRACE, outlive the server's exit
# by that many seconds), then it is stopped with SIGTERM; _crc "run", or
# its exit status when it ended by itself.
client_run()
{
	# shellcheck disable=SC2086
	env $_env $_pre RDMACHECK_OPTIONS="$_opt_c" $P_CLIENT \
		>"$_d/client.out" 2>"$_d/client.err" </dev/null &
	_cpid=$!
	_n=$((P_TIMEOUT * 5))
	while [ "$_n" -gt 0 ] && kill -0 "$_cpid" 2>/dev/null &&
	      [ -n "$(expect "$_d/client.out" "$P_CLIENT_EXPECT")" ]; do
		sleep 0.1
		_n=$((_n - 1))
	done
	if [ -n "$P_GRACE" ]; then
		poll $((P_TIMEOUT * 10)) dead "$_spid"
		poll $((P_GRACE * 10)) dead "$_cpid"
	fi
	if kill -0 "$_cpid" 2>/dev/null; then
		kill "$_cpid"
		wait "$_cpid" 2>/dev/null
		_crc=run
	else
		wait "$_cpid"
		_crc=$?
	fi
}

dead() { ! kill -0 "$1" 2>/dev/null; }

# why RC FILE: for an exit status that is not 0, 23 (the shim's) or a
# kill, " (LINE)": the last line of the program's stderr, or the first
# "scenario:" line of a scenario's output.
why()
{
	case $1 in
	0|23|killed|-|server-not-ready) return ;;
	esac
	_l=$(grep -m1 '^scenario: ' "$2" 2>/dev/null)
	[ -n "$_l" ] || _l=$(grep -v '^==[0-9]*== ' "$2" 2>/dev/null | tail -n 1)
	[ -n "$_l" ] && printf ' (%s)' "$_l"
}

# findings JSON...: "SEVERITY:rule@call" of every finding, sorted, joined
# with ","; "none", or "no report".
findings()
{
	[ -e "$1" ] || { echo "no report"; return; }
	"$JQ" -rn '[inputs | .findings[] | (.severity[0:1] | ascii_upcase) +
		":" + .rule + "@" + (.call // "-")] | unique | join(",")
		| if . == "" then "none" else . end' "$@" 2>/dev/null ||
		echo "bad report"
}

# calls SIDE LOG...: the facts "calls.SIDE.FN<tab>COUNT" per function the
# verbosity=2 logs show called, internal calls as "[librdmacm]FN" (the
# layer that made them).
calls()
{
	_side=$1
	shift
	[ -e "$1" ] || return 0
	awk -v side="$_side" '
		/^==[0-9]+== rdmacheck: (\[[a-z]+\] )?[a-z_][a-z_0-9]*(:|$)/ {
			sub(/^==[0-9]+== rdmacheck: /, "")
			sub(/:.*/, "")
			sub(/ /, "")
			n[$0]++
		}
		END { for (f in n) printf "calls.%s.%s\t%d\n", side, f, n[f] }
	' "$@"
}

run_def()
{
	def_line "$1" || { fact error "no such line of defaults.def"; return; }
	pair_run plain
	pair_run shim
}

run_prog()
{
	def_prog "$1" || { fact error "no such program test"; return; }
	if [ "$1" = rcopy ]; then
		printf 'rdmacheck rcopy test\n' >"$t_tmp/rcopy.in"
	fi
	if [ "$P_ONCE" = 1 ]; then
		fact plain.server.rc "-"
		fact plain.client.rc "-"
		fact plain.out "not run (long: only under the shim)"
	else
		pair_run plain
	fi
	pair_run shim
}

# --- scenarios ----------------------------------------------------------
# run_scn NAME: tests/scenarios/NAME.scenario through run-scenario.sh with
# this backend; clean twins also run without the shim.  Facts plain.rc,
# shim.rc (the program's exit status), shim.verdict, shim.findings.
run_scn()
{
	_spec=$src/tests/scenarios/$1.scenario
	[ -f "$_spec" ] || { fact error "no such scenario"; return; }
	# a scenario of the RDMACM_1.4 API runs on the loopback build that
	# has it; rdma-core 44.0 has not
	# shellcheck disable=SC1090
	_want=$(backend=; . "$_spec"; echo "$backend")
	_sb=$backend
	if [ "$_want" = rdmacm14 ]; then
		if [ "$backend" = real ]; then
			fact plain.rc "-"
			fact shim.rc "-"
			fact shim.verdict "not run (RDMACM_1.4 API)"
			fact shim.findings "-"
			return
		fi
		_sb=rdmacm14
	fi
	{
		echo ". '$_spec'"
		echo "backend=$_sb"
	} >"$t_dir/$1.scenario"
	# the spec's variables, read without letting them into this shell
	# shellcheck disable=SC1090
	program=$(program= mode=; . "$_spec"; echo "$program")
	# shellcheck disable=SC1090
	mode=$(program= mode=bad; . "$_spec"; echo "$mode")
	if [ "$mode" = clean ]; then
		_ns="rdmacheck-kt-$$-$1-plain"
		# shellcheck disable=SC2046
		timeout --foreground -k 5 "$proc_timeout" env $(backend_env "$_ns") \
			SCN_DIR="$build/tests/scenarios" \
			"$build/tests/scenarios/$program" clean \
			>"$t_dir/plain/out" 2>&1 </dev/null
		_rc=$?
		fact plain.rc "$_rc$(why "$_rc" "$t_dir/plain/out")"
	else
		fact plain.rc "-"
	fi
	top_srcdir=$src top_builddir=$build RDMACHECK_SHIM=$shim \
		RDMACHECK_LOOPBACK_DIR=$lodir JQ=$JQ SCN_KEEP=$t_dir/shim \
		RDMACHECK_LOOPBACK_RDMACM14_DIR=$build/loopback/rdmacm14/.libs \
		sh "$src/tests/scenarios/run-scenario.sh" "$t_dir/$1.scenario" \
		>"$t_dir/shim/run-scenario.out" 2>&1 </dev/null
	_v=$?
	fact shim.rc "$(cat "$t_dir/shim/status" 2>/dev/null || echo -)"
	if [ "$_v" = 0 ]; then
		fact shim.verdict pass
	else
		fact shim.verdict "$(grep -m1 -E '^(FAIL|SKIP)' \
			"$t_dir/shim/run-scenario.out" || echo "exit $_v")$(why 1 \
			"$t_dir/shim/out")"
	fi
	fact shim.findings "$(findings "$t_dir/shim/report.json")"
}

# --- the loop -----------------------------------------------------------
one()
{
	backend=$1 out=$2 t_name=$3
	t_dir=$out/$t_name
	t_tmp=${TMPDIR:-/tmp}/rdmacheck-kt-$$
	# few processes: each costs ~0.1 s in the guest
	if [ -e "$t_dir" ] || [ -e "$t_tmp" ]; then
		rm -rf "$t_dir" "$t_tmp"
	fi
	mkdir -p "$t_dir/plain" "$t_dir/shim" "$t_tmp" || exit 1
	trap 'rm -rf "$t_tmp"' EXIT
	case $t_name in
	prog/*) t_name=${t_name#prog/}; run_prog "$t_name" ;;
	def/*) t_name=${t_name#def/}; run_def "$t_name" ;;
	scn/*) t_name=${t_name#scn/}; run_scn "$t_name" ;;
	*) fact error "unknown test" ;;
	esac
}

# timed BACKEND OUTDIR TOTAL I NAME: test NAME (the I-th of TOTAL) under
# its timeout, its time added to OUTDIR/times and its line printed.
timed()
{
	backend=$1 out=$2 total=$3 i=$4 name=$5
	s=$(now_ms)
	tt=$test_timeout
	[ "$name" = prog/cmtime-1000 ] && tt=$((test_timeout + 300))
	timeout -k 5 "$tt" sh "$0" one "$backend" "$out" "$name" </dev/null
	rc=$?
	ms=$(( $(now_ms) - s ))
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		printf 'timeout\tkilled after %s s\n' "$tt" >>"$out/$name/facts"
		status="TIMEOUT (killed after $tt s)"
	else
		status=done
	fi
	# one short write each: lines of parallel runs do not interleave
	printf '%s\t%s\n' "$name" "$ms" >>"$out/times"
	printf 'run-tests: %s: test %d/%d %-52s %6d.%01d s %s\n' \
		"$backend" "$i" "$total" "$name" $((ms / 1000)) \
		$((ms % 1000 / 100)) "$status"
}

# Program pairs listen on fixed ports, so they run one at a time;
# scenarios bind port 0 and share nothing, so RDMACHECK_KERNEL_JOBS of
# them run at a time (default: the CPUs; under TCG each guest CPU is a
# host thread, and one scenario keeps about one busy).
run_all()
{
	backend=$1 out=$2
	njobs=${RDMACHECK_KERNEL_JOBS:-$(nproc 2>/dev/null || echo 1)}
	mkdir -p "$out"
	: >"$out/times"
	sel=$(list | grep -E -- "${RDMACHECK_KERNEL_TESTS:-.}" |
	      awk '{ print NR, $0 }')
	total=$(printf '%s\n' "$sel" | grep -c .)
	t0=$(now_ms)
	printf '%s\n' "$sel" | grep -E ' (prog|def)/' | while read -r i name; do
		timed "$backend" "$out" "$total" "$i" "$name"
	done
	printf '%s\n' "$sel" | grep -Ev ' (prog|def)/' |
		xargs -r -n 2 -P "$njobs" sh "$0" timed "$backend" "$out" "$total"
	ms=$(( $(now_ms) - t0 ))
	echo "run-tests: $backend: $total tests in $((ms / 1000)) s" \
	     "($njobs scenarios at a time)"
}

case ${1:-} in
list) list ;;
one) shift; one "$@" ;;
timed) shift; timed "$@" ;;
real|loopback) run_all "$1" "$2" ;;
*) echo "usage: $0 list | real|loopback OUTDIR | one BACKEND OUTDIR NAME" >&2
   exit 2 ;;
esac
