/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/rs/rs_core.c: rsocket numbers and lifetimes: the
 * configuration, the index of rsockets by number, rsocket, rbind,
 * rlisten, raccept, rconnect, rshutdown, rclose, the socket names, the
 * options (rsetsockopt, rgetsockopt) and rfcntl.
 *
 * As in rdma-core 44.0 a stream rsocket's number is its cm id's private
 * channel fd and a datagram rsocket's is its UDP socket; numbers above
 * 65535 do not fit the index (ENOMEM).  Calls on a number that is not an
 * rsocket fail with EBADF (rclose returns a positive EBADF, as 44.0's
 * does).  Calls to the library's own exports (rshutdown in rclose,
 * rgetpeername in raccept, rdma_* everywhere) go through the PLT, where
 * 44.0's do.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <infiniband/ib.h>

#include "rs.h"

#define RS_CONF_DIR	"/etc/rdma/rsocket"

struct rs_config rs_conf = {
	.iomap_size = 0,
	.inline_size = 64,
	.sq_size = 384,
	.rq_size = 384,
	.mem = 1 << 17,
	.wmem = 1 << 17,
	.polling_us = 10,
	.wake_ms = 5000,
};

/* Socket numbers: 64 lazily made chunks of 1024, as 44.0's index map. */
#define RS_MAP_BITS	10
#define RS_MAP_CHUNK	(1 << RS_MAP_BITS)
#define RS_MAP_MAX	(1 << 16)
static struct rs **rs_map[RS_MAP_MAX / RS_MAP_CHUNK];
static pthread_mutex_t rs_map_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int rs_seterr(int err)
{
	if (!err)
		return 0;
	errno = err;
	return -1;
}

socklen_t rs_addrlen(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sa->sa_family == AF_IB ? sizeof(struct sockaddr_ib) :
	       sizeof(struct sockaddr_in);
}

/* A number from RS_CONF_DIR/name into *val; the default stays if none. */
static void rs_read_conf(const char *name, unsigned long max, void *val,
			 size_t size)
{
	char path[128];
	unsigned long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", RS_CONF_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%lu", &v) == 1 && v <= max) {
		if (size == sizeof(uint16_t)) {
			uint16_t v16 = v;

			memcpy(val, &v16, size);
		} else {
			uint32_t v32 = v;

			memcpy(val, &v32, size);
		}
	}
	fclose(f);
}
#define RS_READ_CONF(name, field) \
	rs_read_conf(name, (1UL << (8 * sizeof(field))) - 1, &(field), \
		     sizeof(field))

/* 8-bit "scale" encoding of the iomap size (44.0 rounds to it). */
static int rs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ?
	       value : (1 << (bits - 1)) | (value >> bits);
}

static int rs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ?
	       value : (value & ~(1 << (bits - 1))) << bits;
}

/* The library's init (the CM's, with its probe id), then the defaults. */
void rs_configure(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int done;

	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&lock);
	if (done || cm_init())
		goto out;
	RS_READ_CONF("polling_time", rs_conf.polling_us);
	RS_READ_CONF("wake_up_interval", rs_conf.wake_ms);
	RS_READ_CONF("inline_default", rs_conf.inline_size);
	RS_READ_CONF("sqsize_default", rs_conf.sq_size);
	RS_READ_CONF("rqsize_default", rs_conf.rq_size);
	RS_READ_CONF("mem_default", rs_conf.mem);
	if (rs_conf.mem < 1)
		rs_conf.mem = 1;
	RS_READ_CONF("wmem_default", rs_conf.wmem);
	if (rs_conf.wmem < RS_SNDLOWAT)
		rs_conf.wmem = RS_SNDLOWAT << 1;
	RS_READ_CONF("iomap_size", rs_conf.iomap_size);
	rs_conf.iomap_size = (uint8_t)rs_value_to_scale(
		(uint16_t)rs_scale_to_value(rs_conf.iomap_size, 8), 8);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&lock);
}

struct rs *rs_lookup(int index)
{
	struct rs **chunk;

