/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * elf_seed.c - the program of the symbolize harness's seed ELF files
 * (gen-elf-seeds.sh): two functions and an entry point, no libc, so that
 * each file is a few KiB with symbols and a line table.
 */
static int helper(int x)
{
	return x * 3 + 1;
}

int value(int n)
{
	int s = 0;

	while (n--)
		s += helper(n);
	return s;
}

void _start(void)
{
	volatile int r = value(3);

	(void)r;
	for (;;)
		;
}
