/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Clean: a parent with a channel and an id forks; the child exits without
 * touching them.  The child must not report the parent's objects as its
 * leaks, and the parent's own report must stay clean.
 */
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "scn.h"

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int status;
	pid_t pid;

	scn_bad(argc, argv);
	ch = scn_channel();
	id = scn_id(ch);
	pid = fork();
	if (pid < 0)
		scn_die("fork");
	if (pid == 0)
		exit(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		scn_die("child exit status");
	if (rdma_destroy_id(id))
		scn_die("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}
