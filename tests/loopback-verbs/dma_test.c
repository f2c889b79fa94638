/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dma_test.c - direct placement of the loopback libibverbs (dma.c): an
 * RC requester places RDMA WRITE and READ data in the target process
 * itself.  The parent is the requester, a forked child the target, whose
 * MR lies in memory both share (so the parent sees what lands).
 *   direct:   with the target stopped (SIGSTOP) a WRITE and a READ
 *             complete and a WRITE_WITH_IMM's data is there when
 *             ibv_post_send returns (its immediate completes once the
 *             target runs again); a WRITE behind a SEND the target has
 *             no receive for waits for it, as on RC; after the target's
 *             ibv_dereg_mr returned no write lands (the writes that
 *             follow fail with IBV_WC_REM_ACCESS_ERR).
 *   fallback: the target is not dumpable and the requester lacks
 *             CAP_SYS_PTRACE, so process_vm_writev is refused (EPERM):
 *             the same traffic goes by the stream, and is correct.
 *   rtr:      the target stays in RTR, as a bandwidth test's server
 *             does: with it stopped, a burst of WRITEs lands at once
 *             although the first one's answer (the target raises
 *             COMM_EST on it) cannot come yet; then as direct.
 *   off:      the same with RDMACHECK_LOOPBACK_DMA=0 on both sides.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#define SHM_SIZE	(1 << 20)
#define BUF_SIZE	(1 << 17)
#define TMO_MS		10000
#define REG		65536

struct info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static unsigned char *shm;	/* the target's MR, seen by both */
static unsigned char *buf;	/* the requester's own */
static struct info peer;
static int sock = -1;
static int target;		/* 1 in the child */
static int rtr_only;		/* the target stays in RTR */
static const char *step = "start";

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "dma_test[%s] %s: ", target ? "target" : "requester",
		step);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#define CHECK(c) do { if (!(c)) die("check failed: %s (line %d)", #c, \
				    __LINE__); } while (0)

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wait_wc(struct ibv_wc *wc)
{
	long end = now_ms() + TMO_MS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (now_ms() > end)
			die("no completion in %d ms", TMO_MS);
	CHECK(n == 1);
}

static void expect_wc(uint64_t wr_id, enum ibv_wc_status st,
		      enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	wait_wc(&wc);
	if (wc.wr_id != wr_id || wc.status != st ||
	    (st == IBV_WC_SUCCESS && wc.opcode != op))
		die("wc wr_id %llu status %s opcode %d, want %llu %s %d",
		    (unsigned long long)wc.wr_id,
		    ibv_wc_status_str(wc.status), wc.opcode,
		    (unsigned long long)wr_id, ibv_wc_status_str(st), op);
}

static void xfer(void *p, size_t len, int out)
{
	ssize_t n = out ? write(sock, p, len) : read(sock, p, len);

	if (n != (ssize_t)len)
		die("control socket: peer gone");
}

static void post(uint64_t wr_id, enum ibv_wr_opcode op, size_t off,
		 size_t len, uint64_t roff, uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf + off, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;

	wr.wr.rdma.remote_addr = peer.addr + roff;
	wr.wr.rdma.rkey = peer.rkey;
	CHECK(ibv_post_send(qp, &wr, &bad) == 0);
}

static void setup(void)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct info mine;
	int n;

	list = ibv_get_device_list(&n);
	CHECK(list && n == 1);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	CHECK(ctx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(pd && cq);
	mr = ibv_reg_mr(pd, target ? shm : buf, target ? SHM_SIZE : BUF_SIZE,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	CHECK(mr);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 32;
	ia.cap.max_recv_wr = 32;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
	mine.qpn = qp->qp_num;
	mine.rkey = mr->rkey;
	mine.addr = (uintptr_t)(target ? shm : buf);
	xfer(&mine, sizeof(mine), 1);
	xfer(&peer, sizeof(peer), 0);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_4096;
	qa.dest_qp_num = peer.qpn;
	qa.max_dest_rd_atomic = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.is_global = 1;
	CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0);
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.max_rd_atomic = 1;
	if (!target || !rtr_only)
		CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_SQ_PSN |
				    IBV_QP_MAX_QP_RD_ATOMIC) == 0);
	/* both in RTS (or RTR) before anyone sends */
	xfer(&mine, 1, 1);
	xfer(&mine, 1, 0);
}

/* --- the target: commands from the requester ------------------------------ */

