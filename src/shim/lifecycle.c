/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lifecycle.c - the shim's life: initialisation (constructor, or the first
 * intercepted call if that comes earlier), what starts at the first call
 * (signal handlers, the service thread), the leak check and reports at
 * exit after every destructor with the forced exit status (and other
 * threads' exit() held while they are written), reports on
 * snapshot and termination signals, fork handling, and the fatal-signal
 * handlers that still leave a JSON report when the host crashes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "core/options.h"
#include "symbolize/symbolize.h"
#include "shim/call.h"
#include "shim/watchdog.h"
#include "shim/threads.h"
#include "shim/cm.h"
#include "shim/cqcount.h"
#include "shim/wr.h"

void rc_pid_atfork_child(void);

static pid_t init_tid;
static volatile sig_atomic_t crashed;
static void die_of(int sig);

static void reset_services(void);

static const int fatal_signals[] = {
	SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
};

static int final_state;		/* 0, 1 writing the reports at exit, 2 */
static pid_t final_tid;		/* the thread writing them */

static void atfork_child(void)
{
	/* a thread of the parent was writing its reports */
	__atomic_store_n(&final_state, 0, __ATOMIC_RELAXED);
	rc_gettid_atfork_child();
	rc_hot_tid = 0;		/* the child's thread has another id */
	rc_thread_atfork_child();
	rc_pid_atfork_child();
	rc_reg_atfork_child();
	rc_cq_count_atfork_child();
	rc_stack_atfork_child();
	rc_symbolize_atfork_child();
	rc_report_atfork_child();
	rc_watch_atfork_child();
	reset_services();
}

/*
 * A fatal signal: report it (rc_report_crash: the fatal-signal finding,
 * its stack the signal's, on the log and in the JSON report, taking no
 * lock that may be held for good and allocating nothing), then hand the
 * signal on: to the handler that was there before ours (the program's,
 * or a sanitizer's), or to the default action, so the process ends with
 * the original signal.  When several threads crash at once, the first
 * reports and the others wait for it (bounded) before they go on, so the
 * process cannot die under a half-written report.
 *
 * A program's handler may end the process (_exit, a sanitizer's report)
 * before we could say anything, so the report comes first.  When it
 * returns instead, the process goes on (a fault fixed and retried, a sent
 * signal ignored): the report is withdrawn, and that handler's signals
 * are its own from then on (a runtime that catches its own faults would
 * have one report per fault).  abort() raises SIGABRT again with the
 * default action after its handler returns, and a fault whose handler
 * put the default action back is retried into it: those reports stand.
 */
static struct sigaction fatal_old[RC_ARRAY_SIZE(fatal_signals)];
static volatile sig_atomic_t fatal_handled[RC_ARRAY_SIZE(fatal_signals)];
static int crash_state;		/* 0, 1 writing, 2 written */
static pid_t crash_tid;		/* the thread writing it */

/* Wait (bounded) until *state is 2: a report another thread writes. */
static void report_wait(const int *state)
{
	struct timespec ts = { 0, 1000000 };
	/* By the clock: other signals cut the naps short. */
	uint64_t end = rc_now_ms() + 15000;

	while (__atomic_load_n(state, __ATOMIC_ACQUIRE) != 2 &&
	       rc_now_ms() < end)
		nanosleep(&ts, NULL);
}

static void crash_wait(void)
{
	report_wait(&crash_state);
}

/* A fault retried into the default action its handler put back. */
static bool dies_on_retry(int sig, const siginfo_t *info)
{
	struct sigaction cur;

	return info && info->si_code > 0 && !sigaction(sig, NULL, &cur) &&
	       !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

/* A handler of the program's, not the default action (or ignored). */
static bool is_handler(const struct sigaction *sa)
{
	if (sa->sa_flags & SA_SIGINFO)
		return sa->sa_sigaction != NULL;
	return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

static void on_fatal(int sig, siginfo_t *info, void *uc)
{
	const struct sigaction *old = NULL;
	int saved = errno, expected = 0;
	bool chained, mine = false;
	unsigned i, k = 0;

	for (i = 0; i < RC_ARRAY_SIZE(fatal_signals); i++)
		if (fatal_signals[i] == sig) {
			old = &fatal_old[i];
			k = i;
		}
	chained = old && is_handler(old);
	if (chained && fatal_handled[k]) {
		/* That handler survived one before: its own business. */
	} else if (__atomic_compare_exchange_n(&crash_state, &expected, 1,
					       false, __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&crash_tid, rc_gettid(), __ATOMIC_RELAXED);
		crashed = 1;
		/* halt_on_error's own abort(): its report is written. */
		if (!rc_report_halted())
			rc_report_crash(sig, info, uc, chained);
		__atomic_store_n(&crash_state, 2, __ATOMIC_RELEASE);
		mine = true;
	} else if (expected == 1 &&
		   __atomic_load_n(&crash_tid, __ATOMIC_RELAXED) ==
		   rc_gettid()) {
		/* A fault in our own report: not the program's to see. */
		die_of(sig);
	} else if (expected == 1) {
		crash_wait();
	}
	if (chained && (old->sa_flags & SA_SIGINFO)) {
		old->sa_sigaction(sig, info, uc);
	} else if (chained) {
		old->sa_handler(sig);
	} else {
		die_of(sig);
	}
	/* The chained handler returned: the process goes on. */
	if (chained && mine && sig != SIGABRT && !dies_on_retry(sig, info)) {
		fatal_handled[k] = 1;
		rc_report_crash_withdrawn(sig);
		__atomic_store_n(&crash_state, 0, __ATOMIC_RELEASE);
	}
	errno = saved;
}

static void install_fatal_handlers(void)
{
	struct sigaction sa, old;
	unsigned i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < RC_ARRAY_SIZE(fatal_signals); i++) {
		/* An ignored signal stays ignored; any other handler (the
		 * program's, a sanitizer's) is called after the report. */
		if (sigaction(fatal_signals[i], NULL, &old) ||
		    (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN))
			continue;
		fatal_old[i] = old;
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

/*
 * An alternate signal stack for every thread that calls into librdmacm,
 * so that a stack overflow still leaves a crash report.  A thread that
 * has one of its own keeps it; ours goes with the thread.
 */
#define ALT_STACK_SIZE (64 * 1024)
static pthread_key_t alt_key;
static pthread_once_t alt_once = PTHREAD_ONCE_INIT;

static void alt_free(void *p)
{
	stack_t ss = { .ss_flags = SS_DISABLE };

	sigaltstack(&ss, NULL);
	munmap(p, ALT_STACK_SIZE);
}

static void alt_key_make(void)
{
	if (pthread_key_create(&alt_key, alt_free))
		alt_key = (pthread_key_t)-1;
}

static void alt_stack_hook(void)
{
	stack_t ss, old;
	void *p;

	rc_alt_done = true;
	if (sigaltstack(NULL, &old) || !(old.ss_flags & SS_DISABLE))
		return;
	pthread_once(&alt_once, alt_key_make);
	p = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return;
	ss.ss_sp = p;
	ss.ss_size = ALT_STACK_SIZE;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL)) {
		munmap(p, ALT_STACK_SIZE);
		return;
	}
	/* The main thread never runs key destructors: its stack stays. */
	if (alt_key != (pthread_key_t)-1)
		pthread_setspecific(alt_key, p);
}

/*
 * Leak findings, grouped by rule and creation stack.  A group lists a few
 * of its objects as examples (handles to look for in a debugger or a
 * log) and counts the rest: they share the kind, the stack and the
 * verdict, so an eighth handle says nothing a fourth did not, and 10^4
 * groups of eight would make them nine tenths of a 12 MB report.
 */
#define LEAK_LISTED 4
struct leak_group {
	struct rc_finding f;
	rc_stack_id stack;
	unsigned unpolled;	/* QPs: completions never polled (track_wr) */
};

/*
 * The groups, and an open-addressing index of them by (rule, stack) so
 * that grouping 10^5 leaked objects from 10^4 creation sites costs one
 * probe per object, not a scan of every group.
 */
struct leak_ctx {
	struct leak_group *g;
	unsigned n, cap;
	unsigned *idx;		/* group index + 1; 0: empty slot */
	unsigned idx_cap;	/* a power of two, > 2 * n */
};

static enum rc_rule leak_rule(const struct rc_obj *o)
{
	switch (o->kind) {
	case RC_K_CHANNEL:
		return RC_R_LEAK_CHANNEL;
	case RC_K_ID:
		if (o->flags & RC_F_EP)
			return RC_R_LEAK_ENDPOINT;
		if ((o->flags & (RC_F_CHILD | RC_F_REJECTED)) ==
		    (RC_F_CHILD | RC_F_REJECTED))
			return RC_R_REQUEST_REJECTED_NOT_DESTROYED;
		return RC_R_LEAK_ID;
	case RC_K_EVENT:
		return RC_R_LEAK_EVENT;
	case RC_K_QP:
		return RC_R_LEAK_QP;
	case RC_K_SRQ:
		return RC_R_LEAK_SRQ;
	case RC_K_MCAST:
		return RC_R_LEAK_MULTICAST;
	case RC_K_ADDRINFO:
		return RC_R_LEAK_ADDRINFO;
	case RC_K_DEVLIST:
	case RC_K_IBV_DEVLIST:
		return RC_R_LEAK_DEVICE_LIST;
	case RC_K_CONTEXT:
		return RC_R_LEAK_CONTEXT;
	case RC_K_PD:
		return RC_R_LEAK_PD;
	case RC_K_MR:
		return RC_R_LEAK_MR;
	case RC_K_MW:
		return RC_R_LEAK_MW;
	case RC_K_COMP_CHANNEL:
		return RC_R_LEAK_COMP_CHANNEL;
	case RC_K_CQ:
		return RC_R_LEAK_CQ;
	case RC_K_AH:
		return RC_R_LEAK_AH;
	case RC_K_XRCD:
		return RC_R_LEAK_XRCD;
	case RC_K_RSOCKET:
		return RC_R_LEAK_RSOCKET;
	default:
		return RC_R_COUNT;
	}
}

static unsigned leak_hash(enum rc_rule rule, rc_stack_id stack)
{
	uint32_t h = (uint32_t)stack * 0x9e3779b1u ^ (uint32_t)rule * 0x85ebca6bu;

	return h ^ h >> 15;
}

/* Rebuild the index with cap slots; false without memory. */
static bool leak_index(struct leak_ctx *x, unsigned cap)
{
	unsigned *idx = calloc(cap, sizeof(*idx)), i, j;

	if (!idx)
		return false;
	for (i = 0; i < x->n; i++) {
		j = leak_hash(x->g[i].f.rule, x->g[i].stack) & (cap - 1);
		while (idx[j])
			j = (j + 1) & (cap - 1);
		idx[j] = i + 1;
	}
	free(x->idx);
	x->idx = idx;
	x->idx_cap = cap;
	return true;
}

/* The group of rule and stack, added if new; NULL without memory. */
static struct leak_group *leak_group(struct leak_ctx *x, enum rc_rule rule,
				     rc_stack_id stack)
{
	struct leak_group *g;
	unsigned j;

	if (2 * (x->n + 1) >= x->idx_cap &&
	    !leak_index(x, x->idx_cap ? 2 * x->idx_cap : 64))
		return NULL;
	for (j = leak_hash(rule, stack) & (x->idx_cap - 1); x->idx[j];
	     j = (j + 1) & (x->idx_cap - 1)) {
		g = &x->g[x->idx[j] - 1];
		if (g->f.rule == rule && g->stack == stack)
			return g;
	}
	if (x->n == x->cap) {
		unsigned ncap = x->cap ? x->cap * 2 : 16;
		struct leak_group *ng;

		ng = realloc(x->g, ncap * sizeof(*ng));
		if (!ng)
			return NULL;
		x->g = ng;
		x->cap = ncap;
	}
	x->idx[j] = x->n + 1;
	g = &x->g[x->n++];
	memset(g, 0, sizeof(*g));
	g->f.rule = rule;
	g->f.stack = stack;
	g->f.max_objs = LEAK_LISTED;
	g->stack = stack;
	return g;
}

/*
 * Completion events the program fetched for a CQ and never acked
 * (whoever made the CQ), grouped by where the first was fetched; count
 * is the number of events.
 */
static void leak_cq_events(struct leak_ctx *x, const struct rc_obj *o)
{
	const struct rc_evhold *e;
	struct rc_cq_state st;
	struct leak_group *g;
	struct rc_obj ev;

	if (!rc_cq_count_get(o->handle, o->gen, &st) || st.unacked <= 0 ||
	    !st.hold.user)
		return;
	e = &st.hold;
	g = leak_group(x, RC_R_LEAK_CQ_EVENTS, e->stack);
	if (!g)
		return;
	g->f.count += st.unacked;
	memset(&ev, 0, sizeof(ev));
	ev.kind = RC_K_CQ_EVENTS;
	ev.handle = o->handle;
	ev.created_tid = e->tid;
	ev.created_stack = e->stack;
	rc_finding_add(&g->f, &ev, "%d fetched for CQ %p, the first by "
		       "thread %d", st.unacked, (void *)o->handle, e->tid);
}

static void leak_fn(const struct rc_obj *o, void *arg)
{
	struct leak_ctx *x = arg;
	struct leak_group *g;
	enum rc_rule rule;
	unsigned n;

	if (o->destroyed || o->pid != rc_pid())
		return;
	if (o->kind == RC_K_CQ)
		leak_cq_events(x, o);
	/* librdmacm's own, and objects we only saw in use. */
	if (o->flags & (RC_F_LIB | RC_F_SEEN))
		return;
	rule = leak_rule(o);
	if (rule == RC_R_COUNT)
		return;
	g = leak_group(x, rule, o->created_stack);
	if (!g)
		return;
	g->f.count++;
	if (o->kind == RC_K_EVENT)
		rc_finding_add(&g->f, o, "%s event fetched by thread %d",
			       rc_event_name(o->u.ev.type), o->u.ev.holder);
	else if (o->kind == RC_K_ID && o->u.id.parent.h)
		rc_finding_add(&g->f, o, "delivered by CONNECT_REQUEST on "
			       "listener %p", (void *)o->u.id.parent.h);
	else if (o->kind == RC_K_QP &&
		 (n = rc_wr_unpolled((const struct ibv_qp *)o->handle))) {
		g->unpolled += n;
		rc_finding_add(&g->f, o, "%u completion%s never polled", n,
			       n == 1 ? "" : "s");
	} else
		rc_finding_add(&g->f, o, NULL);
}

/*
 * Leak blocks in a stable order, whatever the registry's (it hashes
 * addresses): the biggest groups first, then by rule (rules.def order),
 * then by creation stack, frame by frame (within a module, addresses keep
 * their order from run to run), then by handle.
 */
static int cmp_leak(const void *a, const void *b)
{
	const struct leak_group *x = a, *y = b;
	const uintptr_t *px, *py;
	unsigned nx, ny, i;

	if (x->f.count != y->f.count)
		return x->f.count > y->f.count ? -1 : 1;
	if (x->f.rule != y->f.rule)
		return x->f.rule < y->f.rule ? -1 : 1;
	nx = rc_stack_frames(x->stack, &px);
	ny = rc_stack_frames(y->stack, &py);
	for (i = 0; i < nx && i < ny; i++)
		if (px[i] != py[i])
			return px[i] < py[i] ? -1 : 1;
	if (nx != ny)
		return nx < ny ? -1 : 1;
	return x->f.objs[0].handle < y->f.objs[0].handle ? -1 :
	       x->f.objs[0].handle > y->f.objs[0].handle;
}

/*
 * A snapshot's objects are not leaked yet: its messages say they are
 * still alive, and a summary's "alive at exit" reads "alive now".
 */
static const char *leak_summary(enum rc_rule rule, bool now, char *buf,
				size_t len)
{
	const char *s = rc_rules[rule].summary, *at = strstr(s, "at exit");

	if (!now || !at)
		return s;
	snprintf(buf, len, "%.*snow%s", (int)(at - s), s, at + 7);
	return buf;
}

static void leak_check(bool now)
{
	struct leak_ctx x = { NULL, 0, 0, NULL, 0 };
	const char *leaked = now ? "still alive" : "leaked";
	char sum[128];
	unsigned i;

	rc_reg_foreach(leak_fn, &x);
	free(x.idx);
	if (x.n > 1)
		qsort(x.g, x.n, sizeof(*x.g), cmp_leak);
	for (i = 0; i < x.n; i++) {
		struct rc_finding *f = &x.g[i].f;
		const char *what = rc_kind_text(f->objs[0].kind);
		const char *s = leak_summary(f->rule, now, sum, sizeof(sum));
		char unp[64] = "";

		if (x.g[i].unpolled)
			snprintf(unp, sizeof(unp), "; %u completion%s of "
				 "%s WRs never polled", x.g[i].unpolled,
				 x.g[i].unpolled == 1 ? "" : "s",
				 f->count == 1 ? "its" : "their");

		if (f->rule == RC_R_LEAK_CQ_EVENTS)
			snprintf(f->message, sizeof(f->message),
				 "%u completion event%s %s: %s", f->count,
				 f->count == 1 ? "" : "s",
				 now ? "still unacked" : "leaked", s);
		else if (f->count == 1 && f->objs[0].kind == RC_K_RSOCKET)
			snprintf(f->message, sizeof(f->message),
				 "%s %d %s: %s", what,
				 (int)f->objs[0].handle, leaked, s);
		else if (f->count == 1)
			snprintf(f->message, sizeof(f->message),
				 "%s %p %s: %s%s", what,
				 (void *)f->objs[0].handle, leaked, s, unp);
		else
			snprintf(f->message, sizeof(f->message),
				 "%u objects %s (%s): %s%s", f->count,
				 leaked, what, s, unp);
		rc_report(f);
	}
	free(x.g);
}

/*
 * The reports at exit.  They must come after every destructor of the
 * process has run (libfabric, for one, frees its rdma_getaddrinfo lists in
 * an ELF destructor) and before the exit status is final.  Our own ELF
 * destructor runs somewhere inside the dynamic loader's sequence of
 * destructors, which exit() runs as one of its exit handlers: registering
 * an exit handler from there queues it after that whole sequence.  A
 * status is forced with _exit() only then, when nothing is left to run but
 * the stdio flush, which we do first.
 */
static void final_exit(int status, void *arg)
{
	struct rc_summary s;
	sigset_t held, old;
	int forced;

	if (!__atomic_load_n(&rc_used, __ATOMIC_ACQUIRE))
		return;		/* never used librdmacm: no report at all */
	/*
	 * A termination signal now would cut the reports short on this
	 * thread: hold it here, so that another thread takes it and waits
	 * for them (on_term), or it comes when they are written.
	 */
	sigemptyset(&held);
	sigaddset(&held, SIGTERM);
	sigaddset(&held, SIGINT);
	sigaddset(&held, SIGHUP);
	sigaddset(&held, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &held, &old);
	__atomic_store_n(&final_tid, rc_gettid(), __ATOMIC_RELAXED);
	__atomic_store_n(&final_state, 1, __ATOMIC_RELEASE);
	rc_busy++;
	if (rc_opt.leak_check)
		leak_check(false);
	rc_report_summary(&s);
	if (s.errors || s.warnings || s.leaks || s.suppressed ||
	    rc_opt.verbosity)
		rc_report_print_summary();
	rc_report_write_json("exited", false);
	forced = rc_report_exit_status();
	if (forced >= 0) {
		fflush(NULL);
		_exit(forced);
	}
	rc_busy--;
	__atomic_store_n(&final_state, 2, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * exit(), _exit() and _Exit() called by another thread while one writes
 * the reports at exit.  glibc before 2.41 (bug 31997) lets a second
 * exit() end the process at once, under a half-written report: rping's
 * cm thread does, when main destroys the event channel under it (rdma-core
 * f3ae6534a).  The call waits for the reports (bounded), then goes on:
 * which status the process ends with stays the program's race, as without
 * us.  The exit of the thread that writes them, and any exit before or
 * after, go straight on.
 */
static void final_wait(void)
{
	if (__atomic_load_n(&final_state, __ATOMIC_ACQUIRE) == 1 &&
	    __atomic_load_n(&final_tid, __ATOMIC_RELAXED) != rc_gettid())
		report_wait(&final_state);
}

/* Go on with libc's fn of that name, after final_wait. */
static __attribute__((noreturn)) void end_with(enum rc_fn fn, int status)
{
	void (*real)(int) = rc_real_fn(fn);

	final_wait();
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);	/* no libc's? */
}

void exit(int status)
{
	end_with(RC_FN_exit, status);
}

void _exit(int status)
{
	end_with(RC_FN__exit, status);
}

void _Exit(int status)
{
	end_with(RC_FN__Exit, status);
}

__attribute__((destructor)) static void rc_destructor(void)
{
	if (on_exit(final_exit, NULL))
		rc_warn("cannot report at exit: no exit handler");
}

/*
 * The service thread, started at the first intercepted call, does what a
 * signal handler must not (it takes locks and allocates).  Handlers send
 * it the signal number through a pipe:
 * - snapshot_signal: the objects alive now are reported as leaks, the
 *   JSON report is written with status "snapshot", and those leak findings
 *   are forgotten again so that the check at exit counts each object once;
 * - a termination signal with the default action (SIGTERM, SIGINT, SIGHUP,
 *   SIGQUIT): the exit report and the JSON report (status "killed"), after
 *   which the handler lets the signal kill the process, as Valgrind does.
 */
static int svc_pipe[2] = { -1, -1 };	/* handlers -> service thread */
static unsigned snapshots;		/* written by this process */
static int done_pipe[2] = { -1, -1 };	/* service thread -> handlers */
static bool svc_running;
static int term_started;

static const int term_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };

/* Die of sig, as the default action would have had it. */
static void die_of(int sig)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

static void on_snapshot(int sig)
{
	int saved = errno;
	char b = (char)sig;

	if (write(svc_pipe[1], &b, 1) < 0)
		(void)0;	/* a snapshot is already pending */
	errno = saved;
}

static void on_term(int sig)
{
	struct pollfd p = { .fd = done_pipe[0], .events = POLLIN };
	char b = (char)sig;
	uint64_t end;

	if (__atomic_load_n(&final_state, __ATOMIC_ACQUIRE)) {
		/* the reports at exit are written (or being): they stand */
		report_wait(&final_state);
		die_of(sig);
		return;
	}
	if (__atomic_load_n(&svc_running, __ATOMIC_ACQUIRE)) {
		if (!__atomic_exchange_n(&term_started, 1, __ATOMIC_ACQ_REL) &&
		    write(svc_pipe[1], &b, 1) < 0)
			(void)0;	/* the pipe is full: die unreported */
		/*
		 * Wait for the report, unless this thread is inside our own
		 * bookkeeping and may hold a lock the report needs.  The
		 * timeout bounds a report that cannot finish.
		 */
		for (end = rc_now_ms() + 10000; !rc_busy && rc_now_ms() < end;)
			if (poll(&p, 1, 100) > 0)
				break;
	}
	die_of(sig);
}

static void *service_thread(void *arg)
{
	char b;

	/* Every signal blocked (rc_thread_create): handlers run elsewhere. */
	rc_busy++;	/* our own thread: never tracked */
	while (read(svc_pipe[0], &b, 1) == 1) {
		if (b == rc_opt.snapshot_signal) {
			leak_check(true);
			/* Its own file: %n, or a .snapshot.N suffix. */
			rc_path_seq = ++snapshots;
			rc_report_write_json("snapshot", false);
			rc_path_seq = 0;
			rc_report_forget_leaks();
			continue;
		}
		leak_check(false);
		rc_report_set_signal(b);
		rc_report_print_summary();
		rc_report_write_json("killed", false);
		if (write(done_pipe[1], &b, 1) < 0)
			(void)0;
		return NULL;
	}
	return NULL;
}

/* snapshot_signal: only signals that mean nothing by default. */
static bool snapshot_signal_ok(int sig)
{
	return sig == SIGUSR1 || sig == SIGUSR2 ||
	       (sig >= SIGRTMIN && sig <= SIGRTMAX);
}

static void handle(int sig, void (*fn)(int), int flags, bool only_default)
{
	struct sigaction sa, old;

	/* Never take a signal away from the host program. */
	if (only_default &&
	    (sigaction(sig, NULL, &old) || old.sa_handler != SIG_DFL ||
	     (old.sa_flags & SA_SIGINFO)))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		rc_warn("cannot handle signal %d", sig);
}

static void start_services(void)
{
	pthread_attr_t attr;
	pthread_t t;
	unsigned i;
	int snap = rc_opt.snapshot_signal;

	install_fatal_handlers();
	if (pipe2(svc_pipe, O_CLOEXEC | O_NONBLOCK) ||
	    fcntl(svc_pipe[0], F_SETFL, 0) ||
	    pipe2(done_pipe, O_CLOEXEC)) {
		rc_warn("no reports on signals: no pipe");
		return;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (rc_thread_create(&t, &attr, service_thread, NULL)) {
		rc_warn("no reports on signals: cannot start a thread");
		pthread_attr_destroy(&attr);
		return;
	}
	pthread_attr_destroy(&attr);
	__atomic_store_n(&svc_running, true, __ATOMIC_RELEASE);
	if (snap && !snapshot_signal_ok(snap)) {
		rc_complain("snapshot_signal=%d: use SIGUSR1 (%d), SIGUSR2 (%d) "
			    "or SIGRTMIN..SIGRTMAX (%d..%d); snapshots are off",
			    snap, SIGUSR1, SIGUSR2, SIGRTMIN, SIGRTMAX);
		snap = 0;
	}
	if (snap)
		handle(snap, on_snapshot, SA_RESTART, false);
	for (i = 0; i < RC_ARRAY_SIZE(term_signals); i++)
		if (term_signals[i] != snap)
			handle(term_signals[i], on_term, 0, true);
}

/*
 * The first intercepted call of this process: from here on it writes
 * reports, and the signal handlers and the service thread start.  A
 * process that never calls librdmacm (a shell or timeout(1) that inherited
 * LD_PRELOAD) starts nothing and writes nothing.
 */
static void first_use_hook(void)
{
	if (__atomic_exchange_n(&rc_used, true, __ATOMIC_ACQ_REL))
		return;
	rc_busy++;
	start_services();
	rc_busy--;
}

/*
 * A fork child: the service thread did not survive, and the pipes are
 * shared with the parent's.  The child starts its own at its first call;
 * until then its handlers only let the signal act.
 */
static void reset_services(void)
{
	unsigned i;

	__atomic_store_n(&rc_used, false, __ATOMIC_RELAXED);
	__atomic_store_n(&svc_running, false, __ATOMIC_RELEASE);
	term_started = 0;
	snapshots = 0;		/* the child's own, from 1 */
	for (i = 0; i < 2; i++) {
		if (svc_pipe[i] >= 0)
			close(svc_pipe[i]);
		if (done_pipe[i] >= 0)
			close(done_pipe[i]);
		svc_pipe[i] = done_pipe[i] = -1;
	}
}

static void init(void)
{
	rc_options_defaults();
	rc_options_parse(getenv("RDMACHECK_OPTIONS"));
	if (rc_opt.help) {
		/* As the sanitizers' help=1; nothing else has started. */
		rc_options_print_help(STDERR_FILENO);
		_exit(0);
	}
	rc_verbosity = rc_opt.verbosity;
	rc_reg_init();
	rc_stack_init();
	rc_stack_set_depth(rc_opt.stack_depth);
	rc_stack_set_fast(rc_opt.fast_unwind);
	rc_stack_set_skip(rc_caller_internal);
	rc_interpose_init();
	rc_report_init();
	pthread_atfork(NULL, NULL, atfork_child);
}

static void init_hook(void)
{
	int expected = RC_INIT_NONE;

	if (__atomic_compare_exchange_n(&rc_init_state, &expected,
					RC_INIT_RUNNING, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		init_tid = rc_gettid();
		rc_busy++;
		init();
		rc_busy--;
		__atomic_store_n(&rc_init_state, RC_INIT_DONE, __ATOMIC_RELEASE);
		return;
	}
	/* Re-entered from our own initialisation: go on untracked. */
	if (init_tid == rc_gettid())
		return;
	while (__atomic_load_n(&rc_init_state, __ATOMIC_ACQUIRE) !=
	       RC_INIT_DONE)
		sched_yield();
}

/* The call protocol's view of the lifecycle (shim/call.h). */
const struct rc_lifecycle_hooks rc_lifecycle_hooks = {
	.init = init_hook,
	.first_use = first_use_hook,
	.alt_stack = alt_stack_hook,
};

__attribute__((constructor)) static void rc_constructor(void)
{
	rc_ensure_init();
}
