/*
 * A snapshot on a signal: with snapshot_signal=12 the program signals
 * itself while a channel and an id are alive, waits until the JSON report
 * says "snapshot" (reading the file: a readiness check, not a sleep), and
 * leaves with _exit so that the report the test reads is the snapshot.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scn.h"

/* The json= path of RDMACHECK_OPTIONS (no %p in the tests). */
static void json_path(char *buf, size_t len)
{
	const char *o = getenv("RDMACHECK_OPTIONS"), *p;
	size_t n;

	p = o ? strstr(o, "json=") : NULL;
	if (!p)
		scn_die("no json= in RDMACHECK_OPTIONS");
	p += 5;
	n = strcspn(p, ":");
	if (n >= len)
		scn_die("json path too long");
	memcpy(buf, p, n);
	buf[n] = 0;
}

static int is_snapshot(const char *path)
{
	char buf[65536];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, "\"status\": \"snapshot\"") ||
	       strstr(buf, "\"status\":\"snapshot\"");
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	char path[4096];
	int i;

	scn_bad(argc, argv);
	json_path(path, sizeof(path));
	ch = scn_channel();
	scn_id(ch);
	raise(SIGUSR2);
	for (i = 0; i < 1000000 && !is_snapshot(path); i++)
		sched_yield();
	if (!is_snapshot(path))
		scn_die("no snapshot report");
	fflush(stdout);
	_exit(0);
}
