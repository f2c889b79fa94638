# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/lib.sh: common code of the rdmacm-utils pair tests, sourced
# by every tests/programs/*.sh.  Runs a server and a client program on the
# loopback backend (LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR), each pair in
# its own RDMACHECK_LOOPBACK_NS, and again under the rdmacheck shim when it
# has been built, asserting on exit codes, output lines and JSON reports.
#
# Environment (from the top Makefile.am): RDMACHECK_LOOPBACK_DIR,
# RDMACHECK_SHIM, JQ, top_srcdir, top_builddir.

lo_name=$(basename "$0" .sh)
# The address servers bind and clients connect to (a real RoCE device
# cannot use 127.0.0.1: the real-kernel tier passes its own).
LO_ADDR=${RDMACHECK_TEST_ADDR:-127.0.0.1}
lo_fail=0
lo_seq=0
lo_timeout=${LO_TIMEOUT:-30}

lo_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmacheck-$lo_name.XXXXXX") || exit 99
lo_cleanup()
{
	# servers that never exit are killed by lo_pair; this is the backstop
	if [ -n "${lo_spid:-}" ]; then
		kill "$lo_spid" 2>/dev/null
		wait "$lo_spid" 2>/dev/null
	fi
	# multicast groups a killed member left in the verbs registry
	rm -rf "$(lo_mcast_base)/rdmacheck-test-$$-$lo_name-"*-mcast
	if [ "$lo_fail" = 0 ] && [ -z "${LO_KEEP:-}" ]; then
		rm -rf "$lo_dir"
	else
		echo "$lo_name: outputs kept in $lo_dir"
	fi
}
trap lo_cleanup EXIT

lo_log()
{
	echo "$lo_name: $*"
}

# lo_need PROG...: skip the test (77) when rdmacm-utils is not installed.
lo_need()
{
	for _p in "$@"; do
		if ! command -v "$_p" >/dev/null 2>&1; then
			lo_log "SKIP: $_p not installed (rdmacm-utils)"
			exit 77
		fi
	done
	if [ -z "${RDMACHECK_LOOPBACK_DIR:-}" ] ||
	   [ ! -e "$RDMACHECK_LOOPBACK_DIR/librdmacm.so.1" ] ||
	   [ ! -e "$RDMACHECK_LOOPBACK_DIR/libibverbs.so.1" ]; then
		lo_log "FAIL: loopback libraries not built in" \
		       "'${RDMACHECK_LOOPBACK_DIR:-}'"
		exit 1
	fi
}

# lo_poll PID CHECK ARGS...: run CHECK ARGS every 10 ms (at most 1000
# times) until it succeeds; fail early if process PID died.
lo_poll()
{
	_pid=$1
	shift
	_i=0
	while [ "$_i" -lt 1000 ]; do
		"$@" && return 0
		kill -0 "$_pid" 2>/dev/null || return 1
		sleep 0.01
		_i=$((_i + 1))
	done
	return 1
}

# lo_listening NS PS PORT: a server listens on @NS/cm/PS/PORT
# (/proc/net/unix flags 00010000 = listening).
lo_listening()
{
	awk -v n="@$1/cm/$2/$3" '$4 == "00010000" && $8 == n { f = 1 }
	    END { exit !f }' /proc/net/unix
}

# lo_mcast_base: where the loopback verbs keep multicast memberships.
lo_mcast_base()
{
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		echo /dev/shm
	else
		echo "${TMPDIR:-/tmp}"
	fi
}

