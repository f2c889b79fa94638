/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/rs/rs_svc.c: the rsocket service threads of rdma-core
 * 44.0, each started with its first rsocket and joined when its last one
 * leaves:
 *   listen   polls listeners' CM channels and accepts (rdma_get_request,
 *            rdma_accept, rdma_reject through the PLT, from this thread);
 *   connect  polls connecting and connected rsockets' CM channels and
 *            drives the connect state machine (rdma_get_cm_event, the
 *            resolves, rdma_connect, rdma_create_qp) or notes a
 *            disconnect;
 *   udp      reads datagram rsockets' UDP sockets (address handles
 *            through temporary synchronous ids);
 *   keepalive sends a zero-length RDMA write on each connection whose
 *            keepalive time passed.
 * A program therefore sees librdmacm calls on threads it never created.
 * Commands travel over a socketpair and are answered before the caller
 * goes on, so an rsocket removed from a service is no longer in use by
 * it.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rs.h"

struct rs_svc_msg {
	uint32_t cmd;
	uint32_t status;
	struct rs *rs;
};

struct rs_svc {
	pthread_t thread;
	int sock[2];
	int cnt;			/* rsockets, in rss[1..cnt] */
	int size;
	struct rs **rss;
	struct pollfd *fds;		/* [0]: the command socket */
	uint64_t *due;			/* keepalive: next send, in s */
	void *(*run)(void *svc);
};

static void *cm_svc_run(void *arg);
static void *udp_svc_run(void *arg);
static void *tcp_svc_run(void *arg);

static struct rs_svc svcs[RS_SVC_KINDS] = {
	[RS_SVC_UDP] = { .run = udp_svc_run },
	[RS_SVC_KEEPALIVE] = { .run = tcp_svc_run },
	[RS_SVC_LISTEN] = { .run = cm_svc_run },
	[RS_SVC_CONNECT] = { .run = cm_svc_run },
};
static pthread_mutex_t svc_mut = PTHREAD_MUTEX_INITIALIZER;

static void rs_full_write(int fd, const void *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p = (const char *)p + n;
		len -= n;
	}
}

static void rs_full_read(int fd, void *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p = (char *)p + n;
		len -= n;
	}
}

int rs_notify_svc(enum rs_svc_kind kind, struct rs *rs, enum rs_svc_cmd cmd)
{
	struct rs_svc *svc = &svcs[kind];
	struct rs_svc_msg msg;
	int ret;

	pthread_mutex_lock(&svc_mut);
	if (!svc->cnt) {
		ret = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				 svc->sock);
		if (ret)
			goto unlock;
		ret = pthread_create(&svc->thread, NULL, svc->run, svc);
		if (ret) {
			ret = rs_seterr(ret);
			goto closepair;
		}
	}
	msg.cmd = cmd;
	msg.status = EINVAL;
	msg.rs = rs;
	rs_full_write(svc->sock[0], &msg, sizeof(msg));
	rs_full_read(svc->sock[0], &msg, sizeof(msg));
	ret = rs_seterr(msg.status);
	if (svc->cnt)
		goto unlock;
	pthread_join(svc->thread, NULL);
closepair:
	close(svc->sock[0]);
	close(svc->sock[1]);
unlock:
	pthread_mutex_unlock(&svc_mut);
	return ret;
}

static int rs_svc_grow(struct rs_svc *svc, int by)
{
	struct rs **rss;
	struct pollfd *fds;
	uint64_t *due;
	int n = svc->size + by;

	rss = realloc(svc->rss, sizeof(*rss) * n);
	if (!rss)
		return ENOMEM;
	svc->rss = rss;
	fds = realloc(svc->fds, sizeof(*fds) * n);
	if (!fds)
		return ENOMEM;
	svc->fds = fds;
	due = realloc(svc->due, sizeof(*due) * n);
	if (!due)
		return ENOMEM;
	svc->due = due;
	svc->size = n;
	return 0;
}

static int rs_svc_add(struct rs_svc *svc, struct rs *rs)
{
	int ret;

	if (svc->cnt >= svc->size - 1) {
		ret = rs_svc_grow(svc, 4);
		if (ret)
			return ret;
	}
	svc->rss[++svc->cnt] = rs;
	return 0;
}

static int rs_svc_index(struct rs_svc *svc, struct rs *rs)
{
	int i;

	for (i = 1; i <= svc->cnt; i++)
		if (svc->rss[i] == rs)
			return i;
	return -1;
}

static int rs_svc_rm(struct rs_svc *svc, struct rs *rs)
{
	int i = rs_svc_index(svc, rs);

	if (i < 0)
		return EBADF;
	svc->rss[i] = svc->rss[svc->cnt];
	svc->fds[i] = svc->fds[svc->cnt];
	svc->due[i] = svc->due[svc->cnt];
	svc->cnt--;
	return 0;
}

static uint64_t rs_now_s(void)
{
	return rs_now_us() / 1000000;
}

