/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/cm/id.c: library init (with the real library's hidden probe
 * id), the loopback device binding, cm ids, addressing and port
 * reservation, rdma_getaddrinfo, options, devices, and the synchronous
 * endpoint calls (rdma_create_ep, rdma_get_request, rdma_destroy_ep).
 *
 * A port is reserved by binding abstract AF_UNIX SOCK_SEQPACKET sockets
 * named after it (cm_bind_names); the kernel's EADDRINUSE makes each name
 * unique machine-wide (per network namespace), and listeners accept on
 * the names of the address families they take.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/un.h>
#include <infiniband/ib.h>
#include <infiniband/sa.h>

#include <rdma/rdma_verbs.h>

#include "cm.h"

/* librdmacm-internal flag: ask only for a path record */
#define RAI_ROUTEONLY 0x01000000

struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.dev_lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.timerfd = -1,
	.timers = { &cm.timers, &cm.timers },
	.socks = { &cm.socks, &cm.socks },
};

/*
 * IB CM timing of rdma-core 44.0 on Linux 6.1 over RoCE (drivers/infiniband
 * core/cma.c, cm.c): the path's packet life time is CMA_IBOE_PACKET_LIFETIME
 * 18, CM response timeouts CMA_CM_RESPONSE_TIMEOUT 20, CMA_MAX_CM_RETRIES
 * 15, and an IB time t is 2^(t - 8) ms (cm_convert_to_ms).  A DREQ is sent
 * 16 times: the active side waits 2 * 2^10 + 2^12 ms each (ib_send_cm_req's
 * timeout_ms), the passive side 2^12 ms (cm_req_handler's); time wait lasts
 * 2^(18 + 1 - 8) ms (av.timeout, cm_enter_timewait).
 */
#define CM_DREQ_ACTIVE_MS	(16 * (2 * 1024 + 4096))
#define CM_DREQ_PASSIVE_MS	(16 * 4096)
#define CM_TIMEWAIT_MS		2048

