/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmacheck-probe.c - which of the librdmacm version nodes that
 * librdmacheck.so does not export itself the librdmacm.so.1 the dynamic
 * loader finds here has (run with the program's LD_LIBRARY_PATH): one
 * node a line.  The launcher preloads the shim's extension object of each
 * (src/shim/gen-api.sh), so that the newer functions are checked where the
 * library has them and never advertised where it has not.
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

static const struct {
	const char *node, *fn;	/* a function of that node */
} probes[] = {
#include "tools/probe_nodes.h"
	{ NULL, NULL }
};

int main(void)
{
	void *h = dlopen("librdmacm.so.1", RTLD_LAZY | RTLD_LOCAL);
	size_t i;

	if (!h)
		return 0;	/* no librdmacm: nothing to add */
	for (i = 0; probes[i].node; i++)
		if (dlvsym(h, probes[i].fn, probes[i].node))
			puts(probes[i].node);
	return 0;
}
