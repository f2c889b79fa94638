/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ud.c - UD transport: each UD QP owns a SOCK_DGRAM socket bound to
 * "@<ns>/ud/<qpn>" (read by the progress thread) and an unbound blocking
 * one for sending from application threads; multicast membership is a
 * directory of empty files "<shm>/<ns>-mcast/<mgid>/<qpn>" that a sender
 * fans out over.  Datagrams carry struct lo_ud_hdr + payload; receivers
 * synthesize the 40-byte GRH.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "lo_verbs.h"

#define LO_UD_RX_BUDGET	64

int lo_ud_open(struct lo_qp *qp)
{
	struct timeval tv = { .tv_sec = 2 };
	struct sockaddr_un sa;
	int fd, sz = 1 << 20;

	fd = lo_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sa,
		 lo_addr(&sa, "ud", qp->qp.qp_num))) {
		close(fd);
		return -1;
	}
	qp->ud = lo_conn_add(LO_CONN_UD, fd, qp, EPOLLIN);
	if (!qp->ud) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	qp->ud_tx_fd = lo_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (qp->ud_tx_fd < 0)
		return -1;
	/* A receiver that does not drain within this drops our datagram. */
	setsockopt(qp->ud_tx_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(qp->ud_tx_fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	return 0;
}

/* --- multicast registry ------------------------------------------------- */

static int lo_mcast_dir(char *buf, size_t len, const union ibv_gid *gid)
{
	const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	char ns[72];
	size_t i;
	int n;

	/* The namespace becomes one path component. */
	snprintf(ns, sizeof(ns), "%s", lo_ns());
	for (i = 0; ns[i]; i++)
		if (ns[i] == '/')
			ns[i] = '_';
	n = snprintf(buf, len, "%s/%s-mcast/", base, ns);
	for (i = 0; i < 16 && n + 3 < (int)len; i++)
		n += snprintf(buf + n, len - n, "%02x", gid->raw[i]);
	return n;
}

/*
 * A multicast GID: an IPv6 multicast address, or (RoCE v2, rxe's default
 * and this device's) an IPv4-mapped one of 224.0.0.0/4.
 */
static bool lo_gid_is_mcast(const union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	return gid->raw[0] == 0xff ||
	       (!memcmp(gid->raw, v4mapped, 12) &&
		(gid->raw[12] & 0xf0) == 0xe0);
}

int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
		     uint16_t lid)
{
	struct lo_qp *qp;
	struct lo_mcast *m;
	struct lo_list *l;
	char path[256];
	int n, fd;

	if (!ibqp || !gid || ibqp->qp_type != IBV_QPT_UD ||
	    !lo_gid_is_mcast(gid))
		return EINVAL;
	qp = lo_qp(ibqp);
	pthread_mutex_lock(&qp->lock);
	for (l = qp->mcast.next; l != &qp->mcast; l = l->next) {
		m = lo_container_of(l, struct lo_mcast, link);
		if (!memcmp(&m->gid, gid, sizeof(*gid))) {
			pthread_mutex_unlock(&qp->lock);
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&qp->lock);
		return ENOMEM;
	}
	n = lo_mcast_dir(path, sizeof(path), gid);
	/* Both levels may be shared with other processes: EEXIST is fine. */
	*strrchr(path, '/') = '\0';
	mkdir(path, 01777);
	path[strlen(path)] = '/';
	mkdir(path, 01777);
	snprintf(path + n, sizeof(path) - n, "/%u", ibqp->qp_num);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		int e = errno;

		pthread_mutex_unlock(&qp->lock);
		free(m);
		return e;
	}
	close(fd);
	m->gid = *gid;
	lo_list_add_tail(&qp->mcast, &m->link);
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static void lo_mcast_unlink(struct lo_qp *qp, struct lo_mcast *m)
{
	char path[256];
	int n = lo_mcast_dir(path, sizeof(path), &m->gid);

	snprintf(path + n, sizeof(path) - n, "/%u", qp->qp.qp_num);
	unlink(path);
	/* Last member out removes the group, then the namespace dir. */
	path[n] = '\0';
	if (!rmdir(path)) {
		*strrchr(path, '/') = '\0';
		rmdir(path);
	}
	lo_list_del(&m->link);
	free(m);
}