/* A duration in ms from the environment, or def. */
static unsigned int cm_env_ms(const char *name, unsigned int def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long ms;

	if (!v || !*v)
		return def;
	ms = strtoul(v, &end, 10);
	return *end || ms > 3600000 ? def : (unsigned int)ms;
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int init_done;

/*
 * fork(): hold every lock across it, so that the child's copies are
 * consistent and free whatever other threads were doing; the child then
 * drops the parent's sockets and counts one more fork generation, which
 * makes every channel made so far the parent's.
 */
static void cm_fork_prepare(void)
{
	pthread_mutex_lock(&init_lock);
	pthread_mutex_lock(&cm.dev_lock);
	pthread_mutex_lock(&cm.lock);
}

static void cm_fork_parent(void)
{
	pthread_mutex_unlock(&cm.lock);
	pthread_mutex_unlock(&cm.dev_lock);
	pthread_mutex_unlock(&init_lock);
}

static void cm_fork_child(void)
{
	cm_fork_child_socks();
	cm.fork_gen++;
	pthread_mutex_init(&init_lock, NULL);
	pthread_mutex_init(&cm.dev_lock, NULL);
	pthread_mutex_init(&cm.lock, NULL);
	pthread_cond_init(&cm.cond, NULL);
}

static int cm_have_device(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	return list && n > 0;
}

/*
 * Socket names must fit sun_path with "/cm/<ps>/<port>" appended: a long
 * namespace keeps its start and gets a hash of the whole for the rest.
 */
static void cm_set_ns(const char *ns)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	const char *c;

	if (strlen(ns) <= 64) {
		snprintf(cm.ns, sizeof(cm.ns), "%s", ns);
		return;
	}
	for (c = ns; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	snprintf(cm.ns, sizeof(cm.ns), "%.47s-%016llx", ns,
		 (unsigned long long)h);
}

/*
 * Like the real ucma_init: the first successful call in a process finds
 * the devices and then runs a probe id through the exported functions
 * (create_id -> create_event_channel, bind_addr AF_IB, destroy_id ->
 * destroy_event_channel), so an interposer sees the same nesting.
 */
int cm_init(void)
{
	struct sockaddr_ib sib;
	struct rdma_cm_id *id;
	const char *ns;

	if (init_done)
		return 0;
	pthread_mutex_lock(&init_lock);
	if (init_done) {
		pthread_mutex_unlock(&init_lock);
		return 0;
	}
	if (!cm_have_device()) {
		pthread_mutex_unlock(&init_lock);
		errno = ENODEV;
		return -1;
	}
	ns = getenv("RDMACHECK_LOOPBACK_NS");
	if (!ns || !*ns)
		ns = "rdmacheck";
	cm_set_ns(ns);
	cm_list_init(&cm.graveyard);
	cm.dreq_ms[0] = cm_env_ms("RDMACHECK_LOOPBACK_DREQ_TIMEOUT_MS",
				  CM_DREQ_ACTIVE_MS);
	cm.dreq_ms[1] = cm_env_ms("RDMACHECK_LOOPBACK_DREQ_TIMEOUT_MS",
				  CM_DREQ_PASSIVE_MS);
	cm.timewait_ms = cm_env_ms("RDMACHECK_LOOPBACK_TIMEWAIT_MS",
				   CM_TIMEWAIT_MS);
	pthread_atfork(cm_fork_prepare, cm_fork_parent, cm_fork_child);
	init_done = 1;

	if (!rdma_create_id(NULL, &id, NULL, RDMA_PS_IB)) {
		memset(&sib, 0, sizeof(sib));
		sib.sib_family = AF_IB;
		rdma_bind_addr(id, (struct sockaddr *)&sib);
		rdma_destroy_id(id);
	}
	pthread_mutex_unlock(&init_lock);
	return 0;
}

/* Open the loopback device and its default PD once per process. */
int cm_bind_device(struct rdma_cm_id *id)
{
	struct ibv_device **list;
	int n = 0;

	pthread_mutex_lock(&cm.dev_lock);
	if (!cm.verbs) {
		list = ibv_get_device_list(&n);
		if (list && n > 0)
			cm.verbs = ibv_open_device(list[0]);
		if (list)
			ibv_free_device_list(list);
		if (cm.verbs) {
			struct ibv_device_attr attr;

			cm.max_resp_res = cm.max_init_depth = 16;
			if (!ibv_query_device(cm.verbs, &attr)) {
				cm.max_resp_res = attr.max_qp_rd_atom > 255 ?
					255 : attr.max_qp_rd_atom;
				cm.max_init_depth =
					attr.max_qp_init_rd_atom > 255 ?
					255 : attr.max_qp_init_rd_atom;
			}
			cm.pd = ibv_alloc_pd(cm.verbs);
			if (!cm.pd) {
				ibv_close_device(cm.verbs);
				cm.verbs = NULL;
			}
		}
	}
	pthread_mutex_unlock(&cm.dev_lock);
	if (!cm.verbs) {
		errno = ENODEV;
		return -1;
	}
	if (!id->verbs) {
		id->verbs = cm.verbs;
		if (!id->pd)
			id->pd = cm.pd;
		id->port_num = 1;
	}
	return 0;
}

socklen_t cm_addr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

uint16_t cm_addr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	case AF_INET6:
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	case AF_IB:
		return (uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid);
	default:
		return 0;
	}
}

void cm_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	struct sockaddr_ib *sib;

	switch (sa->sa_family) {
	case AF_INET:
		((struct sockaddr_in *)sa)->sin_port = htons(port);
		break;
	case AF_INET6:
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
		break;
	case AF_IB:
		sib = (struct sockaddr_ib *)sa;
		sib->sib_sid = htobe64((be64toh(sib->sib_sid) &
					~0xffffULL) | port);
		break;
	}
}

static int cm_addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	if (sa->sa_family == AF_IB) {
		const struct sockaddr_ib *s = (const void *)sa;
		static const union ibv_gid zero;

		return !memcmp(&s->sib_addr, &zero, sizeof(zero));
	}
	return 0;
}