	if (index < 0 || index >= RS_MAP_MAX)
		return NULL;
	chunk = __atomic_load_n(&rs_map[index >> RS_MAP_BITS],
				__ATOMIC_ACQUIRE);
	if (!chunk)
		return NULL;
	return __atomic_load_n(&chunk[index & (RS_MAP_CHUNK - 1)],
			       __ATOMIC_ACQUIRE);
}

int rs_insert(struct rs *rs, int index)
{
	struct rs **chunk;

	if (index < 0 || index >= RS_MAP_MAX) {
		errno = ENOMEM;
		return -1;
	}
	pthread_mutex_lock(&rs_map_lock);
	chunk = rs_map[index >> RS_MAP_BITS];
	if (!chunk) {
		chunk = calloc(RS_MAP_CHUNK, sizeof(*chunk));
		if (!chunk) {
			pthread_mutex_unlock(&rs_map_lock);
			errno = ENOMEM;
			return -1;
		}
		__atomic_store_n(&rs_map[index >> RS_MAP_BITS], chunk,
				 __ATOMIC_RELEASE);
	}
	__atomic_store_n(&chunk[index & (RS_MAP_CHUNK - 1)], rs,
			 __ATOMIC_RELEASE);
	rs->index = index;
	pthread_mutex_unlock(&rs_map_lock);
	return index;
}

void rs_remove(struct rs *rs)
{
	struct rs **chunk;

	pthread_mutex_lock(&rs_map_lock);
	chunk = rs_map[rs->index >> RS_MAP_BITS];
	if (chunk && chunk[rs->index & (RS_MAP_CHUNK - 1)] == rs)
		__atomic_store_n(&chunk[rs->index & (RS_MAP_CHUNK - 1)], NULL,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rs_map_lock);
}

/* A new rsocket; a listener's children take its sizes. */
struct rs *rs_alloc(struct rs *parent, int type)
{
	struct rs *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->index = -1;
	rs->udp_sock = rs->epfd = -1;
	rs->accept_q[0] = rs->accept_q[1] = -1;
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_inline = parent->sq_inline;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->iomap_size = parent->iomap_size;
	} else {
		rs->sbuf_size = rs_conf.wmem;
		rs->rbuf_size = rs_conf.mem;
		rs->sq_inline = rs_conf.inline_size;
		rs->sq_size = rs_conf.sq_size;
		rs->rq_size = rs_conf.rq_size;
		if (type == SOCK_STREAM)
			rs->iomap_size = rs_conf.iomap_size;
	}
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	pthread_mutex_init(&rs->cq_lock, NULL);
	pthread_mutex_init(&rs->cq_wait_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	cm_list_init(&rs->iomaps);
	cm_list_init(&rs->iomap_queue);
	return rs;
}

void rs_free(struct rs *rs)
{
	if (rs->type == SOCK_DGRAM)
		ds_free(rs);
	else
		rs_free_stream(rs);
	free(rs->route);
	pthread_mutex_destroy(&rs->map_lock);
	pthread_mutex_destroy(&rs->cq_wait_lock);
	pthread_mutex_destroy(&rs->cq_lock);
	pthread_mutex_destroy(&rs->rlock);
	pthread_mutex_destroy(&rs->slock);
	free(rs);
}

/* F_SETFL on the fds a caller may block on, by state (44.0's choice). */
int rs_set_nonblocking(struct rs *rs, int arg)
{
	int ret = 0;

	if (rs->type == SOCK_DGRAM)
		return ds_set_nonblocking(rs, arg);
	if (rs->cm_id->recv_cq_channel)
		ret = fcntl(rs->cm_id->recv_cq_channel->fd, F_SETFL, arg);
	if (rs->state == RS_LISTENING)
		ret = fcntl(rs->accept_q[0], F_SETFL, arg);
	else if (!ret && rs->state < RS_CONNECTED)
		ret = fcntl(rs->cm_id->channel->fd, F_SETFL, arg);
	return ret;
}

