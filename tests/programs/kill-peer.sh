#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/kill-peer.sh: no hang without an end.  For each program
# pair below, server and client run as two processes on the loopback and
# one side (each in turn) is killed with SIGKILL at a random point of the
# run; the survivor must then end (an error or an exit) within the real
# stack's bound for that program, or, where the real stack leaves it
# waiting too, still wait the way it would there, and is then killed.
#
# The bounds (KP_BOUND): rdma_cm programs get the CM's REJ or DREQ at
# once (the kernel destroys a dead process's cm_ids): 3 s; the verbs
# programs learn it when a send goes unanswered for the transport timeout
# (timeout 14, retry_cnt 7: 4.096 us * 2^14 * 8 = 0.54 s): 2 s; the rest
# is slack for a loaded 2-CPU machine.  Where the real stack hangs too
# (KP_HANG), the kind says how; a server whose client was killed before
# it reached the server may also wait for a client (block):
#   block  the survivor waits for a completion event (ibv_get_cq_event)
#          or sleeps: it must be blocked, using at most 5 % of a CPU, as
#          over a NIC;
#   spin   the program busy-polls its CQ or its memory, or retries a
#          call in a loop (ibv_rc_pingpong without -e, perftest, ucmatose,
#          rstream, riostream's poll byte): it spins there too; it must
#          still use at least 10 % of a CPU.
#
# Under the shim (when built; see KILL_PEER_MODES), both sides preloaded:
# the survivor must end or hang exactly as bounded above (the shim must
# not turn a peer's death into a hang of its own, nor a hang into a
# crash), and leave its JSON report: at its exit, or, when it
# hangs, on the SIGTERM that then stops it ("killed").  Its findings are
# those of whatever error path the kill sent it down, and are printed.
#
# KILL_PEER_SEED=N reproduces a run (the seed is printed); KILL_PEER_RUNS
# (default 1) runs per program and side; KILL_PEER_MODES the modes of
# each: "plain shim" both (twice the time), or by default "alternate":
# one side of each program killed plainly, the other under the shim,
# which side by the seed's parity.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need rping ucmatose rstream riostream ibv_rc_pingpong ib_send_bw \
	ib_write_lat

kp_seed=${KILL_PEER_SEED:-$(( $(date +%s) % 100000 + $$ ))}
kp_runs=${KILL_PEER_RUNS:-1}
kp_modes=${KILL_PEER_MODES:-alternate}
if [ -z "${RDMACHECK_SHIM:-}" ] || [ ! -e "$RDMACHECK_SHIM" ]; then
	kp_modes=plain
fi
lo_log "seed $kp_seed (KILL_PEER_SEED=$kp_seed to run it again)"
kp_tcp=$(( 20000 + $$ % 20000 ))
kp_n=0

# kp_rand I MAX: the I-th number of the seed's sequence, 0 to MAX - 1.
kp_rand()
{
	awk -v s="$kp_seed" -v i="$1" -v m="$2" \
	    'BEGIN { srand(s); for (k = 0; k < i; k++) rand()
		     print int(rand() * m) }'
}

# kp_ticks PID: the CPU time (user + system, clock ticks) PID used so far.
kp_ticks()
{
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null |
	awk '{ print $12 + $13 }'
}