static int cm_addr_is_mcast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(
			((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

/* The loopback address of sa's family, with port 0. */
static void cm_addr_loopback(struct sockaddr_storage *ss,
			     const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = sa->sa_family;
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
}

/* 127/8, ::1, wildcards, AF_IB and any address of a local interface. */
int cm_addr_is_local(const struct sockaddr *sa)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (sa->sa_family == AF_IB || cm_addr_is_any(sa))
		return 1;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		if ((ntohl(s->sin_addr.s_addr) >> 24) == 127)
			return 1;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		if (IN6_IS_ADDR_LOOPBACK(&s->sin6_addr))
			return 1;
		if (IN6_IS_ADDR_V4MAPPED(&s->sin6_addr) &&
		    s->sin6_addr.s6_addr[12] == 127)
			return 1;
	} else {
		return 0;
	}
	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET)
			found = !memcmp(
				&((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				&((const struct sockaddr_in *)sa)->sin_addr,
				sizeof(struct in_addr));
		else
			found = !memcmp(
				&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
				&((const struct sockaddr_in6 *)sa)->sin6_addr,
				sizeof(struct in6_addr));
	}
	freeifaddrs(ifa);
	return found;
}

static const char *cm_ps_name(enum rdma_port_space ps)
{
	switch (ps) {
	case RDMA_PS_TCP:
		return "tcp";
	case RDMA_PS_UDP:
		return "udp";
	case RDMA_PS_IPOIB:
		return "ipoib";
	case RDMA_PS_IB:
		return "ib";
	default:
		return "unknown";
	}
}

/*
 * The names of port P of port space PS: "cm/<ps>/<P>" is IPv4's (and
 * AF_IB's), "cm/<ps>6/<P>" IPv6's; "cm/<ps>/<P>/x1" and ".../x2" only
 * make the kernel's cross-family conflicts (cma_check_port) collide, see
 * cm_bind_names.
 */
static int cm_pname(char *buf, size_t len, enum rdma_port_space ps,
		    uint16_t port, int kind)
{
	const char *n = cm_ps_name(ps);

	switch (kind) {
	case CM_PN_V6:
		return snprintf(buf, len, "%s/cm/%s6/%u", cm.ns, n, port);
	case CM_PN_X1:
		return snprintf(buf, len, "%s/cm/%s/%u/x1", cm.ns, n, port);
	case CM_PN_X2:
		return snprintf(buf, len, "%s/cm/%s/%u/x2", cm.ns, n, port);
	default:
		return snprintf(buf, len, "%s/cm/%s/%u", cm.ns, n, port);
	}
}

/* Abstract socket name (without the leading NUL); returns its length. */
int cm_sockname(char *buf, size_t len, enum rdma_port_space ps,
		uint16_t port, int kind)
{
	return cm_pname(buf, len, ps, port, kind);
}

static socklen_t cm_sun(struct sockaddr_un *sun, enum rdma_port_space ps,
			uint16_t port, int kind)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	n = cm_pname(sun->sun_path + 1, sizeof(sun->sun_path) - 1, ps, port,
		     kind);
	return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

/* net.ipv6.bindv6only: whether an IPv6 bind takes IPv6 only by default. */
static int cm_bindv6only(void)
{
	static int v = -1;
	char c = '0';
	int fd;

	if (v >= 0)
		return v;
	fd = open("/proc/sys/net/ipv6/bindv6only", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	v = c == '1';
	return v;
}

/*
 * Which names a bind of addr takes (a bit per enum cm_pname), so that two
 * binds to one port collide exactly when the kernel's cma_check_port
 * refuses the second: within a family always (this backend reserves a
 * port for all addresses of a family at once), across families unless
 * both are AFONLY, and then only when one is a wildcard.  An IPv4 bind is
 * AFONLY unless the option says otherwise, an IPv6 bind as
 * net.ipv6.bindv6only says (rdma_bind_addr in the kernel's cma.c).  A
 * wildcard that is not AFONLY takes the other family's name too, and so
 * its connection requests.
 */
static unsigned int cm_bind_names(struct cm_id *p, const struct sockaddr *a)
{
	int any = cm_addr_is_any(a), af;

	switch (a->sa_family) {
	case AF_INET:
		af = p->afonly >= 0 ? p->afonly : 1;
		return 1U << CM_PN_V4 | (!af ? 1U << CM_PN_X1 : 0) |
		       (any ? 1U << CM_PN_X2 : 0) |
		       (!af && any ? 1U << CM_PN_V6 : 0);
	case AF_INET6:
		af = p->afonly >= 0 ? p->afonly : cm_bindv6only();
		return 1U << CM_PN_V6 | (any ? 1U << CM_PN_X1 : 0) |
		       (!af ? 1U << CM_PN_X2 : 0) |
		       (!af && any ? 1U << CM_PN_V4 : 0);
	default:
		return 1U << CM_PN_V4;
	}
}

/* Bind every name of names for port into fds[]; all or nothing. */
static int cm_try_names(int *fds, unsigned int names,
			enum rdma_port_space ps, uint16_t port)
{
	struct sockaddr_un sun;
	int k, err;

	for (k = 0; k < CM_PN_NUM; k++) {
		if (!(names & (1U << k)))
			continue;
		if (fds[k] < 0)
			fds[k] = cm_socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC,
					0);
		if (fds[k] < 0 ||
		    bind(fds[k], (struct sockaddr *)&sun,
			 cm_sun(&sun, ps, port, k)))
			goto fail;
	}
	return 0;
fail:
	err = errno;
	/* a bound socket cannot be unbound: start those over */
	while (--k >= 0) {
		if (fds[k] >= 0) {
			close(fds[k]);
			fds[k] = -1;
		}
	}
	errno = err;
	return -1;
}

/*
 * Reserve the port of addr (0: an ephemeral one) for p and record the
 * bound address as the id's source address.  The family's own name is
 * the id's socket (it connects, or listens); the others are kept in
 * p->resv: the other family's (it listens too), x1, x2.
 */
int cm_bind_port(struct cm_id *p, const struct sockaddr *addr)
{
	struct sockaddr *src = &p->id.route.addr.src_addr;
	unsigned int names = cm_bind_names(p, addr);
	int own = addr->sa_family == AF_INET6 ? CM_PN_V6 : CM_PN_V4;
	uint16_t port = cm_addr_port(addr);
	int fds[CM_PN_NUM], k;
	unsigned int tries;
	struct cm_sock *s[CM_PN_NUM] = { NULL };
	int ret = -1;

	for (k = 0; k < CM_PN_NUM; k++)
		fds[k] = -1;
	if (port) {
		ret = cm_try_names(fds, names, p->id.ps, port);
	} else {
		unsigned int seed = (unsigned int)getpid() ^
				    (unsigned int)(uintptr_t)p;

		port = 32768 + rand_r(&seed) % (61000 - 32768);
		for (tries = 0; tries < 61000 - 32768; tries++) {
			ret = cm_try_names(fds, names, p->id.ps, port);
			if (!ret || errno != EADDRINUSE)
				break;
			if (++port >= 61000)
				port = 32768;
		}
	}
	for (k = 0; k < CM_PN_NUM; k++)
		if (ret && fds[k] >= 0)
			close(fds[k]);
	if (ret) {
		/* the kernel: EADDRNOTAVAIL when a wildcard is involved */
		if (errno == EADDRINUSE && cm_addr_is_any(addr))
			errno = EADDRNOTAVAIL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	for (k = 0; k < CM_PN_NUM; k++) {
		if (fds[k] < 0)
			continue;
		s[k] = cm_sock_new(fds[k]);
		if (!s[k])
			break;
		s[k]->id = p;
		fds[k] = -1;
	}
	if (k < CM_PN_NUM) {
		while (--k >= 0)
			cm_sock_close(s[k]);
		pthread_mutex_unlock(&cm.lock);
		for (k = 0; k < CM_PN_NUM; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		errno = ENOMEM;
		return -1;
	}
	memcpy(src, addr, cm_addr_len(addr));
	cm_addr_set_port(src, port);
	p->port = s[own];
	p->resv[0] = s[own ^ 1];
	p->resv[1] = s[CM_PN_X1];
	p->resv[2] = s[CM_PN_X2];
	if (p->state == CM_IDLE)
		p->state = CM_BOUND;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

/*
 * Whether a listener of request dst's family would take it: a listener
 * bound to one address takes requests for that address only
 * (cma_match_private_data); which families reach it, its names decide.
 */
int cm_listen_takes(struct cm_id *l, const struct sockaddr *dst)
{
	const struct sockaddr *la = &l->id.route.addr.src_addr;

	if (la->sa_family == AF_IB || dst->sa_family == AF_IB ||
	    cm_addr_is_any(la))
		return 1;
	if (la->sa_family != dst->sa_family)
		return 0;
	if (la->sa_family == AF_INET)
		return ((const struct sockaddr_in *)la)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)dst)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)la)->sin6_addr,
		       &((const struct sockaddr_in6 *)dst)->sin6_addr,
		       sizeof(struct in6_addr));
}

