/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * missing_real.c - the wrappers' entry when the real function is missing
 * (RC_ENTER / RC_V_ENTER / RC_NEED_REAL and the RC_MISSING_name that
 * gen-api.sh writes from the .def tables): the shim is preloaded into a
 * process that loads neither librdmacm nor libibverbs (it re-executes
 * itself with LD_PRELOAD; the shim's initial-exec TLS cannot be
 * dlopen()ed), so that every real function is missing, and each wrapper must fail as its table line
 * says: the failure value with errno ENOSYS, ENOSYS itself for the
 * functions that return an errno, errno untouched for the void ones.
 * Arguments are garbage on purpose: a wrapper must not look at them
 * before it knows it can forward.
 *
 * Usage: missing_real [SHIM.so] (default $RDMACHECK_SHIM, as make check
 * sets it).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static int failed;

static void *sym(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);

	if (!p) {
		fprintf(stderr, "missing_real: FAIL: %s not exported\n", name);
		exit(1);
	}
	return p;
}

#define GET(name) ((__typeof__(&name))sym(#name))

/* want_errno -1: errno not checked (errno-returning functions). */
static void check(const char *name, int ok, int want_errno)
{
	if (ok && (want_errno < 0 || errno == want_errno)) {
		printf("missing_real: ok: %s\n", name);
		return;
	}
	printf("missing_real: FAIL: %s: %s, errno %d (%s)\n", name,
	       ok ? "right value" : "wrong value", errno, strerror(errno));
	failed = 1;
}

int main(int argc, char **argv)
{
	void *bad = (void *)0x10;	/* never dereferenced */
	struct rdma_cm_id *id = NULL;
	const char *path;
	int n = 7, r;
	void *p;

	path = argc > 1 ? argv[1] : getenv("RDMACHECK_SHIM");
	if (!path || !*path) {
		fprintf(stderr, "usage: missing_real SHIM.so\n");
		return 2;
	}
	if (!getenv("MISSING_REAL_CHILD")) {
		setenv("MISSING_REAL_CHILD", "1", 1);
		setenv("LD_PRELOAD", path, 1);
		execv("/proc/self/exe", argv);
		perror("missing_real: FAIL: execv");
		return 1;
	}
	if (!dlsym(RTLD_DEFAULT, "rc_ext_register")) {
		fprintf(stderr, "missing_real: FAIL: the shim is not "
			"preloaded\n");
		return 1;
	}
	if (dlopen("librdmacm.so.1", RTLD_LAZY | RTLD_NOLOAD) ||
	    dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
		fprintf(stderr, "missing_real: FAIL: an RDMA library is "
			"loaded: the test needs a process without one\n");
		return 1;
	}

	/* RC_ENTER, pointer and int returns. */
	errno = 0;
	p = GET(rdma_create_event_channel)();
	check("rdma_create_event_channel", p == NULL, ENOSYS);
	errno = 0;
	r = GET(rdma_create_id)(bad, &id, NULL, RDMA_PS_TCP);
	check("rdma_create_id", r == -1 && id == NULL, ENOSYS);
	errno = 0;
	r = GET(rdma_destroy_id)(bad);
	check("rdma_destroy_id", r == -1, ENOSYS);
	/* RC_ENTER, void. */
	errno = 0;
	GET(rdma_destroy_event_channel)(bad);
	check("rdma_destroy_event_channel", 1, 0);
	errno = 0;
	r = GET(rdma_ack_cm_event)(bad);
	check("rdma_ack_cm_event", r == -1, ENOSYS);
	/* rdma_get_devices: its own entry also zeroes the count. */
	errno = 0;
	p = GET(rdma_get_devices)(&n);
	check("rdma_get_devices", p == NULL && n == 0, ENOSYS);

	/* RC_V_ENTER, pointer returns. */
	errno = 0;
	n = 7;
	p = GET(ibv_get_device_list)(&n);
	check("ibv_get_device_list", p == NULL, ENOSYS);
	errno = 0;
	p = GET(ibv_alloc_pd)(bad);
	check("ibv_alloc_pd", p == NULL, ENOSYS);
	/* Functions that return an errno value: ENOSYS itself. */
	r = GET(ibv_dealloc_pd)(bad);
	check("ibv_dealloc_pd", r == ENOSYS, -1);
	r = GET(ibv_destroy_cq)(bad);
	check("ibv_destroy_cq", r == ENOSYS, -1);
	r = GET(ibv_close_device)(bad);
	check("ibv_close_device", r == ENOSYS, -1);
	/* ibv_rereg_mr's failure value is its own constant. */
	errno = 0;
	r = GET(ibv_rereg_mr)(bad, IBV_REREG_MR_CHANGE_PD, bad, NULL, 0, 0);
	check("ibv_rereg_mr", r == IBV_REREG_MR_ERR_INPUT, ENOSYS);
	/* RC_V_ENTER, void; RC_NEED_REAL on the hot CQ event calls. */
	errno = 0;
	GET(ibv_free_device_list)(bad);
	check("ibv_free_device_list", 1, 0);
	errno = 0;
	GET(ibv_ack_cq_events)(bad, 1);
	check("ibv_ack_cq_events", 1, 0);
	errno = 0;
	r = GET(ibv_get_cq_event)(bad, bad, bad);
	check("ibv_get_cq_event", r == -1, ENOSYS);
	return failed;
}
