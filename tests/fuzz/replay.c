/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * replay.c - main() for a fuzz harness without libFuzzer: every file of
 * its corpus (the seeds and the crashes/ reproducers, in name order) goes
 * once through LLVMFuzzerTestOneInput, as libFuzzer would pass it.  Built
 * by the ordinary compiler, so make check needs no clang, and a crash
 * that was fixed stays fixed.
 *
 *   replay-NAME [FILE|DIR]...   default: $top_srcdir/tests/fuzz/NAME
 *
 * Each input gets REPLAY_TIMEOUT seconds: a hang that comes back ends the
 * run with SIGALRM instead of stalling make check.
 *
 * REPLAY_CANARY=1 reads one byte past a buffer first, which the sanitizer
 * build must stop: tests/gates/fuzz-replay.sh's proof that a memory error
 * in a replay would fail make check.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#define REPLAY_TIMEOUT 60

/* A harness may set itself up once, as libFuzzer lets it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned ninputs;

static void die(const char *what, const char *path)
{
	fprintf(stderr, "replay-%s: %s: %s\n", FUZZ_NAME, path, what);
	exit(99);
}

static void replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long size;

	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET))
		die("cannot read", path);
	/* Exactly size bytes, so that ASan sees a read past the end. */
	buf = malloc(size ? size : 1);
	if (!buf || fread(buf, 1, size, f) != (size_t)size)
		die("cannot read", path);
	fclose(f);
	printf("replay-%s: %s\n", FUZZ_NAME, path);
	fflush(stdout);
	alarm(REPLAY_TIMEOUT);
	LLVMFuzzerTestOneInput(buf, size);
	alarm(0);
	free(buf);
	ninputs++;
}

static int no_dots(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static void replay(const char *path)
{
	struct dirent **names;
	struct stat st;
	char *sub;
	int n, i;

	if (stat(path, &st))
		die("cannot stat", path);
	if (!S_ISDIR(st.st_mode)) {
		replay_file(path);
		return;
	}
	n = scandir(path, &names, no_dots, alphasort);
	if (n < 0)
		die("cannot list", path);
	for (i = 0; i < n; i++) {
		if (asprintf(&sub, "%s/%s", path, names[i]->d_name) < 0)
			die("out of memory", path);
		replay(sub);
		free(sub);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char *dflt;
	int i;

	if (getenv("REPLAY_CANARY")) {
		/* sized at run time: the compiler cannot see the overflow */
		size_t n = strlen(getenv("REPLAY_CANARY"));
		volatile char *p = malloc(n);

		if (p)
			printf("replay-%s: canary read %d\n", FUZZ_NAME, p[n]);
		printf("replay-%s: the canary's overflow went unseen\n",
		       FUZZ_NAME);
		return 0;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (i = 1; i < argc; i++)
			replay(argv[i]);
	} else {
		if (asprintf(&dflt, "%s/tests/fuzz/%s", top ? top : ".",
			     FUZZ_NAME) < 0)
			die("out of memory", FUZZ_NAME);
		replay(dflt);
		free(dflt);
	}
	if (!ninputs)
		die("no input", argc > 1 ? argv[1] : FUZZ_NAME);
	printf("replay-%s: %u inputs, no crash\n", FUZZ_NAME, ninputs);
	return 0;
}