/*
 * Someone listens on name kind of the port: the IB CM's listener is per
 * service ID, for every family, so a request it cannot match is rejected
 * by the consumer (28) instead of for the service ID (8).
 */
int cm_port_listened(enum rdma_port_space ps, uint16_t port, int kind)
{
	struct sockaddr_un sun;
	int fd, r;

	fd = cm_socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		       0);
	if (fd < 0)
		return 0;
	r = connect(fd, (struct sockaddr *)&sun, cm_sun(&sun, ps, port, kind));
	r = !r || errno == EAGAIN;
	close(fd);
	return r;
}

int cm_alloc_id(struct rdma_event_channel *channel, struct cm_id **out,
		void *context, enum rdma_port_space ps,
		enum ibv_qp_type qp_type)
{
	struct cm_id *p;

	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel) {
			free(p);
			return -1;
		}
		p->sync = 1;
	}
	p->id.channel = channel;
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qp_type;
	cm_list_init(&p->pending);
	cm_list_init(&p->mcs);
	cm_list_init(&p->tmo_link);
	p->afonly = -1;
	p->ack_timeout = -1;
	p->local_psn = (uint32_t)(((uintptr_t)p >> 4) ^ getpid()) & 0xffffff;
	pthread_mutex_lock(&cm.lock);
	cm_chan(channel)->nids++;
	cm_list_add_tail(&cm_chan(channel)->ids, &p->chan_link);
	pthread_mutex_unlock(&cm.lock);
	*out = p;
	return 0;
}

