/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A host that crashes after creating objects: rdmacheck must report it
 * (a fatal-signal finding whose stack starts where it crashed, on the log
 * and in a JSON report with status "crashed") and let the crash happen.
 * argv[1]:
 *   bad          a NULL dereference in crash_null()
 *   raise        raise(SIGSEGV) in crash_raise(): a signal sent, no fault
 *   abort        abort() in crash_abort()
 *   overflow     a stack overflow: the report needs the alternate signal
 *                stack the shim gives the thread
 *   own-handler  the program's own SIGSEGV handler runs after the report
 *                (it exits 42)
 *   recover      the program's own SIGSEGV handler, installed first, makes
 *                the page that faulted readable and returns: the access is
 *                retried and the program goes on and exits 0 (no crash)
 *   reset        the program's own SIGSEGV handler puts the default action
 *                back and returns: the NULL dereference is retried into it
 *   clean        no crash: exits 0
 *   term-at-exit SIGTERM comes while the reports at exit are written (a
 *                thread reads our stderr and sends it when the summary
 *                line shows): the process dies of it, after the report
 *   storm        200 forked children, each crashing in two threads at once
 *                while a third keeps asking for snapshots: every child must
 *                leave its crash report (json= must hold %p); prints the
 *                count and exits 0 only for 200 of 200
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "scn.h"

static pthread_barrier_t go;

static volatile int depth_limit = -1;	/* never reached: -1 */

static NOINLINE int recurse(volatile char *p, int depth)
{
	volatile char buf[256];

	buf[0] = p ? p[0] + 1 : 0;
	if (depth == depth_limit)
		return buf[0];
	return recurse(buf, depth + 1) + buf[0];
}

static void own_handler(int sig)
{
	static const char msg[] = "own SIGSEGV handler ran\n";

	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
	_exit(42);
}

static NOINLINE void crash_null(volatile int *p)
{
	*p = 1;
}

static NOINLINE void crash_raise(void)
{
	raise(SIGSEGV);
}

static NOINLINE void crash_abort(void)
{
	abort();
}

/* recover: a page without access until the handler gives it some. */
static char *locked;
static size_t page;

static void recover_handler(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "own SIGSEGV handler: page made readable\n";
	char *a = si->si_addr;

	(void)sig;
	(void)uc;
	if (a < locked || a >= locked + page ||
	    mprotect(locked, page, PROT_READ | PROT_WRITE))
		_exit(97);
	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
}

static void recover(void)
{
	struct sigaction sa;

	page = (size_t)sysconf(_SC_PAGESIZE);
	locked = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (locked == MAP_FAILED)
		scn_die("mmap");
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = recover_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		scn_die("sigaction");
}

static void reset_handler(int sig)
{
	static const char msg[] = "own SIGSEGV handler: default action back\n";

	signal(sig, SIG_DFL);
	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
}

static void *crasher(void *arg)
{
	pthread_barrier_wait(&go);
	*(volatile int *)arg = 1;	/* NULL: both threads at once */
	return NULL;
}

static void *snapshots(void *arg)
{
	/* SIGUSR2 is snapshot_signal: the service thread writes reports. */
	kill(getpid(), SIGUSR2);
	pthread_barrier_wait(&go);
	for (;;)
		kill(getpid(), SIGUSR2);
	return NULL;
}

static void storm_child(void)
{
	pthread_t t[3];

	scn_id(scn_channel());
	pthread_barrier_init(&go, NULL, 3);
	pthread_create(&t[0], NULL, snapshots, NULL);
	pthread_create(&t[1], NULL, crasher, NULL);
	pthread_create(&t[2], NULL, crasher, NULL);
	for (;;)
		pause();	/* returns after each snapshot signal */
}

/* The child's report says "crashed". */
static bool crashed(const char *dir, pid_t pid)
{
	char path[4096], buf[1 << 16];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/r.%d.json", dir, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, "\"status\": \"crashed\"") != NULL;
}

static int storm(void)
{
	const char *dir = getenv("CRASH_STORM_DIR");
	int i, ok = 0, status;
	pid_t pid;

	if (!dir)
		scn_die("CRASH_STORM_DIR");
	for (i = 0; i < 200; i++) {
		pid = fork();
		if (pid < 0)
			scn_die("fork");
		if (pid == 0)
			storm_child();
		if (waitpid(pid, &status, 0) != pid)
			scn_die("waitpid");
		ok += WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV &&
		      crashed(dir, pid);
	}
	printf("crash reports: %d of 200\n", ok);
	return ok == 200 ? 0 : 1;
}

/* Echo stderr (a pipe) to the real one; SIGTERM at the summary line. */
static void *term_reader(void *arg)
{
	FILE *in = fdopen((int)(long)arg, "r");
	char line[512];
	int sent = 0;

	while (in && fgets(line, sizeof(line), in)) {
		fputs(line, stdout);
		if (!sent && strstr(line, "rdmacheck: ") &&
		    strstr(line, " leaked objects")) {
			sent = 1;
			kill(getpid(), SIGTERM);
		}
	}
	return NULL;
}

static void term_at_exit(void)
{
	pthread_t t;
	int p[2];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (pipe(p) || dup2(p[1], STDERR_FILENO) < 0)
		scn_die("pipe");
	close(p[1]);
	if (pthread_create(&t, NULL, term_reader, (void *)(long)p[0]))
		scn_die("pthread_create");
}

int main(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;

	alarm(60);
	if (!strcmp(mode, "storm"))
		return storm();
	/* Before the first intercepted call: the shim's handler chains. */
	if (!strcmp(mode, "own-handler"))
		signal(SIGSEGV, own_handler);
	if (!strcmp(mode, "recover"))
		recover();
	if (!strcmp(mode, "reset"))
		signal(SIGSEGV, reset_handler);
	ch = scn_channel();
	id = scn_id(ch);
	if (!strcmp(mode, "term-at-exit")) {
		term_at_exit();
		return 0;	/* ch and id leak: the report has findings */
	}
	if (!strcmp(mode, "overflow"))
		return recurse(NULL, 0);
	if (!strcmp(mode, "raise"))
		crash_raise();
	else if (!strcmp(mode, "abort"))
		crash_abort();
	else if (!strcmp(mode, "recover"))
		crash_null((volatile int *)locked);
	else if (strcmp(mode, "clean"))
		crash_null(NULL);
	if (!strcmp(mode, "recover") || !strcmp(mode, "clean")) {
		if (rdma_destroy_id(id))
			scn_die("rdma_destroy_id");
		rdma_destroy_event_channel(ch);
		printf("%s: exited normally\n", mode);
		return 0;
	}
	return 0;
}
