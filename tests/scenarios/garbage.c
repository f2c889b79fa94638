/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * garbage.c - every wrapper given garbage where a pointer goes (NULL, a
 * small integer, freed heap, an unmapped page, bytes of 0xff, an object
 * of another kind, a destroyed object of the right kind).  The shim must
 * never be the one that crashes, and with protect=1 (the default) it
 * refuses whatever pointer it checks, so the library does not crash on
 * it either.  What it leaves to the library is each call's unchecked set
 * below, the list of doc/rules.md ("What protect=1 does not check").
 * Each call runs in a fork child whose own SIGSEGV/SIGBUS handler
 * (chained after the shim's crash report) finds the faulting frame and
 * the first frame outside libc: its module says who crashed.  Prints one
 * line per call and exits 1 if the shim crashed, or the library did
 * outside the unchecked sets.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include "scn.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct rdma_cm_event *acked;
static struct ibv_device **devs;
static struct ibv_context *ctx;
static struct ibv_comp_channel *cc;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];
static int rs;
static void *g;

/* What the garbage stands in for: its destroyed and wrong-kind forms. */
enum what {
	ARG, CM_CHANNEL, CM_ID, CM_EVENT, DEVLIST, DEVICE, CONTEXT, PD, MR,
	COMP_CHANNEL, CQ, SRQ, QP, AH, DM, ASYNC_EVENT,
};

/* The kinds of garbage (bits of a call's unchecked set). */
#define KINDS(X) \
	X(NUL, "NULL") X(SMALL, "small-int") X(FREED, "freed") \
	X(UNMAPPED, "unmapped") X(BYTES, "garbage") X(WRONG, "wrong-kind") \
	X(DESTROYED, "destroyed")
enum {
#define X(e, text) K_##e,
	KINDS(X)
#undef X
	NKINDS
};
#define B(e) (1u << K_##e)
/* A struct the library reads and the shim does not: what the library
 * does with a bad one, it does without the shim (doc/rules.md, "What is
 * not checked"). */
#define READ_AS_IS (B(SMALL) | B(UNMAPPED))

/*
 * name, what g is, the kinds of garbage the library is left to crash on
 * (unchecked), the call.
 */