/* Free the id's own memory; the caller already closed its sockets. */
void cm_free_id(struct cm_id *p)
{
	struct cm_channel *ch = cm_chan(p->id.channel);
	int free_ch;

	pthread_mutex_lock(&cm.lock);
	ch->nids--;
	cm_list_del(&p->chan_link);
	free_ch = ch->closed && ch->nids == 0;
	pthread_mutex_unlock(&cm.lock);
	if (p->sync)
		rdma_destroy_event_channel(p->id.channel);
	else if (free_ch)
		free(ch);
	cm_free_mcs(p);
	free(p->id.route.path_rec);
	free(p->connect);
#ifdef LO_RDMACM_1_4
	/* a list rdma_query_addrinfo never claimed, through the PLT */
	if (p->resolved_ai)
		rdma_freeaddrinfo(p->resolved_ai);
#endif
	free(p);
}

static int cm_valid_ps(enum rdma_port_space ps, enum ibv_qp_type *qpt)
{
	switch (ps) {
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*qpt = IBV_QPT_UD;
		return 1;
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		*qpt = IBV_QPT_RC;
		return 1;
	default:
		return 0;
	}
}

int rdma_create_id(struct rdma_event_channel *channel,
		   struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	enum ibv_qp_type qpt;
	struct cm_id *p;

	if (cm_init())
		return -1;
	if (!cm_valid_ps(ps, &qpt) || !id) {
		errno = EINVAL;
		return -1;
	}
	if (channel) {
		int bad;

		pthread_mutex_lock(&cm.lock);
		bad = !cm_chan_live(channel) || cm_inherited(channel);
		pthread_mutex_unlock(&cm.lock);
		if (bad)
			return -1;
	}
	if (cm_alloc_id(channel, &p, context, ps, qpt))
		return -1;
	*id = &p->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *p;

	if (!id) {
		errno = EINVAL;	/* the real one crashes */
		return -1;
	}
	p = cm_id(id);
	pthread_mutex_lock(&cm.lock);
	if (cm_chan(id->channel)->dead) {
		/* the real library's write to the closed fd fails */
		pthread_mutex_unlock(&cm.lock);
		errno = EBADF;
		return -1;
	}
	if (cm_inherited(id->channel)) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	p->destroying = 1;
	cm_tmo_cancel(p);
	cm_purge_events(p);
	cm_close_id_socks(p);
	pthread_mutex_unlock(&cm.lock);

	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	cm_wait_acked(p);
	cm_free_id(p);
	return 0;
}

int cm_do_bind(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *p = cm_id(id);
	socklen_t len;

	if (!addr || !(len = cm_addr_len(addr))) {
		errno = EINVAL;
		return -1;
	}
	if (p->state != CM_IDLE || p->port) {
		errno = EINVAL;
		return -1;
	}
	if (!cm_addr_is_local(addr)) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	if (cm_bind_port(p, addr))
		return -1;
	/* a specific address pins the device, a wildcard does not */
	if (!cm_addr_is_any(addr) && addr->sa_family != AF_IB)
		cm_bind_device(id);
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (cm_inherited(id->channel))
		return -1;
	return cm_do_bind(id, addr);
}

void cm_set_gid(union ibv_gid *gid, const struct sockaddr *sa)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12],
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
	} else if (sa->sa_family == AF_IB) {
		memcpy(gid->raw, &((const struct sockaddr_ib *)sa)->sib_addr,
		       16);
	}
}

int cm_do_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
		       struct sockaddr *dst)
{
	struct cm_id *p = cm_id(id);
	struct sockaddr_storage any;
	struct cm_event *e;
	int local, mcast;

