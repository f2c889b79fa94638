/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cq.c - completion channels (a semaphore eventfd per channel, pollable
 * like the real uverbs fd) and completion queues (a growable ring of
 * struct ibv_wc; arming, event delivery, ack accounting, resize).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "lo_verbs.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct lo_channel *c;

	if (!lo_is_our_ctx(ctx)) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (lo_evq_init(&c->evq)) {
		free(c);
		return NULL;
	}
	c->ch.context = ctx;
	c->ch.fd = c->evq.fd;
	c->ch.refcnt = 0;
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct lo_channel *c;

	if (!channel)
		return EINVAL;
	c = lo_container_of(channel, struct lo_channel, ch);
	pthread_mutex_lock(&c->evq.lock);
	if (c->ncq) {
		pthread_mutex_unlock(&c->evq.lock);
		return EBUSY;
	}
	while (!lo_list_empty(&c->evq.items)) {
		struct lo_list *l = c->evq.items.next;

		lo_list_del(l);
		free(lo_container_of(l, struct lo_cq_event, link));
	}
	pthread_mutex_unlock(&c->evq.lock);
	lo_evq_destroy(&c->evq);
	free(c);
	return 0;
}

/*
 * The depth a CQ of cqe entries gets, as rxe and mlx5 give it: a power of
 * two of slots, one kept free (rxe_queue_init: 4 -> 7).  A program sees it
 * in cq->cqe; one more completion than that overruns the CQ.
 */
static int lo_cq_depth(int cqe)
{
	unsigned int n = 1;

	while (n < (unsigned int)cqe + 1)
		n <<= 1;
	return n - 1 > LO_MAX_CQE ? LO_MAX_CQE : (int)(n - 1);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct lo_cq *q;
	struct lo_channel *c = NULL;

	if (!lo_is_our_ctx(ctx) || cqe < 1 || cqe > LO_MAX_CQE ||
	    comp_vector < 0 || comp_vector >= ctx->num_comp_vectors ||
	    (channel && channel->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	cqe = lo_cq_depth(cqe);
	q->cap = cqe + 1;
	q->ring = calloc(q->cap, sizeof(*q->ring));
	if (!q->ring) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->cq.context = ctx;
	q->cq.channel = channel;
	q->cq.cq_context = cq_context;
	q->cq.handle = lo_new_handle();
	q->cq.cqe = cqe;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	if (channel) {
		c = lo_container_of(channel, struct lo_channel, ch);
		pthread_mutex_lock(&c->evq.lock);
		c->ncq++;
		channel->refcnt++;
		pthread_mutex_unlock(&c->evq.lock);
	}
	return &q->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct lo_cq *q;
	struct lo_channel *c;

	if (!cq)
		return EINVAL;
	q = lo_cq(cq);
	pthread_mutex_lock(&q->lock);
	if (q->nqp) {
		pthread_mutex_unlock(&q->lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&q->lock);

	/* Like the real library: every event taken must be acked first. */
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed != q->events_reported)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);

	if (cq->channel) {
		struct lo_list *l, *n;
		unsigned int k = 0;

		c = lo_container_of(cq->channel, struct lo_channel, ch);
		pthread_mutex_lock(&c->evq.lock);
		for (l = c->evq.items.next; l != &c->evq.items; l = n) {
			struct lo_cq_event *e;

			n = l->next;
			e = lo_container_of(l, struct lo_cq_event, link);
			if (e->cq == cq) {
				lo_list_del(l);
				free(e);
				k++;
			}
		}
		/* a shared channel must not stay readable for them */
		lo_evq_withdrawn_locked(&c->evq, k);
		c->ncq--;
		cq->channel->refcnt--;
		pthread_mutex_unlock(&c->evq.lock);
	}
	pthread_mutex_destroy(&q->lock);
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(q->ring);
	free(q);
	return 0;
}

/* Re-lay the ring linearly into a buffer of newcap entries. */
static int lo_cq_regrow(struct lo_cq *q, unsigned int newcap)
{
	struct ibv_wc *r = calloc(newcap, sizeof(*r));
	unsigned int i;

	if (!r)
		return -1;
	for (i = 0; i < q->count; i++)
		r[i] = q->ring[(q->head + i) % q->cap];
	free(q->ring);
	q->ring = r;
	q->cap = newcap;
	q->head = 0;
	return 0;
}

/*
 * Add one completion.  Fires the channel if armed.  false: the CQ holds
 * cq->cqe completions already, it overruns as on rxe (rxe_cq_post): the
 * completion is lost and IBV_EVENT_CQ_ERR goes to the context's async
 * queue; the caller decides what that does to its QP.
 */
bool lo_cq_push(struct lo_cq *q, const struct ibv_wc *wc, bool solicited)
{
	struct lo_cq_event *e = NULL;
	bool fire;

	pthread_mutex_lock(&q->lock);
	/* the ring has cq->cqe + 1 slots (create, resize): never full */
	if (q->count >= (unsigned int)q->cq.cqe) {
		pthread_mutex_unlock(&q->lock);
		lo_async_event(q->cq.context, IBV_EVENT_CQ_ERR, &q->cq);
		return false;
	}
	q->ring[(q->head + q->count) % q->cap] = *wc;
	q->count++;
	fire = q->armed == 1 ||
	       (q->armed == 2 && (solicited || wc->status != IBV_WC_SUCCESS));
	if (fire && q->cq.channel) {
		q->armed = 0;
		e = malloc(sizeof(*e));
		if (e)
			e->cq = &q->cq;
	}
	pthread_mutex_unlock(&q->lock);
	if (e) {
		struct lo_channel *c = lo_container_of(q->cq.channel,
						       struct lo_channel, ch);

		lo_evq_push(&c->evq, &e->link);
	}
	return true;
}

static int lo_cq_take(struct lo_cq *q, int n, struct ibv_wc *wc)
{
	int i;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < n && q->count; i++) {
		wc[i] = q->ring[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
	}
	pthread_mutex_unlock(&q->lock);
	return i;
}

int lo_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct lo_cq *q = lo_cq(cq);
	int i;

	if (n <= 0)
		return 0;
	i = lo_cq_take(q, n, wc);
	if (!i) {
		/* Empty: do the progress thread's work here, then retry. */
		lo_progress_poll();
		i = lo_cq_take(q, n, wc);
		/*
		 * Still empty: whoever produces our completion (the peer
		 * process, our progress thread) needs a CPU that busy
		 * pollers would otherwise hog for a whole time slice.  Then
		 * look again: "empty" must still hold when we return, as a
		 * hardware CQ's does, or whatever the peer did meanwhile on
		 * the strength of that completion (a disconnect behind the
		 * last data, in rstream -T a) overtakes it.
		 */
		if (!i) {
			sched_yield();
			i = lo_cq_take(q, n, wc);
		}
	}
	return i;
}