static void target_main(void)
{
	struct ibv_sge sge;
	struct ibv_recv_wr rw, *bad;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	uint64_t snap;
	uint32_t type;
	char c;

	for (;;) {
		xfer(&c, 1, 0);
		switch (c) {
		case 'r':	/* a receive of 64 bytes at 512 KiB */
			sge.addr = (uintptr_t)shm + (512 << 10);
			sge.length = 64;
			sge.lkey = mr->lkey;
			memset(&rw, 0, sizeof(rw));
			rw.wr_id = 77;
			rw.sg_list = &sge;
			rw.num_sge = 1;
			CHECK(ibv_post_recv(qp, &rw, &bad) == 0);
			break;
		case 'w':	/* the next receive completion, to the parent */
			step = "target's completion";
			wait_wc(&wc);
			xfer(&wc, sizeof(wc), 1);
			continue;
		case 'd':	/* dereg; then what the MR's first word holds */
			CHECK(ibv_dereg_mr(mr) == 0);
			memcpy(&snap, shm + (768 << 10), sizeof(snap));
			xfer(&snap, sizeof(snap), 1);
			continue;
		case 'e':	/* the next async event's type, to the parent */
			step = "target's async event";
			CHECK(ibv_get_async_event(ctx, &ev) == 0);
			type = ev.event_type;
			CHECK(ev.element.qp == qp || type != IBV_EVENT_COMM_EST);
			ibv_ack_async_event(&ev);
			xfer(&type, sizeof(type), 1);
			continue;
		case 'q':
			exit(0);
		default:
			die("command %c", c);
		}
		xfer(&c, 1, 1);
	}
}

static void cmd(char c)
{
	xfer(&c, 1, 1);
	if (c != 'w' && c != 'd' && c != 'e' && c != 'q')
		xfer(&c, 1, 0);
}

/* --- the requester -------------------------------------------------------- */

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + seed + (i >> 9));
}

