/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets.c - scenarios for the rsocket rules.  argv[1] names the rule
 * to break (the function that breaks it says so in its comment), or
 * RULE.clean for its twin, which does the same work correctly.  Each
 * works on a connected pair made in this process, like a program that
 * talks to itself: a listener, an rconnect()ed client and the raccept()ed
 * server side, whose ids, channels and QPs librdmacm makes on its own
 * threads (the listen and connect services) and must never show as the
 * program's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <rdma/rsocket.h>
#include "scn.h"

/* Where listen_rs() listens: port 0 there, so scenarios run side by side. */
static int rs_port;

static void rs_die(const char *what)
{
	scn_die(what);
}

static int listen_rs(void)
{
	struct sockaddr_in sin;
	socklen_t len;
	int s, one = 1;

	s = rsocket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		rs_die("rsocket");
	if (rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof(one)))
		rs_die("rsetsockopt");
	scn_addr(&sin, 0);
	len = sizeof(sin);
	if (rbind(s, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(s, 1) ||
	    rgetsockname(s, (struct sockaddr *)&sin, &len))
		rs_die("rbind/rlisten/rgetsockname");
	rs_port = ntohs(sin.sin_port);
	return s;
}

static NOINLINE int make_rsocket(void)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (s < 0)
		rs_die("rsocket");
	if (rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof(one)))
		rs_die("rsetsockopt RDMA_IOMAPSIZE");
	return s;
}

static NOINLINE int accept_rsocket(int l)
{
	int s = raccept(l, NULL, NULL);

	if (s < 0)
		rs_die("raccept");
	return s;
}

/* A connected pair: *c rconnect()ed (blocking), *a its raccept()ed end. */
static void pair(int *l, int *c, int *a)
{
	struct sockaddr_in sin;

	*l = listen_rs();
	*c = make_rsocket();
	scn_addr(&sin, rs_port);
	if (rconnect(*c, (struct sockaddr *)&sin, sizeof(sin)))
		rs_die("rconnect");
	*a = accept_rsocket(*l);
}

/* A few bytes each way, and a poll over both ends and a pipe. */
static void exchange(int c, int a)
{
	struct pollfd fds[3];
	char buf[5];
	int p[2];

	if (pipe(p))
		rs_die("pipe");
	if (rsend(c, "ping", 4, 0) != 4 ||
	    rrecv(a, buf, 4, MSG_WAITALL) != 4 || memcmp(buf, "ping", 4))
		rs_die("ping");
	if (rsend(a, "pong", 4, 0) != 4 || write(p[1], "x", 1) != 1)
		rs_die("pong");
	fds[0].fd = c;
	fds[0].events = POLLIN;
	fds[1].fd = a;
	fds[1].events = POLLOUT;
	fds[2].fd = p[0];
	fds[2].events = POLLIN;
	if (rpoll(fds, 3, 5000) < 2 || !(fds[2].revents & POLLIN))
		rs_die("rpoll");
	if (rrecv(c, buf, 4, MSG_WAITALL) != 4 || memcmp(buf, "pong", 4))
		rs_die("pong back");
	close(p[0]);
	close(p[1]);
}

static NOINLINE int close_rsocket(int s)
{
	return rclose(s);
}

static void close_pair(int l, int c, int a)
{
	if (rshutdown(c, SHUT_RDWR) || close_rsocket(c) ||
	    close_rsocket(a) || close_rsocket(l))
		rs_die("close");
}

/* leak-rsocket: both ends of a connection are still open at exit. */
static void leak_rsocket(bool bad)
{
	int l, c, a;

	pair(&l, &c, &a);
	exchange(c, a);
	if (close_rsocket(l))
		rs_die("rclose listener");
	if (bad)
		return;
	if (close_rsocket(c) || close_rsocket(a))
		rs_die("rclose");
}

static NOINLINE ssize_t use_rsocket(int s)
{
	return rsend(s, "late", 4, 0);
}

/* rsocket-use-after-close: rsend on a closed rsocket (refused: EBADF). */
static void rsocket_use_after_close(bool bad)
{
	int l, c, a;

	pair(&l, &c, &a);
	exchange(c, a);
	if (!bad && use_rsocket(c) != 4)
		rs_die("rsend");
	close_pair(l, c, a);
	if (bad && (use_rsocket(c) != -1 || errno != EBADF))
		exit(98);
}

static NOINLINE int poll_rsocket(int s)
{
	struct pollfd fd = { .fd = s, .events = POLLIN };

	return rpoll(&fd, 1, 0) == 1 && fd.revents == POLLNVAL;
}

/*
 * rsocket-use-after-close from rpoll: the closed number is polled as the
 * nothing it is now (POLLNVAL), so the call is forwarded.
 */