int lo_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct lo_cq *q = lo_cq(cq);

	pthread_mutex_lock(&q->lock);
	/* Solicited-only never weakens an existing "any" arming. */
	if (!solicited_only || q->armed != 1)
		q->armed = solicited_only ? 2 : 1;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct lo_channel *c;
	struct lo_cq_event *e;
	struct lo_list *l;
	struct ibv_cq *q;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	c = lo_container_of(channel, struct lo_channel, ch);
	if (lo_evq_pop(&c->evq, &l))
		return -1;
	e = lo_container_of(l, struct lo_cq_event, link);
	q = e->cq;
	free(e);
	pthread_mutex_lock(&q->mutex);
	lo_cq(q)->events_reported++;
	pthread_mutex_unlock(&q->mutex);
	*cq = q;
	*cq_context = q->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct lo_cq *q;
	int ret = 0;

	if (!cq)
		return EINVAL;
	q = lo_cq(cq);
	if (cqe < 1 || cqe > LO_MAX_CQE)
		return EINVAL;
	cqe = lo_cq_depth(cqe);
	pthread_mutex_lock(&q->lock);
	if ((unsigned int)cqe < q->count)
		ret = EINVAL;
	else if ((unsigned int)cqe + 1 > q->cap &&
		 lo_cq_regrow(q, cqe + 1))
		ret = ENOMEM;
	else
		cq->cqe = cqe;
	pthread_mutex_unlock(&q->lock);
	return ret;
}