/* A WRITE of len bytes to offset roff, and its data there, and a READ. */
static void write_read(size_t roff, size_t len, unsigned int seed)
{
	fill(buf, len, seed);
	post(1, IBV_WR_RDMA_WRITE, 0, len, roff, 0);
	expect_wc(1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(memcmp(shm + roff, buf, len) == 0);
	fill(shm + roff + len, len, seed + 1);
	memset(buf + REG, 0, len);
	post(2, IBV_WR_RDMA_READ, REG, len, roff + len, 0);
	expect_wc(2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK(memcmp(buf + REG, shm + roff + len, len) == 0);
}

/* The target stopped: no thread of it can run, the data must land. */
static void test_stopped(pid_t pid)
{
	struct ibv_wc wc;
	int st;

	step = "stopped target";
	cmd('r');
	CHECK(kill(pid, SIGSTOP) == 0);
	CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
	write_read(4096, REG / 2, 3);
	/* the immediate needs the target; its data is there already */
	fill(buf, 4096, 9);
	post(3, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 4096, 256 << 10, 0x1234);
	CHECK(memcmp(shm + (256 << 10), buf, 4096) == 0);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0);
	CHECK(kill(pid, SIGCONT) == 0);
	CHECK(waitpid(pid, &st, WCONTINUED) == pid && WIFCONTINUED(st));
	cmd('w');
	xfer(&wc, sizeof(wc), 0);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 77 &&
	      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.byte_len == 4096 &&
	      (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0x1234);
	expect_wc(3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
}

/* RC order: a WRITE behind a SEND waiting for its receive waits too. */
static void test_order(void)
{
	struct ibv_wc wc;
	size_t woff = 640 << 10;

	step = "write behind a parked send";
	memset(shm + woff, 0, 64);
	fill(buf, 64, 5);
	post(4, IBV_WR_SEND, 0, 64, 0, 0);
	fill(buf + 64, 64, 6);
	post(5, IBV_WR_RDMA_WRITE, 64, 64, woff, 0);
	/* until the target posts its receive, nothing may have landed */
	CHECK(shm[woff + 63] == 0 && shm[woff] == 0);
	cmd('r');
	cmd('w');
	xfer(&wc, sizeof(wc), 0);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == 64);
	CHECK(memcmp(shm + (512 << 10), buf, 64) == 0);
	expect_wc(4, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(memcmp(shm + woff, buf + 64, 64) == 0);
	/* and afterwards it goes on as before */
	write_read(8192, 4096, 11);
}

/* After ibv_dereg_mr returned, nothing lands in the region. */
static void test_dereg(void)
{
	size_t off = 768 << 10;
	uint64_t v, snap;
	struct ibv_wc wc;
	int sent = 0;

	step = "write racing a dereg";
	memset(shm + off, 0, 8);
	for (v = 1;; v++) {
		/* the dereg comes while the writes flow */
		if (v == 100)
			cmd('d');
		memcpy(buf, &v, sizeof(v));
		post(v, IBV_WR_RDMA_WRITE, 0, sizeof(v), off, 0);
		wait_wc(&wc);
		CHECK(wc.wr_id == v);
		if (wc.status == IBV_WC_REM_ACCESS_ERR)
			break;
		CHECK(wc.status == IBV_WC_SUCCESS);
		sent++;
	}
	xfer(&snap, sizeof(snap), 0);
	memcpy(&v, shm + off, sizeof(v));
	if (v != snap)
		die("%llu landed after the dereg (%llu there then)",
		    (unsigned long long)v, (unsigned long long)snap);
	printf("dma_test: %d writes before the dereg's\n", sent);
}

/*
 * A target in RTR (a bandwidth test's server never moves to RTS), stopped:
 * the first WRITE's answer waits for it (its COMM_EST), the burst behind
 * lands all the same, and completes, in order, once it runs.
 */
#define BURST	16
static void test_rtr(pid_t pid)
{
	size_t off = 128 << 10;
	uint32_t type;
	int i, st;

	step = "burst into a target in RTR";
	CHECK(kill(pid, SIGSTOP) == 0);
	CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
	fill(buf, BURST * 4096, 21);
	for (i = 0; i < BURST; i++)
		post(100 + i, IBV_WR_RDMA_WRITE, i * 4096, 4096,
		     off + i * 4096, 0);
	if (memcmp(shm + off, buf, BURST * 4096))
		die("the burst did not land while the target was stopped");
	CHECK(kill(pid, SIGCONT) == 0);
	CHECK(waitpid(pid, &st, WCONTINUED) == pid && WIFCONTINUED(st));
	for (i = 0; i < BURST; i++)
		expect_wc(100 + i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	cmd('e');
	xfer(&type, sizeof(type), 0);
	if (type != IBV_EVENT_COMM_EST)
		die("target's event %u, want COMM_EST", type);
}

/* Whether we may write into the target (its MR's last byte, unused). */
static int may_write(pid_t pid)
{
	struct iovec l = { buf, 1 };
	struct iovec r = { (void *)(uintptr_t)(peer.addr + SHM_SIZE - 1), 1 };

	buf[0] = 0;
	if (process_vm_writev(pid, &l, 1, &r, 1, 0) == 1)
		return 1;
	if (errno != EPERM)
		die("process_vm_writev: %s", strerror(errno));
	return 0;
}

static void drop_ptrace_cap(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	CHECK(syscall(SYS_capget, &h, d) == 0);
	d[CAP_SYS_PTRACE / 32].effective &= ~(1U << (CAP_SYS_PTRACE % 32));
	d[CAP_SYS_PTRACE / 32].permitted &= ~(1U << (CAP_SYS_PTRACE % 32));
	CHECK(syscall(SYS_capset, &h, d) == 0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "direct", *name = mode;
	int sv[2], st;
	pid_t pid;

	alarm(60);
	if (strcmp(mode, "direct") && strcmp(mode, "fallback") &&
	    strcmp(mode, "rtr") && strcmp(mode, "off")) {
		fprintf(stderr, "usage: dma_test [direct|fallback|rtr|off]\n");
		return 2;
	}
	rtr_only = !strcmp(mode, "rtr");
	if (!strcmp(mode, "off"))
		setenv("RDMACHECK_LOOPBACK_DMA", "0", 1);
	shm = mmap(NULL, SHM_SIZE, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	buf = malloc(BUF_SIZE);
	CHECK(shm != MAP_FAILED && buf);
	memset(shm, 0, SHM_SIZE);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	CHECK(pid >= 0);
	target = !pid;
	sock = sv[target];
	close(sv[!target]);
	if (target && !strcmp(mode, "fallback"))
		CHECK(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0);
	if (!target && !strcmp(mode, "fallback"))
		drop_ptrace_cap();
	setup();
	if (target)
		target_main();

	if (rtr_only && may_write(pid)) {
		test_rtr(pid);
		mode = "direct";
	} else if (rtr_only) {
		mode = "refused";
	}
	step = "first write";
	write_read(0, 64, 1);
	if (!strcmp(mode, "fallback") && may_write(pid))
		die("process_vm_writev to the target was not refused");
	if (!strcmp(mode, "direct") && !may_write(pid)) {
		/* a machine that allows no ptrace access at all */
		printf("dma_test: process_vm_writev refused here (EPERM):"
		       " testing the stream instead\n");
		mode = "refused";
	}
	if (!strcmp(mode, "direct")) {
		test_stopped(pid);
		test_order();
		test_dereg();
	} else {
		write_read(4096, REG / 2, 3);
		test_order();
		write_read(16384, 1, 4);
	}
	cmd('q');
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("dma_test: %s (%s): PASS\n", name, mode);
	return 0;
}