/* A command from rs_notify_svc; the fd polled for rs is fd. */
static void rs_svc_cmd(struct rs_svc *svc, int flag, int fd)
{
	struct rs_svc_msg msg;
	int i;

	rs_full_read(svc->sock[1], &msg, sizeof(msg));
	switch (msg.cmd) {
	case RS_SVC_ADD:
		msg.status = rs_svc_add(svc, msg.rs);
		if (msg.status)
			break;
		msg.rs->svcs |= flag;
		i = svc->cnt;
		if (svc == &svcs[RS_SVC_UDP])
			fd = msg.rs->udp_sock;
		else if (svc != &svcs[RS_SVC_KEEPALIVE])
			fd = msg.rs->cm_id->channel->fd;
		svc->fds[i].fd = fd;
		svc->fds[i].events = POLLIN;
		svc->fds[i].revents = 0;
		svc->due[i] = rs_now_s() + msg.rs->keepalive_time;
		break;
	case RS_SVC_REM:
		msg.status = rs_svc_rm(svc, msg.rs);
		if (!msg.status)
			msg.rs->svcs &= ~flag;
		break;
	case RS_SVC_MOD:
		i = rs_svc_index(svc, msg.rs);
		if (i >= 0) {
			svc->due[i] = rs_now_s() + msg.rs->keepalive_time;
			msg.status = 0;
		} else {
			msg.status = EBADF;
		}
		break;
	}
	rs_full_write(svc->sock[1], &msg, sizeof(msg));
}

/* A thread's first step: room for the command socket (or fail it). */
static int rs_svc_start(struct rs_svc *svc, int grow)
{
	struct rs_svc_msg msg;
	int ret;

	ret = rs_svc_grow(svc, grow);
	if (ret) {
		rs_full_read(svc->sock[1], &msg, sizeof(msg));
		msg.status = ret;
		rs_full_write(svc->sock[1], &msg, sizeof(msg));
		return ret;
	}
	svc->fds[0].fd = svc->sock[1];
	svc->fds[0].events = POLLIN;
	return 0;
}

static void rs_svc_stop(struct rs_svc *svc)
{
	free(svc->rss);
	free(svc->fds);
	free(svc->due);
	svc->rss = NULL;
	svc->fds = NULL;
	svc->due = NULL;
	svc->size = 0;
}

/*
 * The listen and connect services.  After a command the poll results
 * are stale (an rsocket may have left and be freed): poll again, the
 * events still pending fire again.
 */
static void *cm_svc_run(void *arg)
{
	struct rs_svc *svc = arg;
	int i;

	if (rs_svc_start(svc, 4))
		return NULL;
	do {
		for (i = 0; i <= svc->cnt; i++)
			svc->fds[i].revents = 0;
		poll(svc->fds, svc->cnt + 1, -1);
		if (svc->fds[0].revents) {
			rs_svc_cmd(svc, RS_IN_CM, -1);
			continue;
		}
		for (i = 1; i <= svc->cnt; i++) {
			if (!svc->fds[i].revents)
				continue;
			if (svc == &svcs[RS_SVC_LISTEN])
				rs_accept(svc->rss[i]);
			else
				rs_handle_cm_event(svc->rss[i]);
		}
	} while (svc->cnt >= 1);
	rs_svc_stop(svc);
	return NULL;
}

static void *udp_svc_run(void *arg)
{
	struct rs_svc *svc = arg;
	int i;

	if (rs_svc_start(svc, 4))
		return NULL;
	do {
		for (i = 0; i <= svc->cnt; i++)
			svc->fds[i].revents = 0;
		poll(svc->fds, svc->cnt + 1, -1);
		if (svc->fds[0].revents) {
			rs_svc_cmd(svc, RS_IN_UDP, -1);
			continue;
		}
		for (i = 1; i <= svc->cnt; i++)
			if (svc->fds[i].revents)
				ds_udp_input(svc->rss[i]);
	} while (svc->cnt >= 1);
	rs_svc_stop(svc);
	return NULL;
}

/* A zero-length RDMA write: the peer's HCA answers, not the peer. */
static void rs_send_keepalive(struct rs *rs)
{
	pthread_mutex_lock(&rs->cq_lock);
	if (rs_ctrl_free(rs) && (rs->state & RS_CONNECTED))
		rs_post_ctrl(rs, RS_CTRL_KEEPALIVE, 1);
	pthread_mutex_unlock(&rs->cq_lock);
}

static void *tcp_svc_run(void *arg)
{
	struct rs_svc *svc = arg;
	uint64_t now, next;
	int i, timeout = -1;

	if (rs_svc_start(svc, 16))
		return NULL;
	do {
		svc->fds[0].revents = 0;
		poll(svc->fds, 1, timeout < 0 ? -1 : timeout * 1000);
		if (svc->fds[0].revents)
			rs_svc_cmd(svc, RS_IN_KEEPALIVE, -1);
		now = rs_now_s();
		next = ~0ULL;
		for (i = 1; i <= svc->cnt; i++) {
			if (svc->due[i] <= now) {
				rs_send_keepalive(svc->rss[i]);
				svc->due[i] = now + svc->rss[i]->keepalive_time;
			}
			if (svc->due[i] < next)
				next = svc->due[i];
		}
		timeout = next == ~0ULL ? -1 : (int)(next - now);
	} while (svc->cnt >= 1);
	rs_svc_stop(svc);
	return NULL;
}