#define CALLS(X) \
	X(destroy_event_channel, CM_CHANNEL, 0, rdma_destroy_event_channel(g)) \
	X(destroy_id, CM_ID, 0, rdma_destroy_id(g)) \
	X(destroy_ep, CM_ID, 0, rdma_destroy_ep(g)) \
	X(migrate_id_id, CM_ID, 0, rdma_migrate_id(g, ch)) \
	X(migrate_id_channel, CM_CHANNEL, 0, rdma_migrate_id(id, g)) \
	X(create_id_channel, CM_CHANNEL, 0, \
	  rdma_create_id(g, &x, NULL, RDMA_PS_TCP)) \
	X(bind_addr, CM_ID, 0, rdma_bind_addr(g, sa)) \
	X(resolve_addr, ARG, READ_AS_IS, rdma_resolve_addr(id, g, g, 100)) \
	X(resolve_route, CM_ID, 0, rdma_resolve_route(g, 100)) \
	X(listen, CM_ID, 0, rdma_listen(g, 1)) \
	X(connect_id, CM_ID, 0, rdma_connect(g, NULL)) \
	X(connect_param, ARG, 0, rdma_connect(id, g)) \
	X(accept_param, ARG, 0, rdma_accept(id, g)) \
	X(reject_pdata, ARG, READ_AS_IS, rdma_reject(id, g, 8)) \
	X(reject_ece, CM_ID, 0, rdma_reject_ece(g, NULL, 0)) \
	X(set_local_ece_id, CM_ID, 0, rdma_set_local_ece(g, &ece)) \
	X(set_local_ece_arg, ARG, READ_AS_IS, rdma_set_local_ece(id, g)) \
	X(get_remote_ece_id, CM_ID, 0, rdma_get_remote_ece(g, &ece)) \
	X(get_remote_ece_out, ARG, READ_AS_IS, rdma_get_remote_ece(id, g)) \
	X(create_qp_id, CM_ID, 0, rdma_create_qp(g, NULL, &qa)) \
	X(create_qp_attr, ARG, 0, rdma_create_qp(id, NULL, g)) \
	X(create_qp_ex_attr, ARG, B(BYTES), \
	  rdma_create_qp_ex(id, g)) \
	X(destroy_qp, CM_ID, 0, rdma_destroy_qp(g)) \
	X(create_srq, CM_ID, 0, rdma_create_srq(g, NULL, &sra)) \
	X(create_srq_attr, ARG, 0, rdma_create_srq(id, NULL, g)) \
	X(create_srq_ex_attr, ARG, B(BYTES), rdma_create_srq_ex(id, g)) \
	X(destroy_srq, CM_ID, 0, rdma_destroy_srq(g)) \
	X(get_cm_event_channel, CM_CHANNEL, 0, rdma_get_cm_event(g, &ev)) \
	X(get_cm_event_out, ARG, 0, rdma_get_cm_event(ch, g)) \
	X(ack_cm_event, CM_EVENT, 0, rdma_ack_cm_event(g)) \
	X(join_multicast_addr, ARG, 0, rdma_join_multicast(id, g, NULL)) \
	X(join_multicast_ex_attr, ARG, 0, \
	  rdma_join_multicast_ex(id, g, NULL)) \
	X(join_multicast_ex_addr, ARG, 0, \
	  (mca.addr = g, rdma_join_multicast_ex(id, &mca, NULL))) \
	X(leave_multicast_addr, ARG, 0, rdma_leave_multicast(id, g)) \
	X(free_devices, ARG, 0, rdma_free_devices(g)) \
	X(freeaddrinfo, ARG, 0, rdma_freeaddrinfo(g)) \
	X(create_ep_res, ARG, 0, rdma_create_ep(&x, g, NULL, NULL)) \
	X(get_request, CM_ID, 0, rdma_get_request(g, &x)) \
	X(set_option, ARG, 0, rdma_set_option(id, RDMA_OPTION_ID, \
				      RDMA_OPTION_ID_TOS, g, 1)) \
	X(disconnect, CM_ID, 0, rdma_disconnect(g)) \
	X(establish, CM_ID, 0, rdma_establish(g)) \
	X(notify, CM_ID, 0, rdma_notify(g, IBV_EVENT_COMM_EST)) \
	X(init_qp_attr, CM_ID, 0, rdma_init_qp_attr(g, g, g)) \
	X(rsend_buf, ARG, 0, rsend(rs, g, 8, 0)) \
	X(rrecv_buf, ARG, 0, rrecv(rs, g, 8, MSG_DONTWAIT)) \
	X(rbind_addr, ARG, READ_AS_IS, rbind(rs, g, sizeof(struct sockaddr_in))) \
	X(rsetsockopt_val, ARG, READ_AS_IS, \
	  rsetsockopt(rs, SOL_SOCKET, SO_KEEPALIVE, g, sizeof(int))) \
	X(rgetsockname_out, ARG, B(NUL) | READ_AS_IS, rgetsockname(rs, g, &alen)) \
	X(rpoll_fds, ARG, 0, rpoll(g, 1, 0)) \
	X(rselect_set, ARG, 0, rselect(rs + 1, g, NULL, NULL, &tv0)) \
	X(ibv_free_device_list, DEVLIST, 0, ibv_free_device_list(g)) \
	X(ibv_open_device, DEVICE, 0, ibv_open_device(g)) \
	X(ibv_close_device, CONTEXT, 0, ibv_close_device(g)) \
	X(ibv_get_async_event, CONTEXT, 0, ibv_get_async_event(g, &aev)) \
	X(ibv_ack_async_event, ASYNC_EVENT, 0, ibv_ack_async_event(g)) \
	X(ibv_alloc_pd, CONTEXT, 0, ibv_alloc_pd(g)) \
	X(ibv_dealloc_pd, PD, 0, ibv_dealloc_pd(g)) \
	X(ibv_import_pd, CONTEXT, 0, ibv_import_pd(g, 1)) \
	X(ibv_unimport_pd, PD, 0, ibv_unimport_pd(g)) \
	X(ibv_reg_mr, PD, 0, ibv_reg_mr(g, buf, 64, 0)) \
	X(ibv_reg_mr_iova, PD, 0, ibv_reg_mr_iova(g, buf, 64, 0, 0)) \
	X(ibv_reg_mr_iova2, PD, 0, ibv_reg_mr_iova2(g, buf, 64, 0, 0)) \
	X(ibv_reg_dmabuf_mr, PD, 0, ibv_reg_dmabuf_mr(g, 0, 64, 0, -1, 0)) \
	X(ibv_rereg_mr_mr, MR, 0, \
	  ibv_rereg_mr(g, IBV_REREG_MR_CHANGE_PD, pd, NULL, 0, 0)) \
	X(ibv_rereg_mr_pd, PD, 0, \
	  ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, g, NULL, 0, 0)) \
	X(ibv_dereg_mr, MR, 0, ibv_dereg_mr(g)) \
	X(ibv_import_mr, PD, 0, ibv_import_mr(g, 1)) \
	X(ibv_unimport_mr, MR, 0, ibv_unimport_mr(g)) \
	X(ibv_create_comp_channel, CONTEXT, 0, ibv_create_comp_channel(g)) \
	X(ibv_destroy_comp_channel, COMP_CHANNEL, 0, \
	  ibv_destroy_comp_channel(g)) \
	X(ibv_create_cq_context, CONTEXT, 0, ibv_create_cq(g, 4, NULL, NULL, 0)) \
	X(ibv_create_cq_channel, COMP_CHANNEL, 0, \
	  ibv_create_cq(ctx, 4, NULL, g, 0)) \
	X(ibv_resize_cq, CQ, 0, ibv_resize_cq(g, 8)) \
	X(ibv_destroy_cq, CQ, 0, ibv_destroy_cq(g)) \
	X(ibv_get_cq_event, COMP_CHANNEL, B(NUL) | B(SMALL) | B(FREED) | \
	  B(UNMAPPED) | B(BYTES), ibv_get_cq_event(g, &ocq, &octx)) \
	X(ibv_ack_cq_events, CQ, 0, ibv_ack_cq_events(g, 1)) \
	X(ibv_create_srq, PD, 0, ibv_create_srq(g, &sra)) \
	X(ibv_create_srq_attr, ARG, 0, ibv_create_srq(pd, g)) \
	X(ibv_destroy_srq, SRQ, 0, ibv_destroy_srq(g)) \
	X(ibv_create_qp, PD, 0, ibv_create_qp(g, &qa)) \
	X(ibv_create_qp_attr, ARG, 0, ibv_create_qp(pd, g)) \
	X(ibv_create_qp_send_cq, CQ, 0, \
	  (qa.send_cq = g, ibv_create_qp(pd, &qa))) \
	X(ibv_destroy_qp, QP, 0, ibv_destroy_qp(g)) \
	X(ibv_create_ah, PD, 0, ibv_create_ah(g, &aha)) \
	X(ibv_create_ah_attr, ARG, 0, ibv_create_ah(pd, g)) \
	X(ibv_create_ah_from_wc, PD, 0, \
	  ibv_create_ah_from_wc(g, &wc, &grh, 1)) \
	X(ibv_destroy_ah, AH, 0, ibv_destroy_ah(g)) \
	X(ibv_import_dm, CONTEXT, 0, ibv_import_dm(g, 1)) \
	X(ibv_unimport_dm, DM, 0, ibv_unimport_dm(g))

