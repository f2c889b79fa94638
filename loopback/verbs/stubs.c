/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * stubs.c - the rest of the 44.0 export list: kernel-ABI struct
 * converters (implemented), and everything this backend does not offer
 * (import/ECE/dmabuf and the provider-facing IBVERBS_PRIVATE_34
 * API), which fails cleanly with EOPNOTSUPP instead of crashing.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_sa.h>
#include <infiniband/sa.h>

#include "lo_verbs.h"

/* --- kernel ABI converters (IBVERBS_1.0/1.1) ----------------------------- */

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
				struct ib_uverbs_ah_attr *src)
{
	if (!dst || !src)
		return;
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
				struct ib_uverbs_qp_attr *src)
{
	if (!dst || !src)
		return;
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src)
{
	if (!dst || !src)
		return;
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src)
{
	if (!dst || !src)
		return;
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* --- not offered by the loopback device ----------------------------------- */

struct ibv_context *ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

/* --- IBVERBS_PRIVATE_34: the provider API; no providers load here --------- */

bool verbs_allow_disassociate_destroy;

#define LO_CMD_STUB(name)		\
	int name(void);			\
	int name(void)			\
	{				\
		return EOPNOTSUPP;	\
	}

LO_CMD_STUB(ibv_cmd_advise_mr)
LO_CMD_STUB(ibv_cmd_alloc_dm)
LO_CMD_STUB(ibv_cmd_alloc_mw)
LO_CMD_STUB(ibv_cmd_alloc_pd)
LO_CMD_STUB(ibv_cmd_attach_mcast)
LO_CMD_STUB(ibv_cmd_close_xrcd)
LO_CMD_STUB(ibv_cmd_create_ah)
LO_CMD_STUB(ibv_cmd_create_counters)
LO_CMD_STUB(ibv_cmd_create_cq)
LO_CMD_STUB(ibv_cmd_create_cq_ex)
LO_CMD_STUB(ibv_cmd_create_flow)
LO_CMD_STUB(ibv_cmd_create_flow_action_esp)
LO_CMD_STUB(ibv_cmd_create_qp)
LO_CMD_STUB(ibv_cmd_create_qp_ex)
LO_CMD_STUB(ibv_cmd_create_qp_ex2)
LO_CMD_STUB(ibv_cmd_create_rwq_ind_table)
LO_CMD_STUB(ibv_cmd_create_srq)
LO_CMD_STUB(ibv_cmd_create_srq_ex)
LO_CMD_STUB(ibv_cmd_create_wq)
LO_CMD_STUB(ibv_cmd_dealloc_mw)
LO_CMD_STUB(ibv_cmd_dealloc_pd)
LO_CMD_STUB(ibv_cmd_dereg_mr)
LO_CMD_STUB(ibv_cmd_destroy_ah)
LO_CMD_STUB(ibv_cmd_destroy_counters)
LO_CMD_STUB(ibv_cmd_destroy_cq)
LO_CMD_STUB(ibv_cmd_destroy_flow)
LO_CMD_STUB(ibv_cmd_destroy_flow_action)
LO_CMD_STUB(ibv_cmd_destroy_qp)
LO_CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
LO_CMD_STUB(ibv_cmd_destroy_srq)
LO_CMD_STUB(ibv_cmd_destroy_wq)
LO_CMD_STUB(ibv_cmd_detach_mcast)
LO_CMD_STUB(ibv_cmd_free_dm)
LO_CMD_STUB(ibv_cmd_get_context)
LO_CMD_STUB(ibv_cmd_modify_cq)
LO_CMD_STUB(ibv_cmd_modify_flow_action_esp)
LO_CMD_STUB(ibv_cmd_modify_qp)
LO_CMD_STUB(ibv_cmd_modify_qp_ex)
LO_CMD_STUB(ibv_cmd_modify_srq)
LO_CMD_STUB(ibv_cmd_modify_wq)
LO_CMD_STUB(ibv_cmd_open_qp)
LO_CMD_STUB(ibv_cmd_open_xrcd)
LO_CMD_STUB(ibv_cmd_poll_cq)
LO_CMD_STUB(ibv_cmd_post_recv)
LO_CMD_STUB(ibv_cmd_post_send)
LO_CMD_STUB(ibv_cmd_post_srq_recv)
LO_CMD_STUB(ibv_cmd_query_context)
LO_CMD_STUB(ibv_cmd_query_device_any)
LO_CMD_STUB(ibv_cmd_query_mr)
LO_CMD_STUB(ibv_cmd_query_port)
LO_CMD_STUB(ibv_cmd_query_qp)
LO_CMD_STUB(ibv_cmd_query_srq)
LO_CMD_STUB(ibv_cmd_read_counters)
LO_CMD_STUB(ibv_cmd_reg_dm_mr)
LO_CMD_STUB(ibv_cmd_reg_dmabuf_mr)
LO_CMD_STUB(ibv_cmd_reg_mr)
LO_CMD_STUB(ibv_cmd_req_notify_cq)
LO_CMD_STUB(ibv_cmd_rereg_mr)
LO_CMD_STUB(ibv_cmd_resize_cq)
LO_CMD_STUB(execute_ioctl)

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	return num_attrs;
}

void __verbs_log(struct verbs_context *ctx, const char *fmt, ...)
{
}

void *_verbs_init_and_alloc_context(void *device, int cmd_fd,
				    size_t alloc_size, void *context_offset,
				    uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void *verbs_open_device(struct ibv_device *device, void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context)
{
	if (!cq)
		return;
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}

void verbs_register_driver_34(const void *ops)
{
}

void verbs_set_ops(struct verbs_context *vctx, const void *ops)
{
}

void verbs_uninit_context(struct verbs_context *ctx)
{
}