int rs_nonblocking(struct rs *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

int rsocket(int domain, int type, int protocol)
{
	struct rs *rs;
	int index, ret;

	if ((domain != AF_INET && domain != AF_INET6 && domain != AF_IB) ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM) ||
	    (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP)) {
		errno = ENOTSUP;
		return -1;
	}
	rs_configure();
	rs = rs_alloc(NULL, type);
	if (!rs) {
		errno = ENOMEM;
		return -1;
	}
	if (type == SOCK_STREAM) {
		ret = rdma_create_id(NULL, &rs->cm_id, rs, RDMA_PS_TCP);
		if (ret)
			goto err;
		rs->cm_id->route.addr.src_addr.sa_family = domain;
		index = rs->cm_id->channel->fd;
	} else {
		ret = ds_init(rs, domain);
		if (ret)
			goto err;
		index = rs->udp_sock;
	}
	ret = rs_insert(rs, index);
	if (ret < 0)
		goto err;
	return rs->index;
err:
	rs_free(rs);
	return ret;
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_STREAM) {
		ret = rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr);
		if (!ret)
			rs->state = RS_BOUND;
		return ret;
	}
	if (rs->state == RS_IDLE) {
		ret = ds_init_ep(rs);
		if (ret)
			return ret;
	}
	return bind(rs->udp_sock, addr, addrlen);
}

int rlisten(int socket, int backlog)
{
	struct rs *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type != SOCK_STREAM)
		return rs_seterr(EOPNOTSUPP);	/* 44.0 crashes */
	if (rs->state == RS_LISTENING)
		return 0;
	ret = rdma_listen(rs->cm_id, backlog);
	if (ret)
		return ret;
	ret = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
			 rs->accept_q);
	if (ret)
		return ret;
	if ((rs->fd_flags & O_NONBLOCK) &&
	    fcntl(rs->accept_q[0], F_SETFL, O_NONBLOCK))
		return -1;
	/* the listen service polls the CM channel; it never waits in it */
	if (fcntl(rs->cm_id->channel->fd, F_SETFL, O_NONBLOCK))
		return -1;
	ret = rs_notify_svc(RS_SVC_LISTEN, rs, RS_SVC_ADD);
	if (ret)
		return ret;
	rs->state = RS_LISTENING;
	return 0;
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket), *nrs;
	ssize_t n;
	int err;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->state != RS_LISTENING)
		return rs_seterr(EBADF);
	n = read(rs->accept_q[0], &nrs, sizeof(nrs));
	if (n != sizeof(nrs))
		return (int)n;
	if (addr && addrlen)
		rgetpeername(nrs->index, addr, addrlen);
	/* the program can still drive the CM state if this fails */
	err = errno;
	rs_notify_svc(RS_SVC_CONNECT, nrs, RS_SVC_ADD);
	errno = err;
	return nrs->index;
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs *rs = rs_lookup(socket);
	int ret, err;

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM)
		return ds_connect(rs, addr, addrlen);
	if (!addr || addrlen > sizeof(rs->cm_id->route.addr.dst_storage))
		return rs_seterr(EINVAL);
	memcpy(&rs->cm_id->route.addr.dst_addr, addr, addrlen);
	ret = rs_do_connect(rs);
	if (ret == -1 && errno == EINPROGRESS) {
		err = errno;
		/* the program can still drive the CM state if this fails */
		rs_notify_svc(RS_SVC_CONNECT, rs, RS_SVC_ADD);
		errno = err;
	}
	return ret;
}

int rshutdown(int socket, int how)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM)
		return 0;	/* 44.0 crashes on the stream fields */
	return rs_stream_shutdown(rs, how);
}

