#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/rspreload.sh: an ordinary TCP echo pair (sock_echo.c: the
# BSD socket API only) under LD_PRELOAD=librspreload.so, rdma-core's
# preload library, which turns its socket calls into rsockets of the
# librdmacm it links, here the loopback's: blocking accept behind select,
# a non-blocking connect finished with poll and SO_ERROR, send/recv,
# writev/readv, shutdown and close.  100 messages of 1000 bytes, then
# 20 of 100000 (more than fits in flight at once).  Under the shim the
# shim comes first and sees librspreload's r* calls as the program's.
. "${top_srcdir:-.}/tests/programs/lib.sh"
rspreload=
for d in /usr/lib/x86_64-linux-gnu/rsocket /usr/lib64/rsocket \
	 /usr/lib/rsocket $(dpkg -L librdmacm1 2>/dev/null |
			    sed -n 's|/librspreload\.so.*$||p' | head -n 1); do
	if [ -e "$d/librspreload.so.1" ]; then
		rspreload=$d/librspreload.so.1
		break
	fi
done
if [ -z "$rspreload" ]; then
	lo_log "SKIP: librspreload.so.1 not installed (librdmacm1)"
	exit 77
fi
lo_need
echo_bin=$top_builddir/tests/programs/sock_echo
[ -x "$echo_bin" ] || { lo_log "FAIL: $echo_bin not built"; exit 1; }

# lo_run_pair puts the shim (if any) first and then $LD_PRELOAD
LD_PRELOAD=$rspreload
export LD_PRELOAD
LO_PS=tcp LO_PORT=7472
LO_SERVER_EXPECT='^server: connection from [0-9.]+ to [0-9.]+:7472$
^server: echoed 100000 bytes$'
LO_CLIENT_EXPECT='^client: 100 x 1000 bytes echoed$'
LO_SERVER="$echo_bin -s -b $LO_ADDR -p 7472"
LO_CLIENT="$echo_bin -c $LO_ADDR -p 7472 -n 100 -S 1000"
lo_pair "sock_echo -n 100 -S 1000"
LO_SERVER_EXPECT='^server: echoed 2000000 bytes$'
LO_CLIENT_EXPECT='^client: 20 x 100000 bytes echoed$'
LO_CLIENT="$echo_bin -c $LO_ADDR -p 7472 -n 20 -S 100000"
lo_pair "sock_echo -n 20 -S 100000"

# librspreload sees the program's sockets only, as with the real library:
# one rsocket() per side (the listener; the client's socket), not one more
# per socket the backend makes for itself.  Counted by the shim's call log.
if [ -n "${RDMACHECK_SHIM:-}" ] && [ -e "$RDMACHECK_SHIM" ]; then
	_ns="rdmacheck-test-$$-$lo_name-count"
	_d=$lo_dir/count
	mkdir -p "$_d"
	_env="RDMACHECK_LOOPBACK_NS=$_ns LD_LIBRARY_PATH=$RDMACHECK_LOOPBACK_DIR"
	_pre="LD_PRELOAD=$RDMACHECK_SHIM $rspreload"
	# shellcheck disable=SC2086
	timeout "$lo_timeout" env $_env "$_pre" \
		RDMACHECK_OPTIONS="verbosity=2:log_path=$_d/server.log" \
		$LO_SERVER >"$_d/server.out" 2>&1 &
	lo_spid=$!
	if lo_poll "$lo_spid" lo_listening "$_ns" tcp 7472; then
		# shellcheck disable=SC2086
		timeout "$lo_timeout" env $_env "$_pre" \
			RDMACHECK_OPTIONS="verbosity=2:log_path=$_d/client.log" \
			$echo_bin -c "$LO_ADDR" -p 7472 -n 3 >"$_d/client.out" 2>&1
	fi
	wait "$lo_spid"
	lo_spid=
	for _side in server client; do
		_n=$(grep -c 'rdmacheck: rsocket:' "$_d/$_side.log" 2>/dev/null)
		if [ "${_n:-0}" != 1 ]; then
			lo_log "FAIL: the $_side called rsocket ${_n:-0} times," \
			       "expected 1 (its own socket only)"
			lo_fail=1
		else
			lo_log "ok: the $_side called rsocket once"
		fi
	done
fi
lo_done