#define X(name, what, unchecked, call)					\
static NOINLINE void call_##name(void)					\
{									\
	struct ibv_qp_init_attr qa = {					\
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,	\
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,		\
			 .max_send_sge = 1, .max_recv_sge = 1 },	\
	};								\
	struct ibv_srq_init_attr sra = {				\
		.attr = { .max_wr = 1, .max_sge = 1 } };		\
	struct ibv_ah_attr aha = { .port_num = 1 };			\
	struct rdma_cm_join_mc_attr_ex mca = {				\
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |		\
			     RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,		\
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER };		\
	struct sockaddr_in sin = { .sin_family = AF_INET };		\
	struct sockaddr *sa = (struct sockaddr *)&sin;			\
	struct ibv_async_event aev;					\
	struct rdma_cm_event *ev;					\
	struct rdma_cm_id *x;						\
	struct ibv_wc wc = { 0 };					\
	struct ibv_grh grh = { 0 };					\
	struct ibv_cq *ocq;						\
	struct ibv_ece ece = { 0 };					\
	socklen_t alen = sizeof(sin);					\
	struct timeval tv0 = { 0 };					\
	void *octx;							\
									\
	(void)qa; (void)sra; (void)aha; (void)mca; (void)sa; (void)aev; (void)ev;	\
	(void)x; (void)wc; (void)grh; (void)ocq; (void)octx;		\
	(void)ece; (void)alen; (void)tv0;				\
	(void)(call);							\
}
CALLS(X)
#undef X