int rclose(int socket)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return EBADF;	/* positive, errno untouched: 44.0's */
	if (rs->type == SOCK_STREAM) {
		if (rs->state & RS_CONNECTED)
			rshutdown(socket, SHUT_RDWR);
		if (rs->svcs & RS_IN_KEEPALIVE)
			rs_notify_svc(RS_SVC_KEEPALIVE, rs, RS_SVC_REM);
		if ((rs->svcs & RS_IN_CM) && rs->state == RS_LISTENING)
			rs_notify_svc(RS_SVC_LISTEN, rs, RS_SVC_REM);
		if (rs->svcs & RS_IN_CM)
			rs_notify_svc(RS_SVC_CONNECT, rs, RS_SVC_REM);
	} else {
		ds_shutdown(rs);
	}
	rs_free(rs);
	return 0;
}

static void rs_copy_addr(struct sockaddr *dst, const struct sockaddr *src,
			 socklen_t *len)
{
	socklen_t size, full = src->sa_family == AF_INET ?
			       sizeof(struct sockaddr_in) :
			       sizeof(struct sockaddr_in6);

	size = *len < full ? *len : full;
	*len = full;
	memcpy(dst, src, size);
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->udp_sock, addr, addrlen);
	rs_copy_addr(addr, rdma_get_peer_addr(rs->cm_id), addrlen);
	return 0;
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM)
		return getsockname(rs->udp_sock, addr, addrlen);
	rs_copy_addr(addr, rdma_get_local_addr(rs->cm_id), addrlen);
	return 0;
}

static int rs_set_keepalive(struct rs *rs, int on)
{
	FILE *f;

	if (!!on == !!(rs->svcs & RS_IN_KEEPALIVE))
		return 0;
	if (!on)
		return rs_notify_svc(RS_SVC_KEEPALIVE, rs, RS_SVC_REM);
	if (!rs->keepalive_time) {
		f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "re");
		if (!f || fscanf(f, "%u", &rs->keepalive_time) != 1)
			rs->keepalive_time = 7200;
		if (f)
			fclose(f);
	}
	return rs_notify_svc(RS_SVC_KEEPALIVE, rs, RS_SVC_ADD);
}

static int rs_opt_int(const void *optval)
{
	int v;

	memcpy(&v, optval, sizeof(v));
	return v;
}

static int rs_setopt_socket(struct rs *rs, int optname, const void *optval,
			    socklen_t optlen, int *on)
{
	struct linger lg;
	uint32_t v;
	int ret;

	switch (optname) {
	case SO_REUSEADDR:
		if (rs->type == SOCK_STREAM) {
			ret = rdma_set_option(rs->cm_id, RDMA_OPTION_ID,
					      RDMA_OPTION_ID_REUSEADDR,
					      (void *)optval, optlen);
			/* ENOSYS, or IB listeners (44.0): not an error */
			if (ret && (errno == ENOSYS ||
				    (rs->state != RS_IDLE &&
				     rs->cm_id->context && rs->cm_id->verbs &&
				     rs->cm_id->verbs->device->transport_type ==
				     IBV_TRANSPORT_IB)))
				ret = 0;
		} else {
			ret = 0;
		}
		*on = rs_opt_int(optval);
		return ret;
	case SO_RCVBUF:
		memcpy(&v, optval, sizeof(v));
		if ((rs->type == SOCK_STREAM && !rs->rbuf) ||
		    (rs->type == SOCK_DGRAM && !rs->qps))
			rs->rbuf_size = v << 1;
		return 0;
	case SO_SNDBUF:
		memcpy(&v, optval, sizeof(v));
		if (!rs->sbuf)
			rs->sbuf_size = v << 1;
		if (rs->sbuf_size < RS_SNDLOWAT)
			rs->sbuf_size = RS_SNDLOWAT << 1;
		return 0;
	case SO_LINGER:
		/* stored inverted, so the default (0) is "on" */
		memcpy(&lg, optval, sizeof(lg));
		*on = !lg.l_onoff;
		return 0;
	case SO_KEEPALIVE:
		ret = rs_set_keepalive(rs, rs_opt_int(optval));
		*on = !!(rs->svcs & RS_IN_KEEPALIVE);
		return ret;
	case SO_OOBINLINE:
		*on = rs_opt_int(optval);
		return 0;
	default:
		return rs_seterr(ENOTSUP);
	}
}

