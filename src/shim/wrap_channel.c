/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_channel.c - event channels: creation (user channels and the
 * private channels librdmacm makes for synchronous ids) and destruction
 * with its checks (channel-destroy-with-ids,
 * channel-destroy-with-unacked-events, destroy-private-channel).
 */
#include <errno.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/ledger.h"
#include "shim/fd.h"

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rdma_event_channel *ch;
	struct rc_obj o;
	RC_CALL(c);

	RC_ENTER(c, rdma_create_event_channel);
	ch = RC_FWD(&c, RC_REAL(rdma_create_event_channel)());
	if (ch && !c.skip) {
		rc_obj_init(&c, RC_K_CHANNEL, ch, c.internal ? RC_F_LIB : 0,
			    &o);
		o.u.ch.fd = ch->fd;
		if (rc_reg_insert(&o))
			rc_fd_track(ch->fd, &o);
	}
	return ch;
}

/* Returns false when the destroy must not be forwarded. */
static bool check_destroy(struct rc_call *c, const struct rc_obj *ch)
{
	struct rc_ledger_scan s = { 0 };
	struct rc_finding f;

	if (ch->flags & RC_F_LIB) {
		rc_finding_init(&f, RC_R_DESTROY_PRIVATE_CHANNEL, c,
				"rdma_destroy_event_channel(%p): this channel "
				"belongs to a synchronous cm id; librdmacm "
				"will destroy it again%s", (void *)ch->handle,
				rc_opt.protect ? " (not forwarded)" : "");
		rc_finding_add(&f, ch, NULL);
		rc_report(&f);
		/* A certain double free later: refuse it now. */
		if (rc_opt.protect)
			return false;
	}
	if (ch->u.ch.waiters > 0) {
		rc_finding_init(&f, RC_R_CHANNEL_DESTROY_WHILE_WAITING, c,
				"rdma_destroy_event_channel(%p): %d thread%s "
				"%s blocked in rdma_get_cm_event on this channel "
				"(harmless if %s never returns: the blocked read "
				"keeps the closed file)",
				(void *)ch->handle, ch->u.ch.waiters,
				ch->u.ch.waiters == 1 ? "" : "s",
				ch->u.ch.waiters == 1 ? "is" : "are",
				ch->u.ch.waiters == 1 ? "it" : "they");
		rc_finding_add(&f, ch, NULL);
		rc_report(&f);
	}
	if (ch->u.ch.nids > 0) {
		rc_finding_init(&f, RC_R_CHANNEL_DESTROY_WITH_IDS, c,
				"rdma_destroy_event_channel(%p): %d cm id%s "
				"still use%s this channel",
				(void *)ch->handle, ch->u.ch.nids,
				ch->u.ch.nids == 1 ? "" : "s",
				ch->u.ch.nids == 1 ? "s" : "");
		rc_finding_add(&f, ch, NULL);
		rc_ledger_ids_on_channel(ch, &f);
		rc_report(&f);
	}
	if (ch->u.ch.unacked > 0) {
		rc_finding_init(&f, RC_R_CHANNEL_DESTROY_WITH_UNACKED_EVENTS,
				c, "x");
		rc_finding_add(&f, ch, NULL);
		s.f = &f;
		rc_ledger_scan_channel(ch, c->tid, &s);
		snprintf(f.message, sizeof(f.message),
			 "rdma_destroy_event_channel(%p): %u event%s fetched "
			 "from this channel %s not acked",
			 (void *)ch->handle, s.n, s.n == 1 ? "" : "s",
			 s.n == 1 ? "is" : "are");
		if (s.n)
			rc_report(&f);
	}
	return true;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	RC_CALL(c);
	struct rc_obj ch;

	RC_ENTER(c, rdma_destroy_event_channel);
	if (c.skip) {
		RC_FWDV_CLOSING(&c,
				RC_REAL(rdma_destroy_event_channel)(channel));
		return;
	}
	if (c.internal) {
		if (rc_reg_get((uintptr_t)channel, &ch) &&
		    ch.kind == RC_K_CHANNEL && !ch.destroyed) {
			rc_fd_untrack(ch.u.ch.fd, ch.handle);
			rc_untrack(&c, &ch);
		}
	} else {
		if (!rc_require(&c, RC_K_CHANNEL, channel, RC_DESTROY, &ch))
			return;
		if (ch.handle) {
			if (!check_destroy(&c, &ch))
				return;
			/* Before forwarding: the address may be reused at
			 * once by another thread's create. */
			rc_fd_untrack(ch.u.ch.fd, ch.handle);
			rc_untrack(&c, &ch);
		}
	}
	RC_FWDV_CLOSING(&c, RC_REAL(rdma_destroy_event_channel)(channel));
}