int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
		     uint16_t lid)
{
	struct lo_qp *qp;
	struct lo_list *l;

	if (!ibqp || !gid || ibqp->qp_type != IBV_QPT_UD)
		return EINVAL;
	qp = lo_qp(ibqp);
	pthread_mutex_lock(&qp->lock);
	for (l = qp->mcast.next; l != &qp->mcast; l = l->next) {
		struct lo_mcast *m = lo_container_of(l, struct lo_mcast,
						     link);

		if (!memcmp(&m->gid, gid, sizeof(*gid))) {
			lo_mcast_unlink(qp, m);
			pthread_mutex_unlock(&qp->lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&qp->lock);
	return EINVAL;
}

/* Caller holds the QP lock (and the progress lock). */
void lo_ud_close(struct lo_qp *qp)
{
	while (!lo_list_empty(&qp->mcast))
		lo_mcast_unlink(qp, lo_list_first(&qp->mcast,
						  struct lo_mcast, link));
	if (qp->ud) {
		lo_conn_kill(qp->ud);
		qp->ud = NULL;
	}
	if (qp->ud_tx_fd >= 0) {
		close(qp->ud_tx_fd);
		qp->ud_tx_fd = -1;
	}
}

/* --- send --------------------------------------------------------------- */

/* false: nobody is bound to that QPN (any more). */
static bool lo_ud_sendto(int fd, uint32_t qpn, const void *buf, size_t len)
{
	struct sockaddr_un sa;
	socklen_t sl = lo_addr(&sa, "ud", qpn);
	ssize_t n;

	do {
		n = sendto(fd, buf, len, MSG_NOSIGNAL,
			   (struct sockaddr *)&sa, sl);
	} while (n < 0 && errno == EINTR);
	return !(n < 0 && (errno == ECONNREFUSED || errno == ENOENT));
}

static void lo_mcast_send(int fd, const union ibv_gid *gid, uint32_t self,
			  bool block_self, const void *buf, size_t len)
{
	char path[256];
	struct dirent *de;
	DIR *d;
	int n = lo_mcast_dir(path, sizeof(path), gid);

	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		unsigned long qpn = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end ||
		    qpn > 0xffffff || (block_self && qpn == self))
			continue;
		if (!lo_ud_sendto(fd, qpn, buf, len)) {
			/* A member that died without detaching. */
			snprintf(path + n, sizeof(path) - n, "/%lu", qpn);
			unlink(path);
		}
	}
	closedir(d);
}

/*
 * UD post_send: validate and gather under the QP lock, send without it
 * (the receiver may be this very process, and sendto may wait for it to
 * drain), complete locally.
 */
