#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/rcopy.sh: rcopy copies a 3 MB file over an rsocket (the
# client mmaps it and rsends it, the server rrecvs it into a file of its
# own); each copy must compare equal.  The server never exits: killed.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need rcopy cmp

LO_PS=tcp LO_PORT=7427 LO_KILL_SERVER=1
LO_CLIENT_EXPECT='bytes in [0-9.]+ seconds'
src=$lo_dir/rcopy.in
dst=$lo_dir/rcopy.out
dd if=/dev/urandom of="$src" bs=1024 count=3072 2>/dev/null || exit 99
LO_SERVER="rcopy"
LO_CLIENT="rcopy $src $LO_ADDR:$dst"

# lo_copy_ok LABEL: the run left an equal copy (then removed for the next)
lo_copy_ok()
{
	if ! cmp -s "$src" "$dst"; then
		lo_log "FAIL: $1: the copy differs from the source"
		lo_fail=1
	fi
	rm -f "$dst"
}

for _b in $(lo_backends); do
	LO_BACKEND=${_b#*=}
	lo_run_pair plain "rcopy 3 MB [${_b%%=*}]"
	lo_copy_ok "plain [${_b%%=*}]"
	[ -n "${RDMACHECK_SHIM:-}" ] && [ -e "$RDMACHECK_SHIM" ] || continue
	if [ -z "${JQ:-}" ] || [ "$JQ" = no ]; then
		lo_log "FAIL: jq is needed to check the shim's reports"
		lo_fail=1
		continue
	fi
	lo_run_pair shim "rcopy 3 MB [${_b%%=*}]"
	lo_copy_ok "shim [${_b%%=*}]"
done
lo_done
