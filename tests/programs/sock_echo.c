/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/programs/sock_echo.c: an ordinary TCP echo pair on the BSD socket
 * API, for running under LD_PRELOAD=librspreload.so (rdma-core's, which
 * turns the socket calls into rsockets).  It uses what such programs use:
 * socket, setsockopt, bind, listen, select, accept, getpeername,
 * getsockname, connect in non-blocking mode with poll and SO_ERROR,
 * fcntl, send/recv, write/read, writev/readv, shutdown and close.
 *
 *   sock_echo -s [-b ADDR] [-p PORT]
 *       serve one client: echo everything until it shuts down its
 *       sending half, then close; print "server: echoed N bytes"
 *   sock_echo -c ADDR [-p PORT] [-n COUNT] [-S SIZE]
 *       send COUNT messages of SIZE bytes, read each echo back and
 *       compare, shut down, read the end of stream; print
 *       "client: COUNT x SIZE bytes echoed"
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

static const char *port = "7472";

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static struct addrinfo *resolve(const char *host, int passive)
{
	struct addrinfo hints, *res;
	int ret;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | (passive ? AI_PASSIVE : 0);
	ret = getaddrinfo(host, port, &hints, &res);
	if (ret) {
		fprintf(stderr, "getaddrinfo: %s\n", gai_strerror(ret));
		exit(1);
	}
	return res;
}

static void full_write(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			die("write");
		buf += n;
		len -= n;
	}
}

static int server(const char *addr)
{
	struct sockaddr_in peer, self;
	struct addrinfo *ai = resolve(addr, 1);
	socklen_t len;
	long long total = 0;
	char buf[8192];
	fd_set rd;
	ssize_t n;
	int lfd, fd, on = 1;

	lfd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (lfd < 0)
		die("socket");
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)))
		die("setsockopt SO_REUSEADDR");
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen))
		die("bind");
	freeaddrinfo(ai);
	if (listen(lfd, 1))
		die("listen");
	FD_ZERO(&rd);
	FD_SET(lfd, &rd);
	/* the listener becomes readable when a connection waits */
	if (select(lfd + 1, &rd, NULL, NULL, NULL) != 1 ||
	    !FD_ISSET(lfd, &rd))
		die("select");
	len = sizeof(peer);
	fd = accept(lfd, (struct sockaddr *)&peer, &len);
	if (fd < 0)
		die("accept");
	len = sizeof(self);
	if (getsockname(fd, (struct sockaddr *)&self, &len))
		die("getsockname");
	printf("server: connection from %s", inet_ntoa(peer.sin_addr));
	printf(" to %s:%u\n", inet_ntoa(self.sin_addr),
	       ntohs(self.sin_port));
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("recv");
		if (!n)
			break;
		full_write(fd, buf, n);
		total += n;
	}
	printf("server: echoed %lld bytes\n", total);
	if (close(fd))
		die("close");
	if (close(lfd))
		die("close listener");
	return 0;
}

/*
 * poll(2) one descriptor until it is ready or ms have passed by the clock.
 * Not one poll with the timeout: librdmacm's rpoll (rsocket.c, 44.0 and
 * still in 63.0) takes the whole time elapsed since the call began off
 * the remaining timeout at every internal wakeup, so it returns 0 well
 * before the timeout; and in 44.0 a connecting rsocket is only rechecked
 * every wake_up_interval, 5 s (0.5 s since 63.0, commit 0b9d2f113
 * "librdmacm: Change wake-up timeout from rpoll").  Both together made
 * a 10 s wait end after 5 s with nothing wrong on the real stack.
 */
static int poll_until(struct pollfd *p, int ms)
{
	struct timespec now, end;
	int n, left;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (int)((end.tv_sec - now.tv_sec) * 1000 +
			     (end.tv_nsec - now.tv_nsec) / 1000000);
		if (left <= 0)
			return 0;
		p->revents = 0;
		n = poll(p, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n)
			return n;
	}
}

