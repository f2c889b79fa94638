/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fingerprint.c - finding fingerprints (see fingerprint.h): FNV-1a over
 * the symbolic parts, each followed by a NUL so that "ab"+"c" and
 * "a"+"bc" differ.  Used by the shim's JSON writer and rdmacheck-report.
 */
#include <string.h>

#include "report/fingerprint.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static void fp_bytes(struct rc_fp *fp, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		fp->h = (fp->h ^ *b++) * FNV_PRIME;
}

/* A string and its NUL; NULL counts as a lone NUL after a 0x01. */
static void fp_str(struct rc_fp *fp, const char *s)
{
	if (!s) {
		fp_bytes(fp, "\1", 2);
		return;
	}
	fp_bytes(fp, s, strlen(s) + 1);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

void rc_fp_init(struct rc_fp *fp, const char *rule, const char *call)
{
	fp->h = FNV_OFFSET;
	fp->done = false;
	fp_str(fp, rule);
	fp_str(fp, call);
}

void rc_fp_frame(struct rc_fp *fp, const char *function, const char *file,
		 const char *module, uintptr_t offset)
{
	unsigned char off[sizeof(offset)];
	unsigned i;

	if (fp->done)
		return;
	if (function) {
		fp_bytes(fp, "F", 1);
		fp_str(fp, function);
		fp_str(fp, base_name(file));
		fp->done = !strcmp(function, "main");
		return;
	}
	/* Little-endian bytes: the same on every host. */
	for (i = 0; i < sizeof(off); i++)
		off[i] = (unsigned char)(offset >> (8 * i));
	fp_bytes(fp, "M", 1);
	fp_str(fp, base_name(module));
	fp_bytes(fp, off, sizeof(off));
}

void rc_fp_hex(const struct rc_fp *fp, char out[RC_FP_LEN + 1])
{
	uint64_t h = fp->h;
	int i;

	for (i = RC_FP_LEN - 1; i >= 0; i--, h >>= 4)
		out[i] = "0123456789abcdef"[h & 15];
	out[RC_FP_LEN] = '\0';
}
