/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * loopback/cm/channel.c: event channels and events of the loopback
 * librdmacm: rdma_create/destroy_event_channel, rdma_get_cm_event,
 * rdma_ack_cm_event, rdma_event_str, rdma_migrate_id, the event accounting
 * that makes destroy/migrate/leave wait, and the synchronous-id wait.
 *
 * A channel's fd is an eventfd in semaphore mode: one token per queued
 * event, so it polls readable exactly when events wait and honours the
 * O_NONBLOCK a program sets on it.  Removing a queued event (destroy,
 * migrate) takes its token back when no reader is between its read and
 * its dequeue; otherwise the token stays behind and the reader that finds
 * the queue empty simply reads again.
 *
 * Destroying a channel is the kernel's close of the rdma_cm file, which
 * destroys every id on it.  While a thread is blocked in
 * rdma_get_cm_event the kernel keeps the file: its ids live on, their
 * events still arrive and wake that thread, and the close happens when the
 * last such call returns.  The channel's fd and queue stay until then.
 *
 * A channel the program passes is looked up among those it has not
 * destroyed (cm_chan_live) before it is touched: the real library would
 * read a freed channel's fd and fail, and so do we, without reading freed
 * memory.  rping 44.0's cm thread makes that call as main destroys the
 * channel.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "cm.h"

#define CM_LIVE_BUCKETS 64

/* Every channel not yet destroyed, hashed by address; under cm.lock. */
static struct cm_list cm_live[CM_LIVE_BUCKETS];

static struct cm_list *cm_live_bucket(const void *ch)
{
	struct cm_list *b = &cm_live[((uintptr_t)ch >> 4) % CM_LIVE_BUCKETS];

	if (!b->next)
		cm_list_init(b);
	return b;
}

/*
 * Caller holds cm.lock: the channel behind the program's pointer, or NULL
 * (errno EBADF) when it is not one the program has and has not destroyed.
 * The real library writes to the fd its freed channel held, which fails
 * with EBADF.
 */
struct cm_channel *cm_chan_live(struct rdma_event_channel *ch)
{
	struct cm_list *b = cm_live_bucket(ch), *l;

	for (l = b->next; l != b; l = l->next) {
		struct cm_channel *c =
			cm_container_of(l, struct cm_channel, live_link);

		if (&c->pub == ch)
			return c;
	}
	errno = EBADF;
	return NULL;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *ch;

	if (cm_init())
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->pub.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->pub.fd < 0) {
		free(ch);
		return NULL;
	}
	cm_list_init(&ch->queue);
	cm_list_init(&ch->ids);
	ch->gen = cm.fork_gen;
	pthread_mutex_lock(&cm.lock);
	cm_list_add_tail(cm_live_bucket(ch), &ch->live_link);
	pthread_mutex_unlock(&cm.lock);
	return &ch->pub;
}

/*
 * A fork child's call on a channel made before the fork, or on an id of
 * such a channel: the kernel's ucma refuses a command written to a file
 * opened under other credentials with EACCES (ib_safe_file_access), so
 * the child can neither steal the parent's events (it shares the eventfd)
 * nor change the parent's ids.
 */
int cm_inherited(struct rdma_event_channel *ch)
{
	if (cm_chan(ch)->gen == cm.fork_gen)
		return 0;
	errno = EACCES;
	return 1;
}

/*
 * The kernel's release of the file: every id on it is destroyed (its
 * connection goes, its queued events with it); the ids' memory stays, as
 * with the real library, and their next call fails (EBADF).  Caller holds
 * cm.lock; returns 1 when ch is to be freed.
 */