static const struct {
	const char *name;
	enum what what;
	unsigned unchecked;
	void (*fn)(void);
	const char *text;
} calls[] = {
#define X(name, what, unchecked, call) \
	{ #name, what, unchecked, call_##name, #call },
	CALLS(X)
#undef X
};

/* Every function the shim exports (its API table)... */
static const char *const api[] = {
#define RC_API(how, ret, name, ver, fail, params, args, effect) #name,
#include "shim/rdmacm_api.def"
#undef RC_API
};

/* ...is swept above, or is here with the reason it is not. */
static const char *const unswept[] = {
	/* no pointer argument */
	"exit", "_exit", "_Exit", "close", "dup2", "dup3", "fcntl",
	"fcntl64", "ibv_import_device", "rdma_create_event_channel",
	"rsocket", "rclose", "rshutdown", "rlisten", "rfcntl",
	/* an output count that may be NULL */
	"rdma_get_devices", "ibv_get_device_list",
	/* pass-throughs (PASS): nothing is checked */
	"rdma_event_str", "rdma_get_src_port", "rdma_get_dst_port",
	"repoll_create", "repoll_ctl", "repoll_wait",
	/* inline verbs.h functions (OP): the program reads the context */
	"ibv_alloc_dm", "ibv_alloc_mw", "ibv_alloc_null_mr",
	"ibv_alloc_parent_domain", "ibv_alloc_td", "ibv_close_xrcd",
	"ibv_create_counters", "ibv_create_cq_ex", "ibv_create_flow",
	"ibv_create_qp_ex", "ibv_create_rwq_ind_table", "ibv_create_srq_ex",
	"ibv_create_wq", "ibv_dealloc_mw", "ibv_dealloc_td",
	"ibv_destroy_counters", "ibv_destroy_flow",
	"ibv_destroy_rwq_ind_table", "ibv_destroy_wq", "ibv_free_dm",
	"ibv_open_qp", "ibv_open_xrcd", "ibv_reg_dm_mr",
	/* the data path (OP, track_wr=1): garbage crashes the provider too */
	"ibv_post_send", "ibv_post_recv", "ibv_post_srq_recv", "ibv_poll_cq",
	"ibv_wr_complete", "ibv_bind_mw",
	/* libc memory (track_buffers=1): forwarded as the program passed it */
	"free", "realloc", "munmap",
	/* RDMACM_1.4, not in rdma-core 44.0's headers */
	"rdma_resolve_addrinfo", "rdma_query_addrinfo", "rdma_write_cm_event",
	/* strings and hints the library reads (documented unchecked) */
	"rdma_getaddrinfo",
	/* rsocket buffers and addresses (documented unchecked) */
	"raccept", "rconnect", "rgetpeername", "rgetsockopt", "riomap",
	"riounmap", "riowrite", "rread", "rreadv", "rrecvfrom", "rrecvmsg",
	"rsendmsg", "rsendto", "rwrite", "rwritev",
};

/* The names of the API table that neither list has: 0 when none. */
static unsigned unlisted(void)
{
	char call[64];
	unsigned a, i, n = 0;
	bool seen;

	for (a = 0; a < sizeof(api) / sizeof(api[0]); a++) {
		snprintf(call, sizeof(call), "%s(", api[a]);
		seen = false;
		for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
			seen |= strstr(calls[i].text, call) != NULL;
		for (i = 0; i < sizeof(unswept) / sizeof(unswept[0]); i++)
			seen |= !strcmp(unswept[i], api[a]);
		if (!seen) {
			printf("%s: neither swept nor listed as unswept\n",
			       api[a]);
			n++;
		}
	}
	return n;
}

static const char *const kinds[] = {
#define X(e, text) text,
	KINDS(X)
#undef X
};

static void *freed(void)
{
	void *p = malloc(512);
	volatile uintptr_t at = (uintptr_t)p;	/* only the address */

	free(p);
	return (void *)at;
}

/* A destroyed object of what g stands for (freed memory where none). */
static void *destroyed(enum what what)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_srq_init_attr sra = { .attr = { .max_wr = 1,
						    .max_sge = 1 } };
	struct ibv_ah_attr aha = { .is_global = 1, .port_num = 1 };
	struct rdma_event_channel *c;
	struct rdma_cm_id *x;
	void *p;

	switch (what) {
	case CM_CHANNEL:
		c = scn_channel();
		rdma_destroy_event_channel(c);
		return c;
	case CM_ID:
		x = scn_id(ch);
		rdma_destroy_id(x);
		return x;
	case CM_EVENT:
		return acked;
	case DEVLIST:
		p = ibv_get_device_list(NULL);
		ibv_free_device_list(p);
		return p;
	case CONTEXT:
		p = ibv_open_device(devs[0]);
		ibv_close_device(p);
		return p;
	case PD:
		p = ibv_alloc_pd(ctx);
		ibv_dealloc_pd(p);
		return p;
	case MR:
		p = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
		ibv_dereg_mr(p);
		return p;
	case COMP_CHANNEL:
		p = ibv_create_comp_channel(ctx);
		ibv_destroy_comp_channel(p);
		return p;
	case CQ:
		p = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		ibv_destroy_cq(p);
		return p;
	case SRQ:
		p = ibv_create_srq(pd, &sra);
		ibv_destroy_srq(p);
		return p;
	case QP:
		p = ibv_create_qp(pd, &qa);
		ibv_destroy_qp(p);
		return p;
	case AH:
		if (ibv_query_gid(ctx, 1, 0, &aha.grh.dgid))
			scn_die("ibv_query_gid");
		p = ibv_create_ah(pd, &aha);
		ibv_destroy_ah(p);
		return p;
	default:
		return freed();
	}
}