# lo_mcast_member NS MGID: a QP of namespace NS is a member of the group
# MGID (32 hex digits), i.e. the receiver joined and attached.  The verbs
# layer creates <base>/<NS>-mcast/<MGID>/<qpn> in ibv_attach_mcast.
lo_mcast_member()
{
	for _m in "$(lo_mcast_base)/$1-mcast/$2"/*; do
		[ -e "$_m" ] && return 0
	done
	return 1
}

# lo_tcp_listening PORT: a TCP socket listens on PORT (programs that
# exchange QP numbers out of band, as the ibverbs-utils pingpongs do).
lo_tcp_listening()
{
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
	awk -v p="$(printf ':%04X' "$1")" '$4 == "0A" &&
		substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

# lo_udp_bound PORT: a socket is bound to UDP port PORT (a datagram
# rsocket's: a real host port, not namespaced).
lo_udp_bound()
{
	awk -v p="$(printf '%04X' "$1")" 'NR > 1 { split($2, a, ":")
	    if (a[2] == p) f = 1 } END { exit !f }' \
	    /proc/net/udp /proc/net/udp6 2>/dev/null
}

# lo_wait_ready NS PID: wait for the server of lo_run_pair (see there).
lo_wait_ready()
{
	if [ -n "${LO_READY_EXIT:-}" ]; then
		# the server ends on its own before any client
		lo_poll "$2" false
		return 0
	elif [ -n "${LO_TCP_PORT:-}" ]; then
		lo_poll "$2" lo_tcp_listening "$LO_TCP_PORT"
	elif [ -n "${LO_UDP_PORT:-}" ]; then
		lo_poll "$2" lo_udp_bound "$LO_UDP_PORT"
	elif [ -n "${LO_MGID:-}" ]; then
		lo_poll "$2" lo_mcast_member "$1" "$LO_MGID"
	else
		lo_poll "$2" lo_listening "$1" "$LO_PS" "$LO_PORT"
	fi
}

# lo_expect FILE REGEX...: every extended regex must match a line of FILE.
lo_expect()
{
	_f=$1
	shift
	_ok=0
	for _re in "$@"; do
		if ! grep -Eq -- "$_re" "$_f"; then
			lo_log "  missing /$_re/ in $(basename "$_f")"
			_ok=1
		fi
	done
	return $_ok
}

# lo_expect_outputs DIR: server.out and client.out in DIR match
# LO_SERVER_EXPECT and LO_CLIENT_EXPECT (each regex a line of them), their
# .err files LO_SERVER_ERR_EXPECT and LO_CLIENT_ERR_EXPECT.
lo_expect_outputs()
{
	_outs=0
	_old_ifs=$IFS
	IFS='
'
	# shellcheck disable=SC2086
	lo_expect "$1/server.out" ${LO_SERVER_EXPECT:-} || _outs=1
	# shellcheck disable=SC2086
	lo_expect "$1/client.out" ${LO_CLIENT_EXPECT:-} || _outs=1
	# shellcheck disable=SC2086
	lo_expect "$1/server.err" ${LO_SERVER_ERR_EXPECT:-} || _outs=1
	# shellcheck disable=SC2086
	lo_expect "$1/client.err" ${LO_CLIENT_ERR_EXPECT:-} || _outs=1
	IFS=$_old_ifs
	return $_outs
}

lo_show()
{
	for _f in "$@"; do
		[ -s "$_f" ] || continue
		echo "---- $_f"
		tail -n 40 "$_f"
	done
}

# lo_check_reports DIR SIDE: the JSON report(s) the shim wrote for SIDE
# (server or client) exist and parse; warnings are shown but allowed; the
# errors and leaks in them must be exactly the rules LO_EXPECT_<SIDE>
# lists (one "RULE CALL" line each, CALL "-" for leaks: a known bug of the
# program itself, which the test asserts).
lo_check_reports()
{
	_rdir=$1
	_side=$2
	_n=0
	_bad=0
	if [ "$_side" = server ]; then
		_exp=${LO_EXPECT_SERVER:-}
	else
		_exp=${LO_EXPECT_CLIENT:-}
	fi
	if [ "$_exp" = "no report" ]; then
		# a program that never called librdmacm or libibverbs
		for _r in "$_rdir/$_side".*.json; do
			[ -e "$_r" ] || continue
			lo_log "  $_side: a report where none is due: $_r"
			return 1
		done
		return 0
	fi
	_want=$(printf '%s\n' "$_exp" | awk 'NF { print $1 " " $2 }' | sort -u)
	for _r in "$_rdir/$_side".*.json; do
		[ -e "$_r" ] || continue
		_n=$((_n + 1))
		if ! "$JQ" -e . "$_r" >/dev/null 2>&1; then
			lo_log "  $_r does not parse"
			_bad=1
			continue
		fi
		"$JQ" -r '.findings[] | select(.severity == "warning")
			| "  warning: \(.rule): \(.message)"' "$_r" |
			sort -u | while IFS= read -r _w; do lo_log "$_w"; done
		_got=$("$JQ" -r '.findings[] | select(.severity != "warning")
			| "\(.rule) \(.call // "-")"' "$_r" | sort -u)
		if [ "$_got" != "$_want" ]; then
			lo_log "  $_side findings in $_r: expected" \
			       "[${_want:-none}], got [${_got:-none}]:"
			"$JQ" '.findings' "$_r" 2>&1 | head -n 60
			_bad=1
		fi
	done
	if [ "$_n" -lt 1 ]; then
		lo_log "  no JSON report of the $_side in $_rdir"
		_bad=1
	fi
	return $_bad
}

# lo_check_killed DIR SIDE: SIDE was stopped by a signal: its report(s)
# exist, say so ("killed") and hold no error (the leaks are what it held
# when it was stopped).
lo_check_killed()
{
	_n=0
	_bad=0
	for _r in "$1/$2".*.json; do
		[ -e "$_r" ] || continue
		_n=$((_n + 1))
		_e=$("$JQ" -r 'if .status != "killed" then "status \(.status)"
			else (.findings[] | select(.severity == "error")
			| "\(.rule) \(.call // "-")") end' "$_r" 2>&1)
		if [ -n "$_e" ]; then
			lo_log "  stopped $2's report $_r: $_e"
			_bad=1
		fi
	done
	if [ "$_n" -lt 1 ]; then
		lo_log "  no JSON report of the stopped $2 in $1"
		_bad=1
	fi
	return $_bad
}

# lo_want_rc MODE EXPECTED [STATUS]: the exit status a side must have:
# STATUS (the real stack's, default 0), or under the shim the shim's
# exitcode (23) when it is expected to report errors or leaks of the
# program.
lo_want_rc()
{
	if [ "$1" = shim ] && [ -n "$2" ] && [ "$2" != "no report" ]; then
		echo 23
	else
		echo "${3:-0}"
	fi
}

# lo_outputs_match FILE REGEXES: every regex (newline-separated) matches a
# line of FILE (quietly; lo_expect says what is missing).
lo_outputs_match()
{
	_f=$1
	_old_ifs=$IFS
	IFS='
'
	for _re in $2; do
		if ! grep -Eq -- "$_re" "$_f" 2>/dev/null; then
			IFS=$_old_ifs
			return 1
		fi
	done
	IFS=$_old_ifs
	return 0
}

# lo_wait_gone PID SECONDS: until process PID has ended, SECONDS at most.
lo_wait_gone()
{
	_i=0
	while [ "$_i" -lt "$(($2 * 100))" ] && kill -0 "$1" 2>/dev/null; do
		sleep 0.01
		_i=$((_i + 1))
	done
}

# lo_run_client MODE ENV...: the client of lo_run_pair: to its end, or
# with LO_CLIENT_RUNS=SECONDS, a program that runs until it is stopped:
# it must print its LO_CLIENT_EXPECT lines within SECONDS and still run,
# and is then stopped with SIGTERM (a user's ^C).  Sets _crc.
lo_run_client()
{
	_cmode=$1
	shift
	if [ -z "${LO_CLIENT_RUNS:-}" ]; then
		# shellcheck disable=SC2086
		timeout "$lo_timeout" env "$@" $LO_CLIENT \
			>"$_d/client.out" 2>"$_d/client.err"
		_crc=$?
		return
	fi
	# shellcheck disable=SC2086
	env "$@" $LO_CLIENT >"$_d/client.out" 2>"$_d/client.err" &
	_cpid=$!
	_i=0
	_n=$((LO_CLIENT_RUNS * 100))
	while [ "$_i" -lt "$_n" ] && kill -0 "$_cpid" 2>/dev/null &&
	      ! lo_outputs_match "$_d/client.out" "${LO_CLIENT_EXPECT:-}"; do
		sleep 0.01
		_i=$((_i + 1))
	done
	if [ -n "${LO_CLIENT_GRACE:-}" ]; then
		# it must outlive the server's exit by that much
		lo_wait_gone "$lo_spid" "$lo_timeout"
		lo_wait_gone "$_cpid" "$LO_CLIENT_GRACE"
	fi
	if kill -0 "$_cpid" 2>/dev/null; then
		{ kill -TERM "$_cpid"; wait "$_cpid"; } 2>/dev/null
		_crc=run
	else
		wait "$_cpid"
		_crc=$?
		lo_log "  [$_cmode] the client ended (exit $_crc) where it" \
		       "runs until stopped"
	fi
}

# lo_run_pair MODE LABEL: one run of $LO_SERVER / $LO_CLIENT (word-split
# command lines) in MODE "plain" or "shim".
#   LO_PS, LO_PORT      listener to wait for (e.g. tcp 7471)
#   LO_MGID             instead: wait until the server (a multicast
#                       receiver) is a member of this group
#   LO_TCP_PORT         instead: wait until a TCP socket listens on it
#   LO_UDP_PORT         instead: wait until the server has bound this
#                       UDP port (a datagram rsocket)
#   LO_KILL_SERVER=1    the server never exits: kill it after the client
#                       (under the shim its report must say "killed" and
#                       hold no error)
#   LO_SERVER_RC, LO_CLIENT_RC  the exit status each side has on the real
#                       stack (default 0)
#   LO_CLIENT_RUNS=SECONDS  the client runs until it is stopped: it must
#                       print its lines within SECONDS, is then stopped
#                       with SIGTERM, and reports as LO_KILL_SERVER's
#   LO_CLIENT_GRACE=SECONDS  with LO_CLIENT_RUNS: the client must still
#                       run SECONDS after the server's exit
#   LO_READY_EXIT=1     the client starts when the server has ended
#   LO_ALONE=1          no server: LO_CLIENT is one program on its own
#   LO_SERVER_EXPECT, LO_CLIENT_EXPECT  newline-separated regexes
#   LO_CLIENT_REJECT    a regex no client output line may match
#   LO_EXPECT_SERVER, LO_EXPECT_CLIENT  errors and leaks the shim must
#                       report: known bugs of the programs themselves
#                       (see lo_check_reports); warnings are always allowed;
#                       "no report": the side never uses either library
#   LO_RETRY_ON         a regex of a failure of the program itself (not
#                       of the backend or the shim) after which a run is
#                       repeated, three times at most; say why where it is
#                       set
#   LO_BACKEND          the loopback build to run on (a directory holding
#                       librdmacm.so.1 and libibverbs.so.1)
#   LO_SHIM_OPTIONS     more RDMACHECK_OPTIONS for the runs under the shim
#                       (key=value[:key=value...])
#   LO_SHIM_ONLY        set: no plain run (another script has it)
#   LO_KNOWN_BUG        a function, called on a failed run as FN MODE DIR
#                       SERVER_STATUS CLIENT_STATUS: 0 when the run is, in
#                       every detail it checks, a known bug of the program
#                       itself (a race it has), which it asserts; say which
#                       bug and its upstream fix where it is set
lo_run_pair()
{
	_mode=$1
	_label=$2
	lo_seq=$((lo_seq + 1))
	_d="$lo_dir/$lo_seq-$_mode"
	mkdir -p "$_d"
	_ns="rdmacheck-test-$$-$lo_name-$lo_seq"
	_ldp="$LO_BACKEND${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	if [ "$_mode" = shim ]; then
		_pre="$RDMACHECK_SHIM${LD_PRELOAD:+ $LD_PRELOAD}"
		_opt_s="json=$_d/server.%p.json${LO_SHIM_OPTIONS:+:$LO_SHIM_OPTIONS}"
		_opt_c="json=$_d/client.%p.json${LO_SHIM_OPTIONS:+:$LO_SHIM_OPTIONS}"
	else
		_pre=${LD_PRELOAD:-}
		_opt_s=${RDMACHECK_OPTIONS:-}
		_opt_c=$_opt_s
	fi
	_status=0

	_src= _crc=
	if [ -n "${LO_ALONE:-}" ]; then
		# one program on its own (LO_CLIENT), no server
		: >"$_d/server.out"
		: >"$_d/server.err"
	else
		# only the programs get the environment, not timeout(1)
		# shellcheck disable=SC2086
		timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$_ns" \
			LD_LIBRARY_PATH="$_ldp" LD_PRELOAD="$_pre" \
			RDMACHECK_OPTIONS="$_opt_s" $LO_SERVER \
			>"$_d/server.out" 2>"$_d/server.err" &
		lo_spid=$!
	fi
	if [ -z "${LO_ALONE:-}" ] && ! lo_wait_ready "$_ns" "$lo_spid"; then
		lo_log "FAIL [$_mode] $_label: server never got ready"
		{ kill "$lo_spid"; } 2>/dev/null
		_status=1
	else
		lo_run_client "$_mode" RDMACHECK_LOOPBACK_NS="$_ns" \
			LD_LIBRARY_PATH="$_ldp" LD_PRELOAD="$_pre" \
			RDMACHECK_OPTIONS="$_opt_c"
		if [ -n "${LO_CLIENT_RUNS:-}" ]; then
			_want=run
		else
			_want=$(lo_want_rc "$_mode" "${LO_EXPECT_CLIENT:-}" \
				"${LO_CLIENT_RC:-0}")
		fi
		if [ "$_crc" != "$_want" ]; then
			lo_log "FAIL [$_mode] $_label: client exited $_crc" \
			       "(want $_want)"
			_status=1
		fi
	fi
	if [ -n "${LO_ALONE:-}" ]; then
		:
	elif [ "${LO_KILL_SERVER:-0}" = 1 ]; then
		if ! kill -0 "$lo_spid" 2>/dev/null; then
			wait "$lo_spid"
			lo_log "FAIL [$_mode] $_label: server died" \
			       "(exit $?) before it was killed"
			_status=1
		else
			{ kill "$lo_spid"; wait "$lo_spid"; } 2>/dev/null
		fi
	else
		wait "$lo_spid"
		_src=$?
		_want=$(lo_want_rc "$_mode" "${LO_EXPECT_SERVER:-}" \
			"${LO_SERVER_RC:-0}")
		if [ "$_src" -ne "$_want" ]; then
			lo_log "FAIL [$_mode] $_label: server exited $_src" \
			       "(want $_want)"
			_status=1
		fi
	fi
	lo_spid=

	lo_expect_outputs "$_d" || _status=1
	if [ -n "${LO_CLIENT_REJECT:-}" ] &&
	   grep -Eq -- "$LO_CLIENT_REJECT" "$_d/client.out"; then
		lo_log "  client output matches /$LO_CLIENT_REJECT/"
		_status=1
	fi

	if [ "$_mode" = shim ] && [ "$_status" = 0 ]; then
		if [ -n "${LO_CLIENT_RUNS:-}" ]; then
			lo_check_killed "$_d" client || _status=1
		else
			lo_check_reports "$_d" client || _status=1
		fi
		# a killed server's report (if any) lists what it still held
		if [ "${LO_KILL_SERVER:-0}" = 1 ]; then
			lo_check_killed "$_d" server || _status=1
		elif [ -z "${LO_ALONE:-}" ]; then
			lo_check_reports "$_d" server || _status=1
		fi
	fi

	if [ "$_status" = 0 ]; then
		lo_log "ok [$_mode] $_label"
	elif [ -n "${LO_KNOWN_BUG:-}" ] &&
	     "$LO_KNOWN_BUG" "$_mode" "$_d" "${_src:--}" "${_crc:--}"; then
		lo_log "ok [$_mode] $_label: the program's own bug" \
		       "($LO_KNOWN_BUG), asserted"
	elif [ -n "${LO_RETRY_ON:-}" ] && [ "${lo_tries:-0}" -lt 3 ] &&
	     cat "$_d/server.out" "$_d/server.err" "$_d/client.out" \
		 "$_d/client.err" | grep -Eq -- "$LO_RETRY_ON"; then
		# A known failure of the program itself, not of ours: run
		# again (at most three times).
		lo_tries=$((${lo_tries:-0} + 1))
		lo_log "again [$_mode] $_label: the program's own failure" \
		       "/$LO_RETRY_ON/"
		lo_run_pair "$_mode" "$_label"
		return
	else
		lo_show "$_d/server.out" "$_d/server.err" "$_d/client.out" \
			"$_d/client.err"
		lo_fail=1
	fi
	lo_tries=0
}

# lo_backends: the loopback builds every pair runs on, "NAME=DIR" words:
# the default build, whose internal calls go through the PLT as the real
# library's do, and (when built) one linked with -Bsymbolic-functions, as
# Ubuntu links librdmacm, whose internal calls the shim cannot see.
lo_backends()
{
	if [ -n "${RDMACHECK_LOOPBACK_DIRS:-}" ]; then
		echo "$RDMACHECK_LOOPBACK_DIRS"
	else
		echo "plt=$RDMACHECK_LOOPBACK_DIR"
	fi
}

# lo_pair LABEL: run the pair plainly (unless LO_SHIM_ONLY is set), then
# under the shim if it exists, with LO_SHIM_OPTIONS added to its options
# (LO_REPEAT times, default once: a finding that comes only with some
# timings must show up), on every loopback build.
lo_pair()
{
	for _b in $(lo_backends); do
		LO_BACKEND=${_b#*=}
		_bl="${_b%%=*}"
		[ -n "${LO_SHIM_ONLY:-}" ] || lo_run_pair plain "$1 [$_bl]"
		if [ -z "${RDMACHECK_SHIM:-}" ] || [ ! -e "$RDMACHECK_SHIM" ]
		then
			continue
		fi
		if [ -z "${JQ:-}" ] || [ "$JQ" = no ]; then
			lo_log "FAIL: jq is needed to check the shim's reports"
			lo_fail=1
		else
			_rep=0
			while [ "$_rep" -lt "${LO_REPEAT:-1}" ]; do
				_rep=$((_rep + 1))
				lo_run_pair shim "$1 [$_bl]${LO_REPEAT:+ #$_rep}"
			done
		fi
	done
}

lo_done()
{
	exit "$lo_fail"
}
