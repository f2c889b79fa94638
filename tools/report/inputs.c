/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * inputs.c - rdmacheck-report: the inputs: report paths from the command line,
 * and the *.json files of a directory, sorted by name.
 */
#include "report_tool.h"

void add_input(char *path)
{
	if (ninputs == cap_inputs) {
		cap_inputs = cap_inputs ? 2 * cap_inputs : 16;
		inputs = xrealloc(inputs, cap_inputs, sizeof(*inputs));
	}
	inputs[ninputs++] = path;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.json directly in dir, sorted by name. */
void add_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t first = ninputs, l;
	char *path;

	if (!d)
		die("%s: cannot open directory: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		l = strlen(de->d_name);
		if (l <= 5 || strcmp(de->d_name + l - 5, ".json"))
			continue;
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			die("out of memory");
		add_input(path);
	}
	closedir(d);
	if (ninputs == first)
		die("%s: no *.json report in this directory", dir);
	qsort(inputs + first, ninputs - first, sizeof(*inputs), cmp_str);
}