int cm_chan_close(struct cm_channel *ch)
{
	struct cm_list *l;

	ch->closed = 1;
	for (l = ch->ids.next; l != &ch->ids; l = l->next) {
		struct cm_id *p = cm_container_of(l, struct cm_id, chan_link);

		cm_tmo_cancel(p);
		cm_purge_events(p);
		cm_close_id_socks(p);
		p->state = CM_ERROR;
	}
	close(ch->pub.fd);
	return ch->nids == 0;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_channel *ch;
	int gone = 0;

	if (!channel)
		return;		/* the real one crashes */
	pthread_mutex_lock(&cm.lock);
	ch = cm_chan_live(channel);
	if (!ch) {
		/* destroyed twice: the real one frees it twice */
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	cm_list_del(&ch->live_link);
	ch->dead = 1;
	if (!ch->calls)
		gone = cm_chan_close(ch);
	pthread_mutex_unlock(&cm.lock);
	if (gone)
		free(ch);
}

struct cm_event *cm_event_new(struct cm_id *owner, enum rdma_cm_event_type t,
			      int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &owner->id;
	e->ev.event = t;
	e->ev.status = status;
	e->owner = owner;
	cm_list_init(&e->link);
	return e;
}

/* Caller holds cm.lock. */
void cm_queue_event(struct cm_id *p, struct cm_event *e)
{
	struct cm_channel *ch = cm_chan(p->id.channel);
	uint64_t one = 1;
	ssize_t n;

	if (p->destroying || ch->closed) {
		free(e);
		return;
	}
	cm_list_add_tail(&ch->queue, &e->link);
	n = write(ch->pub.fd, &one, sizeof(one));
	(void)n;
}

/*
 * An event left ch's queue without being fetched: take its token back so
 * the fd stops polling readable.  With no reader in flight the count is at
 * least the queue length plus one, so the read cannot block.  Caller holds
 * cm.lock.
 */
static void cm_untoken(struct cm_channel *ch)
{
	uint64_t tok;
	ssize_t n;

	if (ch->readers || ch->closed)
		return;
	n = read(ch->pub.fd, &tok, sizeof(tok));
	(void)n;
}

static void cm_reject_req(struct cm_event *e, int reason)
{
	struct cm_msg rej;

	if (!e->req)
		return;
	memset(&rej, 0, sizeof(rej));
	rej.type = CM_MSG_REJ;
	rej.reason = reason;
	cm_send_msg(e->req, &rej);
	cm_sock_close(e->req);
	e->req = NULL;
}

static void cm_drop_req(struct cm_event *e)
{
	cm_reject_req(e, CM_REJ_INVALID_SID);
}

/*
 * Drop the id's events that were never fetched (only those of one join
 * when mc is set).  Caller holds cm.lock.
 */
static void cm_purge(struct cm_id *p, struct cm_mc *mc)
{
	struct cm_channel *ch = cm_chan(p->id.channel);
	struct cm_list *l, *n;

	for (l = ch->queue.next; l != &ch->queue; l = n) {
		struct cm_event *e = cm_container_of(l, struct cm_event, link);

		n = l->next;
		if (e->owner != p || (mc && e->mc != mc))
			continue;
		cm_list_del(&e->link);
		cm_untoken(ch);
		cm_drop_req(e);
		free(e);
	}
}

void cm_purge_events(struct cm_id *p)
{
	cm_purge(p, NULL);
}

void cm_purge_mc_events(struct cm_id *p, struct cm_mc *mc)
{
	cm_purge(p, mc);
}

void cm_wait_acked(struct cm_id *p)
{
	pthread_mutex_lock(&cm.lock);
	while (p->completed < p->reported)
		pthread_cond_wait(&cm.cond, &cm.lock);
	pthread_mutex_unlock(&cm.lock);
}

static void cm_complete_event(struct cm_event *e)
{
	pthread_mutex_lock(&cm.lock);
	if (e->charged) {
		/* an mc ack counts for the join and for the id */
		if (e->mc)
			e->mc->completed++;
		e->charged->completed++;
		pthread_cond_broadcast(&cm.cond);
	}
	pthread_mutex_unlock(&cm.lock);
}

static int cm_process_addr(struct cm_event *e)
{
	struct rdma_cm_id *id = e->ev.id;

	if (cm_bind_device(id)) {
		e->ev.event = RDMA_CM_EVENT_ADDR_ERROR;
		e->ev.status = -ENODEV;
		return 0;
	}
	pthread_mutex_lock(&cm.lock);
	if (cm_id(id)->state < CM_ADDR_RESOLVED)
		cm_id(id)->state = CM_ADDR_RESOLVED;
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

/* A thread inside rdma_get_cm_event, for its cancellation handler. */
struct cm_reader {
	struct cm_channel *ch;
	int reading;		/* counted in ch->readers */
};

/*
 * Leaving rdma_get_cm_event, by return or by cancellation (the read is a
 * cancellation point): the last call out of a destroyed channel closes it.
 */
static void cm_reader_exit(void *arg)
{
	struct cm_reader *r = arg;
	struct cm_channel *ch = r->ch;
	int err = errno, gone = 0;

	pthread_mutex_lock(&cm.lock);
	if (r->reading)
		ch->readers--;
	if (!--ch->calls && ch->dead && !ch->closed)
		gone = cm_chan_close(ch);
	pthread_mutex_unlock(&cm.lock);
	if (gone)
		free(ch);
	errno = err;
}

static int cm_get_event(struct cm_reader *r, struct rdma_cm_event **event)
{
	struct cm_channel *ch = r->ch;
	struct cm_event *e;
	struct cm_id *p;
	uint64_t tok;
	ssize_t n;

again:
	pthread_mutex_lock(&cm.lock);
	ch->readers++;
	r->reading = 1;
	pthread_mutex_unlock(&cm.lock);
	n = read(ch->pub.fd, &tok, sizeof(tok));
	pthread_mutex_lock(&cm.lock);
	ch->readers--;
	r->reading = 0;
	if (n != sizeof(tok)) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	if (cm_list_empty(&ch->queue)) {
		/* token of a purged or migrated event */
		pthread_mutex_unlock(&cm.lock);
		goto again;
	}
	e = cm_container_of(ch->queue.next, struct cm_event, link);
	cm_list_del(&e->link);
	p = e->owner;
	e->charged = p;
	p->reported++;
	if (e->mc)
		e->mc->reported++;
	if (e->kind == CM_EVK_CONN_REQ && e->req) {
		/* the request now belongs to this event, not the listener */
		cm_list_del(&e->req->link);
		e->req->listener = NULL;
	}
	if (e->ev.event == RDMA_CM_EVENT_DISCONNECTED)
		p->disc_fetched = 1;
	if (p->connect_error &&
	    (e->ev.event == RDMA_CM_EVENT_REJECTED ||
	     e->ev.event == RDMA_CM_EVENT_DISCONNECTED)) {
		/* hidden after a locally produced CONNECT_ERROR */
		p->completed++;
		pthread_cond_broadcast(&cm.cond);
		pthread_mutex_unlock(&cm.lock);
		free(e);
		goto again;
	}
	pthread_mutex_unlock(&cm.lock);

	switch (e->kind) {
	case CM_EVK_CONN_REQ:
		if (ch->dead) {
			/*
			 * A reader blocked on a channel destroyed meanwhile
			 * (as seen on Linux 6.1 with rxe): the library cannot
			 * set the new id up on the closed fd, the request is
			 * rejected (consumer, 28), and its next GET_EVENT on
			 * the freed channel fails with EBADF.
			 */
			pthread_mutex_lock(&cm.lock);
			cm_reject_req(e, CM_REJ_CONSUMER);
			pthread_mutex_unlock(&cm.lock);
			cm_complete_event(e);
			free(e);
			errno = EBADF;
			return -1;
		}
		if (cm_process_conn_req(e)) {
			cm_complete_event(e);
			free(e);
			goto again;
		}
		break;
	case CM_EVK_CONN_RESP:
		cm_process_conn_resp(e);
		break;
	case CM_EVK_ADDR:
		cm_process_addr(e);
		break;
	case CM_EVK_MC_JOIN:
		cm_process_join(e);
		break;
	default:
		if (e->ev.event == RDMA_CM_EVENT_REJECTED)
			cm_qp_to_err(e->ev.id);
		break;
	}
	*event = &e->ev;
	return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event)
{
	struct cm_reader r = { .ch = NULL };
	int ret;

	if (cm_init())
		return -1;
	if (!event || !channel) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cm.lock);
	r.ch = cm_chan_live(channel);
	if (!r.ch || cm_inherited(channel)) {
		pthread_mutex_unlock(&cm.lock);
		return -1;
	}
	r.ch->calls++;
	pthread_mutex_unlock(&cm.lock);
	pthread_cleanup_push(cm_reader_exit, &r);
	ret = cm_get_event(&r, event);
	pthread_cleanup_pop(1);
	return ret;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e;

	if (!event) {
		errno = EINVAL;
		return -1;
	}
	e = cm_container_of(event, struct cm_event, ev);
	cm_complete_event(e);
	free(e);
	return 0;
}

/*
 * The synchronous wait of the real library's ucma_complete: release the
 * previous event, then take the next one on the private channel (through
 * the PLT) and keep it in id->event.  The event type is not checked.
 */
int cm_complete(struct rdma_cm_id *id)
{
	struct cm_id *p = cm_id(id);
	int ret;

	if (!p->sync)
		return 0;
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	ret = rdma_get_cm_event(id->channel, &id->event);
	if (ret)
		return ret;
	if (id->event->status) {
		if (id->event->event == RDMA_CM_EVENT_REJECTED)
			errno = ECONNREFUSED;
		else if (id->event->status < 0)
			errno = -id->event->status;
		else
			errno = id->event->status;
		return -1;
	}
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cm_id *p = cm_id(id);
	struct rdma_event_channel *old = id->channel, *nch = channel;
	struct cm_channel *och, *nc;
	struct cm_list *l, *n;
	int was_sync = p->sync;
	uint64_t one = 1;

	if (cm_inherited(old))
		return -1;
	if (was_sync && !channel) {
		errno = EINVAL;
		return -1;
	}
	if (!nch) {
		nch = rdma_create_event_channel();
		if (!nch)
			return -1;
	}
	och = cm_chan(old);

	pthread_mutex_lock(&cm.lock);
	nc = cm_chan_live(nch);
	if (och->dead || !nc || cm_inherited(nch)) {
		pthread_mutex_unlock(&cm.lock);
		if (!channel)
			rdma_destroy_event_channel(nch);
		if (och->dead)
			errno = EBADF;
		return -1;
	}
	/* queued, not yet fetched events move along, in order */
	if (och != nc) {
		for (l = och->queue.next; l != &och->queue; l = n) {
			struct cm_event *e;
			ssize_t w;

			n = l->next;
			e = cm_container_of(l, struct cm_event, link);
			if (e->owner != p)
				continue;
			cm_list_del(&e->link);
			cm_untoken(och);
			cm_list_add_tail(&nc->queue, &e->link);
			w = write(nc->pub.fd, &one, sizeof(one));
			(void)w;
		}
	}
	och->nids--;
	nc->nids++;
	cm_list_del(&p->chan_link);
	cm_list_add_tail(&nc->ids, &p->chan_link);
	id->channel = nch;
	p->sync = !channel;
	pthread_mutex_unlock(&cm.lock);

	if (was_sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(old);
	}
	cm_wait_acked(p);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const str[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED",
		"RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED",
		"RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST",
		"RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR",
		"RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED",
		"RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED",
		"RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN",
		"RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE",
		"RDMA_CM_EVENT_TIMEWAIT_EXIT",
#ifdef LO_RDMACM_1_4
		/* rdma-core 60+ names these two; USER is "UNKNOWN EVENT" */
		"RDMA_CM_EVENT_ADDRINFO_RESOLVED",
		"RDMA_CM_EVENT_ADDRINFO_ERROR",
#endif
	};

	if ((unsigned int)event < sizeof(str) / sizeof(str[0]))
		return str[event];
	return "UNKNOWN EVENT";
}