int lo_ud_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct lo_qp *qp = lo_qp(ibqp);
	unsigned char *buf = malloc(sizeof(struct lo_ud_hdr) + LO_UD_MTU);
	int ret = 0;

	if (!buf) {
		if (bad_wr)
			*bad_wr = wr;
		return ENOMEM;
	}
	for (; wr; wr = wr->next) {
		struct lo_ud_hdr *uh = (struct lo_ud_hdr *)buf;
		enum ibv_wc_status st = IBV_WC_SUCCESS;
		struct ibv_ah_attr *ah;
		uint64_t total = 0;
		bool signaled, mcast, block;
		uint32_t self;
		int i, fd;

		pthread_mutex_lock(&qp->lock);
		if (ibqp->state == IBV_QPS_ERR) {
			pthread_mutex_unlock(&qp->lock);
			lo_cqe(ibqp->send_cq, qp, wr->wr_id,
			       IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0, 0, 0, 0,
			       false);
			continue;
		}
		if ((ibqp->state != IBV_QPS_RTS &&
		     ibqp->state != IBV_QPS_SQD) ||
		    (wr->opcode != IBV_WR_SEND &&
		     wr->opcode != IBV_WR_SEND_WITH_IMM) ||
		    wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
		    (wr->num_sge && !wr->sg_list) || !wr->wr.ud.ah) {
			pthread_mutex_unlock(&qp->lock);
			ret = EINVAL;
			break;
		}
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if ((wr->send_flags & IBV_SEND_INLINE) &&
		    total > qp->cap.max_inline_data) {
			pthread_mutex_unlock(&qp->lock);
			ret = EINVAL;
			break;
		}
		signaled = qp->sq_sig_all ||
			   (wr->send_flags & IBV_SEND_SIGNALED);
		memset(uh, 0, sizeof(*uh));
		if (total > LO_UD_MTU)
			st = IBV_WC_LOC_LEN_ERR;
		else
			lo_gather(qp, wr, buf + sizeof(*uh), &st);
		ah = &lo_container_of(wr->wr.ud.ah, struct lo_ah, ah)->attr;
		uh->h.op = wr->opcode == IBV_WR_SEND_WITH_IMM ?
			   LO_OP_SEND_IMM : LO_OP_SEND;
		if (wr->send_flags & IBV_SEND_SOLICITED)
			uh->h.flags |= LO_WF_SOLICITED;
		uh->h.src_qpn = ibqp->qp_num;
		uh->h.dst_qpn = wr->wr.ud.remote_qpn;
		uh->h.imm = wr->imm_data;
		/* A Q_Key with the high bit set means "use the QP's". */
		uh->h.rkey = (wr->wr.ud.remote_qkey & 0x80000000) ?
			     qp->attr.qkey : wr->wr.ud.remote_qkey;
		uh->h.len = total;
		if (ah->is_global) {
			memcpy(uh->dgid, ah->grh.dgid.raw, 16);
			uh->tclass_flow =
				(uint32_t)ah->grh.traffic_class << 20 |
				(ah->grh.flow_label & 0xfffff);
			uh->hop_limit = ah->grh.hop_limit;
		} else {
			uh->dgid[10] = 0xff;
			uh->dgid[11] = 0xff;
			uh->dgid[12] = 127;
			uh->dgid[15] = 1;
			uh->hop_limit = 64;
		}
		uh->sl = ah->sl;
		mcast = (ah->is_global && lo_gid_is_mcast(&ah->grh.dgid)) ||
			wr->wr.ud.remote_qpn == LO_MCAST_QPN;
		if (mcast)
			uh->h.dst_qpn = LO_MCAST_QPN;
		fd = qp->ud_tx_fd;
		self = ibqp->qp_num;
		block = qp->block_self_mc;
		pthread_mutex_unlock(&qp->lock);

		if (st != IBV_WC_SUCCESS) {
			lo_cqe(ibqp->send_cq, qp, wr->wr_id, st, IBV_WC_SEND,
			       0, 0, 0, 0, false);
			continue;
		}
		if (mcast && ah->is_global)
			lo_mcast_send(fd, &ah->grh.dgid, self, block, buf,
				      sizeof(*uh) + total);
		else if (!mcast)
			lo_ud_sendto(fd, uh->h.dst_qpn, buf,
				     sizeof(*uh) + total);
		/* UD completes once sent, delivered or not. */
		if (signaled)
			lo_cqe(ibqp->send_cq, qp, wr->wr_id, IBV_WC_SUCCESS,
			       IBV_WC_SEND, total, 0, 0, 0, false);
	}
	free(buf);
	if (ret && bad_wr)
		*bad_wr = wr;
	return ret;
}

/* --- receive (progress thread) ------------------------------------------ */

void lo_ud_rx(struct lo_conn *c)
{
	size_t cap = sizeof(struct lo_ud_hdr) + LO_UD_MTU;
	unsigned char *buf = malloc(cap);
	int budget = LO_UD_RX_BUDGET;

	if (!buf)
		return;
	while (budget-- > 0 && !lo_dead(c)) {
		struct lo_ud_hdr *uh = (struct lo_ud_hdr *)buf;
		ssize_t n = recv(c->fd, buf, cap, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if ((size_t)n < sizeof(*uh) ||
		    (uh->h.op != LO_OP_SEND && uh->h.op != LO_OP_SEND_IMM) ||
		    uh->h.len != n - sizeof(*uh))
			continue;
		pthread_mutex_lock(&c->qp->lock);
		if (!lo_dead(c))
			lo_qp_ud_deliver_locked(c->qp, uh, buf + sizeof(*uh));
		pthread_mutex_unlock(&c->qp->lock);
	}
	free(buf);
}
