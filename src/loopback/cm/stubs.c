/*
 * src/loopback/cm/stubs.c: the part of the librdmacm ABI the loopback
 * backend does not emulate yet (rsockets).  Everything fails cleanly with
 * -1 and ENOSYS; the r* calls that the real library routes through
 * other exports (rselect -> rpoll, rread -> rrecv, ...) do the same here,
 * so an interposer sees the same nesting.  rpoll/rselect on plain fds
 * behave like poll/select, as the real ones do for non-rsocket fds.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>

#include "cm.h"

static int cm_nosys(void)
{
	errno = ENOSYS;
	return -1;
}

/* rsockets: a later issue. */
int rsocket(int domain, int type, int protocol)
{
	return cm_nosys();
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return cm_nosys();
}

int rlisten(int socket, int backlog)
{
	return cm_nosys();
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return cm_nosys();
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return cm_nosys();
}

int rshutdown(int socket, int how)
{
	return cm_nosys();
}

int rclose(int socket)
{
	return cm_nosys();
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return cm_nosys();
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t ret = rrecv(socket, buf, len, flags);

	if (ret >= 0 && src_addr)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (!msg || msg->msg_iovlen != 1)
		return cm_nosys();
	return rrecv(socket, msg->msg_iov[0].iov_base,
		     msg->msg_iov[0].iov_len, flags);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	if (!iov || iovcnt != 1)
		return cm_nosys();
	return rrecv(socket, iov[0].iov_base, iov[0].iov_len, 0);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return cm_nosys();
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return rsend(socket, buf, len, flags);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return cm_nosys();
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return cm_nosys();
}

/* No fd is an rsocket, so every fd is polled as the plain fd it is. */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds,
	    fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *fds;
	int i, n = 0, ret, to;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	fds = calloc(nfds ? nfds : 1, sizeof(*fds));
	if (!fds) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < nfds; i++) {
		short ev = 0;

		if (readfds && FD_ISSET(i, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(i, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(i, exceptfds))
			ev |= POLLPRI;
		if (!ev)
			continue;
		fds[n].fd = i;
		fds[n].events = ev;
		n++;
	}
	to = timeout ? (int)(timeout->tv_sec * 1000 +
			     timeout->tv_usec / 1000) : -1;
	ret = rpoll(fds, n, to);
	if (ret >= 0) {
		if (readfds)
			FD_ZERO(readfds);
		if (writefds)
			FD_ZERO(writefds);
		if (exceptfds)
			FD_ZERO(exceptfds);
		ret = 0;
		for (i = 0; i < n; i++) {
			int hit = 0;

			if (readfds && (fds[i].revents &
					(POLLIN | POLLHUP | POLLERR))) {
				FD_SET(fds[i].fd, readfds);
				hit = 1;
			}
			if (writefds && (fds[i].revents & POLLOUT)) {
				FD_SET(fds[i].fd, writefds);
				hit = 1;
			}
			if (exceptfds && (fds[i].revents & POLLPRI)) {
				FD_SET(fds[i].fd, exceptfds);
				hit = 1;
			}
			ret += hit;
		}
	}
	free(fds);
	return ret;
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return cm_nosys();
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return cm_nosys();
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	return cm_nosys();
}

int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen)
{
	return cm_nosys();
}

int rfcntl(int socket, int cmd, ...)
{
	return cm_nosys();
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	return cm_nosys();
}

int riounmap(int socket, void *buf, size_t len)
{
	return cm_nosys();
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags)
{
	errno = ENOSYS;
	return 0;
}
