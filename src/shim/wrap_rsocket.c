/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wrap_rsocket.c - rsockets: which ints are rsockets, their lifetimes
 * (rsocket and raccept open one, rclose closes it), their riomap()s, and
 * the checks of every r* call: rsocket-use-after-close,
 * rsocket-double-close, rsocket-unknown-fd and riomap-leak; leak-rsocket
 * comes from the records at exit (lifecycle.c).
 *
 * The data calls (rsend, rrecv, rpoll, ...) must cost almost nothing: one
 * byte per socket number in a table says whether it is a live rsocket,
 * and a live one is forwarded at once, without a lock, a stack or the
 * registry.  Everything else takes the slow path, which classifies the
 * caller (librdmacm's own calls through the PLT, such as rclose's
 * rshutdown and riounmap, are never checked) and reports.  44.0 keeps its
 * rsockets in an index of 65536 numbers (rsocket fails with ENOMEM
 * beyond), so the table has as many entries.
 *
 * Each rsocket also has a registry record (kind rsocket, handle
 * RC_RS_HANDLE(fd), odd like the threads' so never an address), with its
 * creation and close stacks for the reports and the count of its live
 * riomap()s.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <rdma/rsocket.h>

#include "shim/rc_newer.h"

#include "core/options.h"
#include "unwind/stack.h"
#include "shim/call.h"
#include "shim/rsocket.h"

#define RC_RS_MAX	(1 << 16)

enum {
	RC_RS_NONE,		/* never an rsocket we saw */
	RC_RS_LIVE,
	RC_RS_CLOSED,		/* closed; not reused by an rsocket since */
	RC_RS_PLAIN,		/* seen open, not an rsocket (rpoll's fds) */
};

static uint8_t rs_tab[RC_RS_MAX];

static inline int rs_state(int s)
{
	return (unsigned)s < RC_RS_MAX ?
	       __atomic_load_n(&rs_tab[s], __ATOMIC_RELAXED) : RC_RS_NONE;
}

static void rs_set_state(int s, int st)
{
	if ((unsigned)s < RC_RS_MAX)
		__atomic_store_n(&rs_tab[s], st, __ATOMIC_RELAXED);
}

/* An int that is an open fd of this process (not necessarily ours). */
static bool rs_fd_open(int s)
{
	return s >= 0 && fcntl(s, F_GETFD) != -1;
}

/* The record of the rsocket that was (or is) number s. */
static bool rs_record(int s, struct rc_obj *o)
{
	return (unsigned)s < RC_RS_MAX &&
	       rc_reg_get_kind(RC_RS_HANDLE(s), RC_K_RSOCKET, o);
}

/* rsocket or raccept returned s: a new live rsocket. */
static void rs_opened(struct rc_call *c, int s)
{
	struct rc_obj o;

	if ((unsigned)s >= RC_RS_MAX)
		return;		/* 44.0 cannot index it; nor do we */
	rc_obj_init(c, RC_K_RSOCKET, (void *)RC_RS_HANDLE(s),
		    c->internal ? RC_F_LIB : 0, &o);
	o.u.rs.fd = s;
	rc_reg_insert(&o);
	rs_set_state(s, RC_RS_LIVE);
}

enum rs_verdict {
	RS_OK,			/* forward */
	RS_REFUSE,		/* do not forward: errno is EBADF */
};

/*
 * Report what the int s is when it is not a live rsocket.  plain_ok: a
 * plain open fd is a legal argument (rpoll, rselect).  The caller's errno
 * is left alone unless the call is refused.
 */
static enum rs_verdict rs_report_bad(struct rc_call *c, int s, bool plain_ok)
{
	const char *name = rc_fn_info[c->fn].name;
	int st = rs_state(s);
	bool open, refuse = false;
	struct rc_finding f;
	struct rc_obj o;

	if (st == RC_RS_LIVE || (st == RC_RS_PLAIN && plain_ok))
		return RS_OK;
	open = rs_fd_open(s);
	if (st == RC_RS_CLOSED && !(open && plain_ok)) {
		rc_finding_init(&f, c->fn == RC_FN_rclose ?
				RC_R_RSOCKET_DOUBLE_CLOSE :
				RC_R_RSOCKET_USE_AFTER_CLOSE, c,
				"%s(%d): rsocket %d %s closed; librdmacm %s",
				name, s, s, c->fn == RC_FN_rclose ?
				"is already" : "was",
				plain_ok ? "polls the number as whatever fd it "
				"is now" : "fails with EBADF, or acts on "
				"whatever rsocket gets the number next");
		refuse = !plain_ok;
		if (rs_record(s, &o))
			rc_finding_add(&f, &o, NULL);
	} else if (st == RC_RS_CLOSED || (open && plain_ok)) {
		/* a closed rsocket's number, reused by a plain fd */
		rs_set_state(s, RC_RS_PLAIN);
		return RS_OK;
	} else if (open) {
		rc_finding_init(&f, RC_R_RSOCKET_UNKNOWN_FD, c,
				"%s(%d): %d is an open fd, but no rsocket or "
				"raccept returned it; librdmacm fails with "
				"EBADF (or faults on a number it never "
				"indexed)", name, s, s);
		f.as_warning = true;
		rs_set_state(s, RC_RS_PLAIN);
	} else {
		rc_finding_init(&f, RC_R_RSOCKET_UNKNOWN_FD, c,
				"%s(%d): no rsocket or raccept returned %d, and "
				"it is not an open fd either%s", name, s, s,
				(unsigned)s >= RC_RS_MAX ?
				" (librdmacm 44.0 indexes 0..65535 and reads "
				"outside its index)" : "");
		refuse = !plain_ok;
	}
	if (refuse && rc_opt.protect)
		snprintf(f.message + strlen(f.message),
			 sizeof(f.message) - strlen(f.message),
			 "; not forwarded (returns %s/EBADF)",
			 c->fn == RC_FN_rclose ? "EBADF" : "-1");
	rc_report(&f);
	if (!refuse || !rc_opt.protect)
		return RS_OK;
	errno = EBADF;
	return RS_REFUSE;
}

/* The slow path of a call on one socket number. */
static enum rs_verdict rs_check(struct rc_call *c, enum rc_fn fn, int s,
				uintptr_t ra)
{
	enum rs_verdict v;

	rc_call_begin(c, fn, ra);
	if (c->skip || c->internal)
		return RS_OK;
	v = rs_report_bad(c, s, false);
	if (v == RS_OK)
		errno = c->err;
	return v;
}

/* What the generated wrappers call when the table says "not live". */
bool rc_rs_check(enum rc_fn fn, int s, uintptr_t ra)
{
	RC_CALL(c);

	return rs_check(&c, fn, s, ra) == RS_OK;
}

#define RC_FIRST_(a, ...) a
#define RC_FIRST(args) RC_FIRST_ args

/*
 * The generated wrappers: a live rsocket (and no tracing) goes straight
 * to librdmacm, a tail call with no frame of our own; everything else
 * goes through a cold function of its own (the return address passed
 * down, so its report names the program's call).
 */
#define RC_GEN_RSOCK(ret, name, fail, params, args)			\
static __attribute__((noinline, cold)) ret				\
rs_slow_##name(uintptr_t ra, RC_UNPAREN params)				\
{									\
	ret (*fn) params = rc_real_fn(RC_FN_##name);			\
									\
	if (!fn) {							\
		errno = ENOSYS;						\
		return fail;						\
	}								\
	if (!rc_rs_check(RC_FN_##name, RC_FIRST(args), ra))		\
		return fail;						\
	return fn args;							\
}									\
									\
ret RC_NAME(name) RC_PARAMS(name, params)				\
{									\
	ret (*fn) params = __atomic_load_n(&rc_real[RC_FN_##name],	\
					   __ATOMIC_ACQUIRE);		\
									\
	if (RC_LIKELY(fn && rs_state(RC_FIRST(args)) == RC_RS_LIVE &&	\
		      !rc_verbosity))					\
		return fn args;						\
	return rs_slow_##name(RC_RA(name), RC_UNPAREN args);		\
}

#define RC_GEN_PASS(ret, name, fail, params, args)
#define RC_GEN_CHECK(ret, name, fail, params, args)
#define RC_GEN_CHECKP(ret, name, fail, params, args)
#define RC_GEN_WRAP(ret, name, fail, params, args)
#define RC_GEN_WRAPV(ret, name, fail, params, args)
#define RC_GEN_OP(ret, name, fail, params, args)
#define RC_API(how, ret, name, ver, fail, params, args, effect) \
	RC_GEN_##how(ret, name, fail, params, args)
#include "shim/rdmacm_api.def"
#undef RC_API

int rsocket(int domain, int type, int protocol)
{
	RC_CALL(c);
	int s;

	RC_ENTER(c, rsocket);
	s = RC_FWD(&c, RC_REAL(rsocket)(domain, type, protocol));
	if (s >= 0 && !c.skip)
		rs_opened(&c, s);
	return s;
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	RC_CALL(c);
	int s;

	RC_NEED_REAL(raccept);
	if (rs_check(&c, RC_FN_raccept, socket,
		     (uintptr_t)__builtin_return_address(0)) != RS_OK)
		return -1;
	s = RC_FWD(&c, RC_REAL(raccept)(socket, addr, addrlen));
	if (s >= 0 && !c.skip)
		rs_opened(&c, s);
	return s;
}

/*
 * riomap-leak: 44.0's rclose takes the rsocket out of its index before it
 * unmaps what is left, with riounmap() on the number, which then fails;
 * its loop never ends.  A certain hang: with protect=1 the close is
 * refused (EBUSY) and the rsocket stays open.
 */
static bool rs_check_iomaps(struct rc_call *c, int s, const struct rc_obj *o)
{
	struct rc_finding f;

	if (o->u.rs.iomaps <= 0)
		return true;
	rc_finding_init(&f, RC_R_RIOMAP_LEAK, c,
			"rclose(%d): %d riomap()ed buffer%s never "
			"riounmap()ed; librdmacm 44.0 then loops in rclose "
			"for ever%s", s, o->u.rs.iomaps,
			o->u.rs.iomaps == 1 ? "" : "s",
			rc_opt.protect ? " (not forwarded: returns -1/EBUSY, "
			"the rsocket stays open)" : "");
	rc_finding_add(&f, o, NULL);
	rc_report(&f);
	if (!rc_opt.protect)
		return true;
	errno = EBUSY;
	return false;
}

int rclose(int socket)
{
	RC_CALL(c);
	struct rc_obj o;

	RC_ENTER(c, rclose);
	if (c.skip) {
		return RC_FWD(&c, RC_REAL(rclose)(socket));
	} else if (c.internal || rs_state(socket) == RC_RS_LIVE) {
		if (rs_record(socket, &o) && !o.destroyed && !c.internal &&
		    !rs_check_iomaps(&c, socket, &o))
			return -1;
		/* Before forwarding: another thread's rsocket may get the
		 * number as soon as the close released it. */
		rs_set_state(socket, RC_RS_CLOSED);
		if (rs_record(socket, &o) && !o.destroyed)
			rc_untrack(&c, &o);
	} else if (rs_report_bad(&c, socket, false) != RS_OK) {
		return EBADF;	/* what 44.0 returns for a number it lacks */
	} else {
		errno = c.err;
	}
	return RC_FWD(&c, RC_REAL(rclose)(socket));
}

static void rs_iomaps_fn(struct rc_obj *o, void *arg)
{
	if (!o->destroyed && o->kind == RC_K_RSOCKET)
		o->u.rs.iomaps += *(int *)arg;
}

static void rs_count_iomap(int s, int delta)
{
	struct rc_obj o;

	if (rs_record(s, &o) && !o.destroyed)
		rc_reg_update(o.handle, o.gen, rs_iomaps_fn, &delta);
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	RC_CALL(c);
	off_t ret;

	RC_NEED_REAL(riomap);
	if (rs_check(&c, RC_FN_riomap, socket,
		     (uintptr_t)__builtin_return_address(0)) != RS_OK)
		return -1;
	ret = RC_FWD(&c, RC_REAL(riomap)(socket, buf, len, prot, flags,
					  offset));
	if (ret != -1 && !c.skip && !c.internal)
		rs_count_iomap(socket, 1);
	return ret;
}

int riounmap(int socket, void *buf, size_t len)
{
	RC_CALL(c);
	int ret;

	RC_NEED_REAL(riounmap);
	if (rs_check(&c, RC_FN_riounmap, socket,
		     (uintptr_t)__builtin_return_address(0)) != RS_OK)
		return -1;
	ret = RC_FWD(&c, RC_REAL(riounmap)(socket, buf, len));
	if (!ret && !c.skip && !c.internal)
		rs_count_iomap(socket, -1);
	return ret;
}

/* Every rfcntl command takes at most one int-sized argument. */
int rfcntl(int socket, int cmd, ...)
{
	va_list ap;
	long arg;

	RC_NEED_REAL(rfcntl);
	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	if (RC_UNLIKELY(rs_state(socket) != RC_RS_LIVE || rc_verbosity) &&
	    !rc_rs_check(RC_FN_rfcntl, socket,
			 (uintptr_t)__builtin_return_address(0)))
		return -1;
	return RC_REAL(rfcntl)(socket, cmd, arg);
}

/*
 * rpoll's array and rselect's sets are read here before librdmacm sees
 * them: memory that is not there must be refused (unreadable-argument),
 * not crash the shim.  On the caller's stack it is there; anything else
 * is read with rc_peek once, and the last array a thread polled is not
 * checked again (a polling loop passes the same one every time).
 */
static RC_TLS const void *rs_polled;
static RC_TLS size_t rs_polled_len;

static __attribute__((noinline, cold)) bool
rs_array_check(enum rc_fn fn, const char *arg, const void *p, size_t len,
	       uintptr_t ra)
{
	unsigned char tmp[512];
	int err = errno;
	size_t at;
	RC_CALL(c);

	for (at = 0; p && at < len; at += sizeof(tmp))
		if (!rc_peek(tmp, (const char *)p + at, len - at < sizeof(tmp) ?
			     len - at : sizeof(tmp)))
			break;
	if (p && at >= len) {
		rs_polled = p;
		rs_polled_len = len;
		errno = err;
		return true;
	}
	rc_call_begin(&c, fn, ra);
	if (c.skip || c.internal ||
	    rc_arg_readable(&c, arg, p, len, false)) {
		errno = err;
		return true;
	}
	return false;		/* errno is EINVAL */
}

static inline bool rs_array_ok(enum rc_fn fn, const char *arg, const void *p,
			       size_t len, uintptr_t ra)
{
	if (RC_LIKELY((p == rs_polled && len <= rs_polled_len) || !len))
		return true;
	if ((uintptr_t)p >= 4096 && rc_stack_holds(p, len)) {
		rs_polled = p;
		rs_polled_len = len;
		return true;
	}
	return rs_array_check(fn, arg, p, len, ra);
}

/*
 * rpoll and rselect take rsockets and plain fds alike.  An entry that is
 * neither (a closed rsocket's number that nothing reuses, an fd never
 * opened) is reported, but the call is forwarded: librdmacm polls such a
 * number as a plain fd (POLLNVAL).
 */
static __attribute__((noinline, cold)) void
rs_poll_slow(enum rc_fn fn, const int *fds, size_t stride, unsigned n,
	     uintptr_t ra)
{
	RC_CALL(c);
	unsigned i;
	int s;

	rc_call_begin(&c, fn, ra);
	if (!c.skip && !c.internal)
		for (i = 0; i < n; i++) {
			s = *(const int *)((const char *)fds + i * stride);
			rs_report_bad(&c, s, true);
		}
	errno = c.err;
}

static __attribute__((noinline, cold)) int
rs_rpoll_slow(uintptr_t ra, struct pollfd *fds, nfds_t nfds, int timeout)
{
	int (*fn)(struct pollfd *, nfds_t, int) = RC_REAL(rpoll);

	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	if (!rs_array_ok(RC_FN_rpoll, "fds", fds, nfds * sizeof(*fds), ra))
		return -1;
	rs_poll_slow(RC_FN_rpoll, &fds[0].fd, sizeof(*fds), (unsigned)nfds,
		     ra);
	return fn(fds, nfds, timeout);
}

/* One table load per entry, and a tail call when all are known. */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int (*fn)(struct pollfd *, nfds_t, int) =
		__atomic_load_n(&rc_real[RC_FN_rpoll], __ATOMIC_ACQUIRE);
	nfds_t i;

	if (RC_UNLIKELY(!fn || rc_verbosity))
		goto slow;
	if (!rs_array_ok(RC_FN_rpoll, "fds", fds, nfds * sizeof(*fds),
			 (uintptr_t)__builtin_return_address(0)))
		return -1;
	for (i = 0; i < nfds; i++) {
		int st = rs_state(fds[i].fd);

		if (RC_UNLIKELY(st != RC_RS_LIVE && st != RC_RS_PLAIN))
			goto slow;
	}
	return fn(fds, nfds, timeout);
slow:
	return rs_rpoll_slow((uintptr_t)__builtin_return_address(0), fds,
			     nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int set[FD_SETSIZE];
	unsigned n = 0;
	int fd;

	RC_NEED_REAL(rselect);
	/* librdmacm reads the sets in FD_SETSIZE words (rs_select_to_poll) */
	if (!rs_array_ok(RC_FN_rselect, "readfds", readfds,
			 readfds ? sizeof(*readfds) : 0, ra) ||
	    !rs_array_ok(RC_FN_rselect, "writefds", writefds,
			 writefds ? sizeof(*writefds) : 0, ra) ||
	    !rs_array_ok(RC_FN_rselect, "exceptfds", exceptfds,
			 exceptfds ? sizeof(*exceptfds) : 0, ra))
		return -1;
	for (fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
		int st;

		if (!(readfds && FD_ISSET(fd, readfds)) &&
		    !(writefds && FD_ISSET(fd, writefds)) &&
		    !(exceptfds && FD_ISSET(fd, exceptfds)))
			continue;
		st = rs_state(fd);
		if (st != RC_RS_LIVE && st != RC_RS_PLAIN)
			set[n++] = fd;
	}
	if (RC_UNLIKELY(n || rc_verbosity))
		rs_poll_slow(RC_FN_rselect, set, sizeof(set[0]), n, ra);
	return RC_REAL(rselect)(nfds, readfds, writefds, exceptfds, timeout);
}
