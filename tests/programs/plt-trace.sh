#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# tests/programs/plt-trace.sh: the loopback librdmacm calls its own exports
# through the PLT in the same places and order as the real 44.0 library
# (doc/loopback.md, "Seen by the checker like the real one"), seen by an
# LD_PRELOAD tracer (plt_trace.la) on the single-threaded
# rdma_server/rdma_client pair.  Indented lines are the library's internal
# calls; the first call of each process nests the hidden probe id.
. "${top_srcdir:-.}/tests/programs/lib.sh"
lo_need rdma_server rdma_client

tracer=${top_builddir:-.}/tests/programs/.libs/plt_trace.so
if [ ! -e "$tracer" ]; then
	lo_log "FAIL: $tracer not built"
	exit 1
fi

cat >"$lo_dir/server.expected" <<'END'
rdma_getaddrinfo
 rdma_create_id
  rdma_create_event_channel
 rdma_bind_addr
 rdma_destroy_id
  rdma_destroy_event_channel
rdma_create_ep
 rdma_create_event_channel
rdma_listen
rdma_get_request
 rdma_get_cm_event
  rdma_migrate_id
   rdma_create_event_channel
 rdma_create_qp
  rdma_create_qp_ex
   rdma_init_qp_attr
rdma_accept
 rdma_init_qp_attr
 rdma_init_qp_attr
 rdma_init_qp_attr
 rdma_ack_cm_event
 rdma_get_cm_event
rdma_disconnect
 rdma_ack_cm_event
 rdma_get_cm_event
rdma_destroy_ep
 rdma_destroy_qp
 rdma_destroy_id
  rdma_ack_cm_event
  rdma_destroy_event_channel
rdma_destroy_ep
 rdma_destroy_id
  rdma_destroy_event_channel
rdma_freeaddrinfo
END
cat >"$lo_dir/client.expected" <<'END'
rdma_getaddrinfo
 rdma_create_id
  rdma_create_event_channel
 rdma_bind_addr
 rdma_destroy_id
  rdma_destroy_event_channel
rdma_create_ep
 rdma_create_event_channel
 rdma_get_cm_event
 rdma_resolve_route
  rdma_getaddrinfo
  rdma_freeaddrinfo
  rdma_ack_cm_event
  rdma_get_cm_event
 rdma_create_qp
  rdma_create_qp_ex
   rdma_init_qp_attr
rdma_connect
 rdma_ack_cm_event
 rdma_get_cm_event
  rdma_init_qp_attr
  rdma_init_qp_attr
  rdma_init_qp_attr
rdma_disconnect
 rdma_ack_cm_event
 rdma_get_cm_event
rdma_destroy_ep
 rdma_destroy_qp
 rdma_destroy_id
  rdma_ack_cm_event
  rdma_destroy_event_channel
rdma_freeaddrinfo
END

ns="rdmacheck-test-$$-plt"
ldp="$RDMACHECK_LOOPBACK_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$ns" \
	LD_LIBRARY_PATH="$ldp" LD_PRELOAD="$tracer" \
	RDMACHECK_PLT_TRACE="$lo_dir/server.trace" \
	rdma_server -p 7471 >"$lo_dir/server.out" 2>&1 &
lo_spid=$!
if ! lo_poll "$lo_spid" lo_listening "$ns" tcp 7471; then
	lo_log "FAIL: rdma_server never listened"
	lo_show "$lo_dir/server.out"
	exit 1
fi
timeout "$lo_timeout" env RDMACHECK_LOOPBACK_NS="$ns" \
	LD_LIBRARY_PATH="$ldp" LD_PRELOAD="$tracer" \
	RDMACHECK_PLT_TRACE="$lo_dir/client.trace" \
	rdma_client -s 127.0.0.1 -p 7471 >"$lo_dir/client.out" 2>&1 ||
	lo_fail=1
wait "$lo_spid" || lo_fail=1
lo_spid=
if [ "$lo_fail" != 0 ]; then
	lo_log "FAIL: the pair did not exit 0"
	lo_show "$lo_dir/server.out" "$lo_dir/client.out"
fi
for side in server client; do
	if diff -u "$lo_dir/$side.expected" "$lo_dir/$side.trace"; then
		lo_log "ok: $side nesting"
	else
		lo_log "FAIL: $side calls differ from the real library's"
		lo_fail=1
	fi
done
lo_done
