/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * exit_main.c - how a process ends.  argv[1]:
 *   clean      a dlopen()ed plugin frees its addrinfo list in its ELF
 *              destructor; the program's atexit handler and the plugin's
 *              destructor both run; no finding, exit status 0
 *   bad        the same, and the program leaks a cm id: leak-id, and the
 *              exit status is forced (23) only after both ran
 *   child      the program leaks a cm id, then runs /bin/true through
 *              system(): the shell and true inherit LD_PRELOAD and the
 *              json= path but never use librdmacm, so they must not
 *              write over this process's report
 *   sigterm    the program leaks a cm id and is killed by SIGTERM: the
 *              report still comes (status "killed"), then the process dies
 *              of that signal
 *   own-term   the program has its own SIGTERM handler, which is left
 *              alone: it asks main to stop, and main returns cleanly
 *   sigterm-threads
 *              as sigterm, after a call that starts the watchdog: every
 *              thread but main is the shim's and must block SIGTERM, or
 *              the signal may land where its handler cannot wait for the
 *              report (exit 97 if one does not)
 *   second-exit
 *              the program leaks LEAKS cm ids, and another thread calls
 *              exit(7) while main's exit writes the shim's reports, as
 *              rping 44.0's cm thread may: the JSON report must still be
 *              whole, and the status the forced one (23)
 */
#define _GNU_SOURCE		/* F_SETPIPE_SZ */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "scn.h"

static void say_atexit(void)
{
	static const char msg[] = "atexit handler ran\n";

	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
}

static NOINLINE struct rdma_cm_id *leak_id(struct rdma_event_channel *ch)
{
	return scn_id(ch);
}

/* The threads other than this one, and how many of them take SIGTERM. */
static int others_taking_term(int *others)
{
	char path[300], line[256];
	struct dirent *d;
	int bad = 0;
	DIR *dir;
	FILE *f;

	*others = 0;
	dir = opendir("/proc/self/task");
	if (!dir)
		scn_die("opendir /proc/self/task");
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' || atoi(d->d_name) == getpid())
			continue;
		(*others)++;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* gone meanwhile */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "SigBlk:", 7) &&
			    !(strtoull(line + 7, NULL, 16) &
			      (1ULL << (SIGTERM - 1)))) {
				fprintf(stderr, "exit_main: thread %s takes "
					"SIGTERM\n", d->d_name);
				bad++;
			}
		fclose(f);
	}
	closedir(dir);
	return bad;
}

static volatile sig_atomic_t stop;

#define LEAKS 2000

/*
 * second-exit: stderr is a pipe, filled up before main returns, so that
 * the shim's first report at exit blocks main in write(2, ...) inside
 * its reports.  Then (this thread sees it in /proc) another thread begins
 * to drain the pipe (dropping the filler, passing the rest on), and this
 * one calls exit(7): with the reports at exit under way, for certain.
 */
static int pipe_in, pass_to = -1;
static size_t filler;

static void *drain(void *arg)
{
	char buf[4096];
	size_t skip = filler;
	ssize_t n;

	(void)arg;
	while ((n = read(pipe_in, buf, sizeof(buf))) > 0) {
		size_t k = skip < (size_t)n ? skip : (size_t)n;

		skip -= k;
		if (write(pass_to, buf + k, (size_t)n - k) < 0)
			_exit(96);
	}
	return NULL;
}

/* Whether main (thread id tid) is blocked in write(2, ...). */
static bool main_in_write(void)
{
	char path[64], line[256];
	long nr = -1, fd = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
		 (int)getpid());
	f = fopen(path, "r");
	if (!f)
		scn_die("fopen /proc/self/task/TID/syscall");
	if (fgets(line, sizeof(line), f))
		sscanf(line, "%ld %lx", &nr, &fd);
	fclose(f);
	return nr == SYS_write && fd == STDERR_FILENO;
}

static void *second_exit(void *arg)
{
	static const char msg[] = "second exit while the report is written\n";
	struct timespec ts = { 0, 1000000 };
	pthread_t t;

	(void)arg;
	while (!main_in_write())
		nanosleep(&ts, NULL);	/* a readiness poll: main exits */
	if (pthread_create(&t, NULL, drain, NULL))
		_exit(96);
	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
	exit(7);
}

/* stderr into a pipe of one page, full. */
static void fill_stderr(void)
{
	static const char pad[64] = "filler";
	int p[2], fl;
	ssize_t n;

	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, 4096) < 0 ||
	    (pass_to = dup(STDERR_FILENO)) < 0 ||
	    dup2(p[1], STDERR_FILENO) < 0 || close(p[1]))
		scn_die("pipe/dup");
	pipe_in = p[0];
	fl = fcntl(STDERR_FILENO, F_GETFL);
	fcntl(STDERR_FILENO, F_SETFL, fl | O_NONBLOCK);
	while ((n = write(STDERR_FILENO, pad, sizeof(pad))) > 0)
		filler += (size_t)n;
	if (errno != EAGAIN)
		scn_die("filling the pipe");
	fcntl(STDERR_FILENO, F_SETFL, fl);
}

static void own_term(int sig)
{
	static const char msg[] = "own SIGTERM handler ran\n";

	if (write(STDOUT_FILENO, msg, strlen(msg)) < 0)
		_exit(96);
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *mode = scn_mode(argc, argv);
	struct rdma_event_channel *ch = NULL;
	char path[4096];
	void (*lookup)(void);
	void *h;

	if (!strcmp(mode, "own-term"))
		signal(SIGTERM, own_term);
	if (!strcmp(mode, "clean") || !strcmp(mode, "bad")) {
		snprintf(path, sizeof(path), "%s/.libs/exit_plugin.so",
			 getenv("SCN_DIR") ? getenv("SCN_DIR") : ".");
		h = dlopen(path, RTLD_NOW);
		lookup = h ? (void (*)(void))dlsym(h, "plugin_lookup") : NULL;
		if (!lookup) {
			fprintf(stderr, "exit_main: %s\n", dlerror());
			return 99;
		}
		lookup();
		atexit(say_atexit);
	}
	ch = scn_channel();
	if (!strcmp(mode, "second-exit")) {
		pthread_t t;
		int i;

		for (i = 1; i < LEAKS; i++)
			leak_id(ch);
		fill_stderr();
		if (pthread_create(&t, NULL, second_exit, NULL))
			scn_die("pthread_create");
	}
	if (strcmp(mode, "clean") && strcmp(mode, "own-term"))
		leak_id(ch);
	else
		rdma_destroy_event_channel(ch);
	if (!strcmp(mode, "child") && system("/bin/true"))
		scn_die("system");
	if (!strcmp(mode, "sigterm-threads")) {
		int others;

		/* a call the watchdog watches: it starts */
		if (rdma_destroy_id(scn_id(ch)))
			scn_die("rdma_destroy_id");
		if (others_taking_term(&others))
			return 97;
		if (others < 2) {
			fprintf(stderr, "exit_main: %d shim threads, want the "
				"service thread and the watchdog\n", others);
			return 98;
		}
		raise(SIGTERM);
		return 95;
	}
	if (!strcmp(mode, "sigterm") || !strcmp(mode, "own-term")) {
		raise(SIGTERM);
		return stop ? 0 : 95;	/* sigterm: not reached */
	}
	return 0;
}
