/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Loads librdmacm only through a plugin dlopen()ed with RTLD_LOCAL after
 * start; the program itself does not link librdmacm. */
#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int bad = argc < 2 || strcmp(argv[1], "clean");
	char path[4096];
	int (*run)(int);
	void *h;

	alarm(30);
	snprintf(path, sizeof(path), "%s/.libs/dlopen_plugin.so",
		 getenv("SCN_DIR") ? getenv("SCN_DIR") : ".");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 99;
	}
	run = (int (*)(int))dlsym(h, "plugin_run");
	return run ? run(bad) : 99;
}
