/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * waiting.c - rules about threads that wait: argv[1] is
 *   channel-destroy-while-waiting  main destroys the channel while another
 *                                  thread is blocked in rdma_get_cm_event
 *   blocked-call                   main's rdma_migrate_id blocks on an event
 *                                  another thread holds until the watchdog
 *                                  has reported it (run with a short
 *                                  watchdog_ms)
 *   destroy-blocked                the same with rdma_destroy_id: after
 *                                  watchdog_ms an error, the event is still
 *                                  not acked before the destroy
 *   held-by-joiner                 main, the event loop, holds its event
 *                                  and joins the teardown thread, which
 *                                  destroys the id: neither could return,
 *                                  refused with EBUSY (protect=1)
 *   joiner-acks-first              the same, main acks before it joins
 *   held-by-other                  main destroys the id while the waiter
 *                                  holds its event; the waiter acks once
 *                                  main blocks in the destroy (librdmacm's
 *                                  designed wait: no finding)
 *   held-by-exited                 the waiter exits holding the event, then
 *                                  main destroys the id: a certain hang,
 *                                  refused with EBUSY (protect=1)
 *   cancelled                      the waiter is cancelled while blocked in
 *                                  rdma_get_cm_event, then main destroys
 *                                  the channel (nobody waits: no finding)
 *   interrupted                    the same, but a signal without
 *                                  SA_RESTART ends the wait (EINTR)
 *   returns-after-destroy          the waiter is blocked on the channel of
 *                                  a listener when main destroys it; a
 *                                  client then connects and the blocked
 *                                  call returns the CONNECT_REQUEST into
 *                                  the destroyed channel (use-after-destroy)
 *   clean                          the same threads, correctly ordered
 * Readiness comes from /proc (the waiter is in read(2) on the channel fd)
 * and from rdmacheck's own report on stderr, never from sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "scn.h"

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static sem_t fetched, reported;
static pid_t waiter_tid, main_tid;
static struct rdma_cm_event *held;	/* held-by-exited: the dead's event */
static int real_stderr;
static const char *marker = "[blocked-call]";	/* the report awaited */

static void timed_wait(sem_t *s, const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (sem_timedwait(s, &ts))
		scn_die(what);
}

/* Copy our stderr through, noticing rdmacheck's watchdog report. */
static void *relay(void *arg)
{
	const size_t keep = strlen(marker) - 1;
	int fd = (int)(long)arg;
	char win[4096 + 64];
	size_t have = 0;
	ssize_t n;

	/* win holds the tail of the previous read, then the new data, so a
	 * marker split across two reads is still found. */
	while ((n = read(fd, win + have, 4096)) > 0) {
		if (write(real_stderr, win + have, n) < 0)
			break;
		have += n;
		win[have] = 0;
		if (strstr(win, marker))
			sem_post(&reported);
		if (have > keep) {
			memmove(win, win + have - keep, keep);
			have = keep;
		}
	}
	return NULL;
}

static void capture_stderr(void)
{
	pthread_t t;
	int p[2];

	real_stderr = dup(2);
	if (pipe(p) || dup2(p[1], 2) < 0)
		scn_die("pipe");
	close(p[1]);
	if (pthread_create(&t, NULL, relay, (void *)(long)p[0]))
		scn_die("pthread_create");
}

/* rdma_get_cm_event blocks in write(2) on the real stack (the GET_EVENT
 * command), in read(2) on the loopback's eventfd. */
static void wait_blocked_in_read(pid_t tid, int fd)
{
	scn_wait_syscall(tid, SYS_read, SYS_write, fd, fd + 1);
}

static void on_usr1(int sig)
{
}

static void *waiter(void *arg)
{
	const char *how = arg ? arg : "";
	struct rdma_cm_event *ev;
	int ret;

	__atomic_store_n(&waiter_tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	ret = rdma_get_cm_event(ch, &ev);
	if (!strcmp(how, "late")) {	/* it came back after the destroy */
		sem_post(&fetched);
		if (!ret)	/* with the event, or failing (EBADF) */
			rdma_ack_cm_event(ev);
		return NULL;
	}
	if (ret)
		return NULL;	/* the channel went away, or interrupted */
	sem_post(&fetched);
	if (!strcmp(how, "exit")) {	/* leave it to a thread that is gone */
		held = ev;
		return NULL;
	}
	if (!strcmp(how, "hold"))	/* until the watchdog spoke */
		timed_wait(&reported, "waiting for the blocked-call report");
	if (!strcmp(how, "other"))	/* until main waits in the destroy */
		scn_wait_syscall(main_tid, SYS_futex, -1, 0, 0);
	scn_ack(ev);
	return NULL;
}

/* Start the waiter and wait until it sits in rdma_get_cm_event. */
static pthread_t start_blocked_waiter(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, waiter, NULL))
		scn_die("pthread_create");
	while (!__atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	wait_blocked_in_read(waiter_tid, ch->fd);
	return t;
}

static NOINLINE void close_channel(void)
{
	rdma_destroy_event_channel(ch);
}

static NOINLINE int drop_id(void)
{
	return rdma_destroy_id(id);
}

static NOINLINE int move_id(struct rdma_event_channel *to)
{
	return rdma_migrate_id(id, to);
}

