/*
 * A host that crashes after creating objects: rdmacheck must still leave
 * a JSON report (status "crashed") and let the crash happen.  argv[1]:
 *   bad          raise(SIGSEGV)
 *   overflow     a stack overflow: the report needs the alternate signal
 *                stack the shim gives the thread
 *   own-handler  the program's own SIGSEGV handler runs after the report
 *                (it exits 42)
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

int main(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);
	struct rdma_event_channel *ch;

	alarm(60);
	if (!strcmp(mode, "storm"))
		return storm();
	if (!strcmp(mode, "own-handler"))
		signal(SIGSEGV, own_handler);
	ch = scn_channel();
	scn_id(ch);
	if (!strcmp(mode, "overflow"))
		return recurse(NULL, 0);
	raise(SIGSEGV);
	return 0;
}