/* A live object of another kind where g goes. */
static void *wrong_kind(enum what what)
{
	switch (what) {
	case CM_CHANNEL:
		return id;
	case CM_ID:
	case CM_EVENT:
	case ARG:
		return ch;
	case PD:
		return cq;
	default:
		return pd;
	}
}

static void *garbage(int kind, enum what what)
{
	void *p;

	switch (kind) {
	case K_NUL:
		return NULL;
	case K_SMALL:
		return (void *)16;
	case K_FREED:
		return freed();
	case K_UNMAPPED:
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		munmap(p, 4096);
		return p;
	case K_BYTES:
		p = malloc(4096);
		memset(p, 0xff, 4096);
		return p;
	case K_WRONG:
		return wrong_kind(what);
	default:
		return destroyed(what);
	}
}

static const char *module_of(void *pc)
{
	Dl_info dli;

	return dladdr(pc, &dli) && dli.dli_fname ? dli.dli_fname : "?";
}

/* Who crashed: the first frame from the fault on that is not libc's. */
static void on_crash(int sig, siginfo_t *si, void *ucp)
{
	ucontext_t *uc = ucp;
	void *pc = (void *)uc->uc_mcontext.gregs[REG_RIP], *bt[64];
	const char *who = module_of(pc);
	int n = backtrace(bt, 64), i, at = -1;

	for (i = 0; i < n; i++)
		if (bt[i] == pc)
			at = i;
	for (i = at; at >= 0 && i < n && strstr(who, "libc.so"); i++)
		who = module_of(bt[i]);
	printf("crash in %s\n", who);
	fflush(stdout);
	_exit(strstr(who, "librdmacheck") ? 2 : 3);
}

static void setup(void)
{
	ch = scn_channel();
	id = scn_id(ch);
	scn_resolve(id, 7471);
	acked = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	scn_ack(acked);
	/* Nothing more comes: a fetch must fail, not block. */
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	devs = ibv_get_device_list(NULL);
	ctx = id->verbs;
	if (!devs || !devs[0] || !ctx)
		scn_die("no device");
	fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
	rs = rsocket(AF_INET, SOCK_STREAM, 0);
	if (rs < 0)
		scn_die("rsocket");
	if (!(pd = ibv_alloc_pd(ctx)) ||
	    !(cq = ibv_create_cq(ctx, 4, NULL, NULL, 0)) ||
	    !(cc = ibv_create_comp_channel(ctx)) ||
	    !(mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE)))
		scn_die("verbs setup");
}

/* 1 when the shim crashed, or the library did where the shim checks. */
static int run(unsigned c, int kind)
{
	struct sigaction sa;
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		scn_die("fork");
	if (pid == 0) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_crash;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		setup();
		g = garbage(kind, calls[c].what);
		printf("%-24s %-10s ", calls[c].name, kinds[kind]);
		alarm(2);	/* a call that blocks (valid arguments) */
		calls[c].fn();
		printf("returned\n");
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		scn_die("waitpid");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
		return 1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		if (calls[c].unchecked & (1u << kind))
			return 0;
		printf("%-24s %-10s not an unchecked pointer\n",
		       calls[c].name, kinds[kind]);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
		printf("blocked\n");
		return 0;
	}
	/* 99: the setup failed (scn_die), so the call never ran. */
	printf("child ended with status 0x%x\n", status);
	return 1;
}

int main(int argc, char **argv)
{
	unsigned c, bad = 0;
	int kind;

	scn_mode(argc, argv);
	alarm(120);
	bad = unlisted();
	for (c = 0; c < sizeof(calls) / sizeof(calls[0]); c++)
		for (kind = 0; kind < NKINDS; kind++)
			bad += run(c, kind);
	printf("%u crashes in the shim or where it checks\n", bad);
	return bad ? 1 : 0;
}