/* The teardown thread of held-by-joiner: destroys the id once the event
 * loop (main) sleeps joining it; returns the destroy's errno. */
static void *teardown(void *arg)
{
	scn_wait_syscall(main_tid, SYS_futex, -1, 0, 0);
	return (void *)(long)(drop_id() ? errno : 0);
}

/* Main holds an event of the id while it joins the thread destroying the
 * id; with ack_first it acks before (the clean twin). */
static void join_teardown(bool ack_first)
{
	struct rdma_cm_event *ev;
	pthread_t t;
	void *res;

	scn_resolve(id, 7471);
	ev = scn_get(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ack_first)
		scn_ack(ev);
	if (pthread_create(&t, NULL, teardown, NULL))
		scn_die("pthread_create");
	pthread_join(t, &res);
	if (ack_first) {
		if (res)
			exit(98);
	} else {
		/* Refused: otherwise neither thread would ever return. */
		if ((long)res != EBUSY)
			exit(98);
		scn_ack(ev);
		if (drop_id())
			scn_die("rdma_destroy_id");
	}
	close_channel();
}

/* The waiter stops waiting (cancelled or interrupted), then the channel
 * goes: nobody is blocked on it any more. */
static void stop_waiter_then_close(bool cancel)
{
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART: read gets EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	t = start_blocked_waiter();
	if (cancel ? pthread_cancel(t) : pthread_kill(t, SIGUSR1))
		scn_die("pthread_cancel/kill");
	pthread_join(t, NULL);
	close_channel();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "clean";
	char *clean[] = { argv[0], "clean" };
	const char *how = NULL;
	pthread_t t;
	int ret;

	scn_bad(2, clean);
	sem_init(&fetched, 0, 0);
	sem_init(&reported, 0, 0);
	main_tid = (pid_t)syscall(SYS_gettid);
	ch = scn_channel();
	id = scn_id(ch);
	if (!strcmp(mode, "channel-destroy-while-waiting")) {
		if (rdma_destroy_id(id))
			scn_die("rdma_destroy_id");
		start_blocked_waiter();
		close_channel();
		return 0;	/* the waiter sleeps on: exit ends it */
	}
	if (!strcmp(mode, "returns-after-destroy")) {
		struct rdma_event_channel *cch = scn_channel();
		struct rdma_cm_id *client = scn_id(cch);
		struct rdma_conn_param param;
		int port = scn_listen(id);

		if (pthread_create(&t, NULL, waiter, "late"))
			scn_die("pthread_create");
		while (!__atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE))
			sched_yield();
		wait_blocked_in_read(waiter_tid, ch->fd);
		close_channel();
		/* The kernel keeps the file while the read blocks: a request
		 * for the listener still arrives, and wakes it. */
		scn_resolve(client, port);
		scn_ack(scn_get(cch, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(client, 2000))
			scn_die("rdma_resolve_route");
		scn_ack(scn_get(cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
		memset(&param, 0, sizeof(param));
		param.responder_resources = param.initiator_depth = 1;
		if (rdma_connect(client, &param))
			scn_die("rdma_connect");
		timed_wait(&fetched, "waiting for the late event");
		pthread_join(t, NULL);
		return 0;
	}
	if (!strcmp(mode, "cancelled") || !strcmp(mode, "interrupted")) {
		stop_waiter_then_close(!strcmp(mode, "cancelled"));
		return 0;
	}
	if (!strcmp(mode, "held-by-joiner") ||
	    !strcmp(mode, "joiner-acks-first")) {
		join_teardown(!strcmp(mode, "joiner-acks-first"));
		return 0;
	}
	if (!strcmp(mode, "blocked-call")) {
		struct rdma_event_channel *to = scn_channel();

		capture_stderr();
		if (pthread_create(&t, NULL, waiter, "hold"))
			scn_die("pthread_create");
		scn_resolve(id, 7471);
		timed_wait(&fetched, "waiting for the event");
		if (move_id(to))
			scn_die("rdma_migrate_id");
		pthread_join(t, NULL);
		if (rdma_destroy_id(id))
			scn_die("rdma_destroy_id");
		rdma_destroy_event_channel(to);
		close_channel();
		return 0;
	}
	if (!strcmp(mode, "destroy-blocked")) {
		marker = "[id-destroy-with-unacked-events]";
		capture_stderr();
		how = "hold";
	} else if (!strcmp(mode, "held-by-other")) {
		how = "other";
	} else if (!strcmp(mode, "held-by-exited")) {
		how = "exit";
	}
	if (pthread_create(&t, NULL, waiter, (void *)how))
		scn_die("pthread_create");
	scn_resolve(id, 7471);
	timed_wait(&fetched, "waiting for the event");
	if (!strcmp(mode, "clean") || !strcmp(mode, "held-by-exited"))
		pthread_join(t, NULL);
	ret = drop_id();
	if (held) {
		/* Refused: nobody could ever ack the dead thread's event. */
		if (ret != -1 || errno != EBUSY)
			exit(98);
		scn_ack(held);
		ret = drop_id();
	}
	if (ret)
		scn_die("rdma_destroy_id");
	pthread_join(t, NULL);
	close_channel();
	return 0;
}