static int rs_setopt_tcp(struct rs *rs, int optname, const void *optval,
			 int *on)
{
	switch (optname) {
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
	case TCP_MAXSEG:
		return 0;	/* a reliable connection needs none */
	case TCP_KEEPIDLE:
		if (rs_opt_int(optval) <= 0)
			return rs_seterr(EINVAL);
		rs->keepalive_time = rs_opt_int(optval);
		return (rs->svcs & RS_IN_KEEPALIVE) ?
		       rs_notify_svc(RS_SVC_KEEPALIVE, rs, RS_SVC_MOD) : 0;
	case TCP_NODELAY:
		*on = rs_opt_int(optval);
		return 0;
	default:
		return rs_seterr(ENOTSUP);
	}
}

static int rs_setopt_rdma(struct rs *rs, int optname, const void *optval,
			  socklen_t optlen)
{
	uint32_t v;

	if (rs->state >= RS_OPENING)
		return rs_seterr(EINVAL);
	switch (optname) {
	case RDMA_SQSIZE:
	case RDMA_RQSIZE:
	case RDMA_INLINE:
		memcpy(&v, optval, sizeof(v));
		if (v > RS_QP_MAX)
			v = RS_QP_MAX;
		if (optname == RDMA_SQSIZE)
			rs->sq_size = v;
		else if (optname == RDMA_RQSIZE)
			rs->rq_size = v;
		else
			rs->sq_inline = v;
		return 0;
	case RDMA_IOMAPSIZE:
		rs->iomap_size = (uint16_t)rs_scale_to_value(
			(uint8_t)rs_value_to_scale(rs_opt_int(optval), 8), 8);
		return 0;
	case RDMA_ROUTE:
		free(rs->route);
		rs->route = malloc(optlen);
		if (!rs->route)
			return rs_seterr(ENOMEM);
		memcpy(rs->route, optval, optlen);
		rs->route_len = optlen;
		return 0;
	default:
		return rs_seterr(ENOTSUP);
	}
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	struct rs *rs = rs_lookup(socket);
	uint64_t *opts = NULL;
	int ret, on = 0;

	/* 44.0 leaves ENOTSUP in errno even when the option is set */
	errno = ENOTSUP;
	if (!rs)
		return rs_seterr(EBADF);
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA) {
		ret = setsockopt(rs->udp_sock, level, optname, optval, optlen);
		if (ret)
			return ret;
	}
	if (!optval)
		return rs_seterr(EFAULT);
	switch (level) {
	case SOL_SOCKET:
		opts = &rs->so_opts;
		ret = rs_setopt_socket(rs, optname, optval, optlen, &on);
		break;
	case IPPROTO_TCP:
		opts = &rs->tcp_opts;
		ret = rs_setopt_tcp(rs, optname, optval, &on);
		break;
	case IPPROTO_IPV6:
		opts = &rs->ipv6_opts;
		if (optname != IPV6_V6ONLY) {
			ret = rs_seterr(ENOTSUP);
			break;
		}
		ret = rs->type == SOCK_STREAM ?
		      rdma_set_option(rs->cm_id, RDMA_OPTION_ID,
				      RDMA_OPTION_ID_AFONLY, (void *)optval,
				      optlen) : -1;
		on = rs_opt_int(optval);
		break;
	case SOL_RDMA:
		ret = rs_setopt_rdma(rs, optname, optval, optlen);
		break;
	default:
		ret = rs_seterr(ENOTSUP);
		break;
	}
	if (!ret && opts && optname < 64) {
		if (on)
			*opts |= 1ULL << optname;
		else
			*opts &= ~(1ULL << optname);
	}
	return ret;
}

static void rs_put_int(void *optval, socklen_t *optlen, int v)
{
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
}

