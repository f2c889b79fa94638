/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * scn.h - helpers shared by the scenario programs: each program breaks one
 * rule (mode "bad") or does the same work correctly (mode "clean"), and
 * tests/scenarios/run-scenario.sh checks the JSON report rdmacheck writes.
 * Helpers die loudly (exit 99) on anything unexpected, so a scenario that
 * cannot set itself up never passes for the wrong reason.
 */
#ifndef SCN_H
#define SCN_H

#include <stdbool.h>
#include <rdma/rdma_cma.h>

#define NOINLINE __attribute__((noinline, noclone))

/* argv[1] ("bad" when absent); arms a watchdog alarm. */
const char *scn_mode(int argc, char **argv);

/* Parse argv ("bad" or "clean"); arms a watchdog alarm. */
bool scn_bad(int argc, char **argv);

void scn_die(const char *what) __attribute__((noreturn));

/*
 * Until thread tid (of this process) sits in system call sysno, or in alt
 * unless that is -1, with its first argument in [lo, hi) unless lo == hi.
 * Read from /proc/self/task/TID/syscall: a readiness check, not a sleep.
 * An address range tells one futex wait from another: a thread blocked on
 * some lock on its way to the wait a test means is not there yet.
 */
void scn_wait_syscall(int tid, long sysno, long alt, unsigned long lo,
		      unsigned long hi);

struct rdma_event_channel *scn_channel(void);
struct rdma_cm_id *scn_id(struct rdma_event_channel *ch);

/*
 * The address every scenario binds, listens on and connects to: the
 * environment's RDMACHECK_TEST_ADDR (an IPv4 address), default 127.0.0.1.
 * A real RoCE device cannot use 127.0.0.1, so the real-kernel tier passes
 * its device's own address.
 */
struct sockaddr_in;
const char *scn_addr_str(void);
void scn_addr(struct sockaddr_in *sin, int port);

/* Start address resolution to the test address and port. */
void scn_resolve(struct rdma_cm_id *id, int port);

/* Next event on ch, which must be of type want (-1: any). */
struct rdma_cm_event *scn_get(struct rdma_event_channel *ch, int want);
void scn_ack(struct rdma_cm_event *ev);

/*
 * rdma_getaddrinfo for the test address and port, RDMA_PS_TCP (passive:
 * RAI_PASSIVE).  A passive endpoint takes port 0, so that scenarios run
 * in parallel on the real stack share no port: its own comes from
 * rdma_get_src_port() once it is made.
 */
struct rdma_addrinfo *scn_lookup(bool passive, int port);

/* A bound, listening id on the test address; returns its port. */
int scn_listen(struct rdma_cm_id *id);

/* QP numbers QP-less test connections name (distinct: see scn_connect). */
#define SCN_CLIENT_QPN 0x1234
#define SCN_SERVER_QPN 0x5678

/*
 * A connected pair in one process: listener on lch, client on cch; returns
 * the server-side child (events acked).  With qp, both sides get QPs.
 */
struct rdma_cm_id *scn_connect(struct rdma_event_channel *lch,
			       struct rdma_cm_id *listener,
			       struct rdma_event_channel *cch,
			       struct rdma_cm_id *client);

/* Disconnect both ends and consume both DISCONNECTED events. */
void scn_disconnect(struct rdma_event_channel *lch, struct rdma_cm_id *child,
		    struct rdma_event_channel *cch, struct rdma_cm_id *client);

#endif
