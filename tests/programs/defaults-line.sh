# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/defaults-line.sh: the one reader of a defaults matrix
# line (tests/programs/defaults.def), sourced by both its runners:
# tests/programs/defaults.sh (the loopback, plainly and under the shim)
# and tests/kernel/run-tests.sh (def/NAME, the real stack against the
# loopback).  Each runner's dm() calls dm_parse with its arguments and
# maps the DM_* variables to its own.

# dm_parse GROUP/NAME READY SERVER CLIENT [KEY=VALUE]...: sets
#   DM_GROUP DM_NAME      the line's group and name
#   DM_READY              READY as written ("cm tcp 7471", "none", ...)
#   DM_SERVER DM_CLIENT   the commands, @A and @F left for the runner
#   DM_SERVER_RC          the server's exit status, or "kill"
#   DM_CLIENT_RC          the client's exit status, or "run"
#   DM_SO DM_CO DM_SE DM_CE  expected lines (ERE, newline-separated)
#   DM_FS DM_FC           "RULE CALL" findings (newline-separated)
#   DM_GRACE DM_BUG DM_T  grace=, bug=, t= (empty when not given)
#   DM_AGAIN              again=: the ERE of a failure of the program
#                         itself after which a run is repeated
# Returns 1, with DM_ERR saying why, on a key it does not know.
dm_parse()
{
	DM_GROUP=${1%%/*} DM_NAME=${1#*/} DM_READY=$2
	DM_SERVER=$3 DM_CLIENT=$4
	DM_SERVER_RC=0 DM_CLIENT_RC=0
	DM_SO= DM_CO= DM_SE= DM_CE= DM_FS= DM_FC=
	DM_GRACE= DM_BUG= DM_T= DM_AGAIN= DM_ERR=
	shift 4
	for _dm_kv in "$@"; do
		_dm_v=${_dm_kv#*=}
		case $_dm_kv in
		rc=*)
			DM_SERVER_RC=${_dm_v%%:*}
			DM_CLIENT_RC=${_dm_v#*:}
			;;
		so=*) DM_SO=$(dm_add "$DM_SO" "$_dm_v") ;;
		co=*) DM_CO=$(dm_add "$DM_CO" "$_dm_v") ;;
		se=*) DM_SE=$(dm_add "$DM_SE" "$_dm_v") ;;
		ce=*) DM_CE=$(dm_add "$DM_CE" "$_dm_v") ;;
		fs=*) DM_FS=$(dm_add "$DM_FS" "$(echo "$_dm_v" | tr . ' ')") ;;
		fc=*) DM_FC=$(dm_add "$DM_FC" "$(echo "$_dm_v" | tr . ' ')") ;;
		grace=*) DM_GRACE=$_dm_v ;;
		bug=*) DM_BUG=$_dm_v ;;
		t=*) DM_T=$_dm_v ;;
		again=*) DM_AGAIN=$_dm_v ;;
		*) DM_ERR="bad key '$_dm_kv'"; return 1 ;;
		esac
	done
	return 0
}

# dm_add LIST LINE: LIST with LINE appended (newline-separated).
dm_add()
{
	if [ -n "$1" ]; then
		printf '%s\n%s' "$1" "$2"
	else
		printf '%s' "$2"
	fi
}