/* Wait (bounded) for fd to become ready for events. */
static void wait_fd(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	n = poll_until(&p, 10000);
	if (n != 1)
		die(n ? "poll" : "poll timed out");
	if (p.revents & (POLLERR | POLLNVAL))
		die("poll revents");
}

/*
 * Send one message and read its echo, both as far as the socket takes
 * them: a large message fills the server's buffers before its echo comes
 * back, so reading may not wait until sending is done.
 */
static int exchange(int fd, const char *out, char *in, size_t len, int i)
{
	size_t sent = 0, got = 0, n1;
	struct iovec iov[2];
	struct pollfd p;
	ssize_t n;
	int r;

	while (got < len) {
		p.fd = fd;
		p.events = POLLIN | (sent < len ? POLLOUT : 0);
		r = poll_until(&p, 10000);
		if (r != 1)
			die(r ? "poll" : "poll timed out");
		if (p.revents & (POLLERR | POLLNVAL))
			die("poll revents");
		if ((p.revents & POLLOUT) && sent < len) {
			/* odd messages with writev, even ones with send */
			if (i & 1) {
				n1 = (len - sent) / 2;
				iov[0].iov_base = (char *)out + sent;
				iov[0].iov_len = n1;
				iov[1].iov_base = (char *)out + sent + n1;
				iov[1].iov_len = len - sent - n1;
				n = writev(fd, iov, 2);
			} else {
				n = send(fd, out + sent, len - sent, 0);
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die(i & 1 ? "writev" : "send");
			if (n > 0)
				sent += n;
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			iov[0].iov_base = in + got;
			iov[0].iov_len = len - got;
			n = readv(fd, iov, 1);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				die("readv");
			if (!n) {
				fprintf(stderr, "client: early end of stream\n");
				return 1;
			}
			if (n > 0)
				got += n;
		}
	}
	if (memcmp(in, out, len)) {
		fprintf(stderr, "client: echo %d differs\n", i);
		return 1;
	}
	return 0;
}

static int client(const char *addr, int count, int size)
{
	struct addrinfo *ai = resolve(addr, 0);
	char *out, *in, end;
	socklen_t len;
	int fd, i, err, on = 1;
	ssize_t n;

	out = malloc(size);
	in = malloc(size);
	if (!out || !in)
		die("malloc");
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd < 0)
		die("socket");
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)))
		die("setsockopt TCP_NODELAY");
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		die("fcntl O_NONBLOCK");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) &&
	    errno != EINPROGRESS)
		die("connect");
	freeaddrinfo(ai);
	wait_fd(fd, POLLOUT);
	len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		die("getsockopt SO_ERROR");
	if (err) {
		errno = err;
		die("connect (SO_ERROR)");
	}
	for (i = 0; i < count; i++) {
		memset(out, 'a' + i % 26, size);
		if (exchange(fd, out, in, size, i))
			return 1;
	}
	if (shutdown(fd, SHUT_WR))
		die("shutdown");
	wait_fd(fd, POLLIN);
	n = read(fd, &end, 1);
	if (n != 0) {
		fprintf(stderr, "client: no end of stream (%zd)\n", n);
		return 1;
	}
	if (close(fd))
		die("close");
	printf("client: %d x %d bytes echoed\n", count, size);
	free(out);
	free(in);
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *bind_addr = "0.0.0.0";
	int op, srv = 0, count = 100, size = 1000;

	while ((op = getopt(argc, argv, "sc:b:p:n:S:")) != -1) {
		switch (op) {
		case 's':
			srv = 1;
			break;
		case 'c':
			addr = optarg;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			count = atoi(optarg);
			break;
		case 'S':
			size = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s -s [-b addr] | -c addr "
				"[-p port] [-n count] [-S size]\n", argv[0]);
			return 1;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (srv)
		return server(bind_addr);
	if (!addr || size < 1 || count < 0) {
		fprintf(stderr, "%s: -s or -c ADDR\n", argv[0]);
		return 1;
	}
	return client(addr, count, size);
}
