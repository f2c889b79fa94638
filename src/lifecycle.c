/*
 * lifecycle.c - the shim's life: initialisation (constructor, or the first
 * intercepted call if that comes earlier), the leak check and reports at
 * exit with the forced exit status, snapshots on a signal, fork handling,
 * and the fatal-signal handlers that still leave a JSON report when the
 * host crashes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "symbolize.h"
#include "wrap.h"

void rc_pid_atfork_child(void);

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static int init_state;
static pid_t init_tid;
static volatile sig_atomic_t crashed;

static const int fatal_signals[] = {
	SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
};

static void atfork_child(void)
{
	rc_gettid_atfork_child();
	rc_thread_atfork_child();
	rc_pid_atfork_child();
	rc_reg_atfork_child();
	rc_stack_atfork_child();
	rc_symbolize_atfork_child();
	rc_report_atfork_child();
	rc_watch_atfork_child();
	rc_acked_atfork_child();
}

/*
 * A fatal signal: write what we know (taking no lock that may be held),
 * then let the default action happen.  Nothing here allocates on purpose;
 * see rc_report_write_json's crash_safe mode.
 */
static void on_fatal(int sig)
{
	if (!crashed) {
		crashed = 1;
		rc_report_write_json("crashed", true);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_fatal_handlers(void)
{
	struct sigaction sa, old;
	unsigned i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < RC_ARRAY_SIZE(fatal_signals); i++) {
		/* Never take a signal away from the host program. */
		if (sigaction(fatal_signals[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_DFL)
			sigaction(fatal_signals[i], &sa, NULL);
	}
}

/* Leak findings, grouped by rule and creation stack. */
struct leak_group {
	struct rc_finding f;
	rc_stack_id stack;
};

struct leak_ctx {
	struct leak_group *g;
	unsigned n, cap;
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
		return RC_R_LEAK_DEVICE_LIST;
	default:
		return RC_R_COUNT;
	}
}

static void leak_fn(const struct rc_obj *o, void *arg)
{
	struct leak_ctx *x = arg;
	struct leak_group *g;
	enum rc_rule rule;
	unsigned i;

	if (o->destroyed || (o->flags & RC_F_LIB) || o->pid != rc_pid())
		return;
	rule = leak_rule(o);
	if (rule == RC_R_COUNT)
		return;
	for (i = 0; i < x->n; i++)
		if (x->g[i].f.rule == rule && x->g[i].stack == o->created_stack)
			break;
	if (i == x->n) {
		if (x->n == x->cap) {
			unsigned ncap = x->cap ? x->cap * 2 : 16;
			struct leak_group *ng;

			ng = realloc(x->g, ncap * sizeof(*ng));
			if (!ng)
				return;
			x->g = ng;
			x->cap = ncap;
		}
		g = &x->g[x->n++];
		memset(g, 0, sizeof(*g));
		g->f.rule = rule;
		g->f.stack = o->created_stack;
		g->stack = o->created_stack;
	}
	g = &x->g[i];
	g->f.count++;
	if (o->kind == RC_K_EVENT)
		rc_finding_add(&g->f, o, "%s event fetched by thread %d",
			       rc_event_name(o->u.ev.type), o->u.ev.holder);
	else if (o->kind == RC_K_ID && o->u.id.parent.h)
		rc_finding_add(&g->f, o, "delivered by CONNECT_REQUEST on "
			       "listener %p", (void *)o->u.id.parent.h);
	else
		rc_finding_add(&g->f, o, NULL);
}

static void leak_check(void)
{
	struct leak_ctx x = { NULL, 0, 0 };
	unsigned i;

	rc_reg_foreach(leak_fn, &x);
	for (i = 0; i < x.n; i++) {
		struct rc_finding *f = &x.g[i].f;
		const char *what = rc_kind_text(f->objs[0].kind);

		if (f->count == 1)
			snprintf(f->message, sizeof(f->message),
				 "%s %p leaked: %s", what,
				 (void *)f->objs[0].handle,
				 rc_rules[f->rule].summary);
		else
			snprintf(f->message, sizeof(f->message),
				 "%u objects leaked (%s): %s", f->count,
				 what, rc_rules[f->rule].summary);
		rc_report(f);
	}
	free(x.g);
}

static void at_exit(void)
{
	struct rc_summary s;
	int status;

	rc_busy++;
	if (rc_opt.leak_check)
		leak_check();
	rc_report_summary(&s);
	if (s.errors || s.warnings || s.leaks || s.suppressed ||
	    rc_opt.verbosity)
		rc_report_print_summary();
	rc_report_write_json("exited", false);
	status = rc_report_exit_status();
	if (status >= 0) {
		fflush(NULL);
		_exit(status);
	}
	rc_busy--;
}

/*
 * Snapshots: the signal handler only writes a byte to a pipe (async-signal
 * safe); a thread started at init does the work: the objects alive now
 * are reported as leaks, the JSON report is written with status
 * "snapshot", and those leak findings are forgotten again so that the
 * check at exit counts each object once.
 */
static int snap_pipe[2] = { -1, -1 };

static void on_snapshot(int sig)
{
	int saved = errno;
	char b = 1;

	if (write(snap_pipe[1], &b, 1) < 0)
		(void)0;	/* a snapshot is already pending */
	errno = saved;
}

static void *snapshot_thread(void *arg)
{
	char b;

	rc_busy++;	/* our own thread: never tracked */
	while (read(snap_pipe[0], &b, 1) == 1) {
		leak_check();
		rc_report_write_json("snapshot", false);
		rc_report_forget_leaks();
	}
	return NULL;
}

static void start_snapshots(int sig)
{
	struct sigaction sa;
	pthread_attr_t attr;
	pthread_t t;

	if (pipe2(snap_pipe, O_CLOEXEC | O_NONBLOCK) ||
	    fcntl(snap_pipe[0], F_SETFL, 0)) {
		rc_warn("snapshots disabled: no pipe");
		return;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, snapshot_thread, NULL)) {
		rc_warn("snapshots disabled: cannot start a thread");
		pthread_attr_destroy(&attr);
		return;
	}
	pthread_attr_destroy(&attr);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_snapshot;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		rc_warn("snapshots disabled: cannot handle signal %d", sig);
}

static void init(void)
{
	rc_options_defaults();
	rc_options_parse(getenv("RDMACHECK_OPTIONS"));
	rc_verbosity = rc_opt.verbosity;
	rc_reg_init();
	rc_stack_init();
	rc_stack_set_depth(rc_opt.stack_depth);
	rc_stack_set_skip(rc_caller_internal);
	rc_interpose_init();
	rc_report_init();
	pthread_atfork(NULL, NULL, atfork_child);
	atexit(at_exit);
	install_fatal_handlers();
	if (rc_opt.snapshot_signal)
		start_snapshots(rc_opt.snapshot_signal);
}

void rc_ensure_init(void)
{
	int expected = INIT_NONE;

	if (RC_LIKELY(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) ==
		      INIT_DONE))
		return;
	if (__atomic_compare_exchange_n(&init_state, &expected, INIT_RUNNING,
					false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		init_tid = rc_gettid();
		rc_busy++;
		init();
		rc_busy--;
		__atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
		return;
	}
	/* Re-entered from our own initialisation: go on untracked. */
	if (init_tid == rc_gettid())
		return;
	while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE)
		sched_yield();
}

__attribute__((constructor)) static void rc_constructor(void)
{
	rc_ensure_init();
}