	if (!dst || !cm_addr_len(dst)) {
		errno = EINVAL;
		return -1;
	}
	if (p->state != CM_IDLE && p->state != CM_BOUND &&
	    p->state != CM_ADDR_RESOLVED) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&id->route.addr.dst_addr, dst, cm_addr_len(dst));
	/* a multicast group is reached through the loopback device */
	mcast = cm_addr_is_mcast(dst);
	local = mcast || cm_addr_is_local(dst);
	if (!p->port && local) {
		if (src && cm_addr_len(src)) {
			if (cm_do_bind(id, src))
				return -1;
		} else {
			if (mcast) {
				cm_addr_loopback(&any, dst);
			} else {
				memset(&any, 0, sizeof(any));
				memcpy(&any, dst, cm_addr_len(dst));
			}
			cm_addr_set_port((struct sockaddr *)&any, 0);
			if (cm_bind_port(p, (struct sockaddr *)&any))
				return -1;
		}
	}
	/* a wildcard source resolves to the address dialled */
	if (cm_addr_is_any(&id->route.addr.src_addr)) {
		uint16_t port = cm_addr_port(&id->route.addr.src_addr);

		if (mcast)
			cm_addr_loopback(&any, dst);
		else
			memcpy(&any, dst, cm_addr_len(dst));
		memcpy(&id->route.addr.src_addr, &any, cm_addr_len(dst));
		cm_addr_set_port(&id->route.addr.src_addr, port);
	}
	cm_set_gid(&id->route.addr.addr.ibaddr.sgid, &id->route.addr.src_addr);
	cm_set_gid(&id->route.addr.addr.ibaddr.dgid, dst);
	id->route.addr.addr.ibaddr.pkey = htobe16(0xffff);

	pthread_mutex_lock(&cm.lock);
	if (local) {
		e = cm_event_new(p, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
		if (e)
			e->kind = CM_EVK_ADDR;
	} else {
		/* no route to a non-local address on this backend */
		e = cm_event_new(p, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
	}
	if (e)
		cm_queue_event(p, e);
	pthread_mutex_unlock(&cm.lock);
	if (!e) {
		errno = ENOMEM;
		return -1;
	}
	return cm_complete(id);
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	if (cm_inherited(id->channel))
		return -1;
	return cm_do_resolve_addr(id, src_addr, dst_addr);
}

/* One path record from sgid to dgid, as the kernel makes it for RoCE. */
struct ibv_sa_path_rec *cm_path_new(const union ibv_gid *sgid,
				    const union ibv_gid *dgid)
{
	struct ibv_sa_path_rec *path = calloc(1, sizeof(*path));

	if (!path) {
		errno = ENOMEM;
		return NULL;
	}
	path->sgid = *sgid;
	path->dgid = *dgid;
	path->pkey = htobe16(0xffff);
	path->reversible = 1;
	path->numb_path = 1;
	path->mtu_selector = 2;
	path->mtu = IBV_MTU_4096;
	path->rate_selector = 2;
	path->packet_life_time_selector = 2;
	path->hop_limit = 64;
	return path;
}

static int cm_queue_route(struct cm_id *p)
{
	struct ibv_sa_path_rec *path;
	struct cm_event *e;

	path = cm_path_new(&p->id.route.addr.addr.ibaddr.sgid,
			   &p->id.route.addr.addr.ibaddr.dgid);
	if (!path)
		return -1;

	pthread_mutex_lock(&cm.lock);
	e = cm_event_new(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!e) {
		pthread_mutex_unlock(&cm.lock);
		free(path);
		errno = ENOMEM;
		return -1;
	}
	free(p->id.route.path_rec);
	p->id.route.path_rec = path;
	p->id.route.num_paths = 1;
	p->state = CM_ROUTE_RESOLVED;
	cm_queue_event(p, e);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *p = cm_id(id);
	struct rdma_addrinfo hint, *rai;

	if (cm_inherited(id->channel))
		return -1;
	/* the real library dereferences id->verbs here; fail instead */
	if (!id->verbs || p->state != CM_ADDR_RESOLVED) {
		errno = EINVAL;
		return -1;
	}
	/* IB transport first asks for a path record, as the real one does */
	if (id->verbs->device->transport_type == IBV_TRANSPORT_IB) {
		memset(&hint, 0, sizeof(hint));
		hint.ai_flags = RAI_ROUTEONLY;
		hint.ai_family = id->route.addr.src_addr.sa_family;
		hint.ai_src_len = cm_addr_len(&id->route.addr.src_addr);
		hint.ai_src_addr = &id->route.addr.src_addr;
		hint.ai_dst_len = cm_addr_len(&id->route.addr.dst_addr);
		hint.ai_dst_addr = &id->route.addr.dst_addr;
		if (!rdma_getaddrinfo(NULL, NULL, &hint, &rai)) {
			int ret = -1;

			if (rai->ai_route_len)
				ret = rdma_set_option(id, RDMA_OPTION_IB,
						      RDMA_OPTION_IB_PATH,
						      rai->ai_route,
						      rai->ai_route_len);
			rdma_freeaddrinfo(rai);
			if (!ret)
				return cm_complete(id);
		}
	}
	if (cm_queue_route(p))
		return -1;
	return cm_complete(id);
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *p = cm_id(id);
	struct sockaddr_storage any;
	int ret;

	if (cm_inherited(id->channel))
		return -1;
	if (!p->port) {
		memset(&any, 0, sizeof(any));
		any.ss_family = AF_INET;
		if (cm_bind_port(p, (struct sockaddr *)&any))
			return -1;
	}
	pthread_mutex_lock(&cm.lock);
	if (p->state == CM_LISTEN) {
		/* like the kernel: listening again only updates the backlog */
		pthread_mutex_unlock(&cm.lock);
		return 0;
	}
	if (p->state != CM_BOUND) {
		pthread_mutex_unlock(&cm.lock);
		errno = EINVAL;
		return -1;
	}
	/* backlog of the real CM is not a limit for the application */
	ret = listen(p->port->fd, 4096);
	if (!ret)
		ret = fcntl(p->port->fd, F_SETFL, O_NONBLOCK);
	if (!ret) {
		p->port->listening = 1;
		p->state = CM_LISTEN;
		ret = cm_sock_register(p->port);
	}
	/* a wildcard taking both families hears the other's requests too */
	if (!ret && p->resv[0] && !listen(p->resv[0]->fd, 4096) &&
	    !fcntl(p->resv[0]->fd, F_SETFL, O_NONBLOCK)) {
		p->resv[0]->listening = 1;
		ret = cm_sock_register(p->resv[0]);
	}
	pthread_mutex_unlock(&cm.lock);
	return ret;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		    void *optval, size_t optlen)
{
	struct cm_id *p = cm_id(id);

	if (cm_inherited(id->channel))
		return -1;
	if (!optval) {
		errno = EINVAL;
		return -1;
	}
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				break;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			/* the RTS timeout rdma_init_qp_attr gives, RC only */
			if (optlen != sizeof(uint8_t) ||
			    (id->qp_type != IBV_QPT_RC &&
			     id->qp_type != IBV_QPT_XRC_SEND))
				break;
			pthread_mutex_lock(&cm.lock);
			p->ack_timeout = *(uint8_t *)optval;
			pthread_mutex_unlock(&cm.lock);
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int))
				break;
			return 0;
		case RDMA_OPTION_ID_AFONLY:
			/* rdma_set_afonly: before the id is bound or listens */
			if (optlen != sizeof(int) ||
			    (p->state != CM_IDLE && p->state != CM_BOUND))
				break;
			pthread_mutex_lock(&cm.lock);
			p->afonly = !!*(int *)optval;
			pthread_mutex_unlock(&cm.lock);
			return 0;
		}
	} else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* like the kernel: a given path resolves the route */
		if (!optlen || optlen % sizeof(struct ibv_path_data) ||
		    p->state != CM_ADDR_RESOLVED)
			goto inval;
		return cm_queue_route(p);
	}
