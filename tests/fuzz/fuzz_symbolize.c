/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_symbolize.c - fuzz harness of src/symbolize/symbolize.c's ELF readers:
 * the input is an ELF file, symbolized with rc_symbolize_file() as the report
 * tool does (section headers, .symtab/.dynsym, notes, .gnu_debuglink,
 * compressed sections, .debug_line of DWARF 2 to 5).  An input holding
 * FUZZ_DEBUG_SEP is two files: the part after it is written next to the
 * first as "seed.debug", the debug file the seeds' .gnu_debuglink names.
 *
 * Each input is a new file name in a private directory, so the
 * symbolizer never takes it for the previous, already loaded one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbolize/symbolize.h"

#define FUZZ_DEBUG_SEP "\n--rdmacheck-fuzz-debug-file--\n"

static char dir[PATH_MAX];
static unsigned long serial;

static void remove_dir(void)
{
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/rdmacheck-fuzz-sym.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(remove_dir);
	return 0;
}

static void put_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

static void check_frame(const char *path, uintptr_t off)
{
	struct rc_frame f;

	if (rc_symbolize_file(path, off, &f))
		return;
	FUZZ_ASSERT(f.pc == off && f.module && !strcmp(f.module, path));
	FUZZ_ASSERT(f.offset == off);
	/* Touch every byte of the names: ASan checks they are in bounds. */
	if (f.function)
		FUZZ_ASSERT(strlen(f.function) < (1u << 24));
	if (f.file)
		FUZZ_ASSERT(strlen(f.file) < (1u << 24));
	FUZZ_ASSERT(f.file || !f.line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memmem(data, size, FUZZ_DEBUG_SEP,
				    sizeof(FUZZ_DEBUG_SEP) - 1);
	size_t main_size = sep ? (size_t)(sep - data) : size;
	char path[PATH_MAX + 32], dbg[PATH_MAX + 32];
	Elf64_Ehdr eh;
	uintptr_t entry = 0x1000;
	unsigned k;

	if (!*dir)
		LLVMFuzzerInitialize(NULL, NULL);
	snprintf(path, sizeof(path), "%s/elf.%lu", dir, serial++);
	snprintf(dbg, sizeof(dbg), "%s/seed.debug", dir);
	put_file(path, data, main_size);
	if (sep) {
		sep += sizeof(FUZZ_DEBUG_SEP) - 1;
		put_file(dbg, sep, size - (size_t)(sep - data));
	}
	/* Around the entry point: where the code of a small file is. */
	if (main_size >= sizeof(eh)) {
		memcpy(&eh, data, sizeof(eh));
		entry = eh.e_entry;
	}
	check_frame(path, 0);
	check_frame(path, 1);
	check_frame(path, UINTPTR_MAX);
	for (k = 0; k < 64; k++)
		check_frame(path, entry + 3 * k);
	for (k = 1; k < 16; k++)
		check_frame(path, k << 12 | k);

	unlink(path);
	if (sep)
		unlink(dbg);
	return 0;
}