# kp_sample PID: over half a second (a measuring window, not a wait for
# anything), the clock ticks PID used (kp_used) and in how many of 10
# looks one of its threads was running or runnable (kp_run); kp_seen
# says what the last look saw (each thread's state and wait channel).
# Fails when PID is gone.  A spinner on a loaded machine may get little
# CPU, but it is always runnable; a blocked process is not.
kp_sample()
{
	_t0=$(kp_ticks "$1")
	kp_run=0
	for _i in 1 2 3 4 5 6 7 8 9 10; do
		kp_seen=$(for _t in /proc/"$1"/task/*; do
			printf '%s:%s ' \
			    "$(sed 's/.*) //' "$_t/stat" 2>/dev/null |
			       cut -d' ' -f1)" \
			    "$(cat "$_t/wchan" 2>/dev/null)"
		done)
		case " $kp_seen" in
		*" R:"*) kp_run=$((kp_run + 1)) ;;
		esac
		sleep 0.05
	done
	_t1=$(kp_ticks "$1")
	[ -n "$_t0" ] && [ -n "$_t1" ] && kp_used=$((_t1 - _t0))
}

# kp_blocked PID: PID uses at most 5 % of a CPU over half a second and
# is seldom runnable: it is blocked in a wait, not spinning.
kp_blocked()
{
	kp_sample "$1" &&
		[ "$kp_used" -le $(($(getconf CLK_TCK) / 40)) ] &&
		[ "$kp_run" -le 2 ]
}

# kp_spinning PID: PID uses at least 10 % of a CPU over half a second,
# or was runnable at 8 looks of 10 (a spinner the machine's load starves).
kp_spinning()
{
	kp_sample "$1" &&
		{ [ "$kp_used" -ge $(($(getconf CLK_TCK) / 20)) ] ||
		  [ "$kp_run" -ge 8 ]; }
}

# kp_hangs PID KINDS: PID hangs in one of the ways KINDS allows; sets
# kp_how.
kp_hangs()
{
	for _k in $2; do
		if [ "$_k" = block ] && kp_blocked "$1"; then
			kp_how="waits, blocked"
			return 0
		elif [ "$_k" = spin ] && kp_spinning "$1"; then
			kp_how="still polls, spinning"
			return 0
		fi
	done
	return 1
}

# kp_dialled NS: the client has reached the server: an accepted
# connection on the listener's name; for the verbs programs an
# established TCP connection on the out-of-band port, or once they closed
# it, a loopback link between their QPs' blocks (@NS/qpb/...).  Before
# that a server waits for its client, on the real stack too.
kp_dialled()
{
	if [ "$KP_READY" = tcp ]; then
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p="$(printf ':%04X' "$kp_tcp")" '$4 == "01" &&
		    substr($2, length($2) - 4) == p { f = 1 }
		    END { exit !f }' ||
		awk -v n="@$1/qpb/" '$6 == "03" && index($8, n) == 1 {
		    f = 1 } END { exit !f }' /proc/net/unix
	else
		awk -v n="@$1/cm/tcp/$KP_PORT" '$6 == "03" && $8 == n {
		    f = 1 } END { exit !f }' /proc/net/unix
	fi
}

# kp_ready NS PID: the server of the current pair is ready for a client.
kp_ready()
{
	if [ "$KP_READY" = tcp ]; then
		lo_poll "$2" lo_tcp_listening "$kp_tcp"
	else
		lo_poll "$2" lo_listening "$1" tcp "$KP_PORT"
	fi
}

# kp_report DIR SIDE STATUS: SIDE's JSON report under the shim exists,
# parses and says STATUS ("exited" or "killed"); its findings printed.
kp_report()
{
	_kn=0
	for _r in "$1/$2".*.json; do
		[ -e "$_r" ] || continue
		_kn=$((_kn + 1))
		_st=$("$JQ" -r .status "$_r" 2>/dev/null)
		if [ "$_st" != "$3" ]; then
			lo_log "  $_r: status '${_st:-unparsable}', not $3"
			return 1
		fi
		lo_log "  $2's findings: $("$JQ" -r '[.findings[] |
			"\(.rule)@\(.call // "-")"] | unique | join(" ")' "$_r")"
	done
	[ "$_kn" -gt 0 ] || { lo_log "  no JSON report of the $2 in $1"
			      return 1; }
}

# kp_run LABEL VICTIM DELAY_MS MODE: one run of $KP_SERVER / $KP_CLIENT,
# VICTIM (server or client) killed DELAY_MS after the client started;
# MODE plain or shim.
kp_run()
{
	kp_n=$((kp_n + 1))
	_d="$lo_dir/$kp_n"
	mkdir -p "$_d"
	_ns="rdmacheck-test-$$-$lo_name-$kp_n"
	_what="$1 [$4]: $2 killed after $3 ms"
	_pre= _os= _oc=
	if [ "$4" = shim ]; then
		_pre=$RDMACHECK_SHIM
		_os="json=$_d/server.%p.json" _oc="json=$_d/client.%p.json"
	fi
	# shellcheck disable=SC2086
	env RDMACHECK_LOOPBACK_NS="$_ns" LD_PRELOAD="$_pre" \
		RDMACHECK_OPTIONS="$_os" \
		LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" $KP_SERVER \
		>"$_d/server.out" 2>"$_d/server.err" &
	lo_spid=$!
	if ! kp_ready "$_ns" "$lo_spid"; then
		lo_log "FAIL $_what: the server never got ready"
		lo_show "$_d/server.out" "$_d/server.err"
		lo_fail=1
		{ kill -9 "$lo_spid"; wait "$lo_spid"; } 2>/dev/null
		lo_spid=
		return
	fi
	# shellcheck disable=SC2086
	env RDMACHECK_LOOPBACK_NS="$_ns" LD_PRELOAD="$_pre" \
		RDMACHECK_OPTIONS="$_oc" \
		LD_LIBRARY_PATH="$RDMACHECK_LOOPBACK_DIR" $KP_CLIENT \
		>"$_d/client.out" 2>"$_d/client.err" &
	_cpid=$!
	# the random point of the run (a chosen moment, not a wait for one)
	sleep "$(awk -v m="$3" 'BEGIN { printf "%.3f", m / 1000 }')"
	if [ "$2" = server ]; then
		_vpid=$lo_spid _spid=$_cpid _sv=client
	else
		_vpid=$_cpid _spid=$lo_spid _sv=server
	fi
	_hang=$KP_HANG
	if [ "$2" = client ] && ! kp_dialled "$_ns"; then
		_hang="$_hang block"
		_what="$_what (before it reached the server)"
	fi
	if ! kill -9 "$_vpid" 2>/dev/null; then
		_why="(the $2 had ended already)"
	else
		_why=
	fi
	wait "$_vpid" 2>/dev/null
	_t0=$(date +%s.%N)
	lo_wait_gone "$_spid" "$KP_BOUND"
	if ! kill -0 "$_spid" 2>/dev/null; then
		wait "$_spid"
		_rc=$?
		_dt=$(awk -v a="$_t0" -v b="$(date +%s.%N)" \
		      'BEGIN { printf "%.2f", b - a }')
		if [ -n "$KP_REJECT" ] && cat "$_d/$_sv.out" "$_d/$_sv.err" |
		   grep -Eq -- "$KP_REJECT"; then
			lo_log "FAIL $_what: the $_sv's output matches" \
			       "/$KP_REJECT/"
			lo_show "$_d/$_sv.out" "$_d/$_sv.err"
			lo_fail=1
		elif [ "$4" = shim ] && ! kp_report "$_d" "$_sv" exited; then
			lo_log "FAIL $_what: the $_sv ended (exit $_rc)" \
			       "without its report"
			lo_show "$_d/$_sv.out" "$_d/$_sv.err"
			lo_fail=1
		else
			lo_log "ok $_what: the $_sv ended (exit $_rc) in" \
			       "$_dt s (bound $KP_BOUND s) $_why"
		fi
	elif kp_hangs "$_spid" "$_hang"; then
		lo_log "ok $_what: the $_sv $kp_how (as on the real stack)"
		if [ "$4" = shim ]; then
			# stopped as a user would: the shim reports on SIGTERM
			kill -TERM "$_spid" 2>/dev/null
			lo_wait_gone "$_spid" 5
			if ! kp_report "$_d" "$_sv" killed; then
				lo_log "FAIL $_what: the stopped $_sv left" \
				       "no report saying so"
				lo_show "$_d/$_sv.out" "$_d/$_sv.err"
				lo_fail=1
			fi
		fi
	else
		lo_log "FAIL $_what: the $_sv still runs after" \
		       "$KP_BOUND s${_hang:+, not as it may: $_hang}" \
		       "(${kp_used:-?} ticks in 0.5 s, runnable at" \
		       "${kp_run:-?}/10 looks; threads: ${kp_seen:-gone})"
		lo_show "$_d/server.out" "$_d/server.err" "$_d/client.out" \
			"$_d/client.err"
		lo_fail=1
	fi
	{ kill -9 "$_spid"; wait "$_spid"; } 2>/dev/null
	lo_spid=
}

# kp_prog LABEL SPAN_MS: every side of the current pair killed
# KILL_PEER_RUNS times, at a random point within SPAN_MS of its start.
kp_prog()
{
	kp_r=0
	while [ "$kp_r" -lt "$kp_runs" ]; do
		kp_r=$((kp_r + 1))
		for _v in server client; do
			kp_i=$((${kp_i:-0} + 1))
			_ms=$(kp_rand "$kp_i" "$2")
			_ml=$kp_modes
			if [ "$_ml" = alternate ]; then
				_ml=plain
				[ $(((kp_i + kp_seed) % 2)) = 0 ] || _ml=shim
			fi
			for _m in $_ml; do
				kp_run "$1" "$_v" "$_ms" "$_m"
			done
		done
	done
}

# rdma_cm programs: the CM tells the survivor at once.
KP_READY=cm KP_PORT=7174 KP_BOUND=3 KP_HANG= KP_REJECT=
KP_SERVER="rping -s -a $LO_ADDR -p 7174"
KP_CLIENT="rping -c -a $LO_ADDR -p 7174 -C 1000000"
kp_prog rping 1500
KP_PORT=7471
# 10000 messages take it about 0.2 s.  Its survivor may be polling its
# CQ for receives (poll_cqs), which never looks at the CM's DISCONNECTED:
# it spins there too, the kernel flushes no user QP.
KP_HANG=spin
KP_SERVER="ucmatose -p 7471 -C 10000"
KP_CLIENT="ucmatose -s $LO_ADDR -p 7471 -C 10000"
kp_prog ucmatose 250
# rstream's default is non-blocking, and its transfer loops take rrecv's
# 0 (the peer disconnected) for "try again" when errno still says EAGAIN
# from the call before (rstream.c recv_xfer): the survivor of a transfer
# spins there on the real stack too.  riostream spins on the last byte of
# its riomap'd buffer, without a call that could tell it the peer went;
# one that saw the error calls rclose with its mapping left, which never
# returns in 44.0 (rs_free_iomappings retries a riounmap that fails: the
# real one spins, the loopback's sleeps, loopback/rs/rs_stream.c).
KP_HANG=spin
KP_SERVER="rstream -b $LO_ADDR -S 4096 -C 1000000"
KP_CLIENT="rstream -s $LO_ADDR -S 4096 -C 1000000"
kp_prog rstream 1500
KP_HANG="spin block"
KP_SERVER="riostream -b $LO_ADDR -S 4096 -C 1000000"
KP_CLIENT="riostream -s $LO_ADDR -S 4096 -C 1000000"
kp_prog riostream 1500

# verbs programs: a send of the survivor's goes unanswered (0.54 s);
# one that only waits for a receive waits for ever, as over a NIC.
# A flush (status 5) first would say the QP went to ERR by itself.
KP_READY=tcp KP_BOUND=2 KP_HANG=spin
KP_REJECT='Failed status (5:|Work Request Flushed)'
KP_SERVER="ibv_rc_pingpong -g 0 -p $kp_tcp -n 10000000"
KP_CLIENT="$KP_SERVER $LO_ADDR"
kp_prog ibv_rc_pingpong 1500
KP_HANG=block
KP_SERVER="ibv_rc_pingpong -g 0 -p $kp_tcp -n 10000000 -e"
KP_CLIENT="$KP_SERVER $LO_ADDR"
kp_prog "ibv_rc_pingpong -e" 1500
KP_HANG=spin
KP_SERVER="ib_send_bw -x 0 -p $kp_tcp -n 10000000"
KP_CLIENT="$KP_SERVER $LO_ADDR"
kp_prog ib_send_bw 1500
KP_SERVER="ib_write_lat -x 0 -p $kp_tcp -n 10000000"
KP_CLIENT="$KP_SERVER $LO_ADDR"
kp_prog ib_write_lat 1500

lo_done