inval:
	errno = EINVAL;
	return -1;
}

uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(cm_addr_port(&id->route.addr.src_addr));
}

uint16_t rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(cm_addr_port(&id->route.addr.dst_addr));
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	struct rdma_cm_id tmp;

	if (num_devices)
		*num_devices = 0;
	if (cm_init())
		return NULL;
	memset(&tmp, 0, sizeof(tmp));
	list = calloc(2, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	if (!cm_bind_device(&tmp)) {
		list[0] = tmp.verbs;
		if (num_devices)
			*num_devices = 1;
	}
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* rdma_getaddrinfo: the real conversion rules on top of libc. */
static int cm_copy_addr(struct sockaddr **dst, socklen_t *dst_len,
			const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static void cm_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;
	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	}
}

static int cm_from_ai(struct rdma_addrinfo *rai,
		      const struct rdma_addrinfo *hints,
		      const struct addrinfo *ai)
{
	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	rai->ai_family = ai->ai_family;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname)
			rai->ai_src_canonname = strdup(ai->ai_canonname);
		return cm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				    ai->ai_addr, ai->ai_addrlen);
	}
	if (ai->ai_canonname)
		rai->ai_dst_canonname = strdup(ai->ai_canonname);
	return cm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
			    ai->ai_addr, ai->ai_addrlen);
}

