#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/udpong.sh: udpong, rdma-core's datagram rsocket
# ping-pong (SOCK_DGRAM rsockets over UD QPs).  The loopback's port is a
# RoCE port, as rxe's is, and 44.0's datagram rsockets cannot run there:
# each UD QP gets an address handle for its own port made without a GRH
# (ds_add_qp_dest), which a RoCE port refuses, so rconnect fails with
# ENOENT, as the real-kernel tier shows on rxe.  The test asserts that
# failure, plainly and under the shim (which must report nothing: the
# client closes its rsocket; librdmacm tears down what it made).
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need udpong

port=7176
for _b in $(lo_backends); do
	LO_BACKEND=${_b#*=}
	for mode in plain shim; do
		if [ "$mode" = shim ] &&
		   { [ -z "${RDMACHECK_SHIM:-}" ] || [ ! -e "$RDMACHECK_SHIM" ]; }
		then
			continue
		fi
		lo_seq=$((lo_seq + 1))
		_d=$lo_dir/$lo_seq-$mode
		mkdir -p "$_d"
		_ns="rdmacheck-test-$$-$lo_name-$lo_seq"
		_pre= _opt=
		if [ "$mode" = shim ]; then
			_pre=$RDMACHECK_SHIM
			_opt="json=$_d/client.%p.json"
		fi
		timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$_ns" \
			LD_LIBRARY_PATH="$LO_BACKEND" \
			udpong -b "$LO_ADDR" -p "$port" >"$_d/server.out" 2>&1 &
		lo_spid=$!
		if ! lo_poll "$lo_spid" lo_udp_bound "$port"; then
			lo_log "FAIL [$mode] [${_b%%=*}]: server never got ready"
			lo_fail=1
		else
			timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$_ns" \
				LD_LIBRARY_PATH="$LO_BACKEND" LD_PRELOAD="$_pre" \
				RDMACHECK_OPTIONS="$_opt" \
				udpong -s "$LO_ADDR" -p "$port" -C 100 -S 100 \
				>"$_d/client.out" 2>"$_d/client.err"
			_rc=$?
			if [ "$_rc" != 255 ] ||
			   ! grep -q '^rconnect: No such file or directory$' \
				"$_d/client.err"; then
				lo_log "FAIL [$mode] [${_b%%=*}]: client exited" \
				       "$_rc, expected 255 with rconnect ENOENT"
				lo_show "$_d/client.out" "$_d/client.err"
				lo_fail=1
			elif [ "$mode" = shim ] &&
			     [ "$("$JQ" -r '.findings | length' \
				  "$_d"/client.*.json 2>/dev/null)" != 0 ]; then
				lo_log "FAIL [shim] [${_b%%=*}]: findings:"
				"$JQ" '.findings' "$_d"/client.*.json
				lo_fail=1
			else
				lo_log "ok [$mode] [${_b%%=*}]: rconnect ENOENT," \
				       "as on rxe"
			fi
		fi
		{ kill "$lo_spid"; wait "$lo_spid"; } 2>/dev/null
		lo_spid=
	done
done
lo_done
