/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/programs/plt_trace.c: a minimal LD_PRELOAD tracer for the
 * plt-trace test.  It wraps the librdmacm exports that the real library
 * calls internally and writes one line per call, indented by the calling
 * thread's nesting depth, to $RDMACHECK_PLT_TRACE.  Nested lines are the
 * library's own calls through the PLT, which is what the test compares
 * with the real 44.0 library's.
 */
#include <config.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static __thread int depth;

static void trace(const char *name)
{
	static int fd = -2;
	char line[128];
	int n;

	if (fd == -2) {
		const char *p = getenv("RDMACHECK_PLT_TRACE");

		fd = p ? open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			      0644) : -1;
	}
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%*s%s\n", depth, "", name);
	if (write(fd, line, n) != n)
		return;
}

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		abort();
	return f;
}

#define WRAP(ret, name, params, args)					\
ret name params								\
{									\
	static ret (*real) params;					\
	ret ret_;							\
									\
	if (!real)							\
		real = (ret (*) params)next(#name);			\
	trace(#name);							\
	depth++;							\
	ret_ = real args;						\
	depth--;							\
	return ret_;							\
}

#define WRAP_VOID(name, params, args)					\
void name params							\
{									\
	static void (*real) params;					\
									\
	if (!real)							\
		real = (void (*) params)next(#name);			\
	trace(#name);							\
	depth++;							\
	real args;							\
	depth--;							\
}

WRAP(struct rdma_event_channel *, rdma_create_event_channel, (void), ())
WRAP_VOID(rdma_destroy_event_channel, (struct rdma_event_channel *c), (c))
WRAP(int, rdma_create_id, (struct rdma_event_channel *c,
	struct rdma_cm_id **id, void *ctx, enum rdma_port_space ps),
	(c, id, ctx, ps))
WRAP(int, rdma_destroy_id, (struct rdma_cm_id *id), (id))
WRAP(int, rdma_create_ep, (struct rdma_cm_id **id, struct rdma_addrinfo *r,
	struct ibv_pd *pd, struct ibv_qp_init_attr *a), (id, r, pd, a))
WRAP_VOID(rdma_destroy_ep, (struct rdma_cm_id *id), (id))
WRAP(int, rdma_bind_addr, (struct rdma_cm_id *id, struct sockaddr *a),
	(id, a))
WRAP(int, rdma_resolve_addr, (struct rdma_cm_id *id, struct sockaddr *s,
	struct sockaddr *d, int t), (id, s, d, t))
WRAP(int, rdma_resolve_route, (struct rdma_cm_id *id, int t), (id, t))
WRAP(int, rdma_listen, (struct rdma_cm_id *id, int b), (id, b))
WRAP(int, rdma_get_request, (struct rdma_cm_id *l, struct rdma_cm_id **id),
	(l, id))
WRAP(int, rdma_connect, (struct rdma_cm_id *id, struct rdma_conn_param *p),
	(id, p))
WRAP(int, rdma_accept, (struct rdma_cm_id *id, struct rdma_conn_param *p),
	(id, p))
WRAP(int, rdma_reject, (struct rdma_cm_id *id, const void *d, uint8_t l),
	(id, d, l))
WRAP(int, rdma_disconnect, (struct rdma_cm_id *id), (id))
WRAP(int, rdma_get_cm_event, (struct rdma_event_channel *c,
	struct rdma_cm_event **e), (c, e))
WRAP(int, rdma_ack_cm_event, (struct rdma_cm_event *e), (e))
WRAP(int, rdma_migrate_id, (struct rdma_cm_id *id,
	struct rdma_event_channel *c), (id, c))
WRAP(int, rdma_set_option, (struct rdma_cm_id *id, int l, int o, void *v,
	size_t n), (id, l, o, v, n))
WRAP(int, rdma_create_qp, (struct rdma_cm_id *id, struct ibv_pd *pd,
	struct ibv_qp_init_attr *a), (id, pd, a))
WRAP(int, rdma_create_qp_ex, (struct rdma_cm_id *id,
	struct ibv_qp_init_attr_ex *a), (id, a))
WRAP_VOID(rdma_destroy_qp, (struct rdma_cm_id *id), (id))
WRAP(int, rdma_create_srq_ex, (struct rdma_cm_id *id,
	struct ibv_srq_init_attr_ex *a), (id, a))
WRAP_VOID(rdma_destroy_srq, (struct rdma_cm_id *id), (id))
WRAP(int, rdma_init_qp_attr, (struct rdma_cm_id *id, struct ibv_qp_attr *a,
	int *m), (id, a, m))
WRAP(int, rdma_getaddrinfo, (const char *n, const char *s,
	const struct rdma_addrinfo *h, struct rdma_addrinfo **r),
	(n, s, h, r))
WRAP_VOID(rdma_freeaddrinfo, (struct rdma_addrinfo *r), (r))
