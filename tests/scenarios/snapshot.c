/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A snapshot on a signal: with snapshot_signal=12 the program signals
 * itself while a channel and an id are alive, waits until the JSON report
 * says "snapshot" (reading the file: a readiness check, not a sleep), and
 * leaves with _exit so that the report the test reads is the snapshot
 * (at PATH.snapshot.1: a snapshot never takes the exit report's name).
 * "twice" is tests/scenarios/snapshot-files.sh's.
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
	if (n + sizeof(".snapshot.1") > len)
		scn_die("json path too long");
	memcpy(buf, p, n);
	/* The first snapshot's own file, beside the exit report's. */
	memcpy(buf + n, ".snapshot.1", sizeof(".snapshot.1"));
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

/* Signal for a snapshot and wait until path holds it. */
static void snapshot(const char *path)
{
	int i;

	raise(SIGUSR2);
	for (i = 0; i < 1000000 && !is_snapshot(path); i++)
		sched_yield();
	if (!is_snapshot(path))
		scn_die("no snapshot report");
}

/*
 * "twice": two snapshots, awaited at $SNAP_1 and $SNAP_2, a leak added
 * between them, then a normal exit (the exit report has both leaks).
 */
static int twice(void)
{
	const char *p1 = getenv("SNAP_1"), *p2 = getenv("SNAP_2");
	struct rdma_event_channel *ch;

	if (!p1 || !p2)
		scn_die("SNAP_1 and SNAP_2 not set");
	ch = scn_channel();
	scn_id(ch);
	snapshot(p1);
	scn_id(ch);
	snapshot(p2);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	char path[4096];

	if (argc > 1 && !strcmp(argv[1], "twice")) {
		scn_mode(argc, argv);
		return twice();
	}
	scn_bad(argc, argv);
	json_path(path, sizeof(path));
	ch = scn_channel();
	scn_id(ch);
	snapshot(path);
	fflush(stdout);
	_exit(0);
}