int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	struct addrinfo aih, *ai;
	int ret = 0;

	if (!service && !node && !hints) {
		errno = EINVAL;
		return -1;
	}
	if (cm_init())
		return -1;
	rai = calloc(1, sizeof(*rai));
	if (!rai) {
		errno = ENOMEM;
		return -1;
	}
	if (!hints)
		hints = &nohints;
	if (node || service) {
		if (hints != &nohints) {
			cm_to_ai(&aih, hints);
			ret = getaddrinfo(node, service, &aih, &ai);
		} else {
			ret = getaddrinfo(node, service, NULL, &ai);
		}
		if (!ret) {
			ret = cm_from_ai(rai, hints, ai);
			freeaddrinfo(ai);
		}
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = cm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					   hints->ai_dst_addr,
					   hints->ai_dst_len);
	}
	if (!ret && !rai->ai_src_len && hints->ai_src_len)
		ret = cm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				   hints->ai_src_addr, hints->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return ret;	/* -1/errno or a raw EAI_* code, as the real */
	}
	*res = rai;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *rai;

	while (res) {
		rai = res;
		res = res->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}

/* Synchronous endpoints. */
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cm_id *p;
	enum ibv_qp_type qpt;
	int ret;

	if (cm_init())
		return -1;
	if (!id || !res || !cm_valid_ps(res->ai_port_space, &qpt)) {
		errno = EINVAL;
		return -1;
	}
	/* the real one uses an internal create, invisible to interposers */
	if (cm_alloc_id(NULL, &p, NULL, res->ai_port_space, res->ai_qp_type))
		return -1;
	cid = &p->id;

	if (res->ai_flags & RAI_PASSIVE) {
		ret = cm_do_bind(cid, res->ai_src_addr);
		if (ret)
			goto err;
		if (pd)
			cid->pd = pd;
		if (qp_init_attr) {
			p->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (!p->qp_init_attr) {
				errno = ENOMEM;
				ret = -1;
				goto err;
			}
			*p->qp_init_attr = *qp_init_attr;
			p->qp_init_attr->qp_type = res->ai_qp_type;
		}
		goto out;
	}

	ret = cm_do_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr);
	if (ret)
		goto err;
	if (res->ai_route_len) {
		ret = rdma_set_option(cid, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      res->ai_route, res->ai_route_len);
		if (!ret)
			ret = cm_complete(cid);
	} else {
		ret = rdma_resolve_route(cid, 2000);
	}
	if (ret)
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = res->ai_qp_type;
		ret = rdma_create_qp(cid, pd, qp_init_attr);
		if (ret)
			goto err;
	}
	if (res->ai_connect_len) {
		p->connect = malloc(res->ai_connect_len);
		if (!p->connect) {
			errno = ENOMEM;
			ret = -1;
			goto err;
		}
		memcpy(p->connect, res->ai_connect, res->ai_connect_len);
		p->connect_len = res->ai_connect_len;
	}
out:
	*id = cid;
	return 0;
err:
	rdma_destroy_ep(cid);
	return ret;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	struct cm_id *p = cm_id(id);

	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	free(p->qp_init_attr);
	p->qp_init_attr = NULL;
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id *lp = cm_id(listen);
	struct rdma_cm_event *event;
	struct ibv_qp_init_attr attr;
	int ret;

	if (!lp->sync) {
		errno = EINVAL;
		return -1;
	}
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	ret = rdma_get_cm_event(listen->channel, &event);
	if (ret)
		return ret;
	if (event->status) {
		listen->event = event;
		errno = event->event == RDMA_CM_EVENT_REJECTED ?
			ECONNREFUSED : abs(event->status);
		return -1;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		listen->event = event;
		errno = EINVAL;
		return -1;
	}
	if (lp->qp_init_attr) {
		attr = *lp->qp_init_attr;
		ret = rdma_create_qp(event->id, listen->pd, &attr);
		if (ret)
			return ret;	/* the real library leaks the id too */
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
}
