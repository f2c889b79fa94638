/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_fd.c - the descriptors of event channels and completion channels:
 * close(), dup2() and dup3() on one of them by the program
 * (channel-fd-closed), and fcntl(F_SETFL, O_NONBLOCK) on the private
 * channel of a synchronous cm id (nonblocking-private-channel).
 *
 * These libc functions run everywhere in every process, so their fast
 * path is one load from a table indexed by descriptor, which holds the
 * handle of the channel that owns it (0 for the rest); only a descriptor
 * in the table takes the slow path.  A process that never made a channel
 * never leaves the fast path (and so never starts the shim's machinery).
 * The library's own close() of a channel's descriptor (inside
 * rdma_destroy_event_channel, ibv_destroy_comp_channel, rdma_destroy_id
 * of a synchronous id) comes from its text, or from inside one of those
 * calls (rc_lib_closing: through a sanitizer's interceptor, or unseen in
 * a -Bsymbolic-functions librdmacm), and just forgets it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/options.h"
#include "shim/call.h"
#include "shim/fd.h"

/* Descriptors beyond this are not followed. */
#define RC_FD_MAX 65536
static uintptr_t fdtab[RC_FD_MAX];
RC_TLS int rc_lib_closing;

static inline bool fd_tracked(int fd)
{
	return (unsigned)fd < RC_FD_MAX &&
	       __atomic_load_n(&fdtab[fd], __ATOMIC_RELAXED);
}

void rc_fd_track(int fd, const struct rc_obj *o)
{
	if ((unsigned)fd < RC_FD_MAX)
		__atomic_store_n(&fdtab[fd], o->handle, __ATOMIC_RELAXED);
}

void rc_fd_untrack(int fd, uintptr_t h)
{
	if ((unsigned)fd < RC_FD_MAX)
		__atomic_compare_exchange_n(&fdtab[fd], &h, 0, false,
					    __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
}

/* The live channel that owns fd, or false (the entry is then dropped). */
static bool fd_owner(int fd, struct rc_obj *o)
{
	uintptr_t h = __atomic_load_n(&fdtab[fd], __ATOMIC_RELAXED);

	if (h && rc_reg_get(h, o) && !o->destroyed &&
	    ((o->kind == RC_K_CHANNEL && o->u.ch.fd == fd) ||
	     (o->kind == RC_K_COMP_CHANNEL && o->u.vb.fd == fd)))
		return true;
	rc_fd_untrack(fd, h);
	return false;
}

/*
 * Slow path of close/dup2/dup3 on a channel's descriptor.  Returns true
 * when the call may go on (the entry is then dropped: the descriptor is
 * closed), false when it must be refused (protect=1).
 */
static bool may_close(struct rc_call *c, int fd, int oldfd)
{
	struct rc_finding f;
	struct rc_obj o;
	bool cm;

	if (c->skip || !fd_owner(fd, &o))
		return true;
	/* The library's own close; a fork child's copy of a parent's. */
	if (c->internal || o.pid != rc_pid() || rc_lib_closing) {
		rc_fd_untrack(fd, o.handle);
		return true;
	}
	cm = o.kind == RC_K_CHANNEL;
	if (c->fn == RC_FN_close)
		rc_finding_init(&f, RC_R_CHANNEL_FD_CLOSED, c,
				"close(%d): this is the descriptor of %s %p, "
				"which is still alive", fd,
				rc_kind_text(o.kind), (void *)o.handle);
	else
		rc_finding_init(&f, RC_R_CHANNEL_FD_CLOSED, c,
				"%s(%d, %d): closes the descriptor of %s %p, "
				"which is still alive", rc_fn_info[c->fn].name,
				oldfd, fd, rc_kind_text(o.kind),
				(void *)o.handle);
	snprintf(f.message + strlen(f.message),
		 sizeof(f.message) - strlen(f.message),
		 "; %s reads a stale descriptor and %s closes it again%s",
		 cm ? "rdma_get_cm_event" : "ibv_get_cq_event",
		 cm ? "rdma_destroy_event_channel" : "ibv_destroy_comp_channel",
		 !rc_opt.protect ? "" : c->fn == RC_FN_close ?
		 " (not forwarded: the descriptor stays open for the "
		 "library; returns 0)" : " (not forwarded; returns -1/EBUSY)");
	rc_finding_add(&f, &o, NULL);
	rc_report(&f);
	if (rc_opt.protect)
		return false;
	rc_fd_untrack(fd, o.handle);
	return true;
}

/* close/dup2/dup3 of a channel's descriptor; -2: go on and forward. */
static int slow_close(enum rc_fn fn, uintptr_t ra, int fd, int oldfd)
{
	RC_CALL(c);

	rc_call_begin(&c, fn, ra);
	if (may_close(&c, fd, oldfd)) {
		errno = c.err;
		return -2;
	}
	if (fn != RC_FN_close)
		errno = EBUSY;
	return fn == RC_FN_close ? 0 : -1;
}

int close(int fd)
{
	int (*fn)(int) = rc_real_fn(RC_FN_close);
	int ret;

	if (RC_UNLIKELY(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	if (RC_UNLIKELY(fd_tracked(fd))) {
		ret = slow_close(RC_FN_close,
				 (uintptr_t)__builtin_return_address(0), fd, -1);
		if (ret != -2)
			return ret;
	}
	return fn(fd);
}

int dup2(int oldfd, int newfd)
{
	int (*fn)(int, int) = rc_real_fn(RC_FN_dup2);
	int ret;

	if (RC_UNLIKELY(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	if (RC_UNLIKELY(fd_tracked(newfd)) && oldfd != newfd) {
		ret = slow_close(RC_FN_dup2,
				 (uintptr_t)__builtin_return_address(0), newfd,
				 oldfd);
		if (ret != -2)
			return ret;
	}
	return fn(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
	int (*fn)(int, int, int) = rc_real_fn(RC_FN_dup3);
	int ret;

	if (RC_UNLIKELY(!fn)) {
		errno = ENOSYS;
		return -1;
	}
	/* dup3 refuses oldfd == newfd itself (EINVAL). */
	if (RC_UNLIKELY(fd_tracked(newfd)) && oldfd != newfd) {
		ret = slow_close(RC_FN_dup3,
				 (uintptr_t)__builtin_return_address(0), newfd,
				 oldfd);
		if (ret != -2)
			return ret;
	}
	return fn(oldfd, newfd, flags);
}

/* F_SETFL with O_NONBLOCK on a synchronous id's private channel. */
static void check_setfl(enum rc_fn fn, uintptr_t ra, int fd, long flags)
{
	struct rc_finding f;
	struct rc_obj o;
	RC_CALL(c);

	rc_call_begin(&c, fn, ra);
	if (c.skip || c.internal || !fd_owner(fd, &o) ||
	    o.kind != RC_K_CHANNEL || !(o.flags & RC_F_LIB) ||
	    o.pid != rc_pid())
		return;
	rc_finding_init(&f, RC_R_NONBLOCKING_PRIVATE_CHANNEL, &c,
			"%s(%d, F_SETFL, O_NONBLOCK): this is the private "
			"event channel of a synchronous cm id; its calls wait "
			"on it, and fail with EAGAIN after they sent their "
			"request", rc_fn_info[fn].name, fd);
	rc_finding_add(&f, &o, NULL);
	rc_report(&f);
	(void)flags;
}

/* Every fcntl command takes at most one argument, an int or a pointer. */
#define RC_GEN_FCNTL(name)						\
int name(int fd, int cmd, ...)						\
{									\
	int (*fn)(int, int, ...) = rc_real_fn(RC_FN_##name);		\
	va_list ap;							\
	void *arg;							\
									\
	va_start(ap, cmd);						\
	arg = va_arg(ap, void *);					\
	va_end(ap);							\
	if (RC_UNLIKELY(!fn)) {						\
		errno = ENOSYS;						\
		return -1;						\
	}								\
	if (RC_UNLIKELY(fd_tracked(fd)) && cmd == F_SETFL &&		\
	    ((long)arg & O_NONBLOCK)) {					\
		int err = errno;					\
									\
		check_setfl(RC_FN_##name,				\
			    (uintptr_t)__builtin_return_address(0), fd,	\
			    (long)arg);					\
		errno = err;						\
	}								\
	return fn(fd, cmd, arg);					\
}

RC_GEN_FCNTL(fcntl)
RC_GEN_FCNTL(fcntl64)
