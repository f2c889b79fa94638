/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rc_newer.h - librdmacm functions newer than the headers we build with
 * (rdma-core 44.0): RDMACM_1.4 (rdma-core 60+) and RDMACM_1.5.  Declared
 * here so that the wrappers can be built against older headers.
 */
#ifndef RC_NEWER_H
#define RC_NEWER_H

#include <stdint.h>
#include <sys/epoll.h>
#include <rdma/rdma_cma.h>

int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node,
			  const char *service,
			  const struct rdma_addrinfo *hints);
int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info);
int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event,
			int status, uint64_t arg);
int repoll_create(int size);
int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int repoll_wait(int epfd, struct epoll_event *events, int maxevents,
		int timeout);

#endif