static void rsocket_use_after_close_rpoll(bool bad)
{
	int l, c, a;

	pair(&l, &c, &a);
	exchange(c, a);
	if (!bad) {
		struct pollfd fd = { .fd = a, .events = POLLOUT };

		if (rpoll(&fd, 1, 5000) != 1)
			rs_die("rpoll");
	}
	close_pair(l, c, a);
	if (bad && !poll_rsocket(a))
		exit(98);
}

/* rsocket-double-close: rclose twice; 44.0 returns a positive EBADF. */
static void rsocket_double_close(bool bad)
{
	int l, c, a;

	pair(&l, &c, &a);
	exchange(c, a);
	close_pair(l, c, a);
	if (bad && close_rsocket(c) != EBADF)
		exit(98);
}

/* A number below 44.0's index limit that no test run has open. */
#define NEVER_OPEN 60000

static NOINLINE int name_rsocket(int s)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	return rgetsockname(s, (struct sockaddr *)&sin, &len);
}

/* rsocket-unknown-fd: an int no rsocket or raccept returned. */
static void rsocket_unknown_fd(bool bad)
{
	int l, c, a;

	pair(&l, &c, &a);
	exchange(c, a);
	if (fcntl(NEVER_OPEN, F_GETFD) != -1)
		rs_die("fd " "60000 is open");
	if (name_rsocket(bad ? NEVER_OPEN : c) != (bad ? -1 : 0) ||
	    (bad && errno != EBADF))
		exit(98);
	close_pair(l, c, a);
}

/* The same on a plain fd: only a warning, librdmacm says EBADF. */
static void rsocket_unknown_fd_plain(bool bad)
{
	int l, c, a, p[2];

	if (pipe(p))
		rs_die("pipe");
	pair(&l, &c, &a);
	exchange(c, a);
	if (name_rsocket(bad ? p[0] : c) != (bad ? -1 : 0) ||
	    (bad && errno != EBADF))
		exit(98);
	close_pair(l, c, a);
	close(p[0]);
	close(p[1]);
}

/* Not folded into close_rsocket: the report must name this one. */
static NOINLINE int close_mapped(int s, int mapped)
{
	return mapped >= 0 ? rclose(s) : -1;
}

/*
 * riomap-leak: rclose with a buffer still riomap()ed, which 44.0 never
 * returns from; refused (-1/EBUSY), and the program then unmaps and
 * closes.
 */
static void riomap_leak(bool bad)
{
	static char buf[4096];
	int l, c, a;
	off_t off;

	pair(&l, &c, &a);
	exchange(c, a);
	off = riomap(a, buf, sizeof(buf), PROT_WRITE, 0, 0);
	if (off != 0)
		rs_die("riomap");
	/* the mapping reaches the peer with the next send */
	if (rsend(a, "map", 3, 0) != 3 || rrecv(c, buf, 3, MSG_WAITALL) != 3)
		rs_die("announce");
	if (riowrite(c, "w", 1, 0, 0) != 1)
		rs_die("riowrite");
	if (rshutdown(c, SHUT_RDWR) || close_rsocket(c) || close_rsocket(l))
		rs_die("close");
	if (bad) {
		if (close_mapped(a, 1) != -1 || errno != EBUSY)
			exit(98);
	}
	if (riounmap(a, buf, sizeof(buf)) || close_mapped(a, 0))
		rs_die("riounmap/rclose");
}

static const struct {
	const char *rule;
	void (*run)(bool bad);
} scenarios[] = {
	{ "leak-rsocket", leak_rsocket },
	{ "rsocket-use-after-close", rsocket_use_after_close },
	{ "rsocket-use-after-close.rpoll", rsocket_use_after_close_rpoll },
	{ "rsocket-double-close", rsocket_double_close },
	{ "rsocket-unknown-fd", rsocket_unknown_fd },
	{ "rsocket-unknown-fd.plain", rsocket_unknown_fd_plain },
	{ "riomap-leak", riomap_leak },
};

int main(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);
	size_t n = strlen(mode);
	unsigned i;
	bool bad = true;

	if (n > 6 && !strcmp(mode + n - 6, ".clean")) {
		bad = false;
		n -= 6;
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strlen(scenarios[i].rule) == n &&
		    !strncmp(mode, scenarios[i].rule, n))
			break;
	if (i == sizeof(scenarios) / sizeof(scenarios[0])) {
		fprintf(stderr, "usage: %s RULE[.clean]\n", argv[0]);
		return 2;
	}
	scenarios[i].run(bad);
	printf("rsockets: %s done\n", mode);
	return 0;
}
