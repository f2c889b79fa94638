/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_suppress.c - fuzz harness of src/report/suppress.c: the input is a
 * suppression file, loaded with rc_suppress_load() as the shim and the
 * report tool load one, then matched for every rule against a fixed
 * stack (through rc_suppress_match_pcs() and its symbolizer too), and its
 * "Suppressions used:" list formatted into buffers of every size.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "unwind/stack.h"
#include "report/suppress.h"

/* The stack of every finding, as the symbolizer stub names it. */
static const struct rc_frame frames[] = {
	{ 0x1000, "/usr/lib/libapp.so.1", 0x100, "app_teardown",
	  "/src/app/teardown.c", 88, NULL, 0 },
	{ 0x2000, "/usr/bin/server", 0x200, "main", "server.c", 140, NULL, 0 },
	{ 0x3000, "/lib/x86_64-linux-gnu/libc.so.6", 0x300, NULL, NULL, 0, NULL, 0 },
	{ 0x4000, NULL, 0, NULL, NULL, 0, NULL, 0 },
	{ 0x5000, "/", 0, "", "", 0, NULL, 0 },
};
#define NFRAMES (sizeof(frames) / sizeof(frames[0]))

static const uintptr_t pcs[NFRAMES] = {
	0x1000, 0x2000, 0x3000, 0x4000, 0x5000
};

void rc_symbolize(uintptr_t pc, struct rc_frame *out)
{
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->pc = pc;
	for (i = 0; i < NFRAMES; i++)
		if (frames[i].pc == pc)
			*out = frames[i];
}

static const char *const calls[] = {
	NULL, "rdma_destroy_id", "", "rdma_get_cm_event",
};

static int supp_fd = -1;
static char supp_path[64];

/* The input as a file: an anonymous one, rewritten for each input. */
static bool write_file(const uint8_t *data, size_t size)
{
	if (supp_fd < 0) {
		supp_fd = memfd_create("fuzz.supp", MFD_CLOEXEC);
		if (supp_fd < 0)
			return false;
		snprintf(supp_path, sizeof(supp_path), "/proc/self/fd/%d",
			 supp_fd);
	}
	return !ftruncate(supp_fd, 0) &&
	       pwrite(supp_fd, data, size, 0) == (ssize_t)size;
}

static void check_used(unsigned nmatched)
{
	static const size_t lens[] = { 0, 1, 2, 20, 40, 100, 1000, 65536 };
	static char buf[65536];
	unsigned i, hits = 0;
	size_t n;

	for (i = 0; i < rc_suppress_count(); i++) {
		FUZZ_ASSERT(rc_suppress_text(i) != NULL);
		FUZZ_ASSERT(strchr(rc_suppress_text(i), ':'));
		hits += rc_suppress_hits(i);
	}
	FUZZ_ASSERT(rc_suppress_text(i) == NULL && !rc_suppress_hits(i));
	FUZZ_ASSERT(hits == nmatched);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(buf, 'x', sizeof(buf));
		n = rc_suppress_format_used(buf, lens[i], "==1== ");
		if (!lens[i]) {
			FUZZ_ASSERT(!n && buf[0] == 'x');
			continue;
		}
		FUZZ_ASSERT(n < lens[i] && strlen(buf) == n);
		FUZZ_ASSERT(!nmatched || lens[i] < 100 || n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rc_finding f;
	unsigned r, c, k, nmatched = 0;
	int added, idx;

	if (!write_file(data, size))
		return 0;
	added = rc_suppress_load(supp_path);
	FUZZ_ASSERT(added >= 0 && (unsigned)added == rc_suppress_count());

	/* Every rule with every call, against no stack and the stack. */
	for (r = 0; r < RC_R_COUNT; r++)
		for (c = 0; c < sizeof(calls) / sizeof(calls[0]); c++)
			for (k = 0; k <= NFRAMES; k += NFRAMES) {
				idx = rc_suppress_match_frames(r, calls[c],
							       frames, k);
				FUZZ_ASSERT(idx >= -1 && idx < added);
				nmatched += idx >= 0;
			}
	memset(&f, 0, sizeof(f));
	for (r = 0; r < RC_R_COUNT; r++) {
		f.rule = r;
		f.call = calls[r % 4];
		idx = rc_suppress_match_pcs(f.rule, f.call, pcs,
					    r & 1 ? NFRAMES : 0);
		FUZZ_ASSERT(idx >= -1 && idx < added);
		nmatched += idx >= 0;
	}
	check_used(nmatched);
	rc_suppress_reset();
	FUZZ_ASSERT(!rc_suppress_count());
	return 0;
}