int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen)
{
	struct rs *rs = rs_lookup(socket);
	struct ibv_path_data path;
	struct linger lg;
	int ret = 0;

	if (!rs)
		return rs_seterr(EBADF);
	if (!optval || !optlen)
		return rs_seterr(EFAULT);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			rs_put_int(optval, optlen,
				   !!(rs->so_opts & (1ULL << optname)));
			break;
		case SO_RCVBUF:
			rs_put_int(optval, optlen, rs->rbuf_size);
			break;
		case SO_SNDBUF:
			rs_put_int(optval, optlen, rs->sbuf_size);
			break;
		case SO_LINGER:
			lg.l_onoff = !(rs->so_opts & (1ULL << optname));
			lg.l_linger = 0;
			memcpy(optval, &lg, sizeof(lg));
			*optlen = sizeof(lg);
			break;
		case SO_ERROR:
			rs_put_int(optval, optlen, rs->err);
			rs->err = 0;
			break;
		default:
			ret = ENOTSUP;
			break;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			ret = 1;	/* not applicable; optlen untouched */
			memcpy(optval, &ret, sizeof(ret));
			ret = 0;
			break;
		case TCP_KEEPIDLE:
			rs_put_int(optval, optlen, (int)rs->keepalive_time);
			break;
		case TCP_NODELAY:
			rs_put_int(optval, optlen,
				   !!(rs->tcp_opts & (1ULL << optname)));
			break;
		case TCP_MAXSEG:
			rs_put_int(optval, optlen,
				   rs->cm_id && rs->cm_id->route.num_paths ?
				   1 << (7 + rs->cm_id->route.path_rec->mtu) :
				   2048);
			break;
		default:
			ret = ENOTSUP;
			break;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			rs_put_int(optval, optlen,
				   !!(rs->ipv6_opts & (1ULL << optname)));
		else
			ret = ENOTSUP;
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			rs_put_int(optval, optlen, rs->sq_size);
			break;
		case RDMA_RQSIZE:
			rs_put_int(optval, optlen, rs->rq_size);
			break;
		case RDMA_INLINE:
			rs_put_int(optval, optlen, rs->sq_inline);
			break;
		case RDMA_IOMAPSIZE:
			rs_put_int(optval, optlen, rs->iomap_size);
			break;
		case RDMA_ROUTE:
			if (rs->route) {
				if (*optlen < rs->route_len) {
					ret = EINVAL;
					break;
				}
				memcpy(optval, rs->route, rs->route_len);
				*optlen = rs->route_len;
				break;
			}
			/* the route's one path record, as path data */
			if (*optlen < sizeof(path) || !rs->cm_id) {
				ret = EINVAL;
				break;
			}
			if (!rs->cm_id->route.num_paths) {
				*optlen = 0;
				break;
			}
			memset(&path, 0, sizeof(path));
			path.path.dgid = rs->cm_id->route.path_rec->dgid;
			path.path.sgid = rs->cm_id->route.path_rec->sgid;
			path.path.pkey = rs->cm_id->route.path_rec->pkey;
			path.path.mtu = rs->cm_id->route.path_rec->mtu |
					2 << 6;
			path.path.reversible_numpath = 1 << 7 | 1;
			memcpy(optval, &path, sizeof(path));
			*optlen = sizeof(path);
			break;
		default:
			ret = ENOTSUP;
			break;
		}
		break;
	default:
		ret = ENOTSUP;
		break;
	}
	return rs_seterr(ret);
}

int rfcntl(int socket, int cmd, ...)
{
	struct rs *rs = rs_lookup(socket);
	va_list ap;
	int arg, ret = 0;

	if (!rs)
		return rs_seterr(EBADF);
	va_start(ap, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags;
		break;
	case F_SETFL:
		arg = va_arg(ap, int);
		if ((rs->fd_flags & O_NONBLOCK) != (arg & O_NONBLOCK))
			ret = rs_set_nonblocking(rs, arg & O_NONBLOCK);
		if (!ret)
			rs->fd_flags = arg;
		break;
	default:
		ret = rs_seterr(ENOTSUP);
		break;
	}
	va_end(ap);
	return ret;
}
