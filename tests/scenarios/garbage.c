/*
 * garbage.c - every wrapper given garbage where a pointer goes (NULL, a
 * small integer, freed heap, an unmapped page, bytes of 0xff, an object
 * of another kind): the shim must never be the one that crashes.  The
 * library underneath may crash on what it is given (that is forwarded
 * by design, or a library bug); with protect=1 the shim refuses what it
 * knows to be no live handle.  Each call runs in a fork child whose own
 * SIGSEGV/SIGBUS handler (chained after the shim's crash report) finds
 * the faulting frame and the first frame outside libc: its module says
 * who crashed.  Prints one line per call and exits 1 if the shim did.
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
#include "scn.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static void *g;

#define CALLS(X) \
	X(destroy_event_channel, rdma_destroy_event_channel(g)) \
	X(destroy_id, rdma_destroy_id(g)) \
	X(destroy_ep, rdma_destroy_ep(g)) \
	X(migrate_id_id, rdma_migrate_id(g, ch)) \
	X(migrate_id_channel, rdma_migrate_id(id, g)) \
	X(create_id_channel, rdma_create_id(g, &x, NULL, RDMA_PS_TCP)) \
	X(bind_addr, rdma_bind_addr(g, sa)) \
	X(resolve_addr, rdma_resolve_addr(id, g, g, 100)) \
	X(resolve_route, rdma_resolve_route(g, 100)) \
	X(listen, rdma_listen(g, 1)) \
	X(connect_id, rdma_connect(g, NULL)) \
	X(connect_param, rdma_connect(id, g)) \
	X(accept_param, rdma_accept(id, g)) \
	X(reject_pdata, rdma_reject(id, g, 8)) \
	X(create_qp_id, rdma_create_qp(g, NULL, &qa)) \
	X(create_qp_attr, rdma_create_qp(id, NULL, g)) \
	X(create_qp_ex_attr, rdma_create_qp_ex(id, g)) \
	X(destroy_qp, rdma_destroy_qp(g)) \
	X(create_srq, rdma_create_srq(g, NULL, &sra)) \
	X(destroy_srq, rdma_destroy_srq(g)) \
	X(get_cm_event_channel, rdma_get_cm_event(g, &ev)) \
	X(get_cm_event_out, rdma_get_cm_event(ch, g)) \
	X(ack_cm_event, rdma_ack_cm_event(g)) \
	X(join_multicast_addr, rdma_join_multicast(id, g, NULL)) \
	X(join_multicast_ex_attr, rdma_join_multicast_ex(id, g, NULL)) \
	X(leave_multicast_addr, rdma_leave_multicast(id, g)) \
	X(free_devices, rdma_free_devices(g)) \
	X(freeaddrinfo, rdma_freeaddrinfo(g)) \
	X(create_ep_res, rdma_create_ep(&x, g, NULL, NULL)) \
	X(get_request, rdma_get_request(g, &x)) \
	X(ibv_destroy_qp, ibv_destroy_qp(g)) \
	X(set_option, rdma_set_option(id, RDMA_OPTION_ID, \
				      RDMA_OPTION_ID_TOS, g, 1)) \
	X(disconnect, rdma_disconnect(g)) \
	X(establish, rdma_establish(g)) \
	X(notify, rdma_notify(g, IBV_EVENT_COMM_EST)) \
	X(init_qp_attr, rdma_init_qp_attr(g, g, g))

#define X(name, call)							\
static NOINLINE void call_##name(void)					\
{									\
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };		\
	struct ibv_srq_init_attr sra = { .attr = { .max_wr = 1 } };	\
	struct sockaddr_in sin = { .sin_family = AF_INET };		\
	struct sockaddr *sa = (struct sockaddr *)&sin;			\
	struct rdma_cm_event *ev;					\
	struct rdma_cm_id *x;						\
									\
	(void)qa; (void)sra; (void)sa; (void)ev; (void)x;		\
	(void)(call);							\
}
CALLS(X)
#undef X

static const struct {
	const char *name;
	void (*fn)(void);
} calls[] = {
#define X(name, call) { #name, call_##name },
	CALLS(X)
#undef X
};

static const char *const kinds[] = {
	"NULL", "small-int", "freed", "unmapped", "garbage", "wrong-kind",
};

static void *garbage(int kind)
{
	void *p;

	switch (kind) {
	case 0:
		return NULL;
	case 1:
		return (void *)16;
	case 2:
		p = malloc(512);
		free(p);
		return p;
	case 3:
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		munmap(p, 4096);
		return p;
	case 4:
		p = malloc(4096);
		memset(p, 0xff, 4096);
		return p;
	default:
		return id->channel == ch ? (void *)ch : NULL; /* an id's place */
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
		ch = scn_channel();
		id = scn_id(ch);
		scn_resolve(id, 7471);
		scn_ack(scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
		/* Nothing more comes: a fetch must fail, not block. */
		fcntl(ch->fd, F_SETFL, O_NONBLOCK);
		g = garbage(kind);
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
	if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
				  WEXITSTATUS(status) == 3))
		return 0;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
		printf("blocked\n");
		return 0;
	}
	printf("child ended with status 0x%x\n", status);
	return WIFEXITED(status) && WEXITSTATUS(status) == 99 ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned c, bad = 0;
	int kind;

	scn_mode(argc, argv);
	alarm(120);
	for (c = 0; c < sizeof(calls) / sizeof(calls[0]); c++)
		for (kind = 0; kind < 6; kind++)
			bad += run(c, kind);
	printf("%u crashes in the shim\n", bad);
	return bad ? 1 : 0;
}
