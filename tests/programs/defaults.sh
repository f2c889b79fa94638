#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/defaults.sh: runs the lines of the defaults matrix
# (tests/programs/defaults.def) of one group, DM_GROUP (set by the
# defaults-GROUP.sh wrapper), as server + client pairs on the loopback,
# plainly and under the shim (tests/programs/lib.sh), each under its
# per-run timeout, and prints each pair's time.
. "${top_srcdir:-.}/tests/programs/lib.sh"
. "${top_srcdir:-.}/tests/programs/defaults-line.sh"
. "${top_srcdir:-.}/tests/programs/pf.sh"

: "${DM_GROUP:?defaults.sh is run through a defaults-GROUP.sh wrapper}"
# the default loopback build only: the matrix is about the programs
RDMACHECK_LOOPBACK_DIRS="plt=$RDMACHECK_LOOPBACK_DIR"
dm_file=$lo_dir/copy.in
dd if=/dev/urandom of="$dm_file" bs=1024 count=1024 2>/dev/null || exit 99
dm_lines=0
dm_default_timeout=$lo_timeout

# dm NAME READY SERVER CLIENT [KEY=VALUE]...: see defaults.def.
dm()
{
	case $1 in "$DM_GROUP"/*) ;; *) return 0 ;; esac
	if ! dm_parse "$@"; then
		lo_log "FAIL: $1: $DM_ERR"; lo_fail=1; return 0
	fi
	_dm_name=$DM_NAME
	unset LO_PS LO_PORT LO_TCP_PORT LO_MGID LO_UDP_PORT LO_ALONE \
		LO_KILL_SERVER LO_SERVER_RC LO_CLIENT_RC LO_CLIENT_RUNS \
		LO_KNOWN_BUG LO_CLIENT_GRACE LO_READY_EXIT LO_RETRY_ON
	# READY words
	# shellcheck disable=SC2086
	set -- $DM_READY
	case $1 in
	cm) LO_PS=$2 LO_PORT=$3 ;;
	tcp) LO_TCP_PORT=$2 ;;
	mcast) LO_MGID=$(echo "$2" | awk -F. '{ printf \
		"00000000000000000000ffff%02x%02x%02x%02x", $1, $2, $3, $4 }')
	       ;;
	none) LO_ALONE=1 ;;
	exits) LO_READY_EXIT=1 ;;
	*) lo_log "FAIL: $_dm_name: bad READY '$DM_READY'"; lo_fail=1
	   return 0 ;;
	esac
	LO_SERVER=$(dm_subst "$DM_SERVER")
	LO_CLIENT=$(dm_subst "$DM_CLIENT")
	lo_timeout=${DM_T:-$dm_default_timeout}
	case $DM_SERVER_RC in
	kill) LO_KILL_SERVER=1 ;;
	*) LO_SERVER_RC=$DM_SERVER_RC ;;
	esac
	case $DM_CLIENT_RC in
	run) LO_CLIENT_RUNS=$((lo_timeout / 2)) ;;
	*) LO_CLIENT_RC=$DM_CLIENT_RC ;;
	esac
	LO_SERVER_EXPECT=$DM_SO LO_CLIENT_EXPECT=$DM_CO
	LO_SERVER_ERR_EXPECT=$DM_SE LO_CLIENT_ERR_EXPECT=$DM_CE
	LO_EXPECT_SERVER=$DM_FS LO_EXPECT_CLIENT=$DM_FC
	[ -z "$DM_GRACE" ] || LO_CLIENT_GRACE=$DM_GRACE
	[ -z "$DM_BUG" ] || LO_KNOWN_BUG=$DM_BUG
	[ -z "$DM_AGAIN" ] || LO_RETRY_ON=$DM_AGAIN
	# shellcheck disable=SC2086
	lo_need $(echo "$LO_CLIENT" | awk '{ print $1 }')
	dm_lines=$((dm_lines + 1))
	_t0=$(date +%s%N)
	set +f
	if [ -n "${LO_TCP_PORT:-}" ]; then
		# a default TCP port is the host's, not the loopback's
		# namespace: one pair at a time on it, across the groups
		# make -j runs side by side
		exec 9>"${TMPDIR:-/tmp}/rdmacheck-tcp-$LO_TCP_PORT.lock"
		flock -w 900 9 || lo_log "WARN: port $LO_TCP_PORT lock"
	fi
	lo_pair "$_dm_name"
	[ -n "${LO_TCP_PORT:-}" ] && exec 9>&-
	set -f
	_t1=$(date +%s%N)
	lo_log "time: $_dm_name: $(( (_t1 - _t0) / 1000000 )) ms" \
	       "(plain and under the shim)"
}

# pf_reject_retry MODE DIR SERVER_STATUS CLIENT_STATUS: perftest's -R
# race (defaults.def): the client's connect was rejected, its retry
# reused the destroyed ids (plain: SIGSEGV; under the shim: reported at
# rdma_resolve_addr, and the run goes on to exit 23), and the server
# waits for a connection that never comes until the timeout (under the
# shim the client's retry may reach it: it ends, reporting its leaks).
pf_reject_retry()
{
	grep -q 'Connection refused' "$2/client.out" "$2/client.err" ||
		return 1
	if [ "$1" = plain ]; then
		[ "$3" = 124 ] && [ "$4" = 139 ]
		return
	fi
	case $3 in 124|23) ;; *) return 1 ;; esac
	[ "$4" = 23 ] || return 1
	"$JQ" -e '[.findings[] | select(.rule == "unknown-handle" and
		.call == "rdma_resolve_addr")] | length > 0' \
		"$2"/client.*.json >/dev/null
}

# rping_stopped_mid_ping MODE DIR SERVER_STATUS CLIENT_STATUS: the client
# was stopped while a ping was under way: the server's wait for the next
# state of the ping sees DISCONNECTED instead ("wait for RDMA_WRITE_ADV
# state 7", say), and rping_test_server's -1 is its exit status, on every
# stack.  Everything else of the run must hold.
rping_stopped_mid_ping()
{
	[ "$3" = 255 ] && [ "$4" = run ] || return 1
	grep -Eq '^wait for [A-Z_]+ state 7$' "$2/server.err" || return 1
	grep -q '^rping server failed: -1$' "$2/server.err" || return 1
	lo_outputs_match "$2/client.out" "$LO_CLIENT_EXPECT" || return 1
	[ "$1" = plain ] && return 0
	lo_check_killed "$2" client && lo_check_reports "$2" server
}

# dm_subst WORDS: @A and @F replaced.
dm_subst()
{
	[ "$1" = - ] && return 0
	echo "$1" | sed -e "s|@A|$LO_ADDR|g" -e "s|@F|$dm_file|g"
}

# the table's words hold regexes: no pathname expansion while it is read
set -f
. "${top_srcdir:-.}/tests/programs/defaults.def"
set +f
if [ "$dm_lines" = 0 ]; then
	lo_log "FAIL: no line of defaults.def is in group '$DM_GROUP'"
	lo_fail=1
fi
lo_done
